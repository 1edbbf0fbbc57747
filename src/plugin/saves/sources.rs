//! What saves read and loads replace, borrowed together: the layers, the lore's
//! run-time changes, the clock, the lines waiting, and the loads in flight. Not
//! the turn pipeline: what a load leaves for turns goes to it as a [`Handover`].

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use crate::memory::NpcId;
use crate::plugin::clock::NpcMemoryClock;
use crate::plugin::layers::Layers;
use crate::plugin::lore::NpcLore;
use crate::plugin::rebuild::{Handover, NpcMemoryLoads};
use crate::plugin::requests::NpcRequests;
use crate::plugin::settings::NpcMemorySettings;
use crate::save::WaitingLine;

#[derive(SystemParam)]
pub(crate) struct SaveSources<'w> {
    pub(super) layers: Layers<'w>,
    pub(super) lore: ResMut<'w, NpcLore>,
    pub(super) clock: ResMut<'w, NpcMemoryClock>,
    pub(super) loads: ResMut<'w, NpcMemoryLoads>,
    requests: Res<'w, NpcRequests>,
    settings: Res<'w, NpcMemorySettings>,
}

impl SaveSources<'_> {
    /// The player's lines waiting for the NPC, oldest first.
    pub(super) fn queued_lines(&self, npc: &NpcId) -> Vec<WaitingLine> {
        self.requests.queued(npc).collect()
    }

    /// Memory settings for an NPC imported before its persona set any.
    pub(super) fn default_memory(&self) -> &crate::memory::MemoryConfig {
        &self.settings.memory
    }

    /// The newest load ended: the lines held for it go to the memory in use.
    pub(super) fn end_load(&mut self, generation: u64, swapped: bool) {
        let held = self.loads.end(generation, swapped);
        if !held.is_empty() {
            self.loads.hand_over(Handover::Released(held));
        }
    }
}
