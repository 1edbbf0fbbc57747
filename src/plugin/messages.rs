//! The messages a game sends to NPCs and receives from them.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bevy::prelude::*;

use crate::backends::{BackendError, ChatBackend};
use crate::memory::{
    Degradation, FactChange, FactKey, LogIndex, MemoryConfig, NpcId, SummaryTrigger,
};

/// The player says something to an NPC. Send it with a `MessageWriter<TalkToNpc>`.
///
/// The answer comes back as [`NpcReplied`] or [`NpcReplyFailed`]. While the NPC is
/// still answering an earlier line, new lines queue (see
/// [`NpcMemorySettings::max_queued_lines`](crate::NpcMemorySettings::max_queued_lines)).
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
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct TalkToNpc {
    /// Who is spoken to.
    pub npc: NpcId,
    /// What the player said.
    pub text: String,
}

impl TalkToNpc {
    /// The player says `text` to `npc`.
    pub fn new(npc: impl Into<NpcId>, text: impl Into<String>) -> Self {
        Self {
            npc: npc.into(),
            text: text.into(),
        }
    }
}

/// Forget everything an NPC remembers (the persona stays). Requests in flight are
/// cancelled and queued lines fail with [`ReplyError::Cancelled`].
#[derive(Message, Clone, Debug, PartialEq)]
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
#[derive(Message, Clone, Debug, PartialEq)]
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
/// that sets its own sizes applies them again when it is edited or respawned.
#[derive(Message, Clone, Debug, PartialEq)]
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
#[derive(Message, Clone, Debug, PartialEq)]
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
#[derive(Message, Clone, Debug, PartialEq)]
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
    /// The reply.
    pub text: Arc<str>,
    /// The reply's index in the NPC's log.
    pub index: LogIndex,
}

/// A piece of a reply that is still being produced, for typewriter effects. The
/// pieces of one reply add up to the text of the [`NpcReplied`] that follows.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct NpcReplyDelta {
    /// Who is answering.
    pub npc: NpcId,
    /// The next piece of text.
    pub delta: String,
}

/// An NPC could not answer a line.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct NpcReplyFailed {
    /// Who was spoken to.
    pub npc: NpcId,
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
    /// The NPC's memory was cleared before the line was answered.
    #[error("the NPC's memory was cleared before it answered")]
    Cancelled,
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
            local_model: super::local_model_of(&backend),
            replies: Some(Arc::new(backend)),
            summaries: SummaryBackend::Unchanged,
        }
    }

    /// Summaries use `backend` from now on; replies keep theirs.
    pub fn summaries(backend: impl ChatBackend) -> Self {
        Self {
            #[cfg(feature = "local-llm")]
            local_model: super::local_model_of(&backend),
            replies: None,
            summaries: SummaryBackend::Own(Arc::new(backend)),
        }
    }

    /// Replies and summaries both use `backend` from now on, and summaries follow
    /// later reply switches.
    pub fn both(backend: impl ChatBackend) -> Self {
        Self {
            #[cfg(feature = "local-llm")]
            local_model: super::local_model_of(&backend),
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
        .add_message::<SwitchBackend>();
}
