//! Recall with a calendar: lines found by the day they were said and the days
//! their words name.

use std::sync::Arc;

use super::*;
use crate::memory::Calendar;
use crate::memory::message::{ChatMessage, LogIndex, Role};

/// Unix seconds at noon of a day.
fn noon(y: i32, m: u32, d: u32) -> f64 {
    let calendar = Calendar::starting_on(y, m, d).unwrap();
    -calendar.unix_epoch + 43_200.0
}

/// `(day, line)` pairs, player and NPC alternating.
fn dated_log(lines: &[(f64, &str)]) -> Vec<ChatMessage> {
    lines
        .iter()
        .enumerate()
        .map(|(i, &(timestamp, text))| ChatMessage {
            role: if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            },
            content: Arc::from(text),
            index: i as LogIndex,
            timestamp,
            origin: Default::default(),
            speaker: None,
        })
        .collect()
}

fn first_hit(log: &[ChatMessage], calendar: Option<Calendar>, question: &str) -> LogIndex {
    let mut index = RecallIndex::from_log_with_calendar(log, calendar);
    let config = RecallConfig {
        calendar,
        neighbours: false,
        ..RecallConfig::enabled()
    };
    let query = RecallQuery {
        now: log.last().unwrap().timestamp,
        ..RecallQuery::new(question)
    };
    index.query(&query, log, &config)[0].index
}

/// Other days' films, and a line the morning after that says only "last night".
fn film_log() -> Vec<ChatMessage> {
    let (april, may_2, june) = (noon(2022, 4, 20), noon(2022, 5, 2), noon(2022, 6, 9));
    dated_log(&[
        (
            april,
            "Joanna, I watched a documentary about turtles, it was great.",
        ),
        (april, "Nice! I watched a comedy with my brother."),
        (
            may_2,
            "I took your advice and watched the Lord of the Rings trilogy last night!",
        ),
        (may_2, "Awesome, told you it was good."),
        (june, "We watched the fireworks from the roof, Joanna."),
        (june, "I love fireworks, I watched them too."),
    ])
}

#[test]
fn a_question_naming_a_date_finds_the_last_night_line_of_the_next_day() {
    let log = film_log();
    let question = "What movie did Joanna watch on 1 May, 2022?";
    assert_eq!(first_hit(&log, Some(Calendar::UNIX), question), 2);
    // Without a calendar nothing knows the date: "Joanna" wins.
    assert_ne!(first_hit(&log, None, question), 2);
}

#[test]
fn a_question_naming_a_month_finds_that_month() {
    let (april, june) = (noon(2022, 4, 20), noon(2022, 6, 9));
    let log = dated_log(&[
        (april, "I watched a documentary about turtles."),
        (april, "Sounds fun."),
        (june, "We watched the fireworks from the roof."),
        (june, "Lovely."),
    ]);
    let calendar = Some(Calendar::UNIX);
    assert_eq!(first_hit(&log, calendar, "What did you watch in June?"), 2);
    assert_eq!(
        first_hit(&log, calendar, "What did you watch in April 2022?"),
        0
    );
}

#[test]
fn a_chinese_question_naming_a_date_finds_the_yesterday_line() {
    let (april, may_2) = (noon(2022, 4, 20), noon(2022, 5, 2));
    let log = dated_log(&[
        (april, "我看了一部纪录片，很好看。"),
        (april, "我也看了一部电影。"),
        (may_2, "我昨天看了指环王三部曲！"),
        (may_2, "太好了。"),
        (may_2, "你今天过得怎么样？"),
        (may_2, "今天没看。"),
    ]);
    assert_eq!(
        first_hit(&log, Some(Calendar::UNIX), "2022年5月1日看了什么？"),
        2
    );
}

#[test]
fn a_when_question_favours_the_line_that_says_when() {
    let day = noon(2023, 8, 9);
    let log = dated_log(&[
        (day, "The game in Seattle was intense."),
        (day, "Sounds like a great game."),
        (day, "I played a game in Seattle last week."),
        (day, "Nice one."),
    ]);
    let question = "When was John in Seattle for a game?";
    assert_eq!(first_hit(&log, Some(Calendar::UNIX), question), 2);
    assert_eq!(first_hit(&log, None, question), 0);
}

#[test]
fn without_a_calendar_the_index_is_the_plain_one() {
    let log = film_log();
    let plain = RecallIndex::from_log(&log);
    let none = RecallIndex::from_log_with_calendar(&log, None);
    assert_eq!(plain.term_count(), none.term_count());
    assert_eq!(none.calendar(), None);
    let dated = RecallIndex::from_log_with_calendar(&log, Some(Calendar::UNIX));
    assert!(dated.term_count() > plain.term_count());
}

#[test]
fn a_memory_rebuilds_its_index_when_the_calendar_changes() {
    use crate::memory::{MemoryConfig, NpcMemory, PersonaPrompt, SummaryStyle};
    let persona = PersonaPrompt {
        name: "Nate".into(),
        text: "You are Nate.".into(),
        style: SummaryStyle::english(),
    };
    let mut config = MemoryConfig::with_window(4);
    config.features.recall.enabled = true;
    let mut memory = NpcMemory::new(persona, &config);
    let may_2 = noon(2022, 5, 2);
    memory
        .layers()
        .record(Role::User, "I watched a film last night.", may_2);
    assert_eq!(memory.context.recall.calendar(), None);
    config.features.recall.calendar = Some(Calendar::UNIX);
    let _ = memory.layers().reconfigure(&config);
    assert_eq!(memory.context.recall.calendar(), Some(Calendar::UNIX));
    assert_eq!(
        memory.context.recall.len(),
        1,
        "the old line is indexed again"
    );
    memory
        .layers()
        .record(Role::Assistant, "Which one?", may_2 + 60.0);
    assert_eq!(memory.context.recall.len(), 2);
}
