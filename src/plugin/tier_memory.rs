//! Memory settings per [`MemoryTier`], set in the persona: a crowd NPC in the
//! background summarizes less often and keeps no facts, and has its persona's full
//! memory back as soon as the player walks up.

use std::collections::HashMap;

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

use super::persona::PersonaFeatures;
use super::schedule::MemoryTier;
use crate::memory::{MemoryConfig, NpcId};

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
/// component or [`SetMemoryTier`](crate::prelude::SetMemoryTier).
///
/// ```ron
/// tiers: (
///     background: (summary_threshold: 16, features: (pinned_facts: false)),
/// )
/// ```
///
/// When the tier changes to one whose settings differ, the NPC is reconfigured
/// once, like [`ReconfigureNpcMemory`](crate::prelude::ReconfigureNpcMemory) does:
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

/// The NPCs whose persona sets memory per tier: their persona's configuration and
/// the tier it was last applied for, so a tier change costs one comparison and no
/// asset lookup.
#[derive(Resource, Default)]
pub(crate) struct TieredMemory {
    npcs: HashMap<NpcId, Tiered>,
}

struct Tiered {
    persona: MemoryConfig,
    tiers: TierMemory,
    applied: MemoryTier,
}

impl TieredMemory {
    /// The persona (configured as `persona`, with `tiers`) is applied to `npc` in
    /// `tier`: returns the configuration it gets.
    pub(crate) fn bind(
        &mut self,
        npc: &NpcId,
        persona: MemoryConfig,
        tiers: &TierMemory,
        tier: MemoryTier,
    ) -> MemoryConfig {
        if tiers.is_empty() {
            self.npcs.remove(npc);
            return persona;
        }
        let config = tiers.config(&persona, tier);
        let tiered = Tiered {
            persona,
            tiers: tiers.clone(),
            applied: tier,
        };
        self.npcs.insert(npc.clone(), tiered);
        config
    }

    /// `npc` is in `tier` now: its new configuration, if that tier's settings
    /// differ from those it has.
    pub(crate) fn retier(&mut self, npc: &NpcId, tier: MemoryTier) -> Option<MemoryConfig> {
        let tiered = self.npcs.get_mut(npc)?;
        let before = std::mem::replace(&mut tiered.applied, tier);
        let changed = tiered.tiers.get(before) != tiered.tiers.get(tier);
        changed.then(|| tiered.tiers.config(&tiered.persona, tier))
    }

    /// Every NPC whose persona sets memory per tier.
    pub(crate) fn ids(&self) -> Vec<NpcId> {
        self.npcs.keys().cloned().collect()
    }

    /// The configuration `npc` should have in `tier`, whatever it has now (a memory
    /// imported from a file was saved in another tier's).
    pub(crate) fn current(&mut self, npc: &NpcId, tier: MemoryTier) -> Option<MemoryConfig> {
        let tiered = self.npcs.get_mut(npc)?;
        tiered.applied = tier;
        Some(tiered.tiers.config(&tiered.persona, tier))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::Persona;

    fn background() -> TierMemory {
        let mut tiers = TierMemory::default();
        *tiers.get_mut(MemoryTier::Background) = TierOverrides::default()
            .with_summary_threshold(16)
            .with_features(PersonaFeatures {
                pinned_facts: Some(false),
                ..PersonaFeatures::default()
            });
        tiers
    }

    fn persona_config() -> MemoryConfig {
        let mut config = MemoryConfig::with_window(20);
        config.summary_threshold = Some(6);
        config.features.facts.enabled = true;
        config
    }

    #[test]
    fn a_tier_changes_only_what_it_sets() {
        let tiers = background();
        let config = tiers.config(&persona_config(), MemoryTier::Background);
        assert_eq!(config.summary_threshold, Some(16));
        assert!(!config.features.facts.enabled);
        assert_eq!(config.max_context_window, 20);
        for tier in [MemoryTier::Foreground, MemoryTier::Nearby] {
            assert_eq!(tiers.config(&persona_config(), tier), persona_config());
        }
    }

    #[test]
    fn a_tier_change_reconfigures_only_when_the_settings_differ() {
        let mut npcs = TieredMemory::default();
        let npc = NpcId::new("crowd");
        let bound = npcs.bind(&npc, persona_config(), &background(), MemoryTier::Nearby);
        assert_eq!(bound, persona_config());
        // Nearby and Foreground set the same (nothing): no reconfiguration.
        assert_eq!(npcs.retier(&npc, MemoryTier::Foreground), None);
        let background = npcs.retier(&npc, MemoryTier::Background).unwrap();
        assert_eq!(background.summary_threshold, Some(16));
        assert_eq!(npcs.retier(&npc, MemoryTier::Background), None);
        assert_eq!(
            npcs.retier(&npc, MemoryTier::Foreground),
            Some(persona_config())
        );
    }

    #[test]
    fn npcs_without_tier_settings_are_not_kept() {
        let mut npcs = TieredMemory::default();
        let npc = NpcId::new("guard");
        npcs.bind(&npc, persona_config(), &background(), MemoryTier::Nearby);
        let empty = TierMemory::default();
        let bound = npcs.bind(&npc, persona_config(), &empty, MemoryTier::Background);
        assert_eq!(bound, persona_config());
        assert_eq!(npcs.retier(&npc, MemoryTier::Nearby), None);
        assert!(npcs.npcs.is_empty());
    }

    #[test]
    fn an_invalid_tier_is_named() {
        let mut tiers = background();
        tiers.nearby.summary_threshold = Some(0);
        let error = tiers.check(&persona_config()).unwrap_err();
        assert!(error.starts_with("tiers.nearby: "), "{error}");
        assert!(error.contains("summary_threshold"), "{error}");
        assert!(background().check(&persona_config()).is_ok());
        let mut tiers = background();
        tiers.background.summary_threshold = Some(41);
        let error = tiers.check(&persona_config()).unwrap_err();
        assert!(error.starts_with("tiers.background: "), "{error}");
        assert!(error.contains("hard cap 40"), "{error}");
        tiers.background.summary_threshold = Some(40);
        assert!(tiers.check(&persona_config()).is_ok());
    }

    const CROWD: &str = r#"(
        name: "Crowd",
        system_prompt: "You are a face in the crowd.",
        summary_threshold: 6,
        features: (pinned_facts: true),
        tiers: (background: (summary_threshold: 16, features: (pinned_facts: false))),
    )"#;

    #[test]
    fn a_persona_file_sets_memory_per_tier() {
        let persona = Persona::from_ron(CROWD).unwrap();
        assert_eq!(persona.tiers, background());
        let defaults = MemoryConfig::default();
        let background = persona.memory_config_in(&defaults, MemoryTier::Background);
        assert_eq!(background.summary_threshold, Some(16));
        assert!(!background.features.facts.enabled);
        let foreground = persona.memory_config_in(&defaults, MemoryTier::Foreground);
        assert_eq!(foreground, persona.memory_config(&defaults));
        assert_eq!(foreground.summary_threshold, Some(6));
        assert!(foreground.features.facts.enabled);
    }

    #[test]
    fn tier_memory_survives_a_ron_round_trip() {
        let persona = Persona::new("Crowd", "You are a face in the crowd.")
            .with_tier_memory(MemoryTier::Background, background().background)
            .with_tier_memory(
                MemoryTier::Foreground,
                TierOverrides::default().with_summary_threshold(4),
            );
        let text = ron::ser::to_string(&persona).unwrap();
        assert!(!text.contains("nearby"), "empty tiers are left out: {text}");
        assert_eq!(Persona::from_ron(&text).unwrap(), persona);
        let plain = ron::ser::to_string(&Persona::new("Guard", "You guard.")).unwrap();
        assert!(!plain.contains("tiers"), "{plain}");
    }

    #[test]
    fn a_persona_file_with_an_invalid_tier_is_refused_naming_it() {
        let invalid = CROWD.replace("summary_threshold: 16", "summary_threshold: 0");
        let error = Persona::from_ron(&invalid).unwrap_err().to_string();
        assert!(error.contains("tiers.background"), "{error}");
        let unknown = CROWD.replace("background:", "backgroud:");
        assert!(Persona::from_ron(&unknown).is_err());
        let unknown = CROWD.replace("summary_threshold: 16", "max_context_window: 16");
        assert!(Persona::from_ron(&unknown).is_err());
    }
}
