//! Memory settings per [`MemoryTier`], set in the persona: a crowd NPC in the
//! background summarizes less often and keeps no facts, and has its persona's full
//! memory back as soon as the player walks up.

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

use super::features::PersonaFeatures;
use super::tier::MemoryTier;
use crate::memory::MemoryConfig;

/// What one [`MemoryTier`] changes in a persona's memory configuration, on top of
/// the plugin defaults and the persona's own settings. Each field left unset keeps
/// the persona's value.
///
/// ```ron
/// (summary_threshold: 16, features: (pinned_facts: false))
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(deny_unknown_fields, default)]
pub struct TierOverrides {
    /// Messages between two summaries in this tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_threshold: Option<usize>,
    /// Feature switches in this tier, each overriding the persona's when set.
    #[serde(skip_serializing_if = "PersonaFeatures::is_empty")]
    pub features: PersonaFeatures,
}

impl TierOverrides {
    /// Whether this tier changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Sets the summary threshold in this tier.
    pub fn with_summary_threshold(mut self, threshold: usize) -> Self {
        self.summary_threshold = Some(threshold);
        self
    }

    /// Sets the feature switches in this tier.
    pub fn with_features(mut self, features: PersonaFeatures) -> Self {
        self.features = features;
        self
    }

    /// Applies this tier's settings to `config`.
    pub fn apply(&self, config: &mut MemoryConfig) {
        if let Some(threshold) = self.summary_threshold {
            config.summary_threshold = Some(threshold);
        }
        self.features.apply(&mut config.features);
    }
}

/// A persona's memory settings per [`MemoryTier`] (`Persona::tiers`). The NPC's
/// configuration is the plugin defaults, then the persona's own settings, then the
/// entry of its current tier, which the game sets with the [`MemoryTier`]
/// component or [`SetMemoryTier`](crate::schedule::SetMemoryTier).
///
/// ```ron
/// tiers: (
///     background: (summary_threshold: 16, features: (pinned_facts: false)),
/// )
/// ```
///
/// When the tier changes to one whose settings differ, the NPC is reconfigured
/// once, like [`ReconfigureNpcMemory`](crate::dialogue::ReconfigureNpcMemory) does:
/// nothing unsummarized leaves its window below the hard cap (past it the overflow
/// is reported as a degradation), and a lower threshold may start a summary at
/// once. It replaces a configuration the game sent with `ReconfigureNpcMemory`
/// meanwhile. NPCs whose persona has no tier settings cost nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(deny_unknown_fields, default)]
pub struct TierMemory {
    /// Settings while the NPC is [`Foreground`](MemoryTier::Foreground).
    #[serde(skip_serializing_if = "TierOverrides::is_empty")]
    pub foreground: TierOverrides,
    /// Settings while the NPC is [`Nearby`](MemoryTier::Nearby).
    #[serde(skip_serializing_if = "TierOverrides::is_empty")]
    pub nearby: TierOverrides,
    /// Settings while the NPC is [`Background`](MemoryTier::Background).
    #[serde(skip_serializing_if = "TierOverrides::is_empty")]
    pub background: TierOverrides,
}

const TIERS: [MemoryTier; 3] = [
    MemoryTier::Foreground,
    MemoryTier::Nearby,
    MemoryTier::Background,
];

impl TierMemory {
    /// Whether no tier changes anything.
    pub fn is_empty(&self) -> bool {
        TIERS.iter().all(|&tier| self.get(tier).is_empty())
    }

    /// The settings of one tier.
    pub fn get(&self, tier: MemoryTier) -> &TierOverrides {
        match tier {
            MemoryTier::Foreground => &self.foreground,
            MemoryTier::Nearby => &self.nearby,
            MemoryTier::Background => &self.background,
        }
    }

    /// The settings of one tier, to change.
    pub fn get_mut(&mut self, tier: MemoryTier) -> &mut TierOverrides {
        match tier {
            MemoryTier::Foreground => &mut self.foreground,
            MemoryTier::Nearby => &mut self.nearby,
            MemoryTier::Background => &mut self.background,
        }
    }

    /// These settings, with `fallback`'s for each tier these leave empty: a
    /// persona's own tiers over the plugin's
    /// ([`NpcMemorySettings::tiers`](crate::prelude::NpcMemorySettings::tiers)).
    pub fn or(&self, fallback: &TierMemory) -> TierMemory {
        let mut merged = self.clone();
        for tier in TIERS {
            if merged.get(tier).is_empty() {
                *merged.get_mut(tier) = fallback.get(tier).clone();
            }
        }
        merged
    }

    /// `persona`'s configuration (defaults and persona applied) in `tier`.
    pub fn config(&self, persona: &MemoryConfig, tier: MemoryTier) -> MemoryConfig {
        let mut config = persona.clone();
        self.get(tier).apply(&mut config);
        config
    }

    /// Checks the configuration of every tier that sets anything, naming the tier
    /// that is out of range.
    pub(crate) fn check(&self, persona: &MemoryConfig) -> Result<(), String> {
        for tier in TIERS {
            if self.get(tier).is_empty() {
                continue;
            }
            let name = format!("{tier:?}").to_lowercase();
            let config = self.config(persona, tier);
            config
                .check()
                .map_err(|invalid| format!("tiers.{name}: {invalid}"))?;
            // Such a tier would overflow its window every time before a summary
            // came due: a larger threshold is what tiers are for, so say so here.
            let (threshold, cap) = (config.threshold(), config.hard_cap());
            if threshold > cap {
                return Err(format!(
                    "tiers.{name}: summary_threshold {threshold} is above the window's \
                     hard cap {cap}, so lines would leave it unsummarized"
                ));
            }
        }
        Ok(())
    }
}
