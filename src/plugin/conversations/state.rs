//! The conversations running, as a resource the game can read.

use std::fmt;
use std::sync::Arc;

use bevy::prelude::*;

use crate::memory::{NpcId, SpeakerId, TurnTaking};
use crate::plugin::messages::{NpcReplied, NpcReplyFailed, NpcReplyStarted};
use crate::plugin::npc::TurnId;

/// A conversation's id, unique for the app's run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConversationId(pub(crate) u64);

impl fmt::Display for ConversationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conversation {}", self.0)
    }
}

/// A line on its way to the next speaker, and who said it.
#[derive(Clone, Debug)]
pub(crate) struct Heard {
    pub(crate) text: Arc<str>,
    pub(crate) speaker: SpeakerId,
}

/// Where a conversation is.
#[derive(Clone, Debug)]
pub(crate) enum Step {
    /// `line` waits for participant `to`, who answers it once free.
    Deliver { to: usize, line: Heard },
    /// Participant `speaker` is answering `turn`.
    Speaking {
        speaker: usize,
        turn: TurnId,
        /// Tokens the backend reported for the turn's requests so far.
        reported: Option<u64>,
        /// The game ended the conversation: the line is cut off, passed on,
        /// and the conversation ends.
        ending: bool,
    },
}

/// One running conversation.
#[derive(Debug)]
pub struct Conversation {
    pub(crate) id: ConversationId,
    pub(crate) participants: Vec<NpcId>,
    pub(crate) speakers: Vec<SpeakerId>,
    pub(crate) earshot: Vec<NpcId>,
    pub(crate) topic: Option<String>,
    pub(crate) turns: TurnTaking,
    pub(crate) step: Step,
    /// Turns from here on that answer someone outside the conversation (the
    /// player who joined) are part of it; earlier ones are not.
    pub(crate) first_turn: TurnId,
    /// Participants answering someone outside the conversation, and the turn.
    pub(crate) joined: Vec<(usize, TurnId)>,
}

impl Conversation {
    /// Its id.
    pub fn id(&self) -> ConversationId {
        self.id
    }

    /// Who takes part, in speaking order.
    pub fn participants(&self) -> &[NpcId] {
        &self.participants
    }

    /// Who hears it without taking part.
    pub fn earshot(&self) -> &[NpcId] {
        &self.earshot
    }

    /// What it is about, if the game said.
    pub fn topic(&self) -> Option<&str> {
        self.topic.as_deref()
    }

    /// Lines said so far.
    pub fn lines(&self) -> u32 {
        self.turns.lines()
    }

    /// Tokens its replies spent so far.
    pub fn tokens(&self) -> u64 {
        self.turns.tokens()
    }

    /// The participant producing a line now, if any; `None` while the next
    /// speaker finishes something else first.
    pub fn speaking(&self) -> Option<&NpcId> {
        match self.step {
            Step::Speaking { speaker, .. } => self.participants.get(speaker),
            Step::Deliver { .. } => None,
        }
    }

    /// The participant whose turn is next or now.
    pub fn next_speaker(&self) -> &NpcId {
        let at = match self.step {
            Step::Speaking { speaker, .. } => speaker,
            Step::Deliver { to, .. } => to,
        };
        &self.participants[at]
    }

    pub(crate) fn place_of(&self, npc: &NpcId) -> Option<usize> {
        self.participants.iter().position(|p| p == npc)
    }
}

/// What the turn pipeline reported in a frame, for the conversations.
#[derive(Debug)]
pub(crate) enum TurnNewsItem {
    /// A save was loaded or restored.
    Loaded,
    /// The backend reported these tokens for one of the NPC's replies.
    Reported(NpcId, u64),
    Started(NpcReplyStarted),
    Replied(NpcReplied),
    Failed(NpcReplyFailed),
}

/// The conversations among NPCs running now. Read it to show who is talking.
#[derive(Resource, Default, Debug)]
pub struct NpcConversations {
    pub(crate) running: Vec<Conversation>,
    pub(crate) next_id: u64,
    pub(crate) news: Vec<TurnNewsItem>,
}

impl NpcConversations {
    /// Every running conversation, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Conversation> {
        self.running.iter()
    }

    /// A running conversation.
    pub fn get(&self, id: ConversationId) -> Option<&Conversation> {
        self.running.iter().find(|c| c.id == id)
    }

    /// The conversation `npc` takes part in, if any.
    pub fn of(&self, npc: &NpcId) -> Option<&Conversation> {
        self.running.iter().find(|c| c.participants.contains(npc))
    }

    /// How many are running.
    pub fn len(&self) -> usize {
        self.running.len()
    }

    /// Whether none is running.
    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    pub(crate) fn take_id(&mut self) -> ConversationId {
        self.next_id += 1;
        ConversationId(self.next_id)
    }
}
