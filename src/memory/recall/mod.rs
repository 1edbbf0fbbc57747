//! Recall of old messages from the full log (L2), by words they share with what
//! the player just said.
//!
//! The window (L1) holds only the last few messages and the summary (L3) only what
//! the summarizer chose to keep. Recall finds the exact earlier lines that matter
//! now ("do you remember where my sister is?") so the prompt can quote them.
//!
//! [`RecallIndex`] is an incremental BM25 index over one NPC's log: messages are
//! added as they are logged, and before each reply a [`RecallQuery`] made of the
//! player's new line and a little recent context returns [`RecallHit`]s, each with
//! its [`RecallReason`]. English is split into words; Chinese, Japanese and Korean
//! into overlapping character pairs, so no segmenter or dictionary is needed.
//! [`RecallConfig`] switches recall on and sets its few weights. Forgetting only
//! hides messages from recall; [`RecallState`] is what a save needs to keep.
//!
//! When the game's clock is a calendar ([`RecallConfig::calendar`]), each
//! message is also indexed by the day it was said and by the days its words name
//! ("last night", "two days ago", 昨天, "1 May"), resolved against that day, so a
//! question naming a date finds a line that only said "last night".
//!
//! ```
//! # use std::sync::Arc;
//! # use bevy_npc_memory::memory::{ChatMessage, RecallConfig, RecallIndex, RecallQuery, Role};
//! let log: Vec<ChatMessage> = ["My sister is in the northern shelter.", "I will remember."]
//!     .iter()
//!     .enumerate()
//!     .map(|(i, text)| ChatMessage {
//!         role: if i == 0 { Role::User } else { Role::Assistant },
//!         content: Arc::from(*text),
//!         index: i as u64,
//!         timestamp: i as f64,
//!         origin: Default::default(),
//!         speaker: None,
//!     })
//!     .collect();
//! let mut index = RecallIndex::from_log(&log);
//! let hits = index.query(
//!     &RecallQuery::new("Where is my sister?"),
//!     &log,
//!     &RecallConfig::enabled(),
//! );
//! assert_eq!(hits[0].index, 0);
//! ```

mod annotate;
mod config;
mod dates;
mod dictionary;
mod expansion;
mod index;
mod notes;
mod postings;
mod query;
mod query_terms;
mod ranking;
mod scratch;
mod state;
pub(crate) mod terms;

#[cfg(test)]
mod tests;

pub use config::RecallConfig;
pub use index::RecallIndex;
pub use notes::{
    LineNote, MAX_NOTE_CHARS, MAX_NOTE_LINES, MAX_NOTES, MAX_NOTES_PER_SUMMARY, NoteError,
};
pub use query::{RecallHit, RecallQuery, RecallReason};
pub use state::RecallState;
// Lore is matched with the same terms as recall.
pub(crate) use terms::for_each_term;

/// Reserves room for `additional` more items, growing by an eighth rather than
/// doubling. The index's buffers (and the log they index) only ever grow, and
/// doubling would leave up to half of each one empty; an eighth keeps pushes amortized O(1) at a little more
/// copying.
pub(crate) fn reserve_gently<T>(buffer: &mut Vec<T>, additional: usize) {
    let spare = buffer.capacity() - buffer.len();
    if spare < additional {
        let step = (buffer.len() / 8).max(additional).max(64);
        buffer.reserve_exact(step);
    }
}
