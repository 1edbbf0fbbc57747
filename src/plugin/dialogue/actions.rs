//! Replies that call actions: the calls go to the game ([`take_calls`]), and once
//! it has answered, calls and results enter memory with one core call and the turn
//! goes on with a follow-up request ([`record_actions`]).

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::core::TurnCore;
use super::outbox::Outbox;
use super::results::{cut_runaway, empty_reply};
use crate::backends::{BackendError, ChatResponse};
use crate::memory::NpcId;
use crate::plugin::actions::{ActionRegistry, ActionTurns, AnsweredRound, NpcActed, ProposedRound};
use crate::plugin::clock::NpcMemoryClock;
use crate::plugin::npc::TurnId;
use crate::plugin::persona::PersonaBindings;
use crate::plugin::requests::{ArrivedWork, NpcRequests};
use crate::plugin::settings::NpcMemorySettings;

/// What taking action calls out of replies borrows.
#[derive(SystemParam)]
pub(crate) struct Calls<'w, 's> {
    requests: ResMut<'w, NpcRequests>,
    actions: ResMut<'w, ActionTurns>,
    registry: Res<'w, ActionRegistry>,
    bindings: Res<'w, PersonaBindings>,
    settings: Res<'w, NpcMemorySettings>,
    out: Outbox<'w, 's>,
}

/// Replies that came back calling actions they were offered go to the game: the
/// turn waits for its answers. Every other reply ends its turn's rounds and is
/// left to be recorded.
pub(crate) fn take_calls(mut calls: Calls) {
    let arrived = calls.requests.take_arrived();
    let mut left = Vec::with_capacity(arrived.len());
    for mut arrived in arrived {
        if let ArrivedWork::Reply { turn, result } = &mut arrived.work {
            let taken = match std::mem::replace(result, Err(BackendError::Cancelled)) {
                Ok(response) => calls.take(&arrived.npc, *turn, response, &arrived.backend),
                Err(error) => Err(error),
            };
            match taken {
                // Its actions go to the game; the turn goes on with the follow-up.
                Ok(None) => continue,
                Ok(Some(response)) => *result = Ok(response),
                Err(error) => *result = Err(error),
            }
            calls.actions.end_turn(&arrived.npc);
        }
        left.push(arrived);
    }
    calls.requests.put_back_arrived(left);
}

impl Calls<'_, '_> {
    /// A reply's calls go to the game when its request offered actions
    /// (`Ok(None)`: the turn is not over). Calls nobody offered are ignored, as a
    /// model that made them up; the words, if any, are the reply.
    fn take(
        &mut self,
        npc: &NpcId,
        turn: TurnId,
        mut response: ChatResponse,
        backend: &str,
    ) -> Result<Option<ChatResponse>, BackendError> {
        if response.action_calls.is_empty() {
            return Ok(Some(response));
        }
        let max_rounds = self.settings.max_action_rounds;
        if self.actions.may_act(&self.registry, npc, turn, max_rounds) {
            // Acting words may carry the tag too; its fields go with the reply.
            let content = std::mem::take(&mut response.content);
            let (fields, said) = self.bindings.split_fields(npc, content);
            self.requests.keep_fields(npc, turn, fields);
            let max = self.settings.max_reply_chars;
            let said = cut_runaway(self.out.telemetry(), npc, said, max);
            self.requests.acting(npc, turn);
            self.actions.proposed.push(ProposedRound {
                npc: npc.clone(),
                turn,
                said,
                calls: response.action_calls,
            });
            return Ok(None);
        }
        tracing::warn!(
            "{npc}: the model called {} action(s) it was not offered; ignored",
            response.action_calls.len()
        );
        if response.content.is_empty() {
            return Err(empty_reply(backend));
        }
        Ok(Some(response))
    }
}

/// Rounds of actions the game answered enter memory, the game hears
/// [`NpcActed`] for each call, and the follow-up request of the turn starts,
/// offering actions again only while the turn has rounds left. Facts the game
/// pinned since the requests were taken (an action handler's `SetPinnedFact`,
/// e.g. `promise:open_door` fulfilled) are applied just before (`apply_facts`),
/// so the follow-up of the same turn already knows them.
pub(crate) fn record_actions(
    mut core: TurnCore,
    mut actions: ResMut<ActionTurns>,
    clock: Res<NpcMemoryClock>,
) {
    for round in std::mem::take(&mut actions.answered) {
        let AnsweredRound {
            npc,
            turn,
            said,
            records,
        } = round;
        core.requests.done_acting(&npc);
        let now = clock.now();
        let Some(mut layers) = core.layers.get_mut(&npc) else {
            continue;
        };
        let said = (!said.is_empty()).then_some(said.as_str());
        let acted = layers.act(said, &records, now);
        // Each call's entry is followed by its result's, last in the log.
        let entries = &acted.indices[acted.indices.len() - 2 * records.len()..];
        for (record, pair) in records.into_iter().zip(entries.chunks(2)) {
            core.out.acted(NpcActed {
                npc: npc.clone(),
                turn,
                call_id: record.call.id,
                name: record.call.name,
                arguments: record.call.arguments,
                outcome: record.outcome,
                index: pair[1],
            });
        }
        core.report_overflow(&npc, acted.overflow);
        actions.count_round(&npc, turn);
        core.send_reply(&npc, turn, acted.messages, acted.reply);
        core.send_summary(&npc, acted.summary);
    }
}
