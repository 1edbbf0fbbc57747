//! Replies that call actions: the calls go to the game, and once it has answered,
//! calls and results enter memory with one core call and the turn goes on with a
//! follow-up request.

use super::Dialogue;
use super::results::empty_reply;
use crate::backends::{BackendError, ChatResponse, Purpose};
use crate::memory::NpcId;
use crate::plugin::actions::{AnsweredRound, NpcActed, ProposedRound};
use crate::plugin::npc::TurnId;

impl Dialogue<'_, '_> {
    /// A reply's calls go to the game when its request offered actions
    /// (`Ok(None)`: the turn is not over). Calls nobody offered are ignored, as a
    /// model that made them up; the words, if any, are the reply.
    pub(super) fn take_calls(
        &mut self,
        npc: &NpcId,
        turn: TurnId,
        mut response: ChatResponse,
    ) -> Result<Option<ChatResponse>, BackendError> {
        if response.action_calls.is_empty() {
            return Ok(Some(response));
        }
        let max_rounds = self.settings.max_action_rounds;
        if self.actions.may_act(&self.registry, npc, turn, max_rounds) {
            // Acting words may carry the tag too; its fields go with the reply.
            let content = std::mem::take(&mut response.content);
            let (fields, said) = self.split_fields(npc, content);
            self.requests.keep_fields(npc, turn, fields);
            let said = self.cut_runaway(npc, said);
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
            return Err(empty_reply(self.bridge.backend_name(Purpose::Reply)));
        }
        Ok(Some(response))
    }

    /// Rounds the game answered this frame enter memory, the game hears
    /// [`NpcActed`] for each call, and the follow-up request of the turn starts,
    /// offering actions again only while the turn has rounds left.
    pub(crate) fn record_actions(&mut self) {
        for round in std::mem::take(&mut self.actions.answered) {
            let AnsweredRound {
                npc,
                turn,
                said,
                records,
            } = round;
            self.requests.done_acting(&npc);
            let now = self.clock.now();
            let Some(mut layers) = self.layers.get_mut(&npc) else {
                continue;
            };
            let said = (!said.is_empty()).then_some(said.as_str());
            let acted = layers.act(said, &records, now);
            // Each call's entry is followed by its result's, last in the log.
            let entries = &acted.indices[acted.indices.len() - 2 * records.len()..];
            for (record, pair) in records.into_iter().zip(entries.chunks(2)) {
                self.out.acted(
                    &self.telemetry,
                    NpcActed {
                        npc: npc.clone(),
                        turn,
                        call_id: record.call.id,
                        name: record.call.name,
                        arguments: record.call.arguments,
                        outcome: record.outcome,
                        index: pair[1],
                    },
                );
            }
            self.report_overflow(&npc, acted.overflow);
            self.actions.count_round(&npc, turn);
            self.send_reply(&npc, turn, acted.messages, acted.reply);
            self.send_summary(&npc, acted.summary);
        }
    }
}
