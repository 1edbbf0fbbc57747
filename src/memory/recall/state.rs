//! The part of the index a save keeps: what was forgotten and how often each
//! message was recalled. Postings are rebuilt from the log, never saved.

use serde::{Deserialize, Serialize};

use super::index::RecallIndex;
use super::notes::LineNote;
use crate::memory::message::LogIndex;

/// The saveable part of a [`RecallIndex`]: small, and independent of the postings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecallState {
    /// Messages hidden from recall, in increasing order.
    pub forgotten: Vec<LogIndex>,
    /// `(message, times recalled)` for every message recalled at least once, in
    /// increasing order of index.
    pub access_counts: Vec<(LogIndex, u32)>,
    /// The summarizer's notes on lines, in the order written: the index is
    /// rebuilt from the log, and notes are not in it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<LineNote>,
}

impl RecallIndex {
    /// The forgetting and access bookkeeping, to save alongside the log.
    pub fn state(&self) -> RecallState {
        let mut state = RecallState {
            notes: self.notes().to_vec(),
            ..RecallState::default()
        };
        for (index, doc) in self.docs.iter().enumerate() {
            let index = index as LogIndex;
            if doc.forgotten {
                state.forgotten.push(index);
            }
            if doc.hits > 0 {
                state.access_counts.push((index, doc.hits));
            }
        }
        state
    }

    /// Replaces the forgetting and access bookkeeping, and the notes, with a
    /// saved state. Works before or after the log is added.
    pub fn restore_state(&mut self, state: &RecallState) {
        self.restore_notes(&state.notes);
        for doc in &mut self.docs {
            doc.forgotten = false;
            doc.hits = 0;
        }
        for &index in &state.forgotten {
            self.forget(index);
        }
        for &(index, hits) in &state.access_counts {
            if let Ok(doc) = u32::try_from(index) {
                self.ensure_doc(doc);
                self.docs[doc as usize].hits = hits;
            }
        }
    }
}
