//! A stretch of the calendar a line speaks of, and the index terms it becomes.

use std::fmt::Write as _;

use crate::memory::calendar::{Day, days_in_month};

/// What a date expression names, resolved: a day, a week, a month or a year.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Span {
    /// One day.
    Day(Day),
    /// The week (Monday to Sunday) that starts on this Monday.
    Week(Day),
    /// A month: year and month (1-12).
    Month(i32, u32),
    /// A year.
    Year(i32),
}

impl Span {
    /// The week `weeks` before (negative) or after the week of `day`.
    pub(crate) fn week_of(day: Day, weeks: i32) -> Span {
        Span::Week(day.monday().plus(weeks.saturating_mul(7)))
    }

    /// The month `months` before (negative) or after the month of `day`.
    pub(crate) fn month_of(day: Day, months: i32) -> Span {
        let (year, month, _) = day.civil();
        let (year, month) = add_months(year, month, months);
        Span::Month(year, month)
    }

    /// The year `years` before (negative) or after the year of `day`.
    pub(crate) fn year_of(day: Day, years: i32) -> Span {
        Span::Year(day.civil().0.saturating_add(years))
    }

    /// The terms a line or a query holds for this span, coarsest last. A day is
    /// also in its week, month and year, so a question about "May 2022" still
    /// matches a line dated 1 May, and one naming the day matches it best.
    pub(crate) fn for_each_term(self, buffer: &mut String, mut emit: impl FnMut(&str)) {
        let mut term = |text: std::fmt::Arguments<'_>| {
            buffer.clear();
            let _ = buffer.write_fmt(text);
            emit(buffer);
        };
        match self {
            Span::Day(day) => {
                let (y, m, d) = day.civil();
                term(format_args!("d:{y}-{m:02}-{d:02}"));
                // A week is named by its Monday.
                let (wy, wm, wd) = day.monday().civil();
                term(format_args!("w:{wy}-{wm:02}-{wd:02}"));
                term(format_args!("m:{y}-{m:02}"));
                term(format_args!("y:{y}"));
            }
            Span::Week(monday) => {
                let (wy, wm, wd) = monday.civil();
                term(format_args!("w:{wy}-{wm:02}-{wd:02}"));
                let (y1, m1, _) = monday.civil();
                let (y2, m2, _) = monday.plus(6).civil();
                term(format_args!("m:{y1}-{m1:02}"));
                if (y1, m1) != (y2, m2) {
                    term(format_args!("m:{y2}-{m2:02}"));
                }
                term(format_args!("y:{y1}"));
                if y1 != y2 {
                    term(format_args!("y:{y2}"));
                }
            }
            Span::Month(y, m) => {
                term(format_args!("m:{y}-{m:02}"));
                term(format_args!("y:{y}"));
            }
            Span::Year(y) => term(format_args!("y:{y}")),
        }
    }
}

/// The term that says "this line has a date expression": what questions asking
/// "when" favour. Its colon keeps it apart from every word term, which holds only
/// letters and digits.
pub(crate) const DATED_TERM: &str = "t:dated";

/// `(year, month)` moved by `months`.
pub(crate) fn add_months(year: i32, month: u32, months: i32) -> (i32, u32) {
    let index = i64::from(year) * 12 + i64::from(month) - 1 + i64::from(months);
    let year = index
        .div_euclid(12)
        .clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
    (year, index.rem_euclid(12) as u32 + 1)
}

/// The day `day` of `month` nearest to `anchor`: in the anchor's year, the one
/// before or the one after. A line that says "on 3 June" on 30 May means this
/// June; one that says "on 28 December" on 2 January means last December.
pub(crate) fn nearest_day(anchor: Day, month: u32, day: u32) -> Option<Day> {
    let (year, _, _) = anchor.civil();
    [year - 1, year, year + 1]
        .into_iter()
        .filter_map(|y| Day::from_civil(y, month, day))
        .min_by_key(|d| (i64::from(d.0) - i64::from(anchor.0)).abs())
}

/// The month `month` nearest to `anchor`'s month, as [`nearest_day`] does.
pub(crate) fn nearest_month(anchor: Day, month: u32) -> Span {
    let (year, current, _) = anchor.civil();
    let here = i64::from(year) * 12 + i64::from(current);
    let best = [year - 1, year, year + 1]
        .into_iter()
        .min_by_key(|&y| (i64::from(y) * 12 + i64::from(month) - here).abs())
        .unwrap_or(year);
    Span::Month(best, month)
}

/// The latest day `date` of a month on or before `anchor` ("on the 15th").
pub(crate) fn latest_day_of_month(anchor: Day, date: u32) -> Option<Day> {
    let (year, month, today) = anchor.civil();
    if date == 0 || date > 31 {
        return None;
    }
    let (year, month) = if date <= today {
        (year, month)
    } else {
        add_months(year, month, -1)
    };
    // A 31st asked about in a 30-day month means the month before it had one.
    (0..12).find_map(|back| {
        let (y, m) = add_months(year, month, -back);
        (date <= days_in_month(y, m))
            .then(|| Day::from_civil(y, m, date))
            .flatten()
    })
}

/// The nearest `weekday` (Monday 0) strictly before `anchor` (`direction` -1),
/// or strictly after it (1).
pub(crate) fn weekday_from(anchor: Day, weekday: u32, direction: i32) -> Day {
    let today = anchor.weekday() as i32;
    let target = weekday as i32;
    let steps = if direction < 0 {
        let back = (today - target).rem_euclid(7);
        if back == 0 { 7 } else { back }
    } else {
        let ahead = (target - today).rem_euclid(7);
        if ahead == 0 { 7 } else { ahead }
    };
    anchor.plus(steps * direction.signum())
}

/// The Saturday and Sunday of the weekend `weeks` from the week of `anchor`:
/// -1 is the last weekend wholly before it, 0 this week's, 1 next week's.
pub(crate) fn weekend(anchor: Day, weeks: i32) -> [Span; 2] {
    let saturday = if weeks < 0 {
        // The last Saturday whose Sunday is also past.
        let mut saturday = weekday_from(anchor, 5, -1);
        if saturday.plus(1) >= anchor {
            saturday = saturday.plus(-7);
        }
        saturday.plus((weeks + 1) * 7)
    } else {
        anchor.monday().plus(5 + weeks * 7)
    };
    [Span::Day(saturday), Span::Day(saturday.plus(1))]
}
