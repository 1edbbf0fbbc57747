//! [`TurnCore`]: what every stage of the turn pipeline borrows. Memory, the
//! requests with their hand-offs, and what the game hears. A stage adds the one
//! or two resources its own work needs, and leaves the rest of a turn to the
//! stage that owns it through [`NpcRequests`].

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::outbox::Outbox;
use crate::memory::{Degradation, NpcId, PromptMessage, ReplyInput, SummaryJob};
use crate::plugin::layers::Layers;
use crate::plugin::messages::{NpcReplyFailed, ReplyError};
use crate::plugin::npc::TurnId;
use crate::plugin::persona::PersonaBindings;
use crate::plugin::requests::{NpcRequests, Readiness};

/// Memory, requests and the outbox, borrowed together.
#[derive(SystemParam)]
pub(crate) struct TurnCore<'w, 's> {
    pub(super) layers: Layers<'w>,
    pub(super) requests: ResMut<'w, NpcRequests>,
    pub(super) out: Outbox<'w, 's>,
}

impl TurnCore<'_, '_> {
    /// Whether the NPC can answer a line now, later, or never.
    pub(super) fn readiness(&self, bindings: &PersonaBindings, npc: &NpcId) -> Readiness {
        if self.layers.contains(npc) {
            Readiness::Ready
        } else if let Some(reason) = bindings.failure(npc) {
            Readiness::Failed(reason.to_owned())
        } else if bindings.is_bound(npc) {
            Readiness::Loading
        } else {
            Readiness::Unknown
        }
    }

    /// Hands a line back unrecorded; `turn` is set when it had been accepted.
    pub(super) fn reject(
        &mut self,
        npc: &NpcId,
        error: ReplyError,
        turn: Option<TurnId>,
        line: String,
    ) {
        self.out.failed(NpcReplyFailed {
            npc: npc.clone(),
            turn,
            error,
            unrecorded_line: Some(line),
        });
    }

    /// The NPC answers its next waiting line once it is free.
    pub(super) fn next_line(&mut self, npc: &NpcId) {
        self.requests.ready(npc);
    }

    pub(super) fn send_reply(
        &mut self,
        npc: &NpcId,
        turn: TurnId,
        messages: Vec<PromptMessage>,
        input: ReplyInput,
    ) {
        self.requests.send_reply(npc, turn, messages, input);
    }

    /// Queues a summary that became due. It goes as built unless the NPC's memory
    /// changed before the scheduler sends it; then it is built again, covering
    /// what arrived meanwhile. Once the NPC's window nears its hard cap, its waiting summary goes now and
    /// before other summaries: past the cap messages would leave the prompt
    /// unsummarized.
    pub(super) fn send_summary(&mut self, npc: &NpcId, job: Option<SummaryJob>) {
        if let Some(job) = job {
            let edition = self.layers.edition(npc);
            self.requests.send_summary(npc, job, edition);
        }
        if self.layers.window_near_cap(npc) {
            self.requests.press(npc);
        }
    }

    pub(super) fn report_overflow(&mut self, npc: &NpcId, overflow: Option<Degradation>) {
        if let Some(degradation) = overflow {
            self.out.degraded(npc, degradation);
        }
    }

    /// Cancels the NPC's requests and hands its waiting lines back.
    pub(super) fn cancel(&mut self, npc: &NpcId) {
        let cancelled = self.requests.cancel(npc);
        self.hand_back_cancelled(npc, cancelled);
    }

    /// Cancels every request in flight and every waiting line, as loading another
    /// save slot must: their results belong to the memory being replaced. The
    /// backends drop what they derived from that memory too.
    pub(super) fn cancel_all(&mut self) {
        for (npc, cancelled) in self.requests.cancel_all() {
            self.hand_back_cancelled(&npc, cancelled);
        }
    }

    /// Ends what a cancel took: the turn in flight first, then the lines waiting.
    fn hand_back_cancelled(&mut self, npc: &NpcId, cancelled: crate::plugin::requests::Cancelled) {
        // The line in flight was heard by the memory being replaced, so it is not
        // handed back; but its turn ends, as every started turn does.
        if let Some(turn) = cancelled.reply {
            self.out.stopped(npc);
            self.out.failed(NpcReplyFailed {
                npc: npc.clone(),
                turn: Some(turn),
                error: ReplyError::Cancelled,
                unrecorded_line: None,
            });
        }
        if !cancelled.waiting.is_empty() {
            self.layers.mark_changed(npc);
        }
        for line in cancelled.waiting {
            self.reject(npc, ReplyError::Cancelled, Some(line.turn), line.text);
        }
    }
}
