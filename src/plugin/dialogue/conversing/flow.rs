//! A conversation's course: it starts (or is refused), each next speaker is
//! handed the line it answers once free, and it ends.

use std::sync::Arc;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use crate::memory::{NpcId, SpeakerId, TurnTaking, opening_cue};
use crate::plugin::clock::NpcMemoryClock;
use crate::plugin::conversations::{
    Conversation, ConversationEnd, ConversationEnded, ConversationError, ConversationLine,
    ConversationStarted, Heard, NpcConversations, StartConversation, Step,
};
use crate::plugin::dialogue::core::TurnCore;
use crate::plugin::rebuild::NpcMemoryLoads;
use crate::plugin::requests::{Offer, Readiness, unfit_line};
use crate::save::WaitingLine;

/// What running conversations borrows.
#[derive(SystemParam)]
pub(crate) struct Conversing<'w, 's> {
    pub(super) core: TurnCore<'w, 's>,
    pub(super) conversations: ResMut<'w, NpcConversations>,
    pub(super) clock: Res<'w, NpcMemoryClock>,
    pub(super) loads: Res<'w, NpcMemoryLoads>,
    pub(super) started: MessageWriter<'w, ConversationStarted>,
    pub(super) lines: MessageWriter<'w, ConversationLine>,
    pub(super) ended: MessageWriter<'w, ConversationEnded>,
}

impl Conversing<'_, '_> {
    pub(super) fn start(&mut self, request: &StartConversation) {
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
        let scene = SpeakerId::scene();
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
            let recorded = memory.speak(text.clone(), now);
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

    pub(super) fn find(&self, npc: &NpcId) -> Option<(usize, usize)> {
        self.conversations
            .running
            .iter()
            .enumerate()
            .find_map(|(at, conv)| Some((at, conv.place_of(npc)?)))
    }

    /// Next speakers that are free answer; turns that vanished (a clear or a
    /// load cancelled them) end their conversation.
    pub(super) fn step_all(&mut self) {
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
    pub(super) fn end(&mut self, at: usize, reason: ConversationEnd) {
        let conv = self.conversations.running.remove(at);
        match &conv.step {
            Step::Speaking { turn, .. } => {
                self.core.requests.end_background(*turn);
            }
            // The next speaker had not taken the last line yet (it was busy, or
            // its turn was refused): it still hears it, as every participant
            // hears every line. A load replaced its memory, which never held it.
            Step::Deliver { to, line } if reason != ConversationEnd::Loaded => {
                let now = self.clock.now();
                self.hear(&conv.participants[*to], line, now);
            }
            Step::Deliver { .. } => {}
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
