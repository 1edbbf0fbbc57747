//! The three memory layers as Bevy resources, keyed by [`NpcId`].

use std::collections::HashMap;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use crate::memory::{
    ChatLog, ContextMemory, LayersMut, MemoryConfig, NpcId, NpcMemory, PersonaPrompt, RollingWindow,
};

macro_rules! layer_resource {
    ($(#[$doc:meta])* $name:ident, $layer:ty) => {
        $(#[$doc])*
        #[derive(Resource, Default, Debug)]
        pub struct $name(HashMap<NpcId, $layer>);

        impl $name {
            /// The layer of one NPC.
            pub fn get(&self, npc: &NpcId) -> Option<&$layer> {
                self.0.get(npc)
            }

            /// Every NPC's layer, in no particular order.
            pub fn iter(&self) -> impl Iterator<Item = (&NpcId, &$layer)> {
                self.0.iter()
            }

            /// How many NPCs have one.
            pub fn len(&self) -> usize {
                self.0.len()
            }

            /// Whether no NPC has one.
            pub fn is_empty(&self) -> bool {
                self.0.is_empty()
            }
        }
    };
}

layer_resource!(
    /// L2 of every NPC: the full chat logs.
    ChatLogs,
    ChatLog
);
layer_resource!(
    /// L1 of every NPC: the rolling windows.
    RollingWindows,
    RollingWindow
);
layer_resource!(
    /// L3 of every NPC: summaries and their history.
    ContextMemoryManager,
    ContextMemory
);

/// Mutable access to all three layers, for the pipeline's systems.
#[derive(SystemParam)]
pub(crate) struct Layers<'w> {
    logs: ResMut<'w, ChatLogs>,
    windows: ResMut<'w, RollingWindows>,
    contexts: ResMut<'w, ContextMemoryManager>,
}

impl Layers<'_> {
    pub(crate) fn get_mut(&mut self, npc: &NpcId) -> Option<LayersMut<'_>> {
        Some(LayersMut {
            log: self.logs.0.get_mut(npc)?,
            window: self.windows.0.get_mut(npc)?,
            context: self.contexts.0.get_mut(npc)?,
        })
    }

    /// Creates the NPC's memory, or gives an existing one the persona. `overrides`
    /// holds the persona's own window and threshold, which win over live changes.
    pub(crate) fn ensure(
        &mut self,
        npc: &NpcId,
        persona: PersonaPrompt,
        config: &MemoryConfig,
        overrides: bool,
    ) {
        if let Some(mut layers) = self.get_mut(npc) {
            layers.set_persona(persona);
            if overrides {
                layers.reconfigure(config);
            }
            return;
        }
        let NpcMemory {
            log,
            window,
            context,
        } = NpcMemory::new(persona, config);
        self.logs.0.insert(npc.clone(), log);
        self.windows.0.insert(npc.clone(), window);
        self.contexts.0.insert(npc.clone(), context);
    }
}
