//! Per-persona switches for the memory features beyond basic mode.

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

use crate::memory::{MemoryFeatures, SharingPolicy};

/// Per-persona switches for the memory features beyond basic mode. Each left unset
/// keeps the plugin's setting.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(deny_unknown_fields, default)]
pub struct PersonaFeatures {
    /// Recall of raw old messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall: Option<bool>,
    /// Pinned facts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned_facts: Option<bool>,
    /// Segmented summaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<bool>,
    /// A prompt budget in estimated tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_budget: Option<usize>,
    /// Forgetting of old, unimportant memories.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forgetting: Option<bool>,
    /// What this NPC passes on to other NPCs: `sharing: (said: true, seen: true,
    /// heard: false)`. Everything but private lines when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sharing: Option<SharingPolicy>,
}

impl PersonaFeatures {
    /// Whether no switch is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Every feature on, with a prompt budget.
    pub fn layered(prompt_budget: usize) -> Self {
        Self {
            recall: Some(true),
            pinned_facts: Some(true),
            segments: Some(true),
            prompt_budget: Some(prompt_budget),
            forgetting: None,
            sharing: None,
        }
    }

    pub(crate) fn apply(&self, features: &mut MemoryFeatures) {
        let switches = [
            (self.recall, &mut features.recall.enabled),
            (self.pinned_facts, &mut features.facts.enabled),
            (self.segments, &mut features.segments.enabled),
            (self.forgetting, &mut features.forgetting.enabled),
        ];
        for (switch, enabled) in switches {
            if let Some(on) = switch {
                *enabled = on;
            }
        }
        if let Some(budget) = self.prompt_budget {
            features.budget.max_tokens = Some(budget);
        }
        if let Some(sharing) = &self.sharing {
            features.sharing = sharing.clone();
        }
    }
}
