//! Requests between the scheduler and the backend: queued under a reserved ticket,
//! sent when the scheduler says so, and queued again after a rate limit.

use super::NpcRequests;
use crate::backends::ChatRequest;
use crate::memory::{NpcId, SummaryJob, SummaryJobId};
use crate::plugin::bridge::{TaskId, Ticket};

/// A rate-limited request to queue again.
#[derive(Debug)]
pub(crate) enum Resend {
    /// A reply: the same request again.
    Reply(ChatRequest),
    /// A summary: the job, rebuilt when it is sent.
    Summary(SummaryJobId),
}

impl NpcRequests {
    /// The task of the NPC's reply, queued or sent.
    pub(crate) fn reply_task(&self, npc: &NpcId) -> Option<TaskId> {
        Some(self.npcs.get(npc)?.reply.as_ref()?.ticket.id)
    }

    /// Whether `task` is the NPC's reply or summary and still waits to be sent.
    pub(crate) fn is_waiting(&self, npc: &NpcId, task: TaskId) -> bool {
        self.ticket(npc, task).is_some_and(Ticket::is_queued)
    }

    /// Whether `task` is the NPC's reply or summary and has been sent.
    pub(crate) fn is_running(&self, npc: &NpcId, task: TaskId) -> bool {
        self.ticket(npc, task).is_some_and(|t| !t.is_queued())
    }

    fn ticket(&self, npc: &NpcId, task: TaskId) -> Option<&Ticket> {
        let slot = self.npcs.get(npc)?;
        let reply = slot.reply.as_ref().map(|r| &r.ticket);
        let summary = slot.summary.as_ref().map(|s| &s.ticket);
        [reply, summary]
            .into_iter()
            .flatten()
            .find(|t| t.id == task)
    }

    /// The queued request `ticket` was reserved for now runs under `ticket`; a
    /// reply keeps `request` in case it must be sent again.
    pub(crate) fn launch(&mut self, npc: &NpcId, ticket: Ticket, request: Option<ChatRequest>) {
        let Some(slot) = self.npcs.get_mut(npc) else {
            return;
        };
        if let Some(reply) = slot.reply.as_mut().filter(|r| r.ticket.id == ticket.id) {
            reply.ticket = ticket;
            reply.request = request;
        } else if let Some(summary) = slot.summary.as_mut().filter(|s| s.ticket.id == ticket.id) {
            summary.ticket = ticket;
        } else {
            return;
        }
        self.running += 1;
    }

    /// Summary `task`'s request as built when it became due, if the NPC's memory
    /// is still at the edition it was built from (`edition` now): then it is what
    /// the memory would build now. Taken either way: a summary is built once.
    pub(crate) fn take_built_summary(
        &mut self,
        npc: &NpcId,
        task: TaskId,
        edition: u64,
    ) -> Option<SummaryJob> {
        let summary = self.npcs.get_mut(npc)?.summary.as_mut()?;
        if summary.ticket.id != task {
            return None;
        }
        let (job, built_at) = summary.built.take()?;
        (built_at == edition && job.id == summary.job).then_some(job)
    }

    /// A queued summary whose job is gone from memory: nothing will be sent.
    pub(crate) fn abandon_summary(&mut self, npc: &NpcId, task: TaskId) {
        if let Some(slot) = self.npcs.get_mut(npc)
            && slot.summary.take_if(|s| s.ticket.id == task).is_some()
        {
            self.in_flight -= 1;
        }
    }

    /// Takes a rate-limited `task` back into the queue under the same id, unless it was cancelled or was already resent
    /// `max_resends` times; then `None`, and it finishes as a failure.
    pub(crate) fn resend(&mut self, npc: &NpcId, task: TaskId, max_resends: u32) -> Option<Resend> {
        let slot = self.npcs.get_mut(npc)?;
        if let Some(reply) = slot.reply.as_mut().filter(|r| r.ticket.id == task) {
            if reply.rate_limited >= max_resends || !reply.streamed.is_empty() {
                return None;
            }
            let request = reply.request.take()?;
            // A tag start held back was never shown: the new attempt starts over.
            if let Some(tags) = &mut reply.tags {
                tags.restart();
            }
            reply.rate_limited += 1;
            reply.ticket = Ticket::queued(task);
            self.running -= 1;
            return Some(Resend::Reply(request));
        }
        let summary = slot.summary.as_mut().filter(|s| s.ticket.id == task)?;
        if summary.rate_limited >= max_resends {
            return None;
        }
        summary.rate_limited += 1;
        summary.ticket = Ticket::queued(task);
        self.running -= 1;
        Some(Resend::Summary(summary.job))
    }
}
