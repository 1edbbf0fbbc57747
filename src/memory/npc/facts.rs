//! Pinned facts the game sets: its word, which the model cannot override.

use super::LayersMut;
use crate::memory::clock::stamp;
use crate::memory::facts::{FactChange, FactKey, FactsError};
use crate::memory::message::LogIndex;

impl LayersMut<'_> {
    /// Sets a pinned fact as the game's word, which the model cannot override.
    /// Fails (changing nothing) on an empty or over-long value or a full store.
    pub fn set_fact(
        &mut self,
        key: FactKey,
        value: &str,
        evidence: Vec<LogIndex>,
    ) -> Result<FactChange, FactsError> {
        let now = self.now();
        self.set_fact_at(key, value, evidence, now)
    }

    /// [`set_fact`](Self::set_fact) at game time `now` (seconds): the fact's change
    /// time, never earlier than the log's newest message.
    pub fn set_fact_at(
        &mut self,
        key: FactKey,
        value: &str,
        evidence: Vec<LogIndex>,
        now: f64,
    ) -> Result<FactChange, FactsError> {
        if let Some(&index) = evidence.iter().find(|&&i| i >= self.log.next_index()) {
            return Err(FactsError::EvidenceOutOfRange {
                key: key.to_string(),
                index,
                covered: 0..self.log.next_index(),
            });
        }
        let now = stamp(now, self.last_stamp());
        let change = self.context.facts.set_by_game(key, value, now, evidence)?;
        Ok(change)
    }

    /// Removes a pinned fact (it is kept in the fact's history as outdated).
    pub fn remove_fact(&mut self, key: &FactKey) {
        let now = self.now();
        self.remove_fact_at(key, now);
    }

    /// [`remove_fact`](Self::remove_fact) at game time `now` (seconds), never
    /// earlier than the log's newest message.
    pub fn remove_fact_at(&mut self, key: &FactKey, now: f64) {
        let now = stamp(now, self.last_stamp());
        self.context.facts.remove_by_game(key, now);
    }
}
