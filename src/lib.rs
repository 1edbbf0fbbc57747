//! LLM-driven NPC dialogue with layered memory, for Bevy.
//!
//! Add one plugin, spawn an NPC with a persona, and talk to it. Each NPC keeps
//! three layers of memory:
//!
//! | layer | type | resource | what it is |
//! |---|---|---|---|
//! | L1 | [`RollingWindow`](crate::memory::RollingWindow) | [`RollingWindows`] | the recent messages sent with every request; the system prompt always first |
//! | L2 | [`ChatLog`](crate::memory::ChatLog) | [`ChatLogs`] | every message, append-only: UI history and savegames |
//! | L3 | [`ContextMemory`](crate::memory::ContextMemory) | [`ContextMemoryManager`] | every N messages a stateless request folds new messages into a summary, and the system prompt becomes persona + summary |
//!
//! # Tutorial
//!
//! **1. Add the plugin.** It needs `AssetPlugin`, which `DefaultPlugins` has. Without
//! a backend it runs offline: replies say so, and summaries are extractive.
//!
//! ```no_run
//! use bevy::prelude::*;
//! use bevy_npc_memory::prelude::*;
//!
//! App::new()
//!     .add_plugins((MinimalPlugins, AssetPlugin::default()))
//!     .add_plugins(NpcMemoryPlugin::default().with_window(20))
//!     .run();
//! ```
//!
//! **2. Spawn an NPC.** Its [`NpcId`](crate::memory::NpcId) names its memory, so the memory outlives the
//! entity. The persona comes from a `*.npc.ron` asset (see [`Persona`]) or from code.
//!
//! ```no_run
//! # use bevy::prelude::*;
//! # use bevy_npc_memory::prelude::*;
//! fn spawn(mut commands: Commands, assets: Res<AssetServer>) {
//!     commands.spawn(Npc::new("echo7", assets.load("npcs/echo7.npc.ron")));
//! }
//! ```
//!
//! **3. Talk, and listen.** Send [`TalkToNpc`](crate::prelude::TalkToNpc); read [`NpcReplied`](crate::prelude::NpcReplied), or
//! [`NpcReplyDelta`](crate::dialogue::NpcReplyDelta) to typewrite, and [`NpcReplyFailed`](crate::prelude::NpcReplyFailed) for errors. Requests run
//! on Bevy's IO task pool, off the main thread; nothing blocks the frame.
//!
//! ```no_run
//! # use bevy::prelude::*;
//! # use bevy_npc_memory::prelude::*;
//! fn talk(mut talk: MessageWriter<TalkToNpc>) {
//!     talk.write(TalkToNpc::new("echo7", "Hi, I'm Alex. I'm here to fix the power."));
//! }
//!
//! fn listen(mut replies: MessageReader<NpcReplied>, mut failures: MessageReader<NpcReplyFailed>) {
//!     for reply in replies.read() {
//!         println!("{}: {}", reply.npc, reply.text);
//!     }
//!     for failure in failures.read() {
//!         // The player's line is handed back when it was not recorded.
//!         eprintln!("{}: {}", failure.npc, failure.error);
//!     }
//! }
//! ```
//!
//! **4. Watch memory work.** [`NpcSummaryUpdated`](crate::dialogue::NpcSummaryUpdated) fires when a summary rewrites the
//! system prompt, [`NpcMemoryDegraded`](crate::dialogue::NpcMemoryDegraded) when a summary failed twice or the window hit
//! its hard cap. Every request and response is also a `tracing` event with target
//! [`TELEMETRY_TARGET`](crate::telemetry::TELEMETRY_TARGET), and [`NpcMemoryPlugin::with_trace_file`] writes them as
//! JSON lines.
//!
//! **5. Keep what matters.** A single rolling summary loses detail. Switch
//! on [`MemoryFeatures`](crate::memory::MemoryFeatures) to add recall of raw old messages, pinned facts,
//! segmented summaries and a token budget; each part also works alone, and
//! personas can switch them per NPC:
//!
//! ```no_run
//! # use bevy::prelude::*;
//! # use bevy_npc_memory::prelude::*;
//! App::new().add_plugins(
//!     NpcMemoryPlugin::default().with_features(MemoryFeatures::layered(2000)),
//! );
//! // Quest state is the game's word; the model's summaries cannot override it.
//! fn on_quest_started(mut facts: MessageWriter<SetPinnedFact>) {
//!     facts.write(SetPinnedFact::new(
//!         "echo7",
//!         FactKey::CURRENT_GOAL,
//!         "restore power to the north wing",
//!     ));
//! }
//! ```
//!
//! [`ContextMemory::last_prompt`](crate::memory::ContextMemory::last_prompt) tells how the last prompt was built: its sections,
//! and which old messages were recalled and why.
//!
//! **6. Let NPCs act.** Register game actions with
//! [`register_npc_action`](crate::prelude::NpcActionsAppExt::register_npc_action)
//! and list them in a persona (`actions: ["open_door"]`): a model may then call
//! them as tools, the game's handler system answers, the NPC says what came of it,
//! and [`NpcActed`](crate::actions::NpcActed) tells the game. Calls and results
//! are log entries like any other, quoted in prompts and kept in saves. The
//! actions reach backends in [`ChatRequest::actions`](crate::backends::ChatRequest::actions):
//! the HTTP backend offers them as OpenAI-style `tools` and reads the model's
//! `tool_calls`, the in-process model answers with call objects a grammar made from
//! the actions' schemas holds it to, the scripted backend plays calls a test
//! scripts, and one that cannot call tools (the offline backend) answers in words.
//! A handler that writes
//! [`SetPinnedFact`](crate::prelude::SetPinnedFact) (a promise kept, say) is
//! heard before the turn's follow-up request is built, so the NPC already knows.
//!
//! **7. Moods and animation tags.** A persona's `reply_fields: {"mood": ["calm",
//! "alarmed"]}` asks the model to start each reply with a tag such as
//! `[mood: alarmed]`; the tag is taken off before the text streams or enters
//! memory, and the value arrives in
//! [`NpcReplied::fields`](crate::prelude::NpcReplied::fields). It works with
//! every backend, since it is plain text.
//!
//! # Guarantees
//!
//! - No message leaves the prompt before a successful summary covers it. While
//!   summaries lag or fail, the window grows up to a hard cap (2 × window by default);
//!   past it, messages are dropped from the prompt and reported, never from the log.
//! - A failed summary is retried once, then the last good summary stays. Replies are
//!   never affected.
//! - Text from the player or a model that enters the system message (summaries,
//!   recalled lines, fact values), and lore, is quoted as data, so it cannot pose
//!   as an instruction or a section of its own.
//! - Lore scoped to a group or one NPC ([`NpcLore`](crate::lore::NpcLore)) never
//!   reaches the prompt of an NPC outside that scope.
//! - The player's line is in the log as soon as a request for it starts; lines that
//!   cannot be taken (busy, unknown NPC, too long) come back in [`NpcReplyFailed`](crate::prelude::NpcReplyFailed).
//!   Lines still waiting when the game saves are saved with the NPC.
//! - Messages are stamped with game time from [`NpcMemoryClock`], which is saved
//!   with the memory, so time keeps counting across save, quit and load; no message
//!   is ever stamped earlier than the one before it in its NPC's log.
//! - A backend that panics fails that one request ([`BackendError::Panicked`](crate::backends::BackendError::Panicked)); every
//!   read from a server and every reply has a size cap.
//! - A save is checked field by field before anything is built from it, and the
//!   writer refuses what the reader would refuse. RELIABILITY.md in the repository
//!   lists every fault the tests inject.
//!
//! # Without Bevy
//!
//! The core is plain Rust: [`NpcMemory`](crate::memory::NpcMemory) holds the three layers and [`LayersMut`](crate::memory::LayersMut)
//! changes them, for tools, benchmarks, or other engines.
#![warn(missing_docs)]
// docs.rs builds with `--cfg docsrs`, so feature-gated items carry a badge naming
// the feature they need.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod backends;
pub mod debug;
pub mod memory;
mod plugin;
mod save;
mod trace;

/// The `schemars` crate that actions' JSON Schemas come from. Derive
/// `JsonSchema` with the same major version (1) in your own `Cargo.toml`, or
/// through this re-export with `#[schemars(crate = "bevy_npc_memory::schemars")]`:
///
/// ```
/// use bevy_npc_memory::memory::NpcAction;
/// use bevy_npc_memory::schemars::JsonSchema;
///
/// /// Dims or lights one area of the bunker.
/// #[derive(serde::Deserialize, JsonSchema)]
/// #[schemars(crate = "bevy_npc_memory::schemars")]
/// struct SetLights {
///     /// Which area.
///     area: String,
///     /// Lights on or off.
///     on: bool,
/// }
///
/// impl NpcAction for SetLights {
///     const NAME: &'static str = "set_lights";
///     const DESCRIPTION: &'static str = "Turn the lights of an area on or off.";
/// }
///
/// let schema = SetLights::spec().parameters;
/// assert_eq!(schema["properties"]["on"]["type"], "boolean");
/// ```
pub use schemars;

pub use plugin::{
    ChatLogs, ClockSource, ContextMemoryManager, Npc, NpcCommandsExt, NpcEntities, NpcMemoryClock,
    NpcMemoryPlugin, NpcMemorySettings, NpcMemorySystems, NpcState, Persona, PersonaError,
    PersonaFeatures, PersonaLoader, RECALL_BUILD_OFF_THREAD, RollingWindows,
};
#[cfg(feature = "local-llm")]
pub use plugin::{LocalModelFailed, LocalModelLoaded};

/// Talking to NPCs: player lines in, replies out, as messages and as entity events,
/// and the commands that change one NPC's memory (clear, reconfigure, pin a fact).
pub mod dialogue {
    pub use crate::plugin::{
        ClearNpcMemory, Interrupt, InterruptNpc, NpcMemoryDegraded, NpcReplied, NpcReplyDelta,
        NpcReplyFailed, NpcReplyStarted, NpcRequests, NpcSummaryUpdated, ReconfigureNpcMemory,
        RemovePinnedFact, Replied, ReplyDelta, ReplyError, ReplyFailed, ReplyStarted,
        SetPinnedFact, SummarizeNow, SwitchBackend, TalkTo, TalkToNpc, TurnId,
    };
}

/// What NPCs know beyond their own conversation: events they witness, what they
/// tell each other, and lines kept private.
pub mod knowledge {
    pub use crate::plugin::{
        About, FactKnower, Knower, KnowledgeShared, MarkPrivate, NpcWitnessed, ShareKnowledge,
        Witness,
    };
}

/// Conversations among NPCs that the plugin runs: start one, overhear it, join
/// it, end it. The rules that end one by itself are in [`memory`]
/// ([`ConversationRules`](crate::memory::ConversationRules)).
pub mod conversations {
    pub use crate::plugin::{
        Conversation, ConversationEnd, ConversationEnded, ConversationError, ConversationId,
        ConversationLine, ConversationStarted, Converse, EndConversation, NpcConversations,
        StartConversation,
    };
}

/// Lore shared by NPCs: lore files, the store resource, and changes at run time.
pub mod lore {
    pub use crate::plugin::{
        AddLore, LoreFile, LoreFileError, LoreFileLoader, NpcLore, RemoveLore, UpdateLore,
    };
}

/// NPCs that act: game actions the model calls as tools, their handlers, vetoes and
/// outcomes. The action types themselves are in [`memory`] with the core.
pub mod actions {
    pub use crate::plugin::{
        Acted, ActionInvocation, AnswerNpcAction, NpcActed, NpcActionsAppExt, ProposedAction,
    };
}

/// Savegames: the save and load messages, autosave, snapshots inside the game's own
/// save, and the plain-Rust format underneath (versioned, migrated, written
/// crash-safely), with the import of the original ECHO-7 game's Unity layout.
pub mod saves {
    pub use crate::plugin::{
        ImportUnitySave, LoadMemory, MemoryLoadFailed, MemoryLoaded, MemoryRestoreFailed,
        MemoryRestored, MemorySaveFailed, MemorySaved, NpcMemoryLoads, NpcMemorySnapshot,
        ResumeAutosave, SaveMemory, SaveSettings,
    };
    pub use crate::save::{
        JournalProblem, JournalReport, JournaledSlot, LoadError, MAX_SAVED_QUEUED_LINES, NpcSave,
        SAVE_FORMAT_VERSION, SaveError, SaveFormat, SaveGame, UnusableSave, WaitingLine,
        backup_path, import_unity_save, journal_path,
    };
}

/// When requests go: memory tiers, memory per tier, the request budget, and the
/// scheduler's state.
pub mod schedule {
    pub use crate::plugin::{
        BudgetUse, MemoryTier, NpcMemoryScheduler, ScheduleSettings, SetMemoryTier, TierMemory,
        TierOverrides,
    };
}

/// Telemetry and usage: one structured event per memory operation, an optional
/// JSON-lines trace file, token counts per NPC, and Bevy diagnostics.
pub mod telemetry {
    pub use crate::plugin::{
        LlmUsage, TELEMETRY_TARGET, Telemetry, TelemetryEvent, TraceFile, UsageStats, diagnostics,
    };
}

/// What a typical game touches: the plugin and its settings, NPCs and personas,
/// talking and listening, the layer resources, saving and loading, witnessed
/// events, actions, and the backends that ship with the crate. Everything else is
/// in its feature module.
pub mod prelude {
    pub use crate::actions::{ActionInvocation, NpcActionsAppExt};
    pub use crate::backends::{ChatBackend, OfflineBackend};
    #[cfg(feature = "local-llm")]
    pub use crate::backends::{LocalLlmBackend, LocalLlmConfig};
    #[cfg(feature = "http")]
    pub use crate::backends::{OpenAiBackend, OpenAiConfig};
    #[cfg(feature = "debug-ui")]
    pub use crate::debug::NpcMemoryDebugPlugin;
    pub use crate::dialogue::{
        ClearNpcMemory, NpcReplied, NpcReplyFailed, Replied, ReplyError, SetPinnedFact, TalkTo,
        TalkToNpc,
    };
    pub use crate::knowledge::NpcWitnessed;
    pub use crate::memory::{FactKey, MemoryConfig, MemoryFeatures, NpcAction, NpcId, Role};
    pub use crate::saves::{
        LoadMemory, MemoryLoadFailed, MemoryLoaded, MemorySaveFailed, MemorySaved, SaveMemory,
    };
    pub use crate::{
        ChatLogs, ContextMemoryManager, Npc, NpcCommandsExt, NpcMemoryPlugin, NpcMemorySettings,
        NpcMemorySystems, NpcState, Persona, RollingWindows,
    };
}

// The README's Rust examples are compiled with the tests (they use every feature).
#[cfg(all(doctest, feature = "http", feature = "debug-ui", feature = "local-llm"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
