//! Date expressions resolved against the day a line was said, with expected
//! dates worked out by hand (month, year and leap-day boundaries included).

use super::span::Span;
use super::{asks_when, for_each_date_term, scan};
use crate::memory::calendar::Day;

fn day(y: i32, m: u32, d: u32) -> Day {
    Day::from_civil(y, m, d).unwrap()
}

fn spans(text: &str, anchor: Day) -> Vec<Span> {
    let mut found = Vec::new();
    scan(text, anchor, |span| found.push(span));
    found
}

fn one_day(text: &str, anchor: Day) -> (i32, u32, u32) {
    match spans(text, anchor)[..] {
        [Span::Day(found)] => found.civil(),
        ref other => panic!("{text:?}: {other:?}"),
    }
}

#[test]
fn relative_days_cross_month_and_year_boundaries() {
    // 2 May 2022, a Monday: LoCoMo's "last night" line.
    let may_2 = day(2022, 5, 2);
    assert_eq!(one_day("I watched it last night!", may_2), (2022, 5, 1));
    assert_eq!(one_day("Yesterday was great", may_2), (2022, 5, 1));
    assert_eq!(one_day("the day before yesterday", may_2), (2022, 4, 30));
    assert_eq!(one_day("two days ago", may_2), (2022, 4, 30));
    assert_eq!(one_day("3 days ago", may_2), (2022, 4, 29));
    assert_eq!(one_day("this morning", may_2), (2022, 5, 2));
    assert_eq!(one_day("see you tomorrow", may_2), (2022, 5, 3));
    // New Year.
    let jan_1 = day(2023, 1, 1);
    assert_eq!(one_day("yesterday", jan_1), (2022, 12, 31));
    assert_eq!(spans("last month", jan_1), [Span::Month(2022, 12)]);
    assert_eq!(spans("last year", jan_1), [Span::Year(2022)]);
    assert_eq!(
        spans("next month", day(2022, 12, 5)),
        [Span::Month(2023, 1)]
    );
    assert_eq!(
        spans("a couple of months ago", jan_1),
        [Span::Month(2022, 11)]
    );
}

#[test]
fn leap_days_resolve_both_ways() {
    // 1 March in a leap year: yesterday was 29 February.
    assert_eq!(one_day("yesterday", day(2024, 3, 1)), (2024, 2, 29));
    assert_eq!(one_day("yesterday", day(2023, 3, 1)), (2023, 2, 28));
    assert_eq!(one_day("tomorrow", day(2024, 2, 28)), (2024, 2, 29));
    assert_eq!(
        one_day("on 29 February 2024", day(2024, 3, 10)),
        (2024, 2, 29)
    );
    // No 29 February in 2023: not a date.
    assert!(spans("on 29 February 2023", day(2023, 3, 10)).is_empty());
    // "On the 29th" said on 1 March 2023 means 29 January: February had none.
    assert_eq!(one_day("on the 29th", day(2023, 3, 1)), (2023, 1, 29));
    assert_eq!(one_day("on the 15th", day(2023, 8, 17)), (2023, 8, 15));
}

#[test]
fn weeks_and_weekdays() {
    // 15 April 2022 was a Friday.
    let friday = day(2022, 4, 15);
    assert_eq!(spans("last week", friday), [Span::Week(day(2022, 4, 4))]);
    assert_eq!(spans("this week", friday), [Span::Week(day(2022, 4, 11))]);
    assert_eq!(
        spans("two weeks ago", friday),
        [Span::Week(day(2022, 3, 28))]
    );
    // "last Friday" on a Friday is a week ago.
    assert_eq!(one_day("last Friday", friday), (2022, 4, 8));
    assert_eq!(one_day("last Monday", friday), (2022, 4, 11));
    assert_eq!(one_day("next Monday", friday), (2022, 4, 18));
    assert_eq!(
        spans("last weekend", friday),
        [Span::Day(day(2022, 4, 9)), Span::Day(day(2022, 4, 10))]
    );
    // On a Sunday the weekend is not over: "last weekend" is the one before.
    assert_eq!(
        spans("last weekend", day(2022, 4, 17)),
        [Span::Day(day(2022, 4, 9)), Span::Day(day(2022, 4, 10))]
    );
}

#[test]
fn named_dates_in_questions() {
    let asked = day(2022, 11, 9);
    assert_eq!(
        one_day("What movie did Joanna watch on 1 May, 2022?", asked),
        (2022, 5, 1)
    );
    assert_eq!(one_day("on May 1st, 2022", asked), (2022, 5, 1));
    assert_eq!(one_day("the 1st of May 2022", asked), (2022, 5, 1));
    assert_eq!(one_day("2022-05-01", asked), (2022, 5, 1));
    assert_eq!(spans("in January 2022", asked), [Span::Month(2022, 1)]);
    assert_eq!(spans("in 2019", asked), [Span::Year(2019)]);
    // A month alone is the nearest one.
    assert_eq!(
        spans("Which spot did she visit in May?", asked),
        [Span::Month(2022, 5)]
    );
    // One year named dates every day that has none.
    assert_eq!(
        spans("between August 11 and August 15 2023", asked),
        [Span::Day(day(2023, 8, 11)), Span::Day(day(2023, 8, 15))]
    );
}

#[test]
fn words_that_only_look_like_dates_are_not() {
    let anchor = day(2022, 5, 2);
    assert!(spans("You may 2 go now", anchor).is_empty());
    assert!(spans("I may go in may", anchor).is_empty());
    assert!(spans("We were 2022 people", anchor).is_empty());
    assert!(spans("The last time we met", anchor).is_empty());
    assert!(spans("march on, soldier", anchor).is_empty());
}

#[test]
fn chinese_relative_and_named_dates() {
    // 2022年5月2日, a Monday.
    let may_2 = day(2022, 5, 2);
    assert_eq!(one_day("我昨天看了电影", may_2), (2022, 5, 1));
    assert_eq!(one_day("昨晚下雨了", may_2), (2022, 5, 1));
    assert_eq!(one_day("前天", may_2), (2022, 4, 30));
    assert_eq!(one_day("三天前", may_2), (2022, 4, 29));
    assert_eq!(one_day("明天见", may_2), (2022, 5, 3));
    assert_eq!(spans("上周", may_2), [Span::Week(day(2022, 4, 25))]);
    assert_eq!(spans("上个星期", may_2), [Span::Week(day(2022, 4, 25))]);
    assert_eq!(one_day("上周五", may_2), (2022, 4, 29));
    assert_eq!(spans("上个月", may_2), [Span::Month(2022, 4)]);
    assert_eq!(spans("去年", may_2), [Span::Year(2021)]);
    assert_eq!(spans("两个月前", may_2), [Span::Month(2022, 3)]);
    assert_eq!(one_day("2022年5月1日", may_2), (2022, 5, 1));
    assert_eq!(one_day("5月1号", may_2), (2022, 5, 1));
    assert_eq!(spans("2022年5月", may_2), [Span::Month(2022, 5)]);
    assert_eq!(one_day("十二月三十一日", day(2023, 1, 2)), (2022, 12, 31));
    // A count of months is no month name, and 第三天 is no date.
    assert!(spans("三个月", may_2).is_empty());
    assert!(spans("第三天", may_2).is_empty());
}

#[test]
fn questions_asking_when() {
    assert!(asks_when("When did Nate win his third tourney?"));
    assert!(asks_when("In what year did she move?"));
    assert!(asks_when("How long ago was the trip?"));
    assert!(asks_when("她什么时候去的北京？"));
    // "when" as a conjunction asks who, not when.
    assert!(!asks_when("Who supports Caroline when she has a bad day?"));
    assert!(!asks_when("What movie did Joanna like?"));
}

#[test]
fn a_dated_line_gets_the_terms_of_its_day_and_the_dated_term() {
    let mut terms = Vec::new();
    let mut buffer = String::new();
    let dated = for_each_date_term(
        "I watched it last night",
        day(2022, 5, 2),
        &mut buffer,
        |t| terms.push(t.to_owned()),
    );
    assert!(dated);
    assert_eq!(
        terms,
        [
            "d:2022-05-01",
            "w:2022-04-25",
            "m:2022-05",
            "y:2022",
            super::DATED_TERM
        ]
    );
    let undated = for_each_date_term("hello there", day(2022, 5, 2), &mut buffer, |_| {
        panic!("no terms")
    });
    assert!(!undated);
}

proptest::proptest! {
    #[test]
    fn the_scanner_never_panics_on_any_text(text in "\\PC{0,80}", days in -800_000i32..800_000) {
        let anchor = Day(days);
        scan(&text, anchor, |_| {});
        let _ = asks_when(&text);
    }

    #[test]
    fn date_like_text_never_panics(
        words in proptest::collection::vec(
            proptest::sample::select(vec![
                "last", "next", "this", "the", "day", "before", "yesterday", "week", "weekend",
                "May", "may", "29", "31st", "0", "2024", "1900", "-", "ago", "a", "couple", "of",
                "Friday", "上", "个", "周", "末", "月", "年", "前", "十", "二", "号", "日", "99",
                "é", "🙂", "\u{200f}", "２０２４",
            ]),
            0..12,
        ),
        days in -800_000i32..800_000,
    ) {
        let text = words.concat();
        scan(&text, Day(days), |_| {});
        scan(&words.join(" "), Day(days), |_| {});
    }
}
