//! Dates in lines and questions, as index terms.
//!
//! A line said on 2 May 2022 is indexed with that day's terms (`d:2022-05-02`,
//! its week, `m:2022-05`, `y:2022`), and a relative expression in it ("last
//! night", 昨天) with the terms of the day it means, resolved against the day the
//! line was said. A question that names a date ("on 1 May, 2022", "in May 2022",
//! 2022年5月1日) gets the same terms, so it meets the "last night" line said the
//! next morning, which shares no word with it. A line with a date expression
//! also gets [`DATED_TERM`], which questions asking "when" add to their terms.
//!
//! Date terms hold a colon and word terms never do, so the two cannot collide.

mod chinese;
mod english;
mod span;

#[cfg(test)]
mod tests;

pub(crate) use span::DATED_TERM;
pub(crate) use span::Span;

use crate::memory::calendar::Day;

/// Calls `found` with every date expression in `text`, resolved against `anchor`.
pub(crate) fn scan(text: &str, anchor: Day, mut found: impl FnMut(Span)) {
    english::scan(text, anchor, &mut found);
    chinese::scan(text, anchor, &mut found);
}

/// Whether a question asks about time ("when", "what year", 什么时候).
pub(crate) fn asks_when(text: &str) -> bool {
    english::asks_when(text) || chinese::asks_when(text)
}

/// Calls `emit` with the date terms of `text` said on `anchor`: those of each date
/// expression, then [`DATED_TERM`] if there was one. Returns whether there was.
pub(crate) fn for_each_date_term(
    text: &str,
    anchor: Day,
    buffer: &mut String,
    mut emit: impl FnMut(&str),
) -> bool {
    let mut dated = false;
    scan(text, anchor, |span| {
        dated = true;
        span.for_each_term(buffer, &mut emit);
    });
    if dated {
        emit(DATED_TERM);
    }
    dated
}
