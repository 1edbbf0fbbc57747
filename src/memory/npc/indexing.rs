//! The recall index kept level with the log, notes on its lines, and recall
//! switched on with an index built elsewhere.

use super::LayersMut;
use crate::memory::recall::{LineNote, RecallConfig, RecallIndex};

impl LayersMut<'_> {
    /// Keeps the recall index level with the log (also after recall is switched on).
    pub(super) fn sync_recall(&mut self) {
        let calendar = self.context.features.recall.calendar;
        if !self.context.features.recall.enabled {
            return;
        }
        // Dates are in the postings, so an index read with another calendar is
        // rebuilt; what it learned (forgetting, access counts) is kept.
        if self.context.recall.calendar() != calendar {
            let state = self.context.recall.state();
            self.context.recall =
                RecallIndex::from_log_with_calendar(self.log.messages(), calendar);
            self.context.recall.restore_state(&state);
            return;
        }
        let indexed = self.context.recall.len();
        for message in self.log.messages().iter().skip(indexed) {
            self.context.recall.add(message);
        }
    }

    /// Notes on lines of the log, as the summarizer writes them (see
    /// [`LineNote`](crate::memory::recall::LineNote)): recall indexes each with the lines
    /// it cites, and no prompt ever shows it. For a game or a tool that has notes
    /// of its own. Notes citing lines past the log's end are dropped. Returns how
    /// many were kept.
    pub fn add_notes(&mut self, notes: impl IntoIterator<Item = LineNote>) -> usize {
        let end = self.log.next_index();
        let mut kept = 0;
        for note in notes {
            if note.lines.iter().all(|&line| line < end) && self.context.recall.add_note(note) {
                kept += 1;
            }
        }
        kept
    }

    /// Messages recall would have to index if it were switched on now: the part of
    /// the log its index has not seen. Switching recall on for a long log costs
    /// about 5 µs per message, so a game may build the index elsewhere first
    /// ([`RecallIndex::from_log`](crate::memory::recall::RecallIndex::from_log)) and
    /// hand it over with [`switch_recall_on`](Self::switch_recall_on).
    pub fn recall_backlog(&self) -> usize {
        self.log.len().saturating_sub(self.context.recall.len())
    }

    /// Switches recall on with `index`, built elsewhere from the start of this
    /// log (by [`RecallIndex::from_log`](crate::memory::recall::RecallIndex::from_log)
    /// over a copy of it). What the current index knows of forgetting and access
    /// counts is kept, and messages logged since the copy are indexed here. An
    /// index read with another calendar than `recall.calendar` is rebuilt here,
    /// so build it with [`RecallIndex::from_log_with_calendar`](crate::memory::recall::RecallIndex::from_log_with_calendar). Returns
    /// `false`, changing nothing, when `index` covers more messages than the log
    /// holds (the log was cleared meanwhile).
    pub fn switch_recall_on(&mut self, mut index: RecallIndex, recall: RecallConfig) -> bool {
        if index.len() > self.log.len() {
            return false;
        }
        index.restore_state(&self.context.recall.state());
        self.context.recall = index;
        self.context.features.recall = recall;
        self.context.features.recall.enabled = true;
        self.sync_recall();
        true
    }
}
