//! Which [`TierMemory`] each NPC with memory per tier has now: a tier change
//! reconfigures its memory from the persona's configuration, without an asset
//! lookup.

use std::collections::HashMap;

use crate::memory::{MemoryConfig, NpcId};
use crate::plugin::npc::{MemoryTier, TierMemory};

/// The NPCs whose persona sets memory per tier: their persona's configuration and
/// the tier it was last applied for, so a tier change costs one comparison and no
/// asset lookup.
#[derive(Default)]
pub(crate) struct TierBindings {
    npcs: HashMap<NpcId, Tiered>,
}

struct Tiered {
    persona: MemoryConfig,
    tiers: TierMemory,
    applied: MemoryTier,
}

impl TierBindings {
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
    use crate::plugin::npc::{PersonaFeatures, TierOverrides};

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
        let mut npcs = TierBindings::default();
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
        let mut npcs = TierBindings::default();
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
