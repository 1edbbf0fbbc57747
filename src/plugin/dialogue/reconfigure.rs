//! [`Reconfigure`]: NPC-wide changes to memory. New settings, a clear, or the
//! settings of a new tier.

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::core::TurnCore;
use crate::memory::{MemoryConfig, NpcId};
use crate::plugin::messages::ReplyError;
use crate::plugin::rebuild::{NpcMemoryLoads, RECALL_BUILD_OFF_THREAD};

/// What changing an NPC's whole memory borrows: a recall index may be built off
/// the main thread, and lines held for a load may be handed back.
#[derive(SystemParam)]
pub(crate) struct Reconfigure<'w, 's> {
    pub(super) core: TurnCore<'w, 's>,
    pub(super) loads: ResMut<'w, NpcMemoryLoads>,
}

impl Reconfigure<'_, '_> {
    /// Applies a new configuration. Switching recall on for a log with a long
    /// backlog ([`RECALL_BUILD_OFF_THREAD`] messages or more) builds the index off
    /// the main thread: everything else applies at once, and the NPC answers without
    /// recall until the index is in place (see `settle_loads`). A newer
    /// reconfiguration replaces a build in flight.
    pub(crate) fn reconfigure(&mut self, npc: &NpcId, config: &MemoryConfig) {
        if let Err(invalid) = config.check() {
            tracing::error!("not reconfiguring {npc}: {invalid}; its memory keeps its settings");
            return;
        }
        self.loads.cancel_recall(npc);
        let Some(mut layers) = self.core.layers.get_mut(npc) else {
            return;
        };
        let switching_on =
            config.features.recall.enabled && !layers.context.features().recall.enabled;
        let reconfigured = if switching_on && layers.recall_backlog() >= RECALL_BUILD_OFF_THREAD {
            let mut now = config.clone();
            now.features.recall.enabled = false;
            let reconfigured = layers.reconfigure(&now);
            let messages = layers.log.messages().to_vec();
            self.loads
                .build_recall(npc, messages, config.features.recall.clone());
            reconfigured
        } else {
            layers.reconfigure(config)
        };
        self.core.report_overflow(npc, reconfigured.overflow);
        self.core.send_summary(npc, reconfigured.summary);
    }

    /// Forgets the NPC's memory; requests in flight and waiting lines are cancelled,
    /// lines held for a load in flight too (they were said to the memory cleared).
    pub(crate) fn clear(&mut self, npc: &NpcId) {
        self.core.cancel(npc);
        for line in self.loads.take_held(npc) {
            self.core
                .reject(npc, ReplyError::Cancelled, None, line.text);
        }
        self.loads.cancel_recall(npc);
        if let Some(mut layers) = self.core.layers.get_mut(npc) {
            layers.clear();
        }
        self.core.requests.forget_backend_state(Some(npc));
    }
}
