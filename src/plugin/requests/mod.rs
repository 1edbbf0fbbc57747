//! What each NPC is doing: its requests in flight and the player's lines waiting.

mod policy;

use std::collections::{HashMap, VecDeque};

use bevy::prelude::*;

pub(crate) use policy::{LineRules, Offer, Readiness, unfit_line};

use super::bridge::{TaskId, Ticket};
use crate::memory::{NpcId, SummaryJobId};
use policy::LineQueue;

/// The requests in flight and the lines waiting, for every NPC. Read it to show
/// that an NPC is thinking, or to wait until every NPC is idle.
#[derive(Resource, Default, Debug)]
pub struct NpcRequests {
    npcs: HashMap<NpcId, NpcSlot>,
    in_flight: usize,
    queued: usize,
}

#[derive(Default, Debug)]
struct NpcSlot {
    reply: Option<Ticket>,
    /// The summary request and the job it answers: the memory core matches the
    /// result to the job by this id.
    summary: Option<(Ticket, SummaryJobId)>,
    lines: LineQueue,
    /// Characters of the reply in flight passed on as deltas so far.
    streamed_chars: usize,
}

/// What a finished request was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FinishedTask {
    /// The NPC's reply.
    Reply,
    /// A summary job.
    Summary(SummaryJobId),
}

impl NpcRequests {
    /// Whether the NPC is producing a reply.
    pub fn reply_in_flight(&self, npc: &NpcId) -> bool {
        self.npcs.get(npc).is_some_and(|slot| slot.reply.is_some())
    }

    /// Whether the NPC's memory is being summarized.
    pub fn summary_in_flight(&self, npc: &NpcId) -> bool {
        self.npcs
            .get(npc)
            .is_some_and(|slot| slot.summary.is_some())
    }

    /// The player's lines waiting for the NPC, oldest first.
    pub fn queued_lines(&self, npc: &NpcId) -> impl Iterator<Item = &str> {
        self.npcs
            .get(npc)
            .into_iter()
            .flat_map(|slot| slot.lines.waiting())
    }

    /// Requests in flight over all NPCs.
    pub fn requests_in_flight(&self) -> usize {
        self.in_flight
    }

    /// Player lines waiting over all NPCs.
    pub fn lines_waiting(&self) -> usize {
        self.queued
    }

    /// Whether no request is in flight and no line waits, for any NPC.
    pub fn is_idle(&self) -> bool {
        self.in_flight == 0 && self.queued == 0
    }

    fn slot(&mut self, npc: &NpcId) -> &mut NpcSlot {
        self.npcs.entry(npc.clone()).or_default()
    }

    /// What happens to a new line for the NPC.
    pub(crate) fn offer(
        &mut self,
        npc: &NpcId,
        line: String,
        readiness: &Readiness,
        rules: LineRules,
    ) -> Offer {
        let slot = self.slot(npc);
        let answering = slot.reply.is_some();
        let offer = slot.lines.offer(npc, line, readiness, answering, rules);
        if offer == Offer::Queued {
            self.queued += 1;
        }
        offer
    }

    /// Puts a line restored from a save back in the NPC's queue.
    pub(crate) fn restore(&mut self, npc: &NpcId, line: String) {
        self.slot(npc).lines.restore(line);
        self.queued += 1;
    }

    /// The next waiting line, if the NPC is free to answer it.
    pub(crate) fn next_line(&mut self, npc: &NpcId) -> Option<String> {
        let slot = self.npcs.get_mut(npc)?;
        let line = slot.lines.next(slot.reply.is_some())?;
        self.queued -= 1;
        Some(line)
    }

    pub(crate) fn start_reply(&mut self, npc: &NpcId, ticket: Ticket) {
        let slot = self.slot(npc);
        debug_assert!(slot.reply.is_none(), "one reply in flight per NPC");
        slot.reply = Some(ticket);
        slot.streamed_chars = 0;
        self.in_flight += 1;
    }

    pub(crate) fn start_summary(&mut self, npc: &NpcId, ticket: Ticket, job: SummaryJobId) {
        let slot = self.slot(npc);
        debug_assert!(slot.summary.is_none(), "one summary in flight per NPC");
        slot.summary = Some((ticket, job));
        self.in_flight += 1;
    }

    /// What a finished task was for, or `None` when it was cancelled meanwhile.
    pub(crate) fn finish(&mut self, npc: &NpcId, task: TaskId) -> Option<FinishedTask> {
        let slot = self.npcs.get_mut(npc)?;
        let finished = if slot.reply.as_ref().is_some_and(|t| t.id == task) {
            slot.reply = None;
            FinishedTask::Reply
        } else if let Some((_, job)) = slot.summary.as_ref().filter(|(t, _)| t.id == task) {
            let job = *job;
            slot.summary = None;
            FinishedTask::Summary(job)
        } else {
            return None;
        };
        self.in_flight -= 1;
        Some(finished)
    }

    /// The part of a streamed piece that may be shown: none if it belongs to a
    /// cancelled request, and nothing past `max_chars` of the reply in total.
    pub(crate) fn admit_delta(
        &mut self,
        npc: &NpcId,
        task: TaskId,
        piece: String,
        max_chars: usize,
    ) -> Option<String> {
        let slot = self.npcs.get_mut(npc)?;
        if !slot.reply.as_ref().is_some_and(|t| t.id == task) {
            return None;
        }
        let room = max_chars.saturating_sub(slot.streamed_chars);
        let piece = match piece.char_indices().nth(room) {
            Some((cut, _)) => piece[..cut].to_owned(),
            None => piece,
        };
        slot.streamed_chars += piece.chars().count();
        (!piece.is_empty()).then_some(piece)
    }

    /// Cancels the NPC's requests in flight; returns the lines that were waiting.
    pub(crate) fn cancel(&mut self, npc: &NpcId) -> VecDeque<String> {
        let Some(slot) = self.npcs.get_mut(npc) else {
            return VecDeque::new();
        };
        let tickets = [slot.reply.take(), slot.summary.take().map(|(t, _)| t)];
        for ticket in tickets.into_iter().flatten() {
            ticket.cancel();
            self.in_flight -= 1;
        }
        self.drain(npc)
    }

    /// Takes every waiting line out of the NPC's queue.
    pub(crate) fn drain(&mut self, npc: &NpcId) -> VecDeque<String> {
        let lines = self
            .npcs
            .get_mut(npc)
            .map(|slot| slot.lines.drain())
            .unwrap_or_default();
        self.queued -= lines.len();
        lines
    }

    /// Every NPC with a slot.
    pub(crate) fn npcs(&self) -> Vec<NpcId> {
        self.npcs.keys().cloned().collect()
    }
}
