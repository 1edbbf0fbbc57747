//! Why a key, a summarizer reply or a game update was refused.

use std::ops::Range;

use crate::memory::message::LogIndex;

use super::key::FactKeyError;

/// Why a summarizer reply or a game update was refused.
///
/// A refused summarizer reply is a malformed summary: retry once, then degrade.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FactsError {
    /// The reply was not exactly one JSON object of the expected shape: bad syntax,
    /// text around it, an unknown field or a wrong type.
    #[error("the reply is not the expected JSON object: {0}")]
    Malformed(String),
    /// The summary was empty.
    #[error("the summary is empty")]
    EmptySummary,
    /// The reply listed more fact updates than allowed.
    #[error("the reply has {count} fact updates, over the limit of {max}")]
    TooManyUpdates {
        /// Updates in the reply.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A key was not a valid key.
    #[error("invalid fact key {key:?}: {reason}")]
    InvalidKey {
        /// The key as given.
        key: String,
        /// What is wrong with it.
        reason: FactKeyError,
    },
    /// A model update used a key outside the summarizer's categories.
    #[error("fact key {key:?} is not one the summarizer may set")]
    UnknownCategory {
        /// The key as given.
        key: String,
    },
    /// The same key was updated twice in one reply.
    #[error("fact key {key:?} appears twice")]
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// An update had both a value and a status, or neither.
    #[error("fact {key:?} needs either a value or a status of \"outdated\"/\"contradicted\"")]
    AmbiguousUpdate {
        /// The key.
        key: String,
    },
    /// A value was empty or only whitespace.
    #[error("fact {key:?} has an empty value")]
    EmptyValue {
        /// The key.
        key: String,
    },
    /// A value was too long.
    #[error("fact {key:?} is {chars} characters, over the limit of {max}")]
    ValueTooLong {
        /// The key.
        key: String,
        /// Its length in characters.
        chars: usize,
        /// The limit.
        max: usize,
    },
    /// A new value came without any message to support it.
    #[error("fact {key:?} has no evidence")]
    MissingEvidence {
        /// The key.
        key: String,
    },
    /// Evidence pointed at a message the summary did not cover.
    #[error(
        "fact {key:?} cites message {index}, outside the summarized messages {}..{}",
        covered.start,
        covered.end
    )]
    EvidenceOutOfRange {
        /// The key.
        key: String,
        /// The index cited.
        index: LogIndex,
        /// The messages the summary covered.
        covered: Range<LogIndex>,
    },
    /// The store already holds as many active facts as allowed.
    #[error("already {max} active facts; remove one first")]
    TooManyFacts {
        /// The limit.
        max: usize,
    },
    /// A saved store broke the store's rules.
    #[error("invalid saved facts: {0}")]
    InvalidSave(String),
}
