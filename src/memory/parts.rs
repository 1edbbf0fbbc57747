//! One NPC's memory as plain data, for savegames: taken apart, checked, and put back
//! together exactly.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::config::MemoryConfig;
use super::context::{ContextMemory, Degradation, SummaryRecord};
use super::facts::PinnedFacts;
use super::invalid_field::InvalidField;
use super::log::ChatLog;
use super::message::{ChatMessage, LogIndex};
use super::npc::NpcMemory;
use super::persona::PersonaPrompt;
use super::recall::{RecallIndex, RecallState};
use super::segments::Segments;
use super::window::RollingWindow;

/// Everything one NPC remembers, as data: the full log (L2), where the window (L1)
/// starts, and the summaries (L3) with their history and degradations. Requests in
/// flight are not part of it; uncovered messages are simply summarized again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryParts {
    /// The persona the memory was built on (the live persona asset wins on spawn).
    pub persona: PersonaPrompt,
    /// Window, threshold and limits in force.
    pub config: MemoryConfig,
    /// L2: every message, in order.
    pub log: Vec<ChatMessage>,
    /// L1: the first log index in the window.
    pub window_start: LogIndex,
    /// L3: the current summary.
    pub summary: Arc<str>,
    /// L3: the first log index no summary covers.
    pub covered_until: LogIndex,
    /// L3: every summary so far.
    pub history: Vec<SummaryRecord>,
    /// Every degradation so far.
    pub degradations: Vec<Degradation>,
    /// Summary segments, oldest first (empty unless segments are on).
    pub segments: Segments,
    /// Pinned facts, with their history.
    pub facts: PinnedFacts,
    /// What the recall index learned beyond the log: access counts and forgotten
    /// messages. The index itself is rebuilt from the log on load.
    pub recall: RecallState,
}

impl MemoryParts {
    /// The parts of a live memory. Costs one reference-count bump per message: the
    /// texts themselves are shared, not copied.
    pub fn of(log: &ChatLog, window: &RollingWindow, context: &ContextMemory) -> Self {
        Self {
            persona: context.persona.clone(),
            config: MemoryConfig {
                max_context_window: window.max_context_window(),
                summary_threshold: Some(context.threshold),
                hard_cap: Some(window.hard_cap()),
                max_summary_chars: context.max_summary_chars,
                features: context.features.clone(),
            },
            log: log.messages().to_vec(),
            window_start: window.start(),
            summary: context.summary.clone(),
            covered_until: context.covered_until,
            history: context.history.clone(),
            degradations: context.degradations.clone(),
            segments: context.segments.clone(),
            facts: context.facts.clone(),
            recall: context.recall.state(),
        }
    }

    /// Rebuilds the memory: L2 and L3 exactly, and L1 as the system prompt (persona +
    /// summary) with the saved tail of L2.
    pub fn into_memory(self) -> Result<NpcMemory, InvalidField> {
        self.validate()?;
        let mut memory = NpcMemory::new(self.persona, &self.config);
        let mut log = ChatLog::new();
        for message in self.log {
            log.append_from(
                message.role,
                message.content,
                message.timestamp,
                message.origin,
                message.speaker,
            );
        }
        memory.log = log;
        let context = &mut memory.context;
        context.summary = self.summary;
        context.covered_until = self.covered_until;
        context.history = self.history;
        context.degradations = self.degradations;
        for degradation in &mut context.degradations {
            degradation.shorten_reason();
        }
        context.segments = self.segments;
        context.facts = self.facts;
        context.facts.set_limits(context.features.facts.limits());
        if context.features.recall.enabled {
            context.recall = RecallIndex::from_log_with_calendar(
                memory.log.messages(),
                context.features.recall.calendar,
            );
        }
        context.recall.restore_state(&self.recall);
        memory.window.reset(self.window_start);
        Ok(memory)
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::memory::{Role, SummaryStyle};

    fn memory() -> NpcMemory {
        let persona = PersonaPrompt {
            name: "ECHO-7".into(),
            text: "You are ECHO-7.".into(),
            style: SummaryStyle::english(),
        };
        let config = MemoryConfig {
            summary_threshold: Some(2),
            ..MemoryConfig::with_window(4)
        };
        let mut memory = NpcMemory::new(persona, &config);
        let mut layers = memory.layers();
        for i in 0..7 {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            layers.record(role, format!("line {i}"), i as f64);
            layers.summarize_due(|_| Ok(format!("summary {i}")));
        }
        memory
    }

    #[test]
    fn parts_rebuild_the_same_memory() {
        let original = memory();
        let parts = MemoryParts::of(&original.log, &original.window, &original.context);
        let rebuilt = parts.clone().into_memory().unwrap();
        assert_eq!(rebuilt.log, original.log);
        assert_eq!(rebuilt.window, original.window);
        assert_eq!(rebuilt.context.summary(), original.context.summary());
        assert_eq!(rebuilt.context.history(), original.context.history());
        assert_eq!(
            MemoryParts::of(&rebuilt.log, &rebuilt.window, &rebuilt.context),
            parts
        );
    }

    #[test]
    fn inconsistent_parts_are_refused() {
        let original = memory();
        let good = MemoryParts::of(&original.log, &original.window, &original.context);
        let mut bad = good.clone();
        bad.log[2].index = 9;
        assert_eq!(bad.validate().unwrap_err().field, "log[2].index");
        let mut bad = good.clone();
        bad.covered_until = 99;
        assert!(bad.into_memory().is_err());
        let mut bad = good;
        bad.window_start = 99;
        assert!(bad.validate().is_err());
    }
}
