//! English date expressions: "yesterday", "last week", "two days ago", "last
//! Friday", "1 May, 2022", "May 2022", "in 2019", "on the 15th".
//!
//! Words are runs of letters and digits cut at `char_indices` boundaries, so any
//! text is safe; only ASCII words can form an expression. The patterns are few
//! and fixed: enough for how chat says when something happened, not a parser of
//! every way to write a date.

use super::span::{Span, latest_day_of_month, nearest_day, nearest_month, weekday_from, weekend};
use crate::memory::calendar::Day;

/// Words kept per text: a wall of text is scanned only this far.
const MAX_WORDS: usize = 512;

/// Calls `found` with each date expression of `text`, resolved against `anchor`:
/// the day the line was said, or for a question the day it is asked.
pub(crate) fn scan(text: &str, anchor: Day, found: &mut impl FnMut(Span)) {
    let words = words(text);
    let default_year = only_year(&words);
    let mut at = 0;
    while at < words.len() {
        at += match_at(&words, at, anchor, default_year, found).max(1);
    }
}

/// Whether a question asks about time: "when did", "what year", "how long ago".
/// "When" counts only before an auxiliary verb: "who helps her when she is sad"
/// asks who, not when.
pub(crate) fn asks_when(text: &str) -> bool {
    const AUXILIARIES: [&str; 16] = [
        "did", "do", "does", "was", "were", "is", "are", "will", "would", "has", "have", "had",
        "can", "could", "should", "shall",
    ];
    let words = words(text);
    words.iter().enumerate().any(|(at, word)| {
        let next = words.get(at + 1).map_or("", |w| w.text);
        (is(word.text, "when") && AUXILIARIES.iter().any(|aux| is(next, aux)))
            || is(word.text, "ago")
            || is(word.text, "date")
            || ((is(word.text, "what") || is(word.text, "which"))
                && ["year", "month", "day", "week", "time"]
                    .iter()
                    .any(|unit| is(next, unit)))
            || (is(word.text, "how") && is(next, "long"))
    })
}

#[derive(Clone, Copy)]
struct Word<'a> {
    text: &'a str,
    /// What separates it from the word before ("-" in "2022-05-01").
    gap: &'a str,
}

fn words(text: &str) -> Vec<Word<'_>> {
    let mut words = Vec::new();
    let mut start: Option<usize> = None;
    let mut previous_end = 0;
    for (at, ch) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (ch.is_alphanumeric() && at < text.len(), start) {
            (true, None) => start = Some(at),
            (false, Some(from)) => {
                words.push(Word {
                    text: &text[from..at],
                    gap: &text[previous_end..from],
                });
                previous_end = at;
                start = None;
                if words.len() == MAX_WORDS {
                    break;
                }
            }
            _ => {}
        }
    }
    words
}

fn is(word: &str, expected: &str) -> bool {
    word.eq_ignore_ascii_case(expected)
}

/// The one year (1900-2099) the text names, if it names exactly one: "between
/// August 11 and August 15 2023" dates both days in 2023.
fn only_year(words: &[Word<'_>]) -> Option<i32> {
    let mut years = words.iter().filter_map(|w| year(w.text));
    let first = years.next()?;
    years.all(|y| y == first).then_some(first)
}

fn year(word: &str) -> Option<i32> {
    (word.len() == 4)
        .then(|| word.parse::<i32>().ok())
        .flatten()
        .filter(|y| (1900..=2099).contains(y))
}

/// A day of the month, "15" or "15th".
fn day_of_month(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if digits.is_empty()
        || digits.len() > 2
        || !["", "st", "nd", "rd", "th"].iter().any(|s| is(suffix, s))
    {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn ordinal(word: &str) -> Option<u32> {
    day_of_month(word).filter(|_| word.bytes().any(|b| b.is_ascii_alphabetic()))
}

/// A month's number from its name; abbreviations only when `short` is allowed,
/// since "mar" and "jan" are words and names too.
fn month(word: &str, short: bool) -> Option<u32> {
    const NAMES: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    if let Some(at) = NAMES.iter().position(|n| is(word, n)) {
        return Some(at as u32 + 1);
    }
    if !short {
        return None;
    }
    const SHORT: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    if is(word, "sept") {
        return Some(9);
    }
    SHORT
        .iter()
        .position(|n| is(word, n))
        .map(|at| at as u32 + 1)
}

fn weekday(word: &str) -> Option<u32> {
    const NAMES: [&str; 7] = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    NAMES.iter().position(|n| is(word, n)).map(|at| at as u32)
}

/// A small count: digits, a number word, "a"/"an", "a couple of".
fn count(words: &[Word<'_>], at: usize) -> Option<(i32, usize)> {
    const NUMBERS: [&str; 12] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    let word = words.get(at)?.text;
    if is(word, "a") || is(word, "an") {
        let couple = words.get(at + 1).is_some_and(|w| is(w.text, "couple"))
            && words.get(at + 2).is_some_and(|w| is(w.text, "of"));
        return Some(if couple { (2, 3) } else { (1, 1) });
    }
    if let Some(n) = NUMBERS.iter().position(|n| is(word, n)) {
        return Some((n as i32 + 1, 1));
    }
    (word.len() <= 3)
        .then(|| word.parse::<i32>().ok())
        .flatten()
        .filter(|n| (1..=366).contains(n))
        .map(|n| (n, 1))
}

/// Words before a lone year or month that make it a date: "in 2019", "since May".
fn is_date_preposition(word: &str) -> bool {
    [
        "in", "since", "from", "until", "till", "by", "during", "of", "early", "late", "mid",
        "through",
    ]
    .iter()
    .any(|p| is(word, p))
}

/// The expression starting at word `at`, reported to `found`; returns how many
/// words it took (0: none starts here).
fn match_at(
    words: &[Word<'_>],
    at: usize,
    anchor: Day,
    default_year: Option<i32>,
    found: &mut impl FnMut(Span),
) -> usize {
    let word = |offset: usize| words.get(at + offset).map_or("", |w| w.text);
    let w0 = word(0);
    let day = |days: i32| Span::Day(anchor.plus(days));

    // Fixed phrases, longest first.
    if is(w0, "the") && is(word(1), "day") && is(word(3), "yesterday") && is(word(2), "before") {
        found(day(-2));
        return 4;
    }
    if is(w0, "the") && is(word(1), "day") && is(word(3), "tomorrow") && is(word(2), "after") {
        found(day(2));
        return 4;
    }
    for (phrase, days) in [
        ("yesterday", -1),
        ("today", 0),
        ("tonight", 0),
        ("tomorrow", 1),
    ] {
        if is(w0, phrase) {
            found(day(days));
            return 1;
        }
    }
    if is(w0, "this")
        && ["morning", "afternoon", "evening"]
            .iter()
            .any(|part| is(word(1), part))
    {
        found(day(0));
        return 2;
    }
    if is(w0, "last") && (is(word(1), "night") || is(word(1), "evening")) {
        found(day(-1));
        return 2;
    }

    // "last / this / next" + a unit, a weekday or a month.
    let step = if is(w0, "last") || is(w0, "past") || is(w0, "previous") {
        Some(-1)
    } else if is(w0, "this") {
        Some(0)
    } else if is(w0, "next") || is(w0, "coming") {
        Some(1)
    } else {
        None
    };
    if let Some(step) = step {
        let unit = word(1);
        if is(unit, "week") {
            found(Span::week_of(anchor, step));
            return 2;
        }
        if is(unit, "weekend") {
            weekend(anchor, step).into_iter().for_each(&mut *found);
            return 2;
        }
        if is(unit, "month") {
            found(Span::month_of(anchor, step));
            return 2;
        }
        if is(unit, "year") {
            found(Span::year_of(anchor, step));
            return 2;
        }
        if let Some(weekday) = weekday(unit) {
            let resolved = match step {
                -1 => weekday_from(anchor, weekday, -1),
                // "this Friday": the one of this week, even if it is past.
                0 => anchor.monday().plus(weekday as i32),
                _ => weekday_from(anchor, weekday, 1),
            };
            found(Span::Day(resolved));
            return 2;
        }
        if let Some(month) = month(unit, false) {
            let (year, current, _) = anchor.civil();
            let year = match step {
                -1 if month >= current => year - 1,
                1 if month <= current => year + 1,
                _ => year,
            };
            found(Span::Month(year, month));
            return 2;
        }
    }

    // "two days ago", "a week ago", "a couple of months ago".
    if let Some((n, used)) = count(words, at) {
        let unit = word(used);
        if is(word(used + 1), "ago") {
            let unit = unit.to_ascii_lowercase();
            let span = match unit.trim_end_matches('s') {
                "day" => Some(day(-n)),
                "week" => Some(Span::week_of(anchor, -n)),
                "month" => Some(Span::month_of(anchor, -n)),
                "year" => Some(Span::year_of(anchor, -n)),
                _ => None,
            };
            if let Some(span) = span {
                found(span);
                return used + 2;
            }
        }
    }

    // ISO dates: 2022-05-01.
    if let (Some(y), Some(m), Some(d)) = (
        year(w0),
        word(1).parse::<u32>().ok(),
        word(2).parse::<u32>().ok(),
    ) && words[at + 1].gap == "-"
        && words[at + 2].gap == "-"
        && let Some(date) = Day::from_civil(y, m, d)
    {
        found(Span::Day(date));
        return 3;
    }

    // "1 May, 2022", "1st of May", "May 1st, 2022", "May 2022", "May".
    if let Some(date) = day_of_month(w0) {
        let of = usize::from(is(word(1), "of"));
        if let Some(month) = month(word(1 + of), true) {
            let year = year(word(2 + of));
            report_day(anchor, year.or(default_year), month, date, found);
            return 2 + of + usize::from(year.is_some());
        }
    }
    let after_preposition = at > 0 && is_date_preposition(words[at - 1].text);
    if let Some(number) = month(w0, true) {
        let month = number;
        // "may" in lower case is mostly the verb: only "may 1st" or "may 2022".
        let verb = is(w0, "may") && !w0.starts_with('M');
        if let Some(date) = day_of_month(word(1)).filter(|_| !verb || ordinal(word(1)).is_some()) {
            let year = year(word(2));
            report_day(anchor, year.or(default_year), month, date, found);
            return 2 + usize::from(year.is_some());
        }
        if let Some(year) = year(word(1)) {
            found(Span::Month(year, month));
            return 2;
        }
        // A month alone: only its full name, capitalized ("in May", "May was fun"),
        // and "May" only after a preposition, since it is also a verb.
        let capitalized = w0.starts_with(|c: char| c.is_ascii_uppercase());
        if self::month(w0, false).is_some() && capitalized && (month != 5 || after_preposition) {
            found(match default_year {
                Some(year) => Span::Month(year, month),
                None => nearest_month(anchor, month),
            });
            return 1;
        }
    }
    if let Some(year) = year(w0)
        && after_preposition
    {
        found(Span::Year(year));
        return 1;
    }
    // "on the 15th", but not "the 1st of May", which is read from "1st".
    let names_month = month(word(2), true).is_some() || is(word(2), "of");
    if is(w0, "the")
        && !names_month
        && let Some(date) = ordinal(word(1))
        && let Some(day) = latest_day_of_month(anchor, date)
    {
        found(Span::Day(day));
        return 2;
    }
    0
}

/// Reports the day `date` of `month`, in `year` or the one nearest `anchor`.
fn report_day(anchor: Day, year: Option<i32>, month: u32, date: u32, found: &mut impl FnMut(Span)) {
    let day = match year {
        Some(year) => Day::from_civil(year, month, date),
        None => nearest_day(anchor, month, date),
    };
    if let Some(day) = day {
        found(Span::Day(day));
    }
}
