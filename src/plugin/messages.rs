//! The messages a game sends to NPCs and receives from them.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bevy::prelude::*;

use super::npc::TurnId;
use crate::backends::{BackendError, ChatBackend};
use crate::memory::{
    Degradation, FactChange, FactKey, LogIndex, MemoryConfig, NpcId, ReplyFields, SpeakerId,
    SummaryTrigger,
};

/// The player says something to an NPC. Send it with a `MessageWriter<TalkToNpc>`,
/// or, for a spawned NPC entity, trigger [`TalkTo`](crate::prelude::TalkTo) or call
/// [`talk`](crate::NpcCommandsExt::talk) on its `EntityCommands`.
///
/// The answer comes back as [`NpcReplied`] or [`NpcReplyFailed`]. While the NPC is
/// still answering an earlier line, new lines queue (see
/// [`NpcMemorySettings::max_queued_lines`](crate::NpcMemorySettings::max_queued_lines)).
///
/// Sending a message returns nothing, so the line's [`TurnId`] comes back with
/// [`NpcReplyStarted`], sent when the NPC starts answering it (at once, or when a
/// queued line's turn comes); it carries the line's text, so a game matches it to
/// what it sent. Every delta, the reply and the failure of the line carry the same
/// id. A line refused at once (busy, empty, unknown NPC) gets no id: its
/// [`NpcReplyFailed`] has `turn: None`.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// fn greet(mut talk: MessageWriter<TalkToNpc>) {
///     talk.write(TalkToNpc::new("echo7", "Hello, I'm Alex."));
/// }
/// # App::new()
/// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
/// #     .add_systems(Update, greet)
/// #     .update();
/// ```
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct TalkToNpc {
    /// Who is spoken to.
    pub npc: NpcId,
    /// What the player said.
    pub text: String,
    /// The player asked the NPC to keep it to itself: it is answered as usual but
    /// never passed on to another NPC (see [`ShareKnowledge`](crate::knowledge::ShareKnowledge)).
    #[reflect(default)]
    pub private: bool,
    /// Who says it: the game's single player unless set (see
    /// [`from_speaker`](Self::from_speaker)).
    #[reflect(default)]
    pub speaker: SpeakerId,
}

impl TalkToNpc {
    /// The player says `text` to `npc`.
    pub fn new(npc: impl Into<NpcId>, text: impl Into<String>) -> Self {
        Self {
            npc: npc.into(),
            text: text.into(),
            private: false,
            speaker: SpeakerId::player(),
        }
    }

    /// Someone other than the game's single player says it: a co-op player, or
    /// another NPC ([`SpeakerId::npc`]), so NPC B's line to NPC A is a
    /// `TalkToNpc` to A from B. The log keeps the speaker (also while the line
    /// waits, and across saves), prompts label the line with its name, and a name
    /// the speaker gives is a fact of its own (`player_name:<id>`).
    ///
    /// ```
    /// # use bevy::prelude::*;
    /// # use bevy_npc_memory::prelude::*;
    /// # use bevy_npc_memory::memory::SpeakerId;
    /// fn co_op(mut talk: MessageWriter<TalkToNpc>) {
    ///     let bob = SpeakerId::new("p2", "Bob").expect("a plain name");
    ///     talk.write(TalkToNpc::new("echo7", "Where is the generator?").from_speaker(bob));
    /// }
    /// ```
    pub fn from_speaker(mut self, speaker: SpeakerId) -> Self {
        self.speaker = speaker;
        self
    }

    /// The player asks the NPC to keep this line to itself ("don't tell anyone,
    /// but…"): it is never passed on to another NPC.
    pub fn privately(mut self) -> Self {
        self.private = true;
        self
    }
}

/// Forget everything an NPC remembers (the persona stays). Requests in flight are
/// cancelled, and every line said to the NPC still ends, with
/// [`ReplyError::Cancelled`]: the line being answered (its turn, no
/// `unrecorded_line`: it was said to the memory now forgotten), then each line
/// waiting (handed back in `unrecorded_line`: the NPC never heard it).
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct ClearNpcMemory {
    /// Whose memory.
    pub npc: NpcId,
}

impl ClearNpcMemory {
    /// Forget what `npc` remembers.
    pub fn new(npc: impl Into<NpcId>) -> Self {
        Self { npc: npc.into() }
    }
}

/// Summarize an NPC's uncovered messages now, whatever the threshold says.
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct SummarizeNow {
    /// Whose memory.
    pub npc: NpcId,
}

impl SummarizeNow {
    /// Summarize `npc`'s uncovered messages now.
    pub fn new(npc: impl Into<NpcId>) -> Self {
        Self { npc: npc.into() }
    }
}

/// Changes one NPC's window, threshold and limits while the game runs, e.g. from a
/// debug panel. The window shrinks at once, but uncovered messages stay until a
/// summary covers them; a lower threshold may start a summary right away. A persona
/// that sets its own sizes applies them again when it is edited or respawned, and
/// when a save is loaded or a snapshot restored (live personas win over saved
/// ones), which may make a summary due at once.
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct ReconfigureNpcMemory {
    /// Whose memory.
    pub npc: NpcId,
    /// The new sizes.
    pub config: MemoryConfig,
}

impl ReconfigureNpcMemory {
    /// Give `npc` the sizes in `config`.
    pub fn new(npc: impl Into<NpcId>, config: MemoryConfig) -> Self {
        Self {
            npc: npc.into(),
            config,
        }
    }
}

/// Sets a pinned fact as the game's word, for example from quest state. The model's
/// summaries cannot override it; the previous value is kept as outdated.
///
/// An action handler may write it too, e.g. `promise:open_door` kept once the
/// door is open: facts written while the game answers an NPC's actions are in
/// force before the follow-up request of that turn is built, so the NPC's next
/// words already know. (Pinned facts must be switched on for the NPC.)
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct SetPinnedFact {
    /// Whose memory.
    pub npc: NpcId,
    /// Which fact, such as [`FactKey::CURRENT_GOAL`](crate::memory::FactKey).
    pub key: FactKey,
    /// Its value.
    pub value: String,
}

impl SetPinnedFact {
    /// Set `npc`'s fact `key` to `value`.
    pub fn new(npc: impl Into<NpcId>, key: FactKey, value: impl Into<String>) -> Self {
        Self {
            npc: npc.into(),
            key,
            value: value.into(),
        }
    }
}

/// Removes a pinned fact; it stays in the fact's history as outdated.
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct RemovePinnedFact {
    /// Whose memory.
    pub npc: NpcId,
    /// Which fact.
    pub key: FactKey,
}

impl RemovePinnedFact {
    /// Retire `npc`'s fact `key`.
    pub fn new(npc: impl Into<NpcId>, key: FactKey) -> Self {
        Self {
            npc: npc.into(),
            key,
        }
    }
}

/// Stops the reply an NPC is producing, and optionally the lines waiting for it,
/// without touching its memory otherwise. For a spawned NPC entity, trigger
/// [`Interrupt`](crate::dialogue::Interrupt) or call
/// [`interrupt_npc`](crate::NpcCommandsExt::interrupt_npc) on its
/// `EntityCommands`.
///
/// What memory keeps:
/// - The player's line stays in the log (L2) and the window (L1): it was said.
/// - If part of the reply had already streamed as [`NpcReplyDelta`]s, exactly that
///   part is recorded as the NPC's reply, cut off mid-sentence: the player saw it,
///   so memory should hold it too. Pieces the backend produced that had not been
///   passed on yet are dropped, and nothing later from the cancelled request is
///   ever delivered. If nothing had streamed (or only whitespace), nothing is
///   recorded.
///
/// The interrupted turn ends with [`NpcReplyFailed`] and
/// [`ReplyError::Interrupted`], whose `kept` holds the log index of the recorded
/// part. No [`NpcReplied`] is sent for it.
///
/// Lines waiting in the queue carry on, the next one starting at once, unless
/// `clear_queue` is set: then each fails with [`ReplyError::Interrupted`] (with
/// `kept: None`) and its text in `unrecorded_line`. Lines held for a load in
/// flight ([`NpcMemoryLoads`](crate::saves::NpcMemoryLoads)) are waiting lines
/// too: kept and answered by the loaded memory, or, with `clear_queue`, handed
/// back the same way (with no turn). An NPC that is not answering is
/// left alone (apart from its queue, when cleared). Within one frame, interrupts
/// are applied before new [`TalkToNpc`] lines, so "stop, and hear this instead"
/// sent together works as meant.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// # use bevy_npc_memory::dialogue::InterruptNpc;
/// fn skip(mut interrupt: MessageWriter<InterruptNpc>) {
///     // Cut the current answer short; lines already waiting are still answered.
///     interrupt.write(InterruptNpc::new("echo7"));
///     // Or stop everything the NPC was going to say.
///     interrupt.write(InterruptNpc::clearing_queue("echo7"));
/// }
/// # App::new()
/// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
/// #     .add_systems(Update, skip)
/// #     .update();
/// ```
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct InterruptNpc {
    /// Who is interrupted.
    pub npc: NpcId,
    /// Also drop the lines waiting for the NPC.
    pub clear_queue: bool,
}

impl InterruptNpc {
    /// Interrupts `npc`'s reply; its waiting lines are still answered.
    pub fn new(npc: impl Into<NpcId>) -> Self {
        Self {
            npc: npc.into(),
            clear_queue: false,
        }
    }

    /// Interrupts `npc`'s reply and drops the lines waiting for it.
    pub fn clearing_queue(npc: impl Into<NpcId>) -> Self {
        Self {
            npc: npc.into(),
            clear_queue: true,
        }
    }
}

/// An NPC started answering a player line: the line is in its log, and the request
/// is on its way. Sent when a line is answered at once and when a queued line's turn
/// comes. Use it to learn a line's [`TurnId`], or to show that the NPC is thinking.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct NpcReplyStarted {
    /// Who is answering.
    pub npc: NpcId,
    /// The turn: the id every delta, the reply and any failure of this line carry.
    pub turn: TurnId,
    /// The player's line being answered.
    pub line: Arc<str>,
}

/// An NPC answered. The reply is already in its log and window.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// fn show_replies(mut replies: MessageReader<NpcReplied>) {
///     // Fields may be added, so patterns end with `..`.
///     for NpcReplied { npc, text, .. } in replies.read() {
///         info!("{npc}: {text}");
///     }
/// }
/// # App::new()
/// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
/// #     .add_systems(Update, show_replies.after(NpcMemorySystems::Collect))
/// #     .update();
/// ```
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct NpcReplied {
    /// Who answered.
    pub npc: NpcId,
    /// The turn answered, as in its [`NpcReplyStarted`].
    pub turn: TurnId,
    /// The reply.
    pub text: Arc<str>,
    /// The reply's index in the NPC's log.
    pub index: LogIndex,
    /// The reply fields the reply set, such as `mood`, for a persona that declares
    /// [`reply_fields`](crate::prelude::Persona::reply_fields): parsed from the
    /// tag the model starts its reply with, which `text`, the deltas and memory
    /// never show. A value outside the declared set is dropped. Fields are not
    /// remembered: keep them by `index` if the game's history should show them.
    pub fields: ReplyFields,
}

/// A piece of a reply that is still being produced, for typewriter effects. The
/// pieces of one reply add up to the text of the [`NpcReplied`] that follows. For a
/// persona with reply fields, the start of a reply that may be the fields' tag is
/// held back until it is known, so no piece ever shows the tag.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct NpcReplyDelta {
    /// Who is answering.
    pub npc: NpcId,
    /// The turn being answered, as in its [`NpcReplyStarted`].
    pub turn: TurnId,
    /// The next piece of text.
    pub delta: String,
}

/// An NPC could not answer a line.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct NpcReplyFailed {
    /// Who was spoken to.
    pub npc: NpcId,
    /// The line's turn, if it was accepted; `None` for a line refused at once
    /// (busy, empty, too long, unknown NPC, persona failed), which never had one.
    pub turn: Option<TurnId>,
    /// Why there is no answer.
    pub error: ReplyError,
    /// The player's line when it was *not* recorded in the log (busy, unknown NPC,
    /// cancelled while queued), so the game can hand it back. `None` when the line is
    /// safely in the log.
    pub unrecorded_line: Option<String>,
}

/// Why an NPC did not answer.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// The NPC is still answering and its queue is full.
    #[error("{npc} is busy: {queued} lines are already waiting")]
    Busy {
        /// Who is busy.
        npc: NpcId,
        /// Lines waiting.
        queued: usize,
    },
    /// No NPC with this id was ever spawned.
    #[error("no NPC with id {0} has been spawned")]
    UnknownNpc(NpcId),
    /// The NPC's persona asset failed to load, so it has no memory to answer with.
    #[error("the persona of {npc} could not be loaded: {reason}")]
    PersonaUnavailable {
        /// Whose persona.
        npc: NpcId,
        /// Why it failed.
        reason: String,
    },
    /// The line was empty or only whitespace.
    #[error("the line is empty")]
    EmptyLine,
    /// The line is longer than the plugin accepts.
    #[error("the line has {chars} characters, over the limit of {max}")]
    LineTooLong {
        /// Characters in the line.
        chars: usize,
        /// The limit.
        max: usize,
    },
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The NPC's memory was cleared (or replaced by a load or an import) before the
    /// line was answered, or the app closed while the line was held for a load in
    /// flight.
    #[error("the NPC's memory was cleared or replaced before it answered")]
    Cancelled,
    /// The game interrupted the reply ([`InterruptNpc`]), or dropped the waiting
    /// line with `clear_queue`.
    #[error("the reply was interrupted")]
    Interrupted {
        /// The log index of the part of the reply that had streamed, recorded as
        /// the NPC's cut-off reply; `None` when nothing had streamed.
        kept: Option<LogIndex>,
    },
}

/// An NPC's summary changed, and with it the system prompt its replies use.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct NpcSummaryUpdated {
    /// Whose memory.
    pub npc: NpcId,
    /// The summary before.
    pub old: Arc<str>,
    /// The summary now.
    pub new: Arc<str>,
    /// The log indices folded in.
    pub covered: Range<LogIndex>,
    /// Time the summary took, over all attempts.
    pub latency: Duration,
    /// Why it ran.
    pub trigger: SummaryTrigger,
    /// Pinned facts the summary changed (empty unless facts are on).
    pub fact_changes: Vec<FactChange>,
}

/// An NPC's memory lost quality: a summary failed for good, or messages left the
/// prompt unsummarized. Replies keep working.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct NpcMemoryDegraded {
    /// Whose memory.
    pub npc: NpcId,
    /// What happened.
    pub degradation: Degradation,
}

/// Switches the backend that answers, summarizes, or both, while the game runs: for
/// example from a settings menu where the player picks a provider or pastes their
/// own key. Requests in flight finish on the backend they started on; the next ones
/// use the new one. Memory is untouched.
///
/// Summaries use the reply backend unless told otherwise, and then follow it
/// through switches. A `LocalLlmBackend` switched in reports its model's load with
/// `LocalModelLoaded` or `LocalModelFailed`, as one given at startup does.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// # use bevy_npc_memory::dialogue::SwitchBackend;
/// fn use_offline_replies(mut switch: MessageWriter<SwitchBackend>) {
///     switch.write(SwitchBackend::replies(OfflineBackend::default()));
/// }
/// ```
#[derive(Message, Clone)]
#[non_exhaustive]
pub struct SwitchBackend {
    pub(crate) replies: Option<Arc<dyn ChatBackend>>,
    pub(crate) summaries: SummaryBackend,
    /// Local models among the new backends, whose load the game is told about.
    #[cfg(feature = "local-llm")]
    pub(crate) local_model: Option<crate::backends::LocalLlmBackend>,
}

/// Which backend summaries use after a [`SwitchBackend`].
#[derive(Clone)]
pub(crate) enum SummaryBackend {
    Unchanged,
    SameAsReplies,
    Own(Arc<dyn ChatBackend>),
}

impl SwitchBackend {
    /// Replies use `backend` from now on, and so do summaries if they use the reply
    /// backend.
    pub fn replies(backend: impl ChatBackend) -> Self {
        Self {
            #[cfg(feature = "local-llm")]
            local_model: crate::backends::LocalLlmBackend::of(&backend),
            replies: Some(Arc::new(backend)),
            summaries: SummaryBackend::Unchanged,
        }
    }

    /// Summaries use `backend` from now on; replies keep theirs.
    pub fn summaries(backend: impl ChatBackend) -> Self {
        Self {
            #[cfg(feature = "local-llm")]
            local_model: crate::backends::LocalLlmBackend::of(&backend),
            replies: None,
            summaries: SummaryBackend::Own(Arc::new(backend)),
        }
    }

    /// Replies and summaries both use `backend` from now on, and summaries follow
    /// later reply switches.
    pub fn both(backend: impl ChatBackend) -> Self {
        Self {
            #[cfg(feature = "local-llm")]
            local_model: crate::backends::LocalLlmBackend::of(&backend),
            replies: Some(Arc::new(backend)),
            summaries: SummaryBackend::SameAsReplies,
        }
    }
}

/// Names only: a backend's name is never a secret, its settings may hold a key.
impl fmt::Debug for SwitchBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let summaries = match &self.summaries {
            SummaryBackend::Unchanged => "unchanged",
            SummaryBackend::SameAsReplies => "same as replies",
            SummaryBackend::Own(backend) => backend.name(),
        };
        f.debug_struct("SwitchBackend")
            .field("replies", &self.replies.as_ref().map(|b| b.name()))
            .field("summaries", &summaries)
            .finish()
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<TalkToNpc>()
        .add_message::<InterruptNpc>()
        .add_message::<NpcReplyStarted>()
        .add_message::<ClearNpcMemory>()
        .add_message::<SummarizeNow>()
        .add_message::<ReconfigureNpcMemory>()
        .add_message::<SetPinnedFact>()
        .add_message::<RemovePinnedFact>()
        .add_message::<NpcReplied>()
        .add_message::<NpcReplyDelta>()
        .add_message::<NpcReplyFailed>()
        .add_message::<NpcSummaryUpdated>()
        .add_message::<NpcMemoryDegraded>()
        .add_message::<SwitchBackend>()
        // Reflected, so a console or Bevy's remote protocol can send them.
        .register_type::<TalkToNpc>()
        .register_type::<InterruptNpc>()
        .register_type::<ClearNpcMemory>()
        .register_type::<SummarizeNow>()
        .register_type::<ReconfigureNpcMemory>()
        .register_type::<SetPinnedFact>()
        .register_type::<RemovePinnedFact>();
}
