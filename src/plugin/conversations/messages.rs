//! What the game sends to start and end conversations among NPCs, and what it
//! hears of them.

use std::sync::Arc;

use bevy::prelude::*;

use super::state::ConversationId;
use crate::memory::{ConversationRules, ConversationStop, LogIndex, NpcId, SpeakerError};
use crate::plugin::messages::ReplyError;
use crate::plugin::npc::TurnId;

/// Starts a conversation among NPCs, which the plugin runs: the first
/// participant opens it, and each line is answered by the next participant in
/// order, round the circle, until the [`ConversationRules`] or the game
/// ([`EndConversation`]) end it.
///
/// - **Turns.** Each NPC answers from its own memory with its own backend. A turn
///   is background work for the scheduler: it goes after the replies the player
///   waits for, before summaries, within the summaries' share of the budget. An
///   NPC busy with the player finishes that first.
/// - **Memory.** Every line enters every participant's log with its speaker, so
///   each NPC remembers who said what first-hand: it is recalled, summarized,
///   and passed on by [`ShareKnowledge`](crate::knowledge::ShareKnowledge) as
///   said by its speaker. A prompt for a turn leaves out every line the player
///   (or anyone) said privately to the speaking NPC.
/// - **Bystanders.** NPCs within earshot get each line as a witnessed event.
/// - **The player** overhears through [`ConversationLine`], and through the
///   speaking NPC's usual reply messages and entity events (started, deltas,
///   replied). A [`TalkToNpc`](crate::dialogue::TalkToNpc) to a participant joins
///   the conversation: the line and the answer are heard by every participant,
///   then the NPCs carry on.
/// - **The end** comes as [`ConversationEnded`], whose reason says why, and
///   which also answers a start that was refused.
///
/// Conversations are not saved: a load ends every running conversation (the
/// lines said so far are in the logs, and in the save).
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// use bevy_npc_memory::conversations::StartConversation;
///
/// fn shift_change(mut start: MessageWriter<StartConversation>) {
///     start.write(
///         StartConversation::between(["echo7", "rusty3"])
///             .about("what each of you saw on your shift")
///             .max_turns(4)
///             .within_earshot(["mira"]),
///     );
/// }
/// # App::new()
/// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
/// #     .add_systems(Update, shift_change)
/// #     .update();
/// ```
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct StartConversation {
    /// Who takes part, in speaking order: at least two different NPCs.
    pub participants: Vec<NpcId>,
    /// What it is about, told to the first speaker as it opens.
    pub topic: Option<String>,
    /// The first speaker's first line, said as it is; when `None`, the first
    /// speaker opens in its own words.
    pub opening: Option<String>,
    /// When it ends by itself.
    pub rules: ConversationRules,
    /// NPCs that are not taking part but hear every line, as witnessed events.
    pub earshot: Vec<NpcId>,
}

impl StartConversation {
    /// A conversation among `participants`, in speaking order, with the default
    /// rules (6 lines, no token budget).
    pub fn between(participants: impl IntoIterator<Item = impl Into<NpcId>>) -> Self {
        Self {
            participants: participants.into_iter().map(Into::into).collect(),
            topic: None,
            opening: None,
            rules: ConversationRules::default(),
            earshot: Vec::new(),
        }
    }

    /// What they talk about.
    pub fn about(mut self, topic: impl Into<String>) -> Self {
        self.topic = Some(topic.into());
        self
    }

    /// The first speaker opens with exactly `line`. It answers no one, so it is
    /// said in the open even right after a player told that NPC something
    /// privately.
    pub fn opening_with(mut self, line: impl Into<String>) -> Self {
        self.opening = Some(line.into());
        self
    }

    /// Ends it after `lines` lines in all.
    pub fn max_turns(mut self, lines: u32) -> Self {
        self.rules.max_turns = lines;
        self
    }

    /// Ends it once its replies have spent `tokens`.
    pub fn token_budget(mut self, tokens: u64) -> Self {
        self.rules.max_tokens = Some(tokens);
        self
    }

    /// Replaces all its rules.
    pub fn with_rules(mut self, rules: ConversationRules) -> Self {
        self.rules = rules;
        self
    }

    /// These NPCs hear it without taking part.
    pub fn within_earshot(mut self, npcs: impl IntoIterator<Item = impl Into<NpcId>>) -> Self {
        self.earshot = npcs.into_iter().map(Into::into).collect();
        self
    }
}

/// [`StartConversation`] by entity: `commands.trigger(Converse::between([guard,
/// cook]).about("the stew"))`. Entities without [`Npc`](crate::Npc) are skipped
/// with a warning.
#[derive(Event, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Event, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct Converse {
    /// The NPC entities that take part, in speaking order.
    pub participants: Vec<Entity>,
    /// The NPC entities within earshot.
    pub earshot: Vec<Entity>,
    /// The topic, opening line and rules (its NPC lists are replaced by the
    /// entities' NPCs).
    pub start: StartConversation,
}

impl Converse {
    /// A conversation among the NPC entities `participants`, in speaking order.
    pub fn between(participants: impl IntoIterator<Item = Entity>) -> Self {
        Self {
            participants: participants.into_iter().collect(),
            earshot: Vec::new(),
            start: StartConversation::between(Vec::<NpcId>::new()),
        }
    }

    /// What they talk about.
    pub fn about(mut self, topic: impl Into<String>) -> Self {
        self.start = self.start.about(topic);
        self
    }

    /// When it ends by itself.
    pub fn with_rules(mut self, rules: ConversationRules) -> Self {
        self.start.rules = rules;
        self
    }

    /// These NPC entities hear it without taking part.
    pub fn within_earshot(mut self, entities: impl IntoIterator<Item = Entity>) -> Self {
        self.earshot = entities.into_iter().collect();
        self
    }
}

/// Ends a conversation now. A line being produced is cut off as an
/// [`InterruptNpc`](crate::dialogue::InterruptNpc) cuts a reply: the part that
/// had streamed is kept, and heard by the others.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum EndConversation {
    /// This conversation.
    Id(ConversationId),
    /// The conversation this NPC takes part in, if any.
    Involving(NpcId),
}

impl EndConversation {
    /// Ends the conversation `npc` takes part in.
    pub fn involving(npc: impl Into<NpcId>) -> Self {
        Self::Involving(npc.into())
    }
}

/// A conversation started.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ConversationStarted {
    /// Which one.
    pub id: ConversationId,
    /// Who takes part, in speaking order.
    pub participants: Vec<NpcId>,
}

/// A line was said in a conversation: an NPC's turn, or a participant's answer
/// to the player who joined. Every participant's log holds it now.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ConversationLine {
    /// Which conversation.
    pub id: ConversationId,
    /// Who said it.
    pub speaker: NpcId,
    /// What was said.
    pub text: Arc<str>,
    /// Its number in the conversation, from 0.
    pub line: u32,
    /// The reply turn that produced it, as in the speaker's
    /// [`NpcReplied`](crate::dialogue::NpcReplied); `None` for an opening line
    /// the game gave.
    pub turn: Option<TurnId>,
    /// Its index in the speaker's log.
    pub index: LogIndex,
}

/// A conversation ended, or a start was refused.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ConversationEnded {
    /// Which one.
    pub id: ConversationId,
    /// Who took part.
    pub participants: Vec<NpcId>,
    /// Lines said in it.
    pub lines: u32,
    /// Tokens its replies spent.
    pub tokens: u64,
    /// Why it ended.
    pub reason: ConversationEnd,
}

/// Why a conversation ended.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ConversationEnd {
    /// Its rules ended it: the turn limit, the token budget, or a repetition.
    Stopped(ConversationStop),
    /// The game ended it ([`EndConversation`]).
    Ended,
    /// The game interrupted a turn before any of it streamed, so there was no
    /// line to answer.
    Interrupted,
    /// A turn failed: the backend failed, or the line could not be said.
    Failed(ReplyError),
    /// A participant's memory was cleared or replaced mid-turn.
    Cancelled,
    /// A save was loaded or restored: conversations are not saved.
    Loaded,
    /// It never started.
    Refused(ConversationError),
}

/// Why a conversation could not start.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConversationError {
    /// Fewer than two NPCs take part.
    #[error("a conversation needs at least two NPCs")]
    TooFewParticipants,
    /// An NPC is named twice among the participants.
    #[error("{0} is named twice")]
    Repeated(NpcId),
    /// An NPC has no memory yet: never spawned, or its persona still loading.
    #[error("{0} has no memory to talk from (not spawned, or still loading)")]
    NotReady(NpcId),
    /// An NPC takes part in another conversation already.
    #[error("{npc} is in {conversation} already")]
    InAnother {
        /// Who.
        npc: NpcId,
        /// The conversation it is in.
        conversation: ConversationId,
    },
    /// An NPC's id cannot name a speaker (see [`SpeakerId::npc`](crate::memory::SpeakerId::npc)).
    #[error("{npc} cannot be a speaker: {error}")]
    BadSpeaker {
        /// Who.
        npc: NpcId,
        /// Why.
        error: SpeakerError,
    },
    /// The opening line is empty or too long for a line.
    #[error("the opening line cannot be said: {0}")]
    BadOpening(ReplyError),
}
