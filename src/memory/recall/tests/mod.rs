//! Recall end to end: logs in, hits out.

mod dated;
mod expansion;
mod notes;

use std::sync::Arc;

use super::*;
use crate::memory::message::{ChatMessage, LogIndex, Role};

fn message(index: usize, role: Role, text: &str) -> ChatMessage {
    ChatMessage {
        role,
        content: Arc::from(text),
        index: index as LogIndex,
        timestamp: index as f64,
        origin: Default::default(),
        speaker: None,
    }
}

/// Player and NPC alternate, the player first.
fn conversation(lines: &[&str]) -> Vec<ChatMessage> {
    lines
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            message(i, role, text)
        })
        .collect()
}

pub(super) const FILLER: &[&str] = &[
    "The corridor lights keep flickering near the storage area.",
    "Check the water filters before the night cycle starts.",
    "I found some canned food and two batteries in the locker.",
    "The radio only picks up static on every channel today.",
    "Door seven is jammed again, we need a crowbar for it.",
    "Keep your voice down, the ventilation carries sound far.",
    "The generator needs fuel soon or the heaters will stop.",
    "I counted the medical kits twice and we still have nine.",
];

/// Turns 0-3 set up a fact, then `filler` turns follow.
fn log_with_early_fact(filler: usize) -> Vec<ChatMessage> {
    let mut lines = vec![
        "Hello, is anyone there?",
        "ECHO-7 online. Identify yourself.",
        "I'm Alex, and I'm looking for my sister Mira.",
        "Noted. Where did you last see your sister?",
        "Mira went to the northern shelter before the storm.",
    ];
    lines.extend(FILLER.iter().cycle().take(filler));
    conversation(&lines)
}

fn window_query<'a>(line: &'a str, log: &[ChatMessage], window: usize) -> RecallQuery<'a> {
    let end = log.len() as LogIndex;
    RecallQuery {
        exclude: end.saturating_sub(window as LogIndex)..end,
        now: end as f64,
        ..RecallQuery::new(line)
    }
}

fn indices(hits: &[RecallHit]) -> Vec<LogIndex> {
    hits.iter().map(|hit| hit.index).collect()
}

fn matched(hit: &RecallHit) -> Vec<&str> {
    match &hit.reason {
        RecallReason::Matched { terms } => terms.iter().map(|term| &**term).collect(),
        RecallReason::Neighbour { of } => panic!("expected a match, got a neighbour of {of}"),
    }
}

#[test]
fn english_fact_from_turn_three_is_recalled_after_500_filler_turns() {
    let log = log_with_early_fact(500);
    let mut index = RecallIndex::from_log(&log);
    let config = RecallConfig {
        neighbours: false,
        ..RecallConfig::enabled()
    };
    let hits = index.query(
        &window_query("Do you remember where my sister went?", &log, 20),
        &log,
        &config,
    );
    // The fact (turns 2 and 4) and the NPC's question about it, nothing from the filler.
    let mut top = indices(&hits[..3]);
    top.sort_unstable();
    assert_eq!(top, [2, 3, 4]);
    assert_eq!(hits[0].index, 4);
    assert_eq!(matched(&hits[0]), ["went"]);
    assert!(hits.iter().any(|hit| matched(hit).contains(&"sister")));
}

/// Chinese lines between the fact and the question, none sharing its words.
const CHINESE_FILLER: &[&str] = &[
    "仓库的灯一直在闪。",
    "今天的无线电只有杂音。",
    "发电机需要加油了。",
    "七号门又卡住了，需要撬棍。",
    "我们还有九个医疗包。",
    "晚上记得检查滤水器。",
];

#[test]
fn chinese_fact_is_recalled_by_a_later_question() {
    let mut lines = vec![
        "你好，有人吗？",
        "这里是回声七号。",
        "我叫小明，我的妹妹在北方的避难所。",
        "记住了。",
    ];
    lines.extend(CHINESE_FILLER.iter().cycle().take(300));
    let log = conversation(&lines);
    let mut index = RecallIndex::from_log(&log);
    let hits = index.query(
        &window_query("你还记得我妹妹在哪里吗？", &log, 20),
        &log,
        &RecallConfig::enabled(),
    );
    assert_eq!(hits[0].index, 2);
    assert!(matched(&hits[0]).contains(&"妹妹"));
}

/// `lines`, then 40 filler lines, indexed, and `question` asked after them.
fn chinese_log(
    lines: &[&'static str],
    question: &'static str,
) -> (Vec<ChatMessage>, RecallIndex, RecallQuery<'static>) {
    let mut all = lines.to_vec();
    all.extend(CHINESE_FILLER.iter().cycle().take(40));
    let log = conversation(&all);
    let index = RecallIndex::from_log(&log);
    let query = window_query(question, &log, 20);
    (log, index, query)
}

#[test]
fn a_chinese_question_sharing_single_characters_finds_its_line() {
    // The line and the question share no bigram ("哪间" is not "那间", "我住" not
    // "你住"), only the characters 住 and 间.
    let (log, mut index, query) = chinese_log(
        &["有空房吗？", "你住楼梯顶上那间，有圆窗户的那间。"],
        "我住的是哪间？",
    );
    let bigrams_only = RecallConfig {
        cjk_unigram_weight: 0.0,
        ..RecallConfig::enabled()
    };
    assert!(!indices(&index.query(&query, &log, &bigrams_only)).contains(&1));
    let hits = index.query(&query, &log, &RecallConfig::enabled());
    assert_eq!(hits[0].index, 1);
    assert_eq!(matched(&hits[0]), ["u:住", "u:间"]);
}

#[test]
fn a_chinese_question_s_grammar_alone_recalls_nothing() {
    // "是在" is the only term line 1 shares with the question: two function
    // characters, which match lines on any topic.
    let (log, mut index, query) =
        chinese_log(&["药箱放在地窖里。", "你是在说我吗？"], "药箱是在哪里？");
    let config = RecallConfig {
        neighbours: false,
        ..RecallConfig::enabled()
    };
    let hits = index.query(&query, &log, &config);
    assert_eq!(indices(&hits), [0]);
    let grammar_kept = RecallConfig {
        cjk_function_pair_weight: 1.0,
        ..config
    };
    let hits = index.query(&query, &log, &grammar_kept);
    assert!(indices(&hits).contains(&1));
    // English has no function characters: its terms are weighed as before.
    let english = conversation(&["the generator is in the basement", "ok"]);
    let mut index = RecallIndex::from_log(&english);
    let query = RecallQuery::new("where is the generator?");
    assert_eq!(
        index.query(&query, &english, &config),
        index.query(&query, &english, &grammar_kept)
    );
}

#[test]
fn mixed_script_lines_match_on_both_scripts() {
    let log = conversation(&["我的朋友Alex在仓库", "好的", "天气很好", "是的"]);
    let mut index = RecallIndex::from_log(&log);
    let hits = index.query(
        &RecallQuery::new("Alex还在仓库吗"),
        &log,
        &RecallConfig::enabled(),
    );
    assert_eq!(hits[0].index, 0);
    // The bigrams, then the single characters (RecallConfig::cjk_unigram_weight).
    assert_eq!(matched(&hits[0]), ["alex", "在仓", "仓库", "u:仓", "u:库"]);
}

#[test]
fn the_window_and_the_new_line_are_never_recalled() {
    let log = conversation(&[
        "The code is 4711.",
        "Understood.",
        "Remember the code 4711?",
        "Yes.",
        "What was the code?",
    ]);
    let mut index = RecallIndex::from_log(&log);
    let query = RecallQuery {
        exclude: 2..4,
        line_index: Some(4),
        ..RecallQuery::new("What was the code?")
    };
    let hits = index.query(&query, &log, &RecallConfig::enabled());
    assert_eq!(indices(&hits), [0, 1]);
    assert!(hits.iter().all(|hit| !(2..5).contains(&hit.index)));
}

#[test]
fn neighbours_come_with_the_match_they_belong_to() {
    let log = conversation(&[
        "Where should I store the fuel?",
        "In the blue tank room.",
        "Thanks.",
        "Anything else?",
        "The fuel pump is broken.",
        "We will fix it.",
    ]);
    let mut index = RecallIndex::from_log(&log);
    let hits = index.query(&RecallQuery::new("fuel"), &log, &RecallConfig::enabled());
    // The shorter line mentioning fuel wins; each match brings its partners.
    let reasons: Vec<(LogIndex, Option<LogIndex>)> = hits
        .iter()
        .map(|hit| match hit.reason {
            RecallReason::Matched { .. } => (hit.index, None),
            RecallReason::Neighbour { of } => (hit.index, Some(of)),
        })
        .collect();
    assert_eq!(reasons[..2], [(0, None), (4, None)]);
    assert!(reasons.contains(&(1, Some(0))));
    assert!(reasons.contains(&(3, Some(4))));
    assert!(reasons.contains(&(5, Some(4))));
    for hit in &hits {
        if let RecallReason::Neighbour { of } = hit.reason {
            let matched_score = hits.iter().find(|other| other.index == of).unwrap().score;
            assert!(hit.score <= matched_score);
        }
    }
}

#[test]
fn the_budget_counts_neighbours_and_never_keeps_an_orphan() {
    let log = conversation(&["alpha beta", "one", "alpha", "two", "beta", "three"]);
    let mut index = RecallIndex::from_log(&log);
    let config = RecallConfig {
        max_messages: 3,
        neighbour_weight: 1.0,
        ..RecallConfig::enabled()
    };
    let hits = index.query(&RecallQuery::new("alpha beta"), &log, &config);
    assert_eq!(hits.len(), 3);
    for hit in &hits {
        if let RecallReason::Neighbour { of } = hit.reason {
            assert!(hits.iter().any(|other| other.index == of));
        }
    }
}

#[test]
fn forgotten_messages_never_return() {
    let log = conversation(&["the vault key is under the mat", "ok", "vault key", "sure"]);
    let mut index = RecallIndex::from_log(&log);
    index.forget(0);
    index.forget(3);
    assert!(index.is_forgotten(0));
    assert!(!index.is_forgotten(2));
    let hits = index.query(
        &RecallQuery::new("vault key"),
        &log,
        &RecallConfig::enabled(),
    );
    assert_eq!(indices(&hits), [2, 1]);
}

#[test]
fn access_counts_grow_with_each_recall_and_survive_a_save() {
    let log = conversation(&["the vault key is under the mat", "ok", "weather", "sure"]);
    let mut index = RecallIndex::from_log(&log);
    let config = RecallConfig::enabled();
    for _ in 0..3 {
        index.query(&RecallQuery::new("vault key"), &log, &config);
    }
    assert_eq!(index.access_count(0), 3);
    assert_eq!(index.access_count(1), 3); // as a neighbour
    assert_eq!(index.access_count(2), 0);
    assert_eq!(index.access_count(99), 0);
    index.forget(2);

    let state = index.state();
    assert_eq!(state.forgotten, [2]);
    assert_eq!(state.access_counts, [(0, 3), (1, 3)]);
    let json = serde_json::to_string(&state).unwrap();
    let loaded: RecallState = serde_json::from_str(&json).unwrap();

    // State restored before the log is added, as a load might do it.
    let mut rebuilt = RecallIndex::new();
    rebuilt.restore_state(&loaded);
    for message in &log {
        rebuilt.add(message);
    }
    assert_eq!(rebuilt.state(), state);
    assert_eq!(rebuilt.access_count(0), 3);
    assert!(rebuilt.is_forgotten(2));
}

#[test]
fn ties_are_broken_by_log_order() {
    let log = conversation(&["red door", "red door", "red door", "red door", "red door"]);
    let mut index = RecallIndex::from_log(&log);
    let config = RecallConfig {
        neighbours: false,
        player_weight: 1.0,
        ..RecallConfig::enabled()
    };
    for _ in 0..3 {
        let hits = index.query(&RecallQuery::new("red door"), &log, &config);
        assert_eq!(indices(&hits), [0, 1, 2, 3, 4]);
    }
}

#[test]
fn the_player_is_preferred_and_recent_messages_a_little() {
    let log = conversation(&[
        "signal tower",
        "signal tower",
        "signal tower",
        "signal tower",
    ]);
    let mut index = RecallIndex::from_log(&log);
    let config = RecallConfig {
        neighbours: false,
        ..RecallConfig::enabled()
    };
    let query = RecallQuery {
        now: 3.0,
        ..RecallQuery::new("signal tower")
    };
    assert_eq!(indices(&index.query(&query, &log, &config)), [2, 0, 3, 1]);
}

#[test]
fn context_adds_terms_at_a_lower_weight() {
    let log = conversation(&[
        "the pump in the east wing",
        "fine",
        "the pump in the west wing",
        "fine",
        "we talked about the east wing",
        "and the weather",
    ]);
    let mut index = RecallIndex::from_log(&log);
    let context = ["we talked about the east wing"];
    let query = RecallQuery {
        context: &context,
        exclude: 4..6,
        ..RecallQuery::new("is the pump fixed?")
    };
    let config = RecallConfig {
        neighbours: false,
        ..RecallConfig::enabled()
    };
    let hits = index.query(&query, &log, &config);
    assert_eq!(indices(&hits), [0, 2]);
    assert_eq!(matched(&hits[0]), ["pump", "east", "wing"]);
    let no_context = RecallConfig {
        context_messages: 0,
        ..config
    };
    let hits = index.query(&query, &log, &no_context);
    assert_eq!(matched(&hits[0]), ["pump"]);
}

#[test]
fn system_messages_are_never_recalled() {
    let log = vec![
        message(0, Role::System, "You are ECHO-7 in the bunker."),
        message(1, Role::User, "Tell me about the bunker."),
        message(2, Role::Assistant, "It is deep."),
    ];
    let mut index = RecallIndex::from_log(&log);
    let hits = index.query(&RecallQuery::new("bunker"), &log, &RecallConfig::enabled());
    assert_eq!(indices(&hits), [1, 2]);
}

#[test]
fn disabled_recall_returns_nothing() {
    let log = log_with_early_fact(10);
    let mut index = RecallIndex::from_log(&log);
    let hits = index.query(&RecallQuery::new("sister"), &log, &RecallConfig::default());
    assert!(hits.is_empty());
    assert_eq!(index.access_count(4), 0);
}

#[test]
fn incremental_adds_match_a_rebuild_and_repeats_are_ignored() {
    let log = log_with_early_fact(200);
    let mut incremental = RecallIndex::new();
    for message in &log {
        incremental.add(message);
        incremental.add(message);
    }
    let mut rebuilt = RecallIndex::from_log(&log);
    assert_eq!(incremental.len(), log.len());
    assert_eq!(incremental.term_count(), rebuilt.term_count());
    let query = window_query("sister shelter storm", &log, 20);
    let config = RecallConfig::enabled();
    assert_eq!(
        incremental.query(&query, &log, &config),
        rebuilt.query(&query, &log, &config)
    );
}

#[test]
fn hostile_input_does_not_panic() {
    let megabyte = "x".repeat(1 << 20);
    let spaced_megabyte = "word ".repeat(200_000);
    let lines = [
        "",
        "?!?!... ,,, ---",
        "🙂🔥🙂 👍🏽 \u{200d}\u{0301}",
        &megabyte,
        &spaced_megabyte,
        "\u{0}\u{7f}\u{feff}",
        "ＡＢＣ１２３",
        "한국어 텍스트",
    ];
    let log = conversation(&lines);
    let mut index = RecallIndex::from_log(&log);
    let config = RecallConfig::enabled();
    for line in lines {
        let context = [line, line];
        let query = RecallQuery {
            context: &context,
            exclude: LogIndex::MAX - 1..LogIndex::MAX,
            line_index: Some(LogIndex::MAX),
            now: f64::INFINITY,
            ..RecallQuery::new(line)
        };
        let hits = index.query(&query, &log, &config);
        assert!(hits.len() <= config.max_messages);
    }
    // A log the index has not seen, and an index the log does not cover.
    assert!(
        RecallIndex::new()
            .query(&RecallQuery::new("x"), &log, &config)
            .is_empty()
    );
    let hits = index.query(&RecallQuery::new("word"), &[], &config);
    assert!(hits.is_empty());
    index.forget(LogIndex::MAX);
    assert!(index.memory_bytes() > 0);
}

#[test]
fn a_message_with_a_huge_index_is_skipped() {
    let mut index = RecallIndex::new();
    index.add(&message(0, Role::User, "first"));
    let mut far = message(0, Role::User, "far");
    far.index = LogIndex::MAX;
    index.add(&far);
    assert_eq!(index.len(), 1);
}

#[test]
fn nonsense_weights_do_not_panic() {
    let log = log_with_early_fact(50);
    let mut index = RecallIndex::from_log(&log);
    for value in [f32::NAN, f32::INFINITY, -1.0, 0.0, 1e30] {
        let config = RecallConfig {
            neighbour_weight: value,
            context_weight: value,
            player_weight: value,
            recency_weight: value,
            recency_half_life: f64::from(value),
            bm25_k1: value,
            bm25_b: value,
            ..RecallConfig::enabled()
        };
        let context = ["the northern shelter"];
        let query = RecallQuery {
            context: &context,
            now: 10.0,
            ..RecallQuery::new("where is my sister")
        };
        assert!(index.query(&query, &log, &config).len() <= config.max_messages);
    }
}

#[test]
fn a_match_among_matches_outranks_a_lone_one() {
    let log = conversation(&[
        "the boat needs a new engine",
        "fine",
        "I sold the boat yesterday",
        "and the engine went with it",
        "fine",
        "fine",
        "fine",
        "fine",
        "the boat is blue today",
    ]);
    let mut index = RecallIndex::from_log(&log);
    let config = RecallConfig {
        neighbours: false,
        ..RecallConfig::enabled()
    };
    let hits = index.query(&RecallQuery::new("the boat"), &log, &config);
    // Equal BM25 for "sold the boat" and "the boat is blue" (same length), but the
    // first sits in a passage about the boat's engine.
    let position = |index: LogIndex| indices(&hits).iter().position(|&i| i == index);
    assert!(position(2) < position(8));
    let flat = RecallConfig {
        passage_weight: 0.0,
        ..config
    };
    let hits = index.query(&RecallQuery::new("the boat"), &log, &flat);
    assert_eq!(hits[0].score, hits[1].score);
}

#[test]
fn a_term_in_most_messages_weighs_less_than_a_rare_one() {
    let mut lines = vec!["thanks Mira"; 8];
    lines.push("Mira, the lantern is under the bridge");
    lines.push("the lantern oil is low");
    let log = conversation(&lines);
    let mut index = RecallIndex::from_log(&log);
    let config = RecallConfig {
        neighbours: false,
        ..RecallConfig::enabled()
    };
    let hits = index.query(&RecallQuery::new("Mira lantern"), &log, &config);
    // Both lantern lines come before any greeting that only names Mira.
    assert_eq!(&indices(&hits)[..2], [8, 9]);
}

#[test]
fn recent_talk_joins_only_a_short_follow_up() {
    let log = conversation(&[
        "The generator in bay four keeps stalling.",
        "I will log the generator fault.",
        "Anna fixed the water pump last week.",
        "Good to know.",
        "The radio antenna on the roof is bent.",
        "Noted.",
    ]);
    let mut index = RecallIndex::from_log(&log);
    let config = RecallConfig {
        neighbours: false,
        ..RecallConfig::enabled()
    };
    let context = ["Tell me about the generator in bay four."];
    // "And who fixed it?" has one content term: the talk before it says what "it" is.
    let follow_up = RecallQuery {
        context: &context,
        ..RecallQuery::new("And who fixed it?")
    };
    let hits = index.query(&follow_up, &log, &config);
    assert!(hits.iter().any(|h| h.index == 0), "{hits:?}");
    // A full question stands alone; the same talk before it adds nothing.
    let full = RecallQuery {
        context: &context,
        ..RecallQuery::new("Is the radio antenna on the roof still bent?")
    };
    let hits = index.query(&full, &log, &config);
    assert!(
        !hits.is_empty() && hits.iter().all(|h| h.index != 0),
        "{hits:?}"
    );
}
