//! Forgetting for very long games: old, unimportant and unused memories are first
//! compressed, then dropped, the way a weekly memory sweep does it (by age,
//! access count and importance).
//!
//! Only what is *sent* is forgotten: summary segments leave the prompt and old
//! messages leave the recall index. The full log (L2) is never touched, so a save
//! still holds every word and a later policy can bring them back.

use std::ops::Range;

use bevy::reflect::{Reflect, std_traits::ReflectDefault};
use serde::{Deserialize, Serialize};

use super::message::{ChatMessage, LogIndex};
use super::segments::{SegmentPriority, Segments};
use super::tokens::estimate_tokens;

/// When old memories are compressed and dropped.
///
/// Ages count messages, so a game that pauses for a week forgets nothing. A game
/// whose story spans seasons can also age memories by game time (the stamps the
/// memory clock gives messages): set `compress_after_seconds` and
/// `drop_after_seconds`, and a memory is old enough once it passes either its
/// message threshold or its time threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(default)]
pub struct ForgettingPolicy {
    /// Off by default: nothing is ever forgotten.
    pub enabled: bool,
    /// Older than this, normal-priority segments are compacted and recalled
    /// messages already covered by a summary leave the recall index, unless they
    /// were recalled often.
    pub compress_after_messages: u64,
    /// Older than this, low-priority segments are dropped and small talk that was
    /// never recalled leaves the recall index.
    pub drop_after_messages: u64,
    /// Memories recalled at least this often are kept whatever their age.
    pub keep_if_recalled: u32,
    /// Also old enough to compress once this many game seconds older than the
    /// newest message. `None` (the default): ages count messages only.
    pub compress_after_seconds: Option<f64>,
    /// Also old enough to drop once this many game seconds older than the newest
    /// message. `None` (the default): ages count messages only.
    pub drop_after_seconds: Option<f64>,
}

impl Default for ForgettingPolicy {
    fn default() -> Self {
        Self {
            enabled: false,
            compress_after_messages: 2_000,
            drop_after_messages: 5_000,
            keep_if_recalled: 3,
            compress_after_seconds: None,
            drop_after_seconds: None,
        }
    }
}

/// How much a message matters to the forgetting policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Importance {
    /// A few words of small talk ("ok", "haha").
    Low,
    /// Anything else.
    Normal,
    /// Evidence for a pinned fact: never forgotten.
    High,
}

/// What one sweep did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ForgettingReport {
    /// Messages that left the recall index.
    pub forgotten_messages: Vec<LogIndex>,
    /// Segments dropped from the prompt, by the range they covered.
    pub dropped_segments: Vec<Range<LogIndex>>,
    /// Whether old segments are due for compaction.
    pub compaction_due: bool,
}

impl ForgettingReport {
    /// Whether the sweep changed anything.
    pub fn is_empty(&self) -> bool {
        self.forgotten_messages.is_empty() && self.dropped_segments.is_empty()
    }
}

/// What the sweep needs to know about one message besides its text.
pub(crate) struct MessageFacts<'a> {
    pub(crate) access_count: &'a dyn Fn(LogIndex) -> u32,
    pub(crate) is_forgotten: &'a dyn Fn(LogIndex) -> bool,
    pub(crate) is_evidence: &'a dyn Fn(LogIndex) -> bool,
}

impl ForgettingPolicy {
    /// Decides what to forget. Pure: the caller applies the report.
    pub(crate) fn sweep(
        &self,
        log: &[ChatMessage],
        covered_until: LogIndex,
        segments: &Segments,
        facts: &MessageFacts<'_>,
    ) -> ForgettingReport {
        let mut report = ForgettingReport::default();
        if !self.enabled {
            return report;
        }
        let now = log.len() as LogIndex;
        let age = |index: LogIndex| now.saturating_sub(index);
        // Game time is measured from the newest stamp: the log is in time order, and
        // a sweep runs right after a message arrives.
        let clock = log.last().map_or(0.0, |m| m.timestamp);
        let older = |time: f64, limit: Option<f64>| limit.is_some_and(|limit| clock - time > limit);
        let compressible = |index: LogIndex, time: f64| {
            age(index) > self.compress_after_messages || older(time, self.compress_after_seconds)
        };
        let droppable = |index: LogIndex, time: f64| {
            age(index) > self.drop_after_messages || older(time, self.drop_after_seconds)
        };
        // Stamps never decrease along the log, so once a message is too young to
        // compress, every later one is too.
        for message in log
            .iter()
            .take_while(|m| compressible(m.index, m.timestamp))
        {
            let index = message.index;
            if (facts.is_forgotten)(index) || (facts.access_count)(index) >= self.keep_if_recalled {
                continue;
            }
            let importance = importance(message, facts);
            let drop = importance == Importance::Low
                && droppable(index, message.timestamp)
                && (facts.access_count)(index) == 0;
            // Compressing a message means leaving its gist to a summary, so only
            // covered messages qualify.
            let compress = importance == Importance::Normal && index < covered_until;
            if drop || compress {
                report.forgotten_messages.push(index);
            }
        }
        for segment in segments.list() {
            let old = droppable(segment.covered.end, segment.to_time);
            if old && segment.priority == SegmentPriority::Low {
                report.dropped_segments.push(segment.covered.clone());
            }
        }
        report.compaction_due = segments
            .list()
            .iter()
            .filter(|s| {
                s.level == 0
                    && s.priority == SegmentPriority::Normal
                    && compressible(s.covered.end, s.to_time)
            })
            .count()
            >= 2;
        report
    }
}

fn importance(message: &ChatMessage, facts: &MessageFacts<'_>) -> Importance {
    if (facts.is_evidence)(message.index) {
        Importance::High
    } else if estimate_tokens(&message.content) <= 3 {
        Importance::Low
    } else {
        Importance::Normal
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::memory::message::Role;
    use crate::memory::segments::SummarySegment;

    fn log(n: u64) -> Vec<ChatMessage> {
        (0..n)
            .map(|i| ChatMessage {
                role: if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                },
                content: Arc::from(if i % 10 == 0 {
                    "ok"
                } else {
                    "a normal line of talk here"
                }),
                index: i,
                timestamp: i as f64,
                origin: Default::default(),
                speaker: None,
            })
            .collect()
    }

    fn policy() -> ForgettingPolicy {
        ForgettingPolicy {
            enabled: true,
            compress_after_messages: 100,
            drop_after_messages: 200,
            keep_if_recalled: 2,
            compress_after_seconds: None,
            drop_after_seconds: None,
        }
    }

    /// Messages never recalled, forgotten or cited as evidence.
    fn plain_messages() -> MessageFacts<'static> {
        MessageFacts {
            access_count: &|_| 0,
            is_forgotten: &|_| false,
            is_evidence: &|_| false,
        }
    }

    /// One low-priority segment over the first ten messages.
    fn one_low_segment(from_time: f64, to_time: f64) -> Segments {
        let mut segments = Segments::default();
        segments.push(SummarySegment {
            covered: 0..10,
            text: "old".into(),
            level: 0,
            priority: SegmentPriority::Low,
            from_time,
            to_time,
        });
        segments
    }

    #[test]
    fn old_small_talk_and_covered_lines_go_but_evidence_and_favourites_stay() {
        let log = log(300);
        let access = |i: LogIndex| if i == 5 { 2 } else { 0 };
        let evidence = |i: LogIndex| i == 7;
        let never = |_: LogIndex| false;
        let facts = MessageFacts {
            access_count: &access,
            is_forgotten: &never,
            is_evidence: &evidence,
        };
        let report = policy().sweep(&log, 50, &Segments::default(), &facts);
        let forgotten = &report.forgotten_messages;
        assert!(forgotten.contains(&0), "old small talk goes");
        assert!(
            forgotten.contains(&3),
            "an old covered line is compressed away"
        );
        assert!(!forgotten.contains(&5), "recalled often: kept");
        assert!(!forgotten.contains(&7), "evidence for a fact: kept");
        assert!(
            !forgotten.contains(&61),
            "not covered by a summary yet: kept"
        );
        assert!(
            !forgotten.contains(&150),
            "small talk, but not old enough to drop"
        );
        assert!(forgotten.iter().all(|&i| i < 200));
    }

    #[test]
    fn a_disabled_policy_forgets_nothing() {
        let facts = plain_messages();
        let segments = one_low_segment(0.0, 1.0);
        let off = ForgettingPolicy::default();
        assert!(off.sweep(&log(9000), 9000, &segments, &facts).is_empty());
        let on = policy().sweep(&log(9000), 9000, &segments, &facts);
        assert_eq!(on.dropped_segments, vec![0..10]);
    }

    #[test]
    fn game_time_ages_memories_that_few_messages_followed() {
        // Ten lines long ago, then ten lines a game week later: far too few messages
        // for the message thresholds, but old by the calendar.
        let mut log = log(20);
        for message in &mut log[10..] {
            message.timestamp += 7.0 * 86_400.0;
        }
        let facts = plain_messages();
        let segments = one_low_segment(log[0].timestamp, log[9].timestamp);
        let by_messages = policy();
        let quiet = by_messages.sweep(&log, 20, &segments, &facts);
        assert!(quiet.is_empty(), "twenty messages are not old by count");

        let by_time = ForgettingPolicy {
            compress_after_seconds: Some(86_400.0),
            drop_after_seconds: Some(3.0 * 86_400.0),
            ..policy()
        };
        let report = by_time.sweep(&log, 20, &segments, &facts);
        assert!(
            report.forgotten_messages.contains(&0),
            "old small talk goes"
        );
        assert!(
            report.forgotten_messages.contains(&3),
            "old line compressed"
        );
        assert!(
            report.forgotten_messages.iter().all(|&i| i < 10),
            "this week's lines stay: {:?}",
            report.forgotten_messages
        );
        assert_eq!(report.dropped_segments, vec![0..10]);

        // Under the time threshold nothing changes: the week is what made them old.
        let patient = ForgettingPolicy {
            compress_after_seconds: Some(30.0 * 86_400.0),
            drop_after_seconds: Some(60.0 * 86_400.0),
            ..policy()
        };
        assert!(patient.sweep(&log, 20, &segments, &facts).is_empty());
    }
}
