//! Chinese date expressions: 昨天, 前天, 上周, 上周五, 上个月, 去年, 三天前,
//! 2022年5月1日, 5月1号, 2022年5月.
//!
//! The text is read as a list of characters, never sliced, so any text is safe.
//! Numbers may be ASCII digits or Chinese numerals up to 99.

use super::span::{Span, nearest_day, nearest_month, weekend};
use crate::memory::calendar::Day;

/// Characters kept per text: a wall of text is scanned only this far.
const MAX_CHARS: usize = 2_048;

/// Calls `found` with each date expression of `text`, resolved against `anchor`.
pub(crate) fn scan(text: &str, anchor: Day, found: &mut impl FnMut(Span)) {
    // Most lines hold no Chinese at all; they cost one pass over their bytes.
    if text.is_ascii() {
        return;
    }
    let chars: Vec<char> = text.chars().take(MAX_CHARS).collect();
    let mut at = 0;
    while at < chars.len() {
        at += match_at(&chars, at, anchor, found).max(1);
    }
}

/// Whether a question asks about time: 什么时候, 哪天, 几月, 多久 …
pub(crate) fn asks_when(text: &str) -> bool {
    const CUES: [&str; 10] = [
        "什么时候",
        "何时",
        "哪天",
        "哪一天",
        "哪年",
        "哪一年",
        "几月",
        "几号",
        "多久",
        "多长时间",
    ];
    !text.is_ascii() && CUES.iter().any(|cue| text.contains(cue))
}

fn starts(chars: &[char], at: usize, word: &str) -> bool {
    (at..)
        .zip(word.chars())
        .all(|(i, expected)| chars.get(i) == Some(&expected))
}

/// The number written at `at` and how many characters it takes: ASCII digits
/// (up to four), or Chinese numerals up to 99 (十五, 二十三, 两).
fn number(chars: &[char], at: usize) -> Option<(u32, usize)> {
    let digits = chars[at..]
        .iter()
        .take(5)
        .take_while(|c| c.is_ascii_digit())
        .count();
    if (1..=4).contains(&digits) {
        let value = chars[at..at + digits]
            .iter()
            .fold(0, |n, c| n * 10 + c.to_digit(10).unwrap_or(0));
        return Some((value, digits));
    }
    let digit = |c: char| {
        "零一二三四五六七八九"
            .chars()
            .position(|d| d == c)
            .map(|d| d as u32)
    };
    let unit = |i: usize| {
        chars
            .get(i)
            .copied()
            .and_then(|c| if c == '两' { Some(2) } else { digit(c) })
    };
    match (unit(at), chars.get(at) == Some(&'十')) {
        (Some(tens), false) if chars.get(at + 1) == Some(&'十') => {
            let ones = unit(at + 2);
            Some((
                tens * 10 + ones.unwrap_or(0),
                2 + usize::from(ones.is_some()),
            ))
        }
        (Some(n), false) => Some((n, 1)),
        (None, true) => {
            let ones = unit(at + 1);
            Some((10 + ones.unwrap_or(0), 1 + usize::from(ones.is_some())))
        }
        _ => None,
    }
}

/// 一 … 六 and 日/天 after 周 or 星期: Monday 0 … Sunday 6.
fn weekday(c: Option<&char>) -> Option<u32> {
    match c? {
        '日' | '天' => Some(6),
        c => "一二三四五六"
            .chars()
            .position(|d| d == *c)
            .map(|d| d as u32),
    }
}

/// The week word after 上/这/本/下 (with an optional 个): its length.
fn week_word(chars: &[char], at: usize) -> Option<usize> {
    let skip = usize::from(chars.get(at) == Some(&'个'));
    ["星期", "礼拜", "周"]
        .iter()
        .find(|w| starts(chars, at + skip, w))
        .map(|w| skip + w.chars().count())
}

fn match_at(chars: &[char], at: usize, anchor: Day, found: &mut impl FnMut(Span)) -> usize {
    let day = |days: i32| Span::Day(anchor.plus(days));
    for (word, days) in [
        ("大前天", -3),
        ("前天", -2),
        ("昨天", -1),
        ("昨晚", -1),
        ("昨日", -1),
        ("昨夜", -1),
        ("今天", 0),
        ("今晚", 0),
        ("今早", 0),
        ("今日", 0),
        ("明天", 1),
        ("明日", 1),
        ("明晚", 1),
        ("后天", 2),
    ] {
        if starts(chars, at, word) {
            found(day(days));
            return word.chars().count();
        }
    }
    for (word, years) in [("前年", -2), ("去年", -1), ("今年", 0), ("明年", 1)] {
        if starts(chars, at, word) {
            found(Span::year_of(anchor, years));
            return 2;
        }
    }

    // 上周, 上个星期五, 本周末, 下个月, 上月.
    let step = match chars[at] {
        '上' => Some(-1),
        '这' | '本' => Some(0),
        '下' => Some(1),
        _ => None,
    };
    if let Some(step) = step {
        if let Some(length) = week_word(chars, at + 1) {
            let end = at + 1 + length;
            if chars.get(end) == Some(&'末') {
                weekend(anchor, step).into_iter().for_each(&mut *found);
                return end + 1 - at;
            }
            if let Some(weekday) = weekday(chars.get(end)) {
                let monday = anchor.monday().plus(step * 7);
                found(Span::Day(monday.plus(weekday as i32)));
                return end + 1 - at;
            }
            found(Span::week_of(anchor, step));
            return end - at;
        }
        for word in ["个月", "月"] {
            if starts(chars, at + 1, word) {
                found(Span::month_of(anchor, step));
                return 1 + word.chars().count();
            }
        }
    }

    let Some((n, digits)) = number(chars, at) else {
        return 0;
    };
    // Numbers inside longer ones ("12345") or after 第 ("第三天") are no dates.
    if at > 0 && (number(chars, at - 1).is_some() || chars[at - 1] == '第') {
        return digits;
    }
    let next = at + digits;
    // 三天前, 两个星期前, 五个月前, 十年前.
    let ago = |unit_end: usize| chars.get(unit_end) == Some(&'前');
    let n_i = n as i32;
    if (starts(chars, next, "天") || starts(chars, next, "日")) && ago(next + 1) {
        found(day(-n_i));
        return digits + 2;
    }
    if let Some(length) = week_word(chars, next)
        && ago(next + length)
    {
        found(Span::week_of(anchor, -n_i));
        return digits + length + 1;
    }
    if starts(chars, next, "个月") && ago(next + 2) {
        found(Span::month_of(anchor, -n_i));
        return digits + 3;
    }
    if starts(chars, next, "年") && ago(next + 1) {
        found(Span::year_of(anchor, -n_i));
        return digits + 2;
    }

    // 2022年5月1日, 2022年5月, 2022年.
    if digits == 4 && starts(chars, next, "年") {
        let year = n as i32;
        if let Some((month, used)) = number(chars, next + 1)
            && (1..=12).contains(&month)
            && starts(chars, next + 1 + used, "月")
        {
            let after_month = next + 2 + used;
            if let Some((date, taken)) = date_of(chars, after_month) {
                if let Some(day) = Day::from_civil(year, month, date) {
                    found(Span::Day(day));
                }
                return after_month + taken - at;
            }
            found(Span::Month(year, month));
            return after_month - at;
        }
        found(Span::Year(year));
        return digits + 1;
    }
    // 5月1日 / 5月1号 / 5月: the one nearest the anchor.
    if (1..=12).contains(&n) && starts(chars, next, "月") {
        let after_month = next + 1;
        if let Some((date, taken)) = date_of(chars, after_month) {
            if let Some(day) = nearest_day(anchor, n, date) {
                found(Span::Day(day));
            }
            return after_month + taken - at;
        }
        found(nearest_month(anchor, n));
        return after_month - at;
    }
    // A bare 15号 is no date here: it also numbers buildings and lines (3号楼).
    digits
}

/// A day of the month at `at`, "1日" or "1号": its number and length.
fn date_of(chars: &[char], at: usize) -> Option<(u32, usize)> {
    let (date, used) = number(chars, at)?;
    let mark = chars.get(at + used)?;
    ((1..=31).contains(&date) && (*mark == '日' || *mark == '号')).then_some((date, used + 1))
}
