//! What each NPC is doing: its requests in flight and the player's lines waiting.

mod edges;
mod handoff;
mod policy;
mod sending;

use std::collections::{HashMap, VecDeque};

use bevy::prelude::*;

pub(crate) use handoff::{Arrived, ArrivedWork, Outbound};
pub(crate) use policy::{LineRules, Offer, QueuedLine, Readiness, unfit_line};
pub(crate) use sending::Resend;

use super::bridge::{TaskId, Ticket};
use super::npc::{NpcState, TurnCounter, TurnId};
use crate::memory::{NpcId, ReplyFields, ReplyTagStream, SummaryJob, SummaryJobId};
use crate::save::WaitingLine;
use edges::TrimmedStream;
use policy::LineQueue;

/// The requests in flight and the lines waiting, for every NPC. Read it to show
/// that an NPC is thinking, or to wait until every NPC is idle.
#[derive(Resource, Default, Debug)]
pub struct NpcRequests {
    npcs: HashMap<NpcId, NpcSlot>,
    in_flight: usize,
    /// Requests of `in_flight` sent to a backend, not waiting in the scheduler.
    running: usize,
    queued: usize,
    /// NPCs whose turn waits for the game to answer its actions.
    acting: usize,
    turns: TurnCounter,
    rules: LineRules,
    handoff: handoff::Handoff,
    /// Turns of conversations among NPCs, which the scheduler sends as
    /// background work, and the estimated prompt tokens of their requests.
    background: HashMap<TurnId, u64>,
}

#[derive(Default, Debug)]
struct NpcSlot {
    /// A line accepted to be answered at once, until it is.
    starting: Option<QueuedLine>,
    reply: Option<ReplyInFlight>,
    /// The summary request and the job it answers.
    summary: Option<SummaryInFlight>,
    lines: LineQueue,
    /// The turn whose actions the game is answering: no reply is in flight, but
    /// the NPC is not free for the next line.
    acting: Option<TurnId>,
    /// Reply fields the turn's acting words set, delivered with its reply.
    fields: Option<(TurnId, ReplyFields)>,
}

/// A summary request, queued or sent.
#[derive(Debug)]
struct SummaryInFlight {
    ticket: Ticket,
    /// The memory core matches the result to the job by this id.
    job: SummaryJobId,
    /// The request as built when it became due, and the edition of the NPC's
    /// memory it was built from: sent as it is if the memory is still at that
    /// edition when the scheduler sends it.
    built: Option<(SummaryJob, u64)>,
    /// Times it was rate limited and queued again.
    rate_limited: u32,
}

/// The reply being produced for one turn, queued or sent.
#[derive(Debug)]
struct ReplyInFlight {
    ticket: Ticket,
    turn: TurnId,
    /// The request as sent, kept while it runs so a rate-limited one can be sent
    /// again.
    request: Option<crate::backends::ChatRequest>,
    /// Times it was rate limited and queued again.
    rate_limited: u32,
    /// The text passed on as deltas so far: what the player has seen, which an
    /// interrupt records and a newly spawned NPC entity shows.
    streamed: String,
    /// `streamed`'s length in characters, kept so the cap costs nothing per piece.
    streamed_chars: usize,
    /// Leaves the whitespace at the reply's ends out of its deltas.
    edges: TrimmedStream,
    /// Holds back the reply-field tag at the start, for an NPC that declares
    /// reply fields; `None` streams every piece as it comes.
    tags: Option<ReplyTagStream>,
}

/// A reply stopped by an interrupt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct InterruptedReply {
    pub(crate) turn: TurnId,
    /// What had been passed on as deltas.
    pub(crate) streamed: String,
}

/// What cancelling an NPC's requests stopped.
#[derive(Debug, Default)]
pub(crate) struct Cancelled {
    /// The turn whose reply was in flight, or whose actions the game was
    /// answering.
    pub(crate) reply: Option<TurnId>,
    /// The lines that were waiting.
    pub(crate) waiting: VecDeque<QueuedLine>,
}

/// What a finished request was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FinishedTask {
    /// The NPC's reply to a turn.
    Reply(TurnId),
    /// A summary job.
    Summary(SummaryJobId),
}

impl NpcSlot {
    /// Whether the NPC is answering a line: the next one waits.
    fn is_answering(&self) -> bool {
        self.starting.is_some() || self.reply.is_some() || self.acting.is_some()
    }
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
            .map(|line| line.text.as_str())
    }

    /// The waiting lines with whether each is private and who said it, oldest
    /// first, for a save.
    pub(crate) fn queued(&self, npc: &NpcId) -> impl Iterator<Item = WaitingLine> + '_ {
        self.npcs
            .get(npc)
            .into_iter()
            .flat_map(|slot| slot.lines.waiting())
            .map(|line| WaitingLine {
                text: line.text.clone(),
                private: line.private,
                speaker: line.speaker.clone(),
            })
    }

    /// The turn whose reply the NPC is producing, if any.
    pub fn reply_turn(&self, npc: &NpcId) -> Option<TurnId> {
        self.npcs.get(npc)?.reply.as_ref().map(|reply| reply.turn)
    }

    /// What an entity of the NPC should show, for one spawned mid-reply.
    pub(crate) fn state(&self, npc: &NpcId) -> NpcState {
        let slot = self.npcs.get(npc);
        if let Some(turn) = slot.and_then(|slot| slot.acting) {
            return NpcState::Thinking { turn };
        }
        match slot.and_then(|slot| slot.reply.as_ref()) {
            None => NpcState::Idle,
            Some(reply) if reply.streamed.is_empty() => NpcState::Thinking { turn: reply.turn },
            Some(reply) => NpcState::Speaking {
                turn: reply.turn,
                partial: reply.streamed.clone(),
            },
        }
    }

    /// Requests in flight over all NPCs.
    pub fn requests_in_flight(&self) -> usize {
        self.in_flight
    }

    /// Player lines waiting over all NPCs.
    pub fn lines_waiting(&self) -> usize {
        self.queued
    }

    /// Whether no request is in flight, no line waits and no NPC waits for the
    /// game to answer its actions.
    pub fn is_idle(&self) -> bool {
        self.in_flight == 0 && self.queued == 0 && self.acting == 0
    }

    /// The NPC's turn waits for the game to answer its actions: it takes no next
    /// line until [`done_acting`](Self::done_acting).
    pub(crate) fn acting(&mut self, npc: &NpcId, turn: TurnId) {
        if self.slot(npc).acting.replace(turn).is_none() {
            self.acting += 1;
        }
    }

    /// The game answered; the turn goes on with a reply.
    pub(crate) fn done_acting(&mut self, npc: &NpcId) {
        if self
            .npcs
            .get_mut(npc)
            .and_then(|s| s.acting.take())
            .is_some()
        {
            self.acting -= 1;
        }
    }

    fn slot(&mut self, npc: &NpcId) -> &mut NpcSlot {
        self.npcs.entry(npc.clone()).or_default()
    }

    /// What happens to a new line for the NPC. An accepted line gets the next turn
    /// id; a refused one uses none up.
    pub(crate) fn offer(
        &mut self,
        npc: &NpcId,
        line: WaitingLine,
        readiness: &Readiness,
        rules: LineRules,
    ) -> Offer {
        let turn = self.turns.peek();
        let slot = self.npcs.entry(npc.clone()).or_default();
        let answering = slot.is_answering();
        let offer = slot
            .lines
            .offer(npc, line, turn, readiness, answering, rules);
        match offer {
            Offer::Queued(_) => {
                self.queued += 1;
                self.turns.advance();
            }
            Offer::Start(_) => self.turns.advance(),
            Offer::Refused(..) => {}
        }
        offer
    }

    /// Puts a line restored from a save back in the NPC's queue, under a new turn.
    pub(crate) fn restore(&mut self, npc: &NpcId, line: WaitingLine) -> TurnId {
        let turn = self.turns.take();
        self.slot(npc).lines.restore(QueuedLine {
            turn,
            text: line.text,
            private: line.private,
            speaker: line.speaker,
        });
        self.queued += 1;
        turn
    }

    /// The next waiting line, if the NPC is free to answer it.
    pub(crate) fn next_line(&mut self, npc: &NpcId) -> Option<QueuedLine> {
        let slot = self.npcs.get_mut(npc)?;
        if let Some(line) = slot.starting.take() {
            return Some(line);
        }
        let line = slot.lines.next(slot.is_answering())?;
        self.queued -= 1;
        Some(line)
    }

    /// The NPC declares reply fields, whose tag the deltas of its reply `task`
    /// never show.
    pub(crate) fn set_tags(&mut self, npc: &NpcId, task: TaskId, tags: ReplyTagStream) {
        if let Some(reply) = self.reply_of(npc, task) {
            reply.tags = Some(tags);
        }
    }

    fn start_reply(&mut self, npc: &NpcId, ticket: Ticket, turn: TurnId) {
        let slot = self.slot(npc);
        debug_assert!(slot.reply.is_none(), "one reply in flight per NPC");
        slot.reply = Some(ReplyInFlight {
            ticket,
            turn,
            streamed: String::new(),
            streamed_chars: 0,
            edges: TrimmedStream::default(),
            request: None,
            rate_limited: 0,
            tags: None,
        });
        self.in_flight += 1;
    }

    fn start_summary(&mut self, npc: &NpcId, ticket: Ticket, built: (SummaryJob, u64)) {
        let slot = self.slot(npc);
        debug_assert!(slot.summary.is_none(), "one summary in flight per NPC");
        slot.summary = Some(SummaryInFlight {
            ticket,
            job: built.0.id,
            built: Some(built),
            rate_limited: 0,
        });
        self.in_flight += 1;
    }

    /// What a finished task was for, or `None` when it was cancelled meanwhile.
    pub(crate) fn finish(&mut self, npc: &NpcId, task: TaskId) -> Option<FinishedTask> {
        let slot = self.npcs.get_mut(npc)?;
        let (finished, ticket) = if let Some(reply) = slot.reply.take_if(|r| r.ticket.id == task) {
            (FinishedTask::Reply(reply.turn), reply.ticket)
        } else if let Some(summary) = slot.summary.take_if(|s| s.ticket.id == task) {
            (FinishedTask::Summary(summary.job), summary.ticket)
        } else {
            return None;
        };
        self.stopped(&ticket);
        self.in_flight -= 1;
        Some(finished)
    }

    /// The part of a streamed piece that may be shown, and the turn it belongs to:
    /// none if it belongs to a cancelled or interrupted request, and nothing past
    /// `max_chars` of the reply in total.
    pub(crate) fn admit_delta(
        &mut self,
        npc: &NpcId,
        task: TaskId,
        piece: String,
        max_chars: usize,
    ) -> Option<(TurnId, String)> {
        let reply = self.reply_of(npc, task)?;
        let piece = match &mut reply.tags {
            Some(tags) => tags.push(&piece),
            None => piece,
        };
        Self::show(reply, piece, max_chars)
    }

    /// What a reply's tag stream still held back when the reply came whole: the
    /// start of a reply that never became a tag, shown as the last piece.
    pub(crate) fn flush_delta(
        &mut self,
        npc: &NpcId,
        task: TaskId,
        max_chars: usize,
    ) -> Option<(TurnId, String)> {
        let reply = self.reply_of(npc, task)?;
        let piece = reply.tags.as_mut()?.finish();
        Self::show(reply, piece, max_chars)
    }

    fn reply_of(&mut self, npc: &NpcId, task: TaskId) -> Option<&mut ReplyInFlight> {
        self.npcs
            .get_mut(npc)?
            .reply
            .as_mut()
            .filter(|r| r.ticket.id == task)
    }

    /// Records a piece as shown, cut to the reply's cap.
    fn show(
        reply: &mut ReplyInFlight,
        piece: String,
        max_chars: usize,
    ) -> Option<(TurnId, String)> {
        let words = reply.edges.push(&piece);
        let room = max_chars.saturating_sub(reply.streamed_chars);
        let piece = crate::memory::first_chars(&words, room).to_owned();
        if piece.is_empty() {
            return None;
        }
        reply.streamed_chars += piece.chars().count();
        reply.streamed.push_str(&piece);
        Some((reply.turn, piece))
    }

    /// Keeps the reply fields the acting words of `turn` set, for its reply.
    pub(crate) fn keep_fields(&mut self, npc: &NpcId, turn: TurnId, fields: ReplyFields) {
        let slot = self.slot(npc);
        match &mut slot.fields {
            Some((kept, earlier)) if *kept == turn => earlier.merge(fields),
            _ => slot.fields = Some((turn, fields)),
        }
    }

    /// The reply fields kept for `turn`, if any; another turn's are dropped.
    pub(crate) fn take_fields(&mut self, npc: &NpcId, turn: TurnId) -> ReplyFields {
        let kept = self.npcs.get_mut(npc).and_then(|slot| slot.fields.take());
        match kept {
            Some((kept, fields)) if kept == turn => fields,
            _ => ReplyFields::default(),
        }
    }

    /// Stops the NPC's reply in flight, if any, and returns what it had streamed.
    /// Its summary and its waiting lines carry on.
    pub(crate) fn interrupt(&mut self, npc: &NpcId) -> Option<InterruptedReply> {
        let reply = self.npcs.get_mut(npc)?.reply.take()?;
        self.stopped(&reply.ticket);
        reply.ticket.cancel();
        self.in_flight -= 1;
        Some(InterruptedReply {
            turn: reply.turn,
            streamed: reply.streamed,
        })
    }

    /// Cancels the NPC's requests in flight and takes its waiting lines.
    pub(crate) fn cancel(&mut self, npc: &NpcId) -> Cancelled {
        self.forget(Some(npc));
        let Some(slot) = self.npcs.get_mut(npc) else {
            return Cancelled::default();
        };
        let reply = slot.reply.take();
        let acting = slot.acting.take();
        if acting.is_some() {
            self.acting -= 1;
        }
        // A turn waiting for the game's actions has no reply in flight.
        let turn = reply.as_ref().map(|r| r.turn).or(acting);
        slot.fields = None;
        for ticket in [
            reply.map(|r| r.ticket),
            slot.summary.take().map(|s| s.ticket),
        ]
        .into_iter()
        .flatten()
        {
            if !ticket.is_queued() {
                self.running -= 1;
            }
            ticket.cancel();
            self.in_flight -= 1;
        }
        Cancelled {
            reply: turn,
            waiting: self.drain(npc),
        }
    }

    /// A request leaves the NPC's slot: if it had been sent, it runs no longer.
    fn stopped(&mut self, ticket: &Ticket) {
        if !ticket.is_queued() {
            self.running -= 1;
        }
    }

    /// Requests sent to a backend and not yet applied or cancelled: the scheduler
    /// sends no more than the concurrency cap. Counted here, on the main thread,
    /// so a slot frees exactly when its result is applied, and what the result
    /// queues (the next line, a summary) competes for that slot.
    pub(crate) fn running(&self) -> usize {
        self.running
    }

    /// Takes every waiting line out of the NPC's queue (and the line it was about
    /// to answer, first).
    pub(crate) fn drain(&mut self, npc: &NpcId) -> VecDeque<QueuedLine> {
        let Some(slot) = self.npcs.get_mut(npc) else {
            return VecDeque::new();
        };
        let mut lines = slot.lines.drain();
        self.queued -= lines.len();
        if let Some(line) = slot.starting.take() {
            lines.push_front(line);
        }
        lines
    }

    /// Cancels every NPC's requests and takes their waiting lines, as loading
    /// another save slot must: their results belong to the memory being
    /// replaced.
    pub(crate) fn cancel_all(&mut self) -> Vec<(NpcId, Cancelled)> {
        let cancelled = self
            .npcs()
            .into_iter()
            .map(|npc| {
                let cancelled = self.cancel(&npc);
                (npc, cancelled)
            })
            .collect();
        self.forget(None);
        self.forget_backend_state(None);
        cancelled
    }

    /// Whether the NPC could take a line at once: it answers none, none waits,
    /// and its turn is not waiting for the game to answer its actions.
    pub(crate) fn is_free(&self, npc: &NpcId) -> bool {
        self.npcs
            .get(npc)
            .is_none_or(|slot| !slot.is_answering() && slot.lines.waiting().next().is_none())
    }

    /// The turn the NPC is on: accepted, answering, or acting.
    pub(crate) fn turn_in_progress(&self, npc: &NpcId) -> Option<TurnId> {
        let slot = self.npcs.get(npc)?;
        slot.starting
            .as_ref()
            .map(|line| line.turn)
            .or(slot.reply.as_ref().map(|reply| reply.turn))
            .or(slot.acting)
    }

    /// The first turn id not given out yet: every later turn is newer.
    pub(crate) fn next_turn(&self) -> TurnId {
        self.turns.peek()
    }

    /// `turn` is a conversation among NPCs: its requests are background work.
    pub(crate) fn mark_background(&mut self, turn: TurnId) {
        self.background.entry(turn).or_insert(0);
    }

    /// Whether `turn` is background work.
    pub(crate) fn is_background(&self, turn: TurnId) -> bool {
        self.background.contains_key(&turn)
    }

    /// Whether the NPC's reply in flight is background work.
    pub(crate) fn reply_is_background(&self, npc: &NpcId) -> bool {
        self.reply_turn(npc)
            .is_some_and(|turn| self.is_background(turn))
    }

    /// `turn` is over: the estimated prompt tokens its requests sent.
    pub(crate) fn end_background(&mut self, turn: TurnId) -> u64 {
        self.background.remove(&turn).unwrap_or(0)
    }

    /// Every NPC with a slot.
    pub(crate) fn npcs(&self) -> Vec<NpcId> {
        self.npcs.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests;
