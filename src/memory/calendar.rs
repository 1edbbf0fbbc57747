//! Game seconds as days of the Gregorian calendar, for games whose clock is one.
//!
//! The core's clock is plain seconds ([`Now`](super::Now)); most games count them
//! from the start of play, so by default no date is read into them. A game whose
//! story runs on real dates (or a replayed chat log) says where its second 0 falls
//! with a [`Calendar`], and recall can then match "on 1 May" or "last week"
//! against when each line was said.

use bevy::reflect::Reflect;
use serde::{Deserialize, Serialize};

use super::clock::DateFormat;

const SECONDS_PER_DAY: f64 = 86_400.0;

/// Days further than this from 1970 are not dates recall reasons about: about
/// ±27,000 years, far inside `i32` arithmetic and every year the formats write.
const MAX_DAYS: i64 = 10_000_000;

/// Where the Gregorian calendar sits on the game clock.
///
/// ```
/// use bevy_npc_memory::memory::Calendar;
///
/// // The game's clock counts seconds since the story began, on 3 March 1888.
/// let calendar = Calendar::starting_on(1888, 3, 3).unwrap();
/// assert_eq!(calendar.day_format().format(86_400.0 * 2.0), "5 March 1888");
/// // A clock that already counts Unix seconds.
/// assert_eq!(Calendar::UNIX.day_format().format(0.0), "1 January 1970");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Clone)]
pub struct Calendar {
    /// The game second at which 1 January 1970 begins (midnight). Negative when
    /// the game's clock starts after 1970.
    pub unix_epoch: f64,
}

impl Calendar {
    /// A clock that counts seconds since 1970-01-01 00:00 (UTC), as Unix time does.
    pub const UNIX: Calendar = Calendar { unix_epoch: 0.0 };

    /// A clock whose second 0 is midnight at the start of `day` `month` `year`.
    /// `None` when that is no date (month 13, 30 February) or too far from 1970.
    pub fn starting_on(year: i32, month: u32, day: u32) -> Option<Self> {
        let start = Day::from_civil(year, month, day)?;
        Some(Self {
            unix_epoch: -f64::from(start.0) * SECONDS_PER_DAY,
        })
    }

    /// The day `seconds` fall on; `None` when either is not finite or the day is
    /// too far from 1970 to be a date.
    pub(crate) fn day(&self, seconds: f64) -> Option<Day> {
        let days = ((seconds - self.unix_epoch) / SECONDS_PER_DAY).floor();
        if !days.is_finite() || days.abs() > MAX_DAYS as f64 {
            return None;
        }
        Some(Day(days as i32))
    }

    /// Dates written by day, "2 May 2022": recalled lines grouped under one such
    /// heading per day rather than per minute. Seconds that are no date are written
    /// as the default `day N HH:MM`.
    pub fn day_format(self) -> DateFormat {
        DateFormat::new(move |seconds| match self.day(seconds) {
            Some(day) => {
                let (year, month, date) = day.civil();
                format!("{date} {} {year}", MONTH_NAMES[month as usize - 1])
            }
            None => super::clock::day_clock(seconds),
        })
    }
}

/// English month names, January first.
pub(crate) const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A day of the proleptic Gregorian calendar, counted from 1 January 1970.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Day(pub(crate) i32);

impl Day {
    /// The day with this year, month (1-12) and day of month, if it exists and is
    /// within the range recall reasons about.
    pub(crate) fn from_civil(year: i32, month: u32, day: u32) -> Option<Day> {
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        // Days from civil (Howard Hinnant's algorithm): years start in March, so
        // the leap day is the last day of its year and needs no special case.
        let (year, month, day) = (i64::from(year), i64::from(month), i64::from(day));
        let y = if month <= 2 { year - 1 } else { year };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (month + 9) % 12;
        let doy = (153 * mp + 2) / 5 + day - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        (days.abs() <= MAX_DAYS).then_some(Day(days as i32))
    }

    /// Year, month (1-12) and day of month.
    pub(crate) fn civil(self) -> (i32, u32, u32) {
        // Civil from days, the inverse of `from_civil`.
        let z = i64::from(self.0) + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
        (year, month, day)
    }

    /// Monday 0 to Sunday 6.
    pub(crate) fn weekday(self) -> u32 {
        // 1 January 1970 was a Thursday.
        (i64::from(self.0) + 3).rem_euclid(7) as u32
    }

    /// The day `days` later (earlier when negative).
    pub(crate) fn plus(self, days: i32) -> Day {
        Day(self.0.saturating_add(days))
    }

    /// The Monday of this day's week.
    pub(crate) fn monday(self) -> Day {
        self.plus(-(self.weekday() as i32))
    }
}

/// Whether `year` has a 29 February.
pub(crate) fn is_leap(year: i32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// Days in `month` (1-12) of `year`; 0 for a month that does not exist.
pub(crate) fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_round_trip_across_leap_years_and_centuries() {
        for (y, m, d, days) in [
            (1970, 1, 1, 0),
            (2000, 2, 29, 11_016),
            (2022, 5, 1, 19_113),
            (1900, 3, 1, -25_508),
            (1969, 12, 31, -1),
        ] {
            assert_eq!(Day::from_civil(y, m, d), Some(Day(days)), "{y}-{m}-{d}");
            assert_eq!(Day(days).civil(), (y, m, d));
        }
        for day in (-800_000..800_000).step_by(997) {
            let (y, m, d) = Day(day).civil();
            assert_eq!(Day::from_civil(y, m, d), Some(Day(day)));
        }
    }

    #[test]
    fn impossible_dates_are_none() {
        assert_eq!(Day::from_civil(2023, 2, 29), None);
        assert_eq!(Day::from_civil(1900, 2, 29), None);
        assert!(Day::from_civil(2000, 2, 29).is_some());
        assert_eq!(Day::from_civil(2022, 13, 1), None);
        assert_eq!(Day::from_civil(2022, 4, 31), None);
        assert_eq!(Day::from_civil(2022, 4, 0), None);
        assert_eq!(Calendar::starting_on(2022, 2, 30), None);
    }

    #[test]
    fn weekdays_and_mondays() {
        // 2 May 2022 was a Monday; 1 May a Sunday.
        let monday = Day::from_civil(2022, 5, 2).unwrap();
        assert_eq!(monday.weekday(), 0);
        assert_eq!(monday.plus(-1).weekday(), 6);
        assert_eq!(monday.plus(-1).monday(), monday.plus(-7));
        assert_eq!(Day(0).weekday(), 3, "1970-01-01 was a Thursday");
    }

    #[test]
    fn seconds_fall_on_days_of_the_calendar() {
        let unix = Calendar::UNIX;
        // 11:54 on 2 May 2022, as LoCoMo's session dates are read.
        assert_eq!(
            unix.day(1_651_492_440.0).map(Day::civil),
            Some((2022, 5, 2))
        );
        assert_eq!(unix.day(-1.0).map(Day::civil), Some((1969, 12, 31)));
        assert_eq!(unix.day(f64::NAN), None);
        assert_eq!(unix.day(f64::INFINITY), None);
        assert_eq!(unix.day(1e300), None);
        let story = Calendar::starting_on(1888, 3, 3).unwrap();
        assert_eq!(story.day(0.0).map(Day::civil), Some((1888, 3, 3)));
        assert_eq!(story.day(86_399.0).map(Day::civil), Some((1888, 3, 3)));
        assert_eq!(story.day(86_400.0).map(Day::civil), Some((1888, 3, 4)));
    }

    #[test]
    fn the_day_format_writes_one_heading_per_day() {
        let format = Calendar::UNIX.day_format();
        assert_eq!(format.format(1_651_492_440.0), "2 May 2022");
        assert_eq!(format.format(1_651_449_600.0 + 86_399.0), "2 May 2022");
        assert_eq!(format.format(f64::NAN), "day 1 00:00");
    }
}
