//! The messages the dialogue writes, and the telemetry that goes with them.

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use crate::memory::{Degradation, NpcId, SummaryUpdate};
use crate::plugin::messages::{
    NpcMemoryDegraded, NpcReplied, NpcReplyDelta, NpcReplyFailed, NpcSummaryUpdated,
};
use crate::plugin::telemetry::{Telemetry, TelemetryEvent};

/// The messages the dialogue writes.
#[derive(SystemParam)]
pub(crate) struct Outbox<'w> {
    pub(crate) replied: MessageWriter<'w, NpcReplied>,
    pub(crate) deltas: MessageWriter<'w, NpcReplyDelta>,
    pub(crate) failed: MessageWriter<'w, NpcReplyFailed>,
    summaries: MessageWriter<'w, NpcSummaryUpdated>,
    degradations: MessageWriter<'w, NpcMemoryDegraded>,
}

impl Outbox<'_> {
    /// Memory lost quality: traced, and told to the game.
    pub(crate) fn degraded(
        &mut self,
        telemetry: &Telemetry,
        npc: &NpcId,
        degradation: Degradation,
    ) {
        telemetry.emit(TelemetryEvent::Degraded {
            npc: npc.clone(),
            reason: degradation.to_string(),
            degradation: degradation.clone(),
        });
        self.degradations.write(NpcMemoryDegraded {
            npc: npc.clone(),
            degradation,
        });
    }

    /// A summary rewrote the NPC's memory: traced, and told to the game.
    pub(crate) fn summary_updated(
        &mut self,
        telemetry: &Telemetry,
        npc: &NpcId,
        update: SummaryUpdate,
    ) {
        telemetry.emit(TelemetryEvent::SummaryUpdated {
            npc: npc.clone(),
            old: update.old.to_string(),
            new: update.new.to_string(),
            covered_from: update.covered.start,
            covered_to: update.covered.end,
            latency_ms: update.latency.as_secs_f64() * 1000.0,
            trigger: update.trigger,
            fact_changes: update
                .fact_changes
                .iter()
                .map(ToString::to_string)
                .collect(),
            forgotten_messages: update.forgotten.forgotten_messages.len(),
        });
        self.summaries.write(NpcSummaryUpdated {
            npc: npc.clone(),
            old: update.old,
            new: update.new,
            covered: update.covered,
            latency: update.latency,
            trigger: update.trigger,
            fact_changes: update.fact_changes,
        });
    }
}
