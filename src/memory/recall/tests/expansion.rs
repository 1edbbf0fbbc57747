//! Query expansion and the NPC's own name, end to end.

use std::sync::Arc;

use super::FILLER;
use super::*;
use crate::memory::message::{ChatMessage, LogIndex, Role};

/// Player and NPC alternate, the player first.
fn conversation(lines: &[&str]) -> Vec<ChatMessage> {
    lines
        .iter()
        .enumerate()
        .map(|(i, text)| ChatMessage {
            role: if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            },
            content: Arc::from(*text),
            index: i as LogIndex,
            timestamp: i as f64,
            origin: Default::default(),
            speaker: None,
        })
        .collect()
}

/// The first hop names the brother; only his name leads to the second, at index 4.
fn two_hops() -> Vec<&'static str> {
    let mut lines = vec![
        "My brother is called Tomas, he is two years older.",
        "A good name.",
    ];
    lines.extend(&FILLER[..2]);
    lines.extend([
        "Tomas repairs the pumps down at the old mill.",
        "Busy hands.",
    ]);
    lines.extend(&FILLER[2..]);
    lines.extend([
        "Snow blocked the eastern gate overnight.",
        "The dogs barked at something near the fence.",
    ]);
    lines
}

fn recall(log: &[ChatMessage], line: &str, config: &RecallConfig) -> Vec<LogIndex> {
    let mut index = RecallIndex::from_log(log);
    let query = RecallQuery::new(line);
    let hits = index.query(&query, log, config);
    hits.iter().map(|hit| hit.index).collect()
}

fn two_hop_config(expansion_hits: usize) -> RecallConfig {
    RecallConfig {
        max_messages: 2,
        neighbours: false,
        expansion_hits,
        ..RecallConfig::enabled()
    }
}

#[test]
fn the_second_hop_is_found_through_the_first_hits_name() {
    let log = conversation(&two_hops());
    let line = "What does my brother do for a living?";
    assert_eq!(recall(&log, line, &two_hop_config(0)), [0]);
    assert_eq!(recall(&log, line, &two_hop_config(1)), [0, 4]);
}

#[test]
fn expansion_says_which_lent_term_matched() {
    let log = conversation(&two_hops());
    let mut index = RecallIndex::from_log(&log);
    let query = RecallQuery::new("What does my brother do for a living?");
    let hits = index.query(&query, &log, &two_hop_config(1));
    assert_eq!(
        hits[1].reason,
        RecallReason::Matched {
            // Terms are normalized: "Tomas" folds like a plural.
            terms: vec![Arc::from("toma")]
        }
    );
}

#[test]
fn a_term_of_the_first_hit_alone_is_not_lent() {
    // "older" is in no other line: lending it could only lift line 0 again.
    let log = conversation(&two_hops());
    let config = RecallConfig {
        expansion_terms: 1,
        ..two_hop_config(1)
    };
    assert_eq!(recall(&log, "Is my brother older?", &config), [0, 4]);
}

/// A line that addresses the NPC by name, the one fact it said, and filler.
fn addressed() -> Vec<ChatMessage> {
    let mut lines = vec![
        "Thanks, Mira!",
        "I keep the seeds in the cellar, where it stays cool.",
    ];
    lines.extend(&two_hops()[2..]);
    conversation(&lines)
}

fn own_name_query(line: &str) -> RecallQuery<'_> {
    RecallQuery {
        own_name: "Mira",
        ..RecallQuery::new(line)
    }
}

#[test]
fn the_npcs_own_name_leaves_the_query_when_skipped() {
    let log = addressed();
    let query = own_name_query("Mira, where are the seeds?");
    let mut config = RecallConfig {
        max_messages: 2,
        neighbours: false,
        ..RecallConfig::enabled()
    };
    let mut index = RecallIndex::from_log(&log);
    let kept: Vec<_> = index.query(&query, &log, &config);
    // Kept, the short line that only addresses her outranks the fact.
    assert_eq!(kept.iter().map(|hit| hit.index).collect::<Vec<_>>(), [0, 1]);
    config.skip_own_name = true;
    let skipped = index.query(&query, &log, &config);
    assert_eq!(skipped.iter().map(|hit| hit.index).collect::<Vec<_>>(), [1]);
}

#[test]
fn a_query_of_the_own_name_alone_keeps_it() {
    let log = addressed();
    let config = RecallConfig {
        skip_own_name: true,
        ..RecallConfig::enabled()
    };
    let mut index = RecallIndex::from_log(&log);
    let hits = index.query(&own_name_query("Mira?"), &log, &config);
    assert_eq!(hits.first().map(|hit| hit.index), Some(0));
}
