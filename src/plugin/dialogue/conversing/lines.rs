//! A conversation's lines: what a speaker said counts against the rules, is
//! reported to the game, and goes round to the others and the bystanders.

use std::sync::Arc;

use bevy::prelude::*;

use crate::memory::{
    ConversationStop, Line, LogIndex, Now, NpcId, Origin, Role, SpeakerId, estimate_tokens,
};
use crate::plugin::conversations::{ConversationEnd, ConversationLine, Heard, Step};
use crate::plugin::messages::{NpcReplyStarted, ReplyError};
use crate::plugin::npc::TurnId;

use super::flow::Conversing;

/// How bystanders' witnessed events rate a line they overheard.
const OVERHEARD_IMPORTANCE: f32 = 0.4;

impl Conversing<'_, '_> {
    /// Tokens the backend reported for a request of `npc`'s turn.
    pub(super) fn reported(&mut self, npc: &NpcId, tokens: u64) {
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
    pub(super) fn joined(&mut self, started: &NpcReplyStarted) {
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

    pub(super) fn replied(&mut self, npc: &NpcId, turn: TurnId, text: Arc<str>, index: LogIndex) {
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

    pub(super) fn failed(&mut self, npc: &NpcId, turn: TurnId, error: &ReplyError) {
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
    pub(super) fn said(
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

    /// Participant `npc` hears `heard` without answering it: the line enters its
    /// log with its speaker.
    pub(super) fn hear(&mut self, npc: &NpcId, heard: &Heard, now: Now) {
        let Some(mut memory) = self.core.layers.get_mut(npc) else {
            return;
        };
        let noted = memory.listen(Line::new(heard.text.clone()).by(&heard.speaker), now);
        self.core.report_overflow(npc, noted.overflow);
        self.core.send_summary(npc, noted.summary);
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
            self.hear(npc, heard, now.clone());
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
}
