//! Whether pinned facts are on, and how large they may grow.

use bevy::reflect::{Reflect, std_traits::ReflectDefault};
use serde::{Deserialize, Serialize};

/// Settings of pinned facts for one NPC.
///
/// Off by default, so memory behaves exactly as in basic mode unless a game
/// opts in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(default)]
pub struct FactsConfig {
    /// Whether summaries also update facts and the facts enter the system prompt.
    pub enabled: bool,
    /// Most active facts at once. Model updates that would add more are refused.
    pub max_facts: usize,
    /// Longest value accepted, in characters.
    pub max_value_chars: usize,
    /// Outdated and contradicted values kept per key, newest kept.
    pub history_per_key: usize,
    /// Most fact updates accepted in one summarizer reply; more make it malformed.
    pub max_updates: usize,
    /// Whether the summarizer is also asked for notes on the lines it folds
    /// ([`LineNote`](crate::memory::LineNote)), which recall indexes with them and
    /// no prompt shows. Only asked when recall is on. On by default.
    pub notes: bool,
}

impl Default for FactsConfig {
    fn default() -> Self {
        let limits = FactLimits::default();
        Self {
            enabled: false,
            max_facts: limits.max_facts,
            max_value_chars: limits.max_value_chars,
            history_per_key: limits.history_per_key,
            // One summary covers about ten messages; more updates than this is a
            // model listing everything again, not news.
            max_updates: 16,
            notes: true,
        }
    }
}

impl FactsConfig {
    /// The limits a [`PinnedFacts`](super::PinnedFacts) store enforces.
    pub fn limits(&self) -> FactLimits {
        FactLimits {
            max_facts: self.max_facts,
            max_value_chars: self.max_value_chars,
            history_per_key: self.history_per_key,
        }
    }
}

/// The limits a store enforces on every change, saved with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FactLimits {
    /// Most active facts at once.
    pub max_facts: usize,
    /// Longest value accepted, in characters.
    pub max_value_chars: usize,
    /// Outdated and contradicted values kept per key.
    pub history_per_key: usize,
}

impl Default for FactLimits {
    fn default() -> Self {
        Self {
            max_facts: 32,
            max_value_chars: 300,
            history_per_key: 8,
        }
    }
}
