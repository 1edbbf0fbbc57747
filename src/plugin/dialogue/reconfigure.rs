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
        self.end_what_was_asked(npc);
        for line in self.loads.take_held(npc) {
            self.core
                .reject(npc, ReplyError::Cancelled, None, line.text);
        }
        if let Some(mut layers) = self.core.layers.get_mut(npc) {
            layers.clear();
        }
    }

    /// The NPC's memory was replaced by an import: what was asked of the memory
    /// replaced ends as on a clear. Lines held for a load in flight stay held:
    /// that load replaces the imported memory too, and answers them.
    pub(crate) fn imported(&mut self, npc: &NpcId) {
        self.end_what_was_asked(npc);
    }

    /// Cancels the NPC's requests (the reply in flight fails as cancelled, waiting
    /// lines are handed back as cancelled) and drops what was derived from its
    /// memory: a recall index being built, and the backends' state.
    fn end_what_was_asked(&mut self, npc: &NpcId) {
        self.core.cancel(npc);
        self.loads.cancel_recall(npc);
        self.core.requests.forget_backend_state(Some(npc));
    }
}
