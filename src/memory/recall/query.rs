//! A recall query, and what it finds: the hits and why each was recalled.

use std::ops::Range;
use std::sync::Arc;

use super::dictionary::TermId;
use crate::memory::message::LogIndex;

/// What to recall for: the player's new line, the conversation just before it, and
/// what the prompt already holds.
#[derive(Clone, Debug, PartialEq)]
pub struct RecallQuery<'a> {
    /// The player's new line: the main signal.
    pub line: &'a str,
    /// Recent messages, oldest first, to add context at a lower weight
    /// ([`RecallConfig::context_weight`](super::RecallConfig::context_weight)). Only
    /// the last [`RecallConfig::context_messages`](super::RecallConfig::context_messages)
    /// are used.
    pub context: &'a [&'a str],
    /// Log indices already in the prompt window; they are never recalled.
    pub exclude: Range<LogIndex>,
    /// The new line's own index, if it is already in the log and outside `exclude`.
    pub line_index: Option<LogIndex>,
    /// The current game time, in seconds, for recency weighting. A value that is
    /// not finite (such as `f64::NAN`) turns recency weighting off.
    pub now: f64,
    /// The NPC's own name, or "". With
    /// [`RecallConfig::skip_own_name`](super::RecallConfig::skip_own_name), its terms
    /// leave a query that has others.
    pub own_name: &'a str,
}

impl<'a> RecallQuery<'a> {
    /// A query for a line alone: no context, nothing excluded, no recency weighting.
    pub fn new(line: &'a str) -> Self {
        Self {
            line,
            context: &[],
            exclude: 0..0,
            line_index: None,
            now: f64::NAN,
            own_name: "",
        }
    }

    pub(super) fn excludes(&self, index: LogIndex) -> bool {
        self.exclude.contains(&index) || self.line_index == Some(index)
    }
}

/// One recalled message, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct RecallHit {
    /// Where the message sits in the log.
    pub index: LogIndex,
    /// Its relevance: BM25 times the speaker and recency weights, or for a
    /// neighbour a fraction of its match's score. Only comparable within one query.
    pub score: f32,
    /// Why it was recalled.
    pub reason: RecallReason,
}

/// Why a message was recalled, for the debug panel.
#[derive(Clone, Debug, PartialEq)]
pub enum RecallReason {
    /// It shares these terms with the query (normalized: lower-case, singular, a
    /// two-character CJK slice, or one CJK character after `u:`), in the order
    /// the query has them.
    Matched {
        /// The shared terms.
        terms: Vec<Arc<str>>,
    },
    /// It sits right before or after a matched message, usually the other half of
    /// a question and its answer.
    Neighbour {
        /// The matched message it neighbours.
        of: LogIndex,
    },
}

/// A query term found in the index.
pub(super) struct QueryTerm {
    pub(super) id: TermId,
    pub(super) text: Arc<str>,
    /// The query's weight for the term times its inverse document frequency.
    pub(super) weight: f32,
}
