//! What a persona change means for one NPC, handed from the system that reads
//! persona assets to the features that apply it: memory, lore and actions each
//! take their part.

use bevy::prelude::*;

use crate::memory::{MemoryConfig, NpcId, PersonaPrompt};

/// A persona reached an NPC, or failed to.
#[derive(Message, Clone, Debug)]
pub(crate) enum PersonaChange {
    /// The NPC's persona loaded or changed.
    Applied(Box<AppliedPersona>),
    /// The NPC's persona failed to load: lines waiting for it fail.
    Failed { npc: NpcId, reason: String },
}

/// A persona as one NPC gets it.
#[derive(Clone, Debug)]
pub(crate) struct AppliedPersona {
    pub(crate) npc: NpcId,
    pub(crate) prompt: PersonaPrompt,
    /// Its memory settings in the NPC's tier.
    pub(crate) config: MemoryConfig,
    /// Whether the persona sets memory settings of its own.
    pub(crate) overrides: bool,
    /// The lore groups it sees.
    pub(crate) groups: Vec<String>,
    /// The actions it may call.
    pub(crate) actions: Vec<String>,
}

impl PersonaChange {
    /// The persona applied, if it did.
    pub(crate) fn applied(&self) -> Option<&AppliedPersona> {
        match self {
            Self::Applied(applied) => Some(applied),
            Self::Failed { .. } => None,
        }
    }
}
