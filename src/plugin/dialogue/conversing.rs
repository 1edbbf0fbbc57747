//! Conversations among NPCs, turn by turn. A conversation starts with its
//! opening said, or cued to its first speaker; each line is then passed to
//! every participant and bystander, and the next speaker answers it through the
//! same turn pipeline as a player line, once it is free, until the rules or the
//! game end the conversation. The pure rules are in
//! [`TurnTaking`](crate::memory::TurnTaking).

use std::sync::Arc;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::core::TurnCore;
use crate::backends::Purpose;
use crate::memory::{
    ConversationStop, Line, LogIndex, NpcId, Origin, Role, SpeakerId, TurnTaking, estimate_tokens,
    opening_cue,
};
use crate::plugin::clock::NpcMemoryClock;
use crate::plugin::conversations::{
    Conversation, ConversationEnd, ConversationEnded, ConversationError, ConversationLine,
    ConversationStarted, EndConversation, Heard, NpcConversations, StartConversation, Step,
    TurnNewsItem,
};
use crate::plugin::messages::{
    InterruptNpc, NpcReplied, NpcReplyFailed, NpcReplyStarted, ReplyError,
};
use crate::plugin::npc::TurnId;
use crate::plugin::rebuild::NpcMemoryLoads;
use crate::plugin::requests::{Offer, Readiness, unfit_line};
use crate::plugin::saves::{MemoryLoaded, MemoryRestored};
use crate::plugin::usage::RequestFinished;
use crate::save::WaitingLine;

/// How bystanders' witnessed events rate a line they overheard.
const OVERHEARD_IMPORTANCE: f32 = 0.4;

/// What running conversations borrows.
#[derive(SystemParam)]
pub(crate) struct Conversing<'w, 's> {
    core: TurnCore<'w, 's>,
    conversations: ResMut<'w, NpcConversations>,
    clock: Res<'w, NpcMemoryClock>,
    loads: Res<'w, NpcMemoryLoads>,
    started: MessageWriter<'w, ConversationStarted>,
    lines: MessageWriter<'w, ConversationLine>,
    ended: MessageWriter<'w, ConversationEnded>,
}

/// What the turn pipeline reported this frame that a conversation may wait for.
#[derive(SystemParam)]
pub(crate) struct TurnNews<'w, 's> {
    started: MessageReader<'w, 's, NpcReplyStarted>,
    replied: MessageReader<'w, 's, NpcReplied>,
    failed: MessageReader<'w, 's, NpcReplyFailed>,
    finished: MessageReader<'w, 's, RequestFinished>,
    loaded: MessageReader<'w, 's, MemoryLoaded>,
    restored: MessageReader<'w, 's, MemoryRestored>,
}

/// The game's starts and ends. Before the frame's interrupts, which cut off the
/// lines of the conversations ended here.
pub(crate) fn start_and_end_conversations(
    mut c: Conversing,
    mut start: MessageReader<StartConversation>,
    mut end: MessageReader<EndConversation>,
    mut interrupt: MessageWriter<InterruptNpc>,
) {
    for request in start.read() {
        c.start(request);
    }
    for request in end.read() {
        let found = c
            .conversations
            .running
            .iter()
            .position(|conv| match request {
                EndConversation::Id(id) => conv.id == *id,
                EndConversation::Involving(npc) => conv.participants.contains(npc),
            });
        let Some(at) = found else { continue };
        let conv = &mut c.conversations.running[at];
        match &mut conv.step {
            Step::Speaking {
                speaker, ending, ..
            } => {
                *ending = true;
                interrupt.write(InterruptNpc::new(conv.participants[*speaker].clone()));
            }
            Step::Deliver { .. } => c.end(at, ConversationEnd::Ended),
        }
    }
}

/// What the turn pipeline reported this frame, kept for
/// [`advance_conversations`] (which writes those messages, so cannot read them).
pub(crate) fn take_turn_news(mut news: TurnNews, mut conversations: ResMut<NpcConversations>) {
    if conversations.running.is_empty() {
        news.clear();
        return;
    }
    let inbox = &mut conversations.news;
    if news.loaded.read().count() + news.restored.read().count() > 0 {
        inbox.push(TurnNewsItem::Loaded);
    }
    for finished in news.finished.read() {
        if finished.purpose == Purpose::Reply
            && let Some(usage) = finished.outcome.usage
        {
            let tokens = usage.prompt_tokens + usage.completion_tokens;
            inbox.push(TurnNewsItem::Reported(finished.npc.clone(), tokens));
        }
    }
    inbox.extend(news.started.read().cloned().map(TurnNewsItem::Started));
    inbox.extend(news.replied.read().cloned().map(TurnNewsItem::Replied));
    inbox.extend(news.failed.read().cloned().map(TurnNewsItem::Failed));
}

/// Whether any conversation runs: frames without cost nothing.
pub(crate) fn conversations_running(conversations: Res<NpcConversations>) -> bool {
    !conversations.running.is_empty()
}

/// Lines said this frame go round, and next speakers that are free answer.
pub(crate) fn advance_conversations(mut c: Conversing) {
    let news = std::mem::take(&mut c.conversations.news);
    // Usage first: a turn's reply arrives in the same frame as its figures.
    for item in news
        .iter()
        .filter(|i| matches!(i, TurnNewsItem::Reported(..)))
    {
        if let TurnNewsItem::Reported(npc, tokens) = item {
            c.reported(npc, *tokens);
        }
    }
    for item in news {
        match item {
            TurnNewsItem::Loaded => {
                while !c.conversations.running.is_empty() {
                    c.end(0, ConversationEnd::Loaded);
                }
            }
            TurnNewsItem::Reported(..) => {}
            TurnNewsItem::Started(started) => c.joined(&started),
            TurnNewsItem::Replied(replied) => {
                c.replied(&replied.npc, replied.turn, replied.text, replied.index);
            }
            TurnNewsItem::Failed(failed) => {
                if let Some(turn) = failed.turn {
                    c.failed(&failed.npc, turn, &failed.error);
                }
            }
        }
    }
    c.step_all();
}

impl TurnNews<'_, '_> {
    fn clear(&mut self) {
        self.started.clear();
        self.replied.clear();
        self.failed.clear();
        self.finished.clear();
        self.loaded.clear();
        self.restored.clear();
    }
}

impl Conversing<'_, '_> {
    fn start(&mut self, request: &StartConversation) {
        let id = self.conversations.take_id();
        let speakers = match self.check(request) {
            Ok(speakers) => speakers,
            Err(error) => {
                self.ended.write(ConversationEnded {
                    id,
                    participants: request.participants.clone(),
                    lines: 0,
                    tokens: 0,
                    reason: ConversationEnd::Refused(error),
                });
                return;
            }
        };
        let others: Vec<&str> = speakers[1..].iter().map(SpeakerId::name).collect();
        let cue = opening_cue(&others, request.topic.as_deref());
        let scene = SpeakerId::new("scene", "Scene").expect("a plain speaker");
        let conv = Conversation {
            id,
            participants: request.participants.clone(),
            speakers,
            earshot: request.earshot.clone(),
            topic: request.topic.clone(),
            turns: TurnTaking::new(request.participants.len(), request.rules),
            step: Step::Deliver {
                to: 0,
                line: Heard {
                    text: cue.into(),
                    speaker: scene,
                },
            },
            first_turn: self.core.requests.next_turn(),
            joined: Vec::new(),
        };
        self.started.write(ConversationStarted {
            id,
            participants: request.participants.clone(),
        });
        self.conversations.running.push(conv);
        let at = self.conversations.running.len() - 1;
        if let Some(opening) = &request.opening {
            let first = &request.participants[0];
            let now = self.clock.now();
            let Some(mut memory) = self.core.layers.get_mut(first) else {
                return;
            };
            let text: Arc<str> = opening.as_str().into();
            let recorded = memory.reply(text.clone(), now);
            self.core.report_overflow(first, recorded.overflow);
            self.core.send_summary(first, recorded.summary);
            self.said(at, 0, text, recorded.index, None, 0, false);
        }
    }

    /// The speakers the participants are, or why they cannot talk.
    fn check(&self, request: &StartConversation) -> Result<Vec<SpeakerId>, ConversationError> {
        let participants = &request.participants;
        if participants.len() < 2 {
            return Err(ConversationError::TooFewParticipants);
        }
        let mut speakers = Vec::with_capacity(participants.len());
        for (at, npc) in participants.iter().enumerate() {
            if participants[..at].contains(npc) {
                return Err(ConversationError::Repeated(npc.clone()));
            }
            if !self.core.layers.contains(npc) {
                return Err(ConversationError::NotReady(npc.clone()));
            }
            if let Some(other) = self.conversations.of(npc) {
                return Err(ConversationError::InAnother {
                    npc: npc.clone(),
                    conversation: other.id,
                });
            }
            speakers.push(self.speaker(npc)?);
        }
        if let Some(opening) = &request.opening
            && let Some(error) = unfit_line(opening, self.core.requests.rules())
        {
            return Err(ConversationError::BadOpening(error));
        }
        Ok(speakers)
    }

    /// The NPC as a speaker, named by its persona (by its id if the persona's
    /// name cannot label a line).
    fn speaker(&self, npc: &NpcId) -> Result<SpeakerId, ConversationError> {
        let name = self.core.layers.name(npc).unwrap_or_default();
        SpeakerId::npc(npc, &name)
            .or_else(|_| SpeakerId::npc(npc, npc.as_str()))
            .map_err(|error| ConversationError::BadSpeaker {
                npc: npc.clone(),
                error,
            })
    }

    fn find(&self, npc: &NpcId) -> Option<(usize, usize)> {
        self.conversations
            .running
            .iter()
            .enumerate()
            .find_map(|(at, conv)| Some((at, conv.place_of(npc)?)))
    }

    /// Tokens the backend reported for a request of `npc`'s turn.
    fn reported(&mut self, npc: &NpcId, tokens: u64) {
        let Some((at, place)) = self.find(npc) else {
            return;
        };
        if let Step::Speaking {
            speaker, reported, ..
        } = &mut self.conversations.running[at].step
            && *speaker == place
        {
            *reported = Some(reported.unwrap_or(0) + tokens);
        }
    }

    /// A participant started answering someone outside the conversation: the
    /// player joined. The line is heard by everyone else, unless it is private.
    fn joined(&mut self, started: &NpcReplyStarted) {
        let Some((at, place)) = self.find(&started.npc) else {
            return;
        };
        let conv = &self.conversations.running[at];
        let own_turn = matches!(conv.step, Step::Speaking { turn, .. } if turn == started.turn);
        if own_turn || started.turn < conv.first_turn {
            return;
        }
        let Some(line) = self.core.layers.log(&started.npc).and_then(|log| {
            log.messages()
                .iter()
                .rev()
                .find(|m| m.role == Role::User && m.content == started.line)
        }) else {
            return;
        };
        if line.origin == Origin::SaidPrivately {
            return;
        }
        let heard = Heard {
            text: line.content.clone(),
            speaker: line.speaker.clone().unwrap_or_else(SpeakerId::player),
        };
        self.conversations.running[at]
            .joined
            .push((place, started.turn));
        self.pass_on(at, place, &heard, None);
    }

    fn replied(&mut self, npc: &NpcId, turn: TurnId, text: Arc<str>, index: LogIndex) {
        let Some((at, place)) = self.find(npc) else {
            return;
        };
        let conv = &mut self.conversations.running[at];
        match conv.step {
            Step::Speaking {
                turn: own,
                reported,
                ending,
                ..
            } if own == turn => {
                let estimated =
                    self.core.requests.end_background(turn) + estimate_tokens(&text) as u64;
                let tokens = reported.unwrap_or(estimated);
                self.said(at, place, text, index, Some(turn), tokens, ending);
            }
            _ => {
                let Some(joined) = conv.joined.iter().position(|&j| j == (place, turn)) else {
                    return;
                };
                conv.joined.swap_remove(joined);
                self.said_aside(at, place, text, index, turn);
            }
        }
    }

    fn failed(&mut self, npc: &NpcId, turn: TurnId, error: &ReplyError) {
        let Some((at, place)) = self.find(npc) else {
            return;
        };
        let conv = &mut self.conversations.running[at];
        let ending = match conv.step {
            Step::Speaking {
                turn: own, ending, ..
            } if own == turn => ending,
            _ => {
                conv.joined.retain(|&j| j != (place, turn));
                return;
            }
        };
        let kept = match error {
            ReplyError::Interrupted { kept: Some(index) } => self
                .core
                .layers
                .log(npc)
                .and_then(|log| log.get(*index))
                .map(|m| (m.content.clone(), *index)),
            _ => None,
        };
        let spent = self.core.requests.end_background(turn);
        match (kept, ending) {
            (Some((text, index)), _) => {
                let tokens = spent + estimate_tokens(&text) as u64;
                self.said(at, place, text, index, Some(turn), tokens, ending);
            }
            (None, true) => self.end(at, ConversationEnd::Ended),
            (None, false) => {
                let reason = match error {
                    ReplyError::Interrupted { .. } => ConversationEnd::Interrupted,
                    ReplyError::Cancelled => ConversationEnd::Cancelled,
                    other => ConversationEnd::Failed(other.clone()),
                };
                self.end(at, reason);
            }
        }
    }

    /// Participant `place` said `text` on its turn: everyone hears it, and the
    /// next speaker answers it, unless the rules end the conversation here, or
    /// the game is `ending` it.
    #[allow(clippy::too_many_arguments)]
    fn said(
        &mut self,
        at: usize,
        place: usize,
        text: Arc<str>,
        index: LogIndex,
        turn: Option<TurnId>,
        tokens: u64,
        ending: bool,
    ) {
        let (next, heard) = self.count_line(at, place, text, index, turn, tokens);
        match next {
            Ok(_) if ending => {
                self.pass_on(at, place, &heard, None);
                self.end(at, ConversationEnd::Ended);
            }
            Ok(next) => {
                self.pass_on(at, place, &heard, Some(next));
                self.conversations.running[at].step = Step::Deliver {
                    to: next,
                    line: heard,
                };
            }
            Err(stop) => {
                self.pass_on(at, place, &heard, None);
                self.end(at, ConversationEnd::Stopped(stop));
            }
        }
    }

    /// Participant `place` answered the player who joined: everyone hears it,
    /// and the conversation goes on where it was.
    fn said_aside(
        &mut self,
        at: usize,
        place: usize,
        text: Arc<str>,
        index: LogIndex,
        turn: TurnId,
    ) {
        let npc = &self.conversations.running[at].participants[place];
        let private = self.core.layers.log(npc).and_then(|log| log.get(index));
        if private.is_none_or(|m| m.origin == Origin::SaidPrivately) {
            return;
        }
        // The player's turn, not the conversation's: it costs the budget nothing.
        let (next, heard) = self.count_line(at, place, text, index, Some(turn), 0);
        self.pass_on(at, place, &heard, None);
        if let Err(stop) = next {
            self.end(at, ConversationEnd::Stopped(stop));
        }
    }

    /// A line of participant `place` counts against the rules and is reported
    /// to the game; returns who speaks next (or why it stops) and the line as
    /// the others hear it.
    fn count_line(
        &mut self,
        at: usize,
        place: usize,
        text: Arc<str>,
        index: LogIndex,
        turn: Option<TurnId>,
        tokens: u64,
    ) -> (Result<usize, ConversationStop>, Heard) {
        let conv = &mut self.conversations.running[at];
        let line = conv.turns.lines();
        let next = conv.turns.said(place, &text, tokens);
        let heard = Heard {
            text: text.clone(),
            speaker: conv.speakers[place].clone(),
        };
        self.lines.write(ConversationLine {
            id: conv.id,
            speaker: conv.participants[place].clone(),
            text,
            line,
            turn,
            index,
        });
        (next, heard)
    }

    /// Every participant but `place` (and `answerer`, who hears it as the line
    /// it answers) hears `heard`; bystanders witness it.
    fn pass_on(&mut self, at: usize, place: usize, heard: &Heard, answerer: Option<usize>) {
        let now = self.clock.now();
        let conv = &self.conversations.running[at];
        let listeners: Vec<NpcId> = conv
            .participants
            .iter()
            .enumerate()
            .filter(|&(p, _)| p != place && Some(p) != answerer)
            .map(|(_, npc)| npc.clone())
            .collect();
        let said_to: Vec<&str> = conv
            .speakers
            .iter()
            .enumerate()
            .filter(|&(p, _)| p != place)
            .map(|(_, speaker)| speaker.name())
            .collect();
        let event = format!(
            "{} said to {}: {}",
            heard.speaker.name(),
            said_to.join(" and "),
            heard.text
        );
        let bystanders = conv.earshot.clone();
        for npc in &listeners {
            let Some(mut memory) = self.core.layers.get_mut(npc) else {
                continue;
            };
            let noted = memory.listen(
                Line::new(heard.text.clone()).by(&heard.speaker),
                now.clone(),
            );
            self.core.report_overflow(npc, noted.overflow);
            self.core.send_summary(npc, noted.summary);
        }
        for npc in &bystanders {
            let Some(mut memory) = self.core.layers.get_mut(npc) else {
                continue;
            };
            let noted = memory.witness(event.as_str(), OVERHEARD_IMPORTANCE, now.clone());
            self.core.report_overflow(npc, noted.overflow);
            self.core.send_summary(npc, noted.summary);
        }
    }

    /// Next speakers that are free answer; turns that vanished (a clear or a
    /// load cancelled them) end their conversation.
    fn step_all(&mut self) {
        let mut at = 0;
        while at < self.conversations.running.len() {
            let conv = &self.conversations.running[at];
            let outcome = match &conv.step {
                Step::Deliver { to, line } => {
                    let (to, line) = (*to, line.clone());
                    self.deliver(at, to, line)
                }
                Step::Speaking { speaker, turn, .. } => {
                    let npc = &conv.participants[*speaker];
                    let gone = self.core.requests.turn_in_progress(npc) != Some(*turn);
                    if gone {
                        self.core.requests.end_background(*turn);
                        Err(ConversationEnd::Cancelled)
                    } else {
                        Ok(())
                    }
                }
            };
            match outcome {
                Ok(()) => at += 1,
                Err(reason) => self.end(at, reason),
            }
        }
    }

    /// The next speaker hears the line and answers it, once free.
    fn deliver(&mut self, at: usize, to: usize, line: Heard) -> Result<(), ConversationEnd> {
        let npc = self.conversations.running[at].participants[to].clone();
        if !self.core.layers.contains(&npc) {
            return Err(ConversationEnd::Cancelled);
        }
        if self.loads.is_loading() || !self.core.requests.is_free(&npc) {
            return Ok(());
        }
        let rules = self.core.requests.rules();
        let text = crate::memory::first_chars(&line.text, rules.max_line_chars).to_owned();
        let waiting = WaitingLine {
            text,
            private: false,
            speaker: line.speaker,
        };
        let turn = match self
            .core
            .requests
            .offer(&npc, waiting, &Readiness::Ready, rules)
        {
            Offer::Start(line) => {
                let turn = line.turn;
                self.core.requests.mark_background(turn);
                self.core.requests.start_line(&npc, line);
                turn
            }
            Offer::Queued(turn) => {
                self.core.requests.mark_background(turn);
                turn
            }
            Offer::Refused(error, _) => return Err(ConversationEnd::Failed(error)),
        };
        self.conversations.running[at].step = Step::Speaking {
            speaker: to,
            turn,
            reported: None,
            ending: false,
        };
        Ok(())
    }

    /// The conversation at `at` ends.
    fn end(&mut self, at: usize, reason: ConversationEnd) {
        let conv = self.conversations.running.remove(at);
        if let Step::Speaking { turn, .. } = conv.step {
            self.core.requests.end_background(turn);
        }
        self.ended.write(ConversationEnded {
            id: conv.id,
            participants: conv.participants,
            lines: conv.turns.lines(),
            tokens: conv.turns.tokens(),
            reason,
        });
    }
}
