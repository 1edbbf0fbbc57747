//! Segmented summaries: each summary covers its own range and is kept, not merged
//! into one blob.
//!
//! A single rolling summary (basic mode) rewrites everything on every fold,
//! so early names, constraints and promises are diluted a little more each time.
//! Segments are written once and left alone. Only when their total outgrows the
//! prompt budget are the oldest ones compacted, a few at a time, into one segment
//! of the next level up: a hierarchy that loses detail only where it must.

use std::ops::Range;
use std::sync::Arc;

use bevy::reflect::{Reflect, std_traits::ReflectDefault};
use serde::{Deserialize, Serialize};

use super::message::LogIndex;
use super::tokens::estimate_tokens;

/// How much a segment matters when the budget is tight.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum SegmentPriority {
    /// Small talk; the first to be compacted or forgotten.
    Low,
    /// Ordinary conversation.
    #[default]
    Normal,
    /// Holds evidence for pinned facts or was marked important by the summarizer.
    High,
}

/// One summary segment: its text and the messages and time span it covers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummarySegment {
    /// The log indices it covers.
    pub covered: Range<LogIndex>,
    /// The summary text.
    pub text: Arc<str>,
    /// 0 for a summary of messages, 1 or more for a compaction of segments.
    pub level: u8,
    /// How much it matters.
    pub priority: SegmentPriority,
    /// Game time of the first message covered, in seconds.
    pub from_time: f64,
    /// Game time of the last message covered, in seconds.
    pub to_time: f64,
}

impl SummarySegment {
    /// Estimated tokens of the segment's text.
    pub fn tokens(&self) -> usize {
        estimate_tokens(&self.text)
    }
}

/// When segmented summaries are on and how they are compacted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(default)]
pub struct SegmentConfig {
    /// Keep one segment per summary instead of one rolling summary. Off by default:
    /// basic mode folds everything into one summary.
    pub enabled: bool,
    /// Compact when the segments' estimated tokens exceed this. `None` uses the
    /// summaries' share of the prompt budget, and never compacts without a budget.
    pub compact_above_tokens: Option<usize>,
    /// How many of the oldest segments one compaction merges. At least 2. Over
    /// the limit a compaction waits until this many segments of the lowest level
    /// are older than the newest one, unless the segments reach four times the
    /// limit.
    pub compact_batch: usize,
}

impl Default for SegmentConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            compact_above_tokens: None,
            compact_batch: 4,
        }
    }
}

/// The segments of one NPC, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Segments {
    list: Vec<SummarySegment>,
}

impl Segments {
    /// The segments, oldest first.
    pub fn list(&self) -> &[SummarySegment] {
        &self.list
    }

    /// Estimated tokens of all segment texts.
    pub fn tokens(&self) -> usize {
        self.list.iter().map(SummarySegment::tokens).sum()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The segments, to change their time spans in place (save migration). Their
    /// ranges and order are the caller's to keep.
    pub(crate) fn times_mut(
        &mut self,
    ) -> impl Iterator<Item = (&Range<LogIndex>, &mut f64, &mut f64)> {
        self.list
            .iter_mut()
            .map(|s| (&s.covered, &mut s.from_time, &mut s.to_time))
    }

    pub(crate) fn push(&mut self, segment: SummarySegment) {
        self.list.push(segment);
    }

    /// The oldest run of at least two segments worth compacting: the lowest level
    /// present, oldest first, at most `batch` of them. Lower levels go first so
    /// recent detail is squeezed last.
    pub(crate) fn compaction_candidates(&self, batch: usize) -> Option<Range<usize>> {
        let batch = batch.max(2);
        let level = self.list.iter().map(|s| s.level).min()?;
        let start = self.list.iter().position(|s| s.level == level)?;
        let end = self.list[start..]
            .iter()
            .take(batch)
            .take_while(|s| s.level == level)
            .count()
            + start;
        (end - start >= 2).then_some(start..end)
    }

    /// Replaces the segments at `positions` with one compacted segment, provided
    /// they still cover `covered` (a late result for a stale job changes nothing).
    pub(crate) fn replace(
        &mut self,
        positions: Range<usize>,
        covered: &Range<LogIndex>,
        text: Arc<str>,
    ) -> bool {
        let Some(run) = self.list.get(positions.clone()) else {
            return false;
        };
        let (Some(first), Some(last)) = (run.first(), run.last()) else {
            return false;
        };
        if first.covered.start != covered.start || last.covered.end != covered.end {
            return false;
        }
        let merged = SummarySegment {
            covered: covered.clone(),
            text,
            level: run
                .iter()
                .map(|s| s.level)
                .max()
                .unwrap_or(0)
                .saturating_add(1),
            priority: run.iter().map(|s| s.priority).max().unwrap_or_default(),
            from_time: first.from_time,
            to_time: last.to_time,
        };
        self.list.splice(positions, [merged]);
        true
    }

    /// Drops the segment at `position` (forgetting). The log keeps its messages.
    pub(crate) fn remove(&mut self, position: usize) -> Option<SummarySegment> {
        (position < self.list.len()).then(|| self.list.remove(position))
    }

    pub(crate) fn raise_priority(&mut self, evidence: impl Fn(&Range<LogIndex>) -> bool) {
        for segment in &mut self.list {
            if segment.priority < SegmentPriority::High && evidence(&segment.covered) {
                segment.priority = SegmentPriority::High;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(covered: Range<LogIndex>, level: u8) -> SummarySegment {
        SummarySegment {
            covered: covered.clone(),
            text: format!("s{}-{}", covered.start, covered.end).into(),
            level,
            priority: SegmentPriority::Normal,
            from_time: covered.start as f64,
            to_time: covered.end as f64,
        }
    }

    #[test]
    fn compaction_takes_the_oldest_of_the_lowest_level() {
        let mut segments = Segments::default();
        segments.push(segment(0..10, 1));
        segments.push(segment(10..14, 0));
        segments.push(segment(14..18, 0));
        segments.push(segment(18..22, 0));
        assert_eq!(segments.compaction_candidates(2), Some(1..3));
        assert!(segments.replace(1..3, &(10..18), "merged".into()));
        let list = segments.list();
        assert_eq!(list.len(), 3);
        assert_eq!(list[1].covered, 10..18);
        assert_eq!(list[1].level, 1);
        assert_eq!(list[1].from_time, 10.0);
    }

    #[test]
    fn a_single_segment_is_never_compacted_and_stale_results_change_nothing() {
        let mut segments = Segments::default();
        segments.push(segment(0..4, 0));
        assert_eq!(segments.compaction_candidates(4), None);
        segments.push(segment(4..8, 0));
        assert!(!segments.replace(0..2, &(0..9), "late".into()));
        assert_eq!(segments.list().len(), 2);
    }
}
