//! The messages the dialogue writes, the entity events and [`NpcState`] changes
//! that mirror them, and the telemetry that goes with them, stamped with game time.
//!
//! Every reply message goes out through one method here, which also fires the
//! matching entity event on each of the NPC's entities and updates their state, so
//! the message, the event and the state cannot drift apart.

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use crate::memory::{Degradation, NpcId, SummaryUpdate};
use crate::plugin::actions::NpcActed;
use crate::plugin::clock::NpcMemoryClock;
use crate::plugin::entities::NpcEntities;
use crate::plugin::entity_events::{Acted, Replied, ReplyDelta, ReplyFailed, ReplyStarted};
use crate::plugin::messages::{
    NpcMemoryDegraded, NpcReplied, NpcReplyDelta, NpcReplyFailed, NpcReplyStarted,
    NpcSummaryUpdated,
};
use crate::plugin::npc::NpcState;
use crate::plugin::npc::TurnId;
use crate::plugin::telemetry::{Telemetry, TelemetryEvent};
use crate::plugin::usage::RequestFinished;

/// The messages the dialogue writes, and the NPC entities that hear them too.
#[derive(SystemParam)]
pub(crate) struct Outbox<'w, 's> {
    started: MessageWriter<'w, NpcReplyStarted>,
    replied: MessageWriter<'w, NpcReplied>,
    deltas: MessageWriter<'w, NpcReplyDelta>,
    failed: MessageWriter<'w, NpcReplyFailed>,
    summaries: MessageWriter<'w, NpcSummaryUpdated>,
    degradations: MessageWriter<'w, NpcMemoryDegraded>,
    acted: MessageWriter<'w, NpcActed>,
    finished: MessageWriter<'w, RequestFinished>,
    telemetry: Res<'w, Telemetry>,
    /// Stamps telemetry with game time.
    clock: Res<'w, NpcMemoryClock>,
    entities: Res<'w, NpcEntities>,
    states: Query<'w, 's, &'static mut NpcState>,
    commands: Commands<'w, 's>,
}

impl Outbox<'_, '_> {
    /// Where telemetry goes.
    pub(crate) fn telemetry(&self) -> &Telemetry {
        &self.telemetry
    }

    /// The game time telemetry is stamped with, in seconds.
    pub(crate) fn seconds(&self) -> f64 {
        self.clock.seconds()
    }

    /// Fires an event on each of the NPC's entities (`fire`) and applies `update` to
    /// their states. Only the NPC's own entities are visited: nothing here grows
    /// with the number of NPCs.
    fn on_entities(
        &mut self,
        npc: &NpcId,
        fire: impl Fn(&mut Commands, Entity),
        update: impl Fn(&mut Mut<NpcState>),
    ) {
        for &entity in self.entities.get(npc) {
            if let Ok(mut state) = self.states.get_mut(entity) {
                update(&mut state);
            }
            fire(&mut self.commands, entity);
        }
    }

    /// A request finished, for the usage figures.
    pub(crate) fn request_finished(&mut self, finished: RequestFinished) {
        self.finished.write(finished);
    }

    /// A line started being answered: the NPC thinks.
    pub(crate) fn started(&mut self, message: NpcReplyStarted) {
        let turn = message.turn;
        self.on_entities(
            &message.npc,
            |commands, entity| commands.trigger(ReplyStarted::new(entity, message.clone())),
            |state| {
                state.set_if_neq(NpcState::Thinking { turn });
            },
        );
        self.started.write(message);
    }

    /// A piece of the reply streamed: the NPC speaks.
    pub(crate) fn delta(&mut self, message: NpcReplyDelta) {
        self.on_entities(
            &message.npc,
            |commands, entity| commands.trigger(ReplyDelta::new(entity, message.clone())),
            |state| state.push(message.turn, &message.delta),
        );
        self.deltas.write(message);
    }

    /// The reply is in memory: the NPC is done with the turn.
    pub(crate) fn replied(&mut self, message: NpcReplied) {
        let turn = message.turn;
        self.on_entities(
            &message.npc,
            |commands, entity| commands.trigger(Replied::new(entity, message.clone())),
            |state| idle_after(state, Some(turn)),
        );
        self.replied.write(message);
    }

    /// An action's call and result are in memory: the game hears what the NPC
    /// did. The NPC keeps thinking: its turn goes on.
    pub(crate) fn acted(&mut self, message: NpcActed) {
        self.telemetry.emit(TelemetryEvent::Acted {
            npc: message.npc.clone(),
            turn: message.turn,
            call_id: message.call_id.clone(),
            name: message.name.clone(),
            arguments: message.arguments.clone(),
            outcome: message.outcome.clone(),
            index: message.index,
        });
        self.on_entities(
            &message.npc,
            |commands, entity| commands.trigger(Acted::new(entity, message.clone())),
            |_| {},
        );
        self.acted.write(message);
    }

    /// A line was refused, failed or was interrupted. Only the failure of the turn
    /// being answered makes the NPC idle: a refused or dropped waiting line does not
    /// stop the one it is answering.
    pub(crate) fn failed(&mut self, message: NpcReplyFailed) {
        let turn = message.turn;
        self.on_entities(
            &message.npc,
            |commands, entity| commands.trigger(ReplyFailed::new(entity, message.clone())),
            |state| idle_after(state, turn),
        );
        self.failed.write(message);
    }

    /// The NPC's reply was dropped without a message (its memory was cleared or
    /// replaced by a load): its entities show idle.
    pub(crate) fn stopped(&mut self, npc: &NpcId) {
        for &entity in self.entities.get(npc) {
            if let Ok(mut state) = self.states.get_mut(entity) {
                state.set_if_neq(NpcState::Idle);
            }
        }
    }

    /// Memory lost quality: traced, and told to the game.
    pub(crate) fn degraded(&mut self, npc: &NpcId, degradation: Degradation) {
        self.telemetry.emit(TelemetryEvent::Degraded {
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
    pub(crate) fn summary_updated(&mut self, npc: &NpcId, update: SummaryUpdate) {
        self.telemetry.emit(TelemetryEvent::SummaryUpdated {
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
            notes_added: update.notes_added,
            notes_dropped: update.notes_dropped,
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

/// Idle, if `turn` is the one the state shows; otherwise unchanged (and not marked
/// changed).
fn idle_after(state: &mut Mut<NpcState>, turn: Option<TurnId>) {
    if turn.is_some() && state.turn() == turn {
        **state = NpcState::Idle;
    }
}
