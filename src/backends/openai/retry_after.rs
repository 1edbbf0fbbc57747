//! Reads `Retry-After` (RFC 9110, section 10.2.3): a number of seconds, or an
//! HTTP-date. Whatever a server sends, the result is a `Duration` or nothing; it
//! never panics, and [`RetryPolicy::delay`](super::RetryPolicy::delay) caps it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The wait `value` asks for, seen at `now`. A wait too long for a `Duration` is
/// `Duration::MAX`; a date in the past is zero; anything unreadable is `None`.
///
/// Dates are read in the IMF-fixdate form every current server sends
/// (`Sun, 06 Nov 1994 08:49:37 GMT`); the obsolete RFC 850 and asctime forms are
/// not, so such a header falls back to the normal backoff.
pub(crate) fn parse(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Some(wait) = seconds(value) {
        return Some(wait);
    }
    let at = imf_fixdate(value)?;
    let at = match u64::try_from(at) {
        Ok(secs) => UNIX_EPOCH.checked_add(Duration::from_secs(secs)),
        // Before 1970: long past.
        Err(_) => return Some(Duration::ZERO),
    };
    Some(match at {
        Some(at) => at.duration_since(now).unwrap_or(Duration::ZERO),
        None => Duration::MAX,
    })
}

/// Whole seconds as the standard has them, or a decimal number as some servers
/// send (`1.5`, `1e20`).
fn seconds(value: &str) -> Option<Duration> {
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(value.parse().map_or(Duration::MAX, Duration::from_secs));
    }
    let seconds: f64 = value.parse().ok()?;
    if seconds.is_nan() || seconds < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

/// Seconds since 1970 of `Sun, 06 Nov 1994 08:49:37 GMT`. The weekday must be a
/// weekday's name but is not checked against the date.
fn imf_fixdate(value: &str) -> Option<i64> {
    const WEEKDAYS: [&str; 7] = ["Mon,", "Tue,", "Wed,", "Thu,", "Fri,", "Sat,", "Sun,"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mut parts = value.split(' ');
    let mut next = || parts.next();
    let (weekday, day, month, year, time, zone) =
        (next()?, next()?, next()?, next()?, next()?, next()?);
    if next().is_some() || !WEEKDAYS.contains(&weekday) || zone != "GMT" {
        return None;
    }
    let day = digits(day, 2)?;
    let month = MONTHS.iter().position(|name| *name == month)?;
    let year = digits(year, 4)?;
    let mut clock = time.split(':');
    let (hour, minute, second) = (clock.next()?, clock.next()?, clock.next()?);
    if clock.next().is_some() {
        return None;
    }
    let (hour, minute, second) = (digits(hour, 2)?, digits(minute, 2)?, digits(second, 2)?);
    // 60 is a leap second.
    if day == 0 || day > month_length(year, month) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    Some(days_since_1970(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second)
}

/// Exactly `count` ASCII digits.
fn digits(text: &str, count: usize) -> Option<i64> {
    (text.len() == count && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// Days in `month` (0-based) of `year`.
fn month_length(year: i64, month: usize) -> i64 {
    const LENGTHS: [i64; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    LENGTHS[month] + i64::from(month == 1 && is_leap(year))
}

/// Days from 1970-01-01 to `year`-`month`-`day` (month 0-based, day 1-based).
fn days_since_1970(year: i64, month: usize, day: i64) -> i64 {
    // Days from 0001-01-01 to the start of `year`, minus the same for 1970.
    let before = year - 1;
    let year_start = 365 * before + before / 4 - before / 100 + before / 400 - 719_162;
    let month_start: i64 = (0..month).map(|m| month_length(year, m)).sum();
    year_start + month_start + day - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn seconds_whole_decimal_and_too_large() {
        let now = at(0);
        assert_eq!(parse("120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(parse("1.5", now), Some(Duration::from_millis(1500)));
        assert_eq!(parse("1e20", now), Some(Duration::MAX));
        assert_eq!(parse("inf", now), Some(Duration::MAX));
        assert_eq!(parse(&"9".repeat(40), now), Some(Duration::MAX));
        assert_eq!(
            parse(&format!("1{}", "0".repeat(400)), now),
            Some(Duration::MAX)
        );
        for junk in ["", "-1", "NaN", "soon", "1 2", "0x10"] {
            assert_eq!(parse(junk, now), None, "{junk:?}");
        }
    }

    #[test]
    fn imf_fixdates_match_known_timestamps() {
        for (date, secs) in [
            ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777),
            ("Wed, 21 Oct 2015 07:28:00 GMT", 1_445_412_480),
            ("Thu, 29 Feb 2024 00:00:00 GMT", 1_709_164_800),
            ("Sat, 01 Jan 2000 00:00:00 GMT", 946_684_800),
            ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
            ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799),
        ] {
            assert_eq!(imf_fixdate(date), Some(secs), "{date}");
        }
    }

    #[test]
    fn a_date_waits_until_then_never_below_zero() {
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        assert_eq!(
            parse(date, at(1_445_412_480 - 30)),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse(date, at(1_445_412_480 - 30) + Duration::from_millis(250)),
            Some(Duration::from_millis(29_750))
        );
        assert_eq!(parse(date, at(1_445_412_480 + 5)), Some(Duration::ZERO));
        assert_eq!(
            parse("Mon, 01 Jan 1900 00:00:00 GMT", at(0)),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse("Fri, 31 Dec 9999 23:59:59 GMT", at(0)),
            Some(Duration::from_secs(253_402_300_799))
        );
    }

    #[test]
    fn malformed_dates_are_ignored() {
        for date in [
            "Thu, 30 Feb 2024 00:00:00 GMT",
            "Fri, 29 Feb 2100 00:00:00 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov 1994 08:49:37:00 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT extra",
            "Sun 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "Sun, 06 Nov +994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:+9:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT\u{0}",
            "Sun, 06 Nov 1994 08:4ẞ:37 GMT",
        ] {
            assert_eq!(parse(date, at(0)), None, "{date}");
        }
    }
}
