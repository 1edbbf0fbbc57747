//! The Bevy adapter: the plugin, its resources, messages and systems.

mod actions;
mod bridge;
mod clock;
mod conversations;
mod data_file;
mod dialogue;
mod entities;
mod entity_events;
mod knowledge;
mod layers;
#[cfg(feature = "local-llm")]
mod local_model;
mod lore;
mod messages;
mod npc;
mod npc_commands;
mod persona;
mod rebuild;
mod requests;
mod saves;
mod schedule;
mod sets;
mod settings;
mod telemetry;
mod usage;

use std::path::PathBuf;
use std::sync::Arc;

use bevy::prelude::*;

pub use actions::{ActionInvocation, AnswerNpcAction, NpcActed, NpcActionsAppExt, ProposedAction};
pub use clock::{ClockSource, NpcMemoryClock};
pub use conversations::{
    Conversation, ConversationEnd, ConversationEnded, ConversationError, ConversationId,
    ConversationLine, ConversationStarted, Converse, EndConversation, NpcConversations,
    StartConversation,
};
pub use entities::NpcEntities;
pub use entity_events::{Acted, Interrupt, Replied, ReplyDelta, ReplyFailed, ReplyStarted, TalkTo};
pub use knowledge::{About, KnowledgeShared, MarkPrivate, NpcWitnessed, ShareKnowledge, Witness};
pub use layers::{ChatLogs, ContextMemoryManager, FactKnower, Knower, RollingWindows};
#[cfg(feature = "local-llm")]
pub use local_model::{LocalModelFailed, LocalModelLoaded};
pub use lore::{AddLore, LoreFile, LoreFileError, LoreFileLoader, NpcLore, RemoveLore, UpdateLore};
pub use messages::{
    ClearNpcMemory, InterruptNpc, NpcMemoryDegraded, NpcReplied, NpcReplyDelta, NpcReplyFailed,
    NpcReplyStarted, NpcSummaryUpdated, ReconfigureNpcMemory, RemovePinnedFact, ReplyError,
    SetPinnedFact, SummarizeNow, SwitchBackend, TalkToNpc,
};
pub use npc::{MemoryTier, NpcState, PersonaFeatures, TierMemory, TierOverrides, TurnId};
pub use npc_commands::NpcCommandsExt;
pub use persona::{Npc, Persona, PersonaError, PersonaLoader};
pub use rebuild::{NpcMemoryLoads, RECALL_BUILD_OFF_THREAD};
pub use requests::NpcRequests;
pub use saves::{
    ImportUnitySave, LoadMemory, MemoryLoadFailed, MemoryLoaded, MemoryRestoreFailed,
    MemoryRestored, MemorySaveFailed, MemorySaved, NpcMemorySnapshot, ResumeAutosave, SaveMemory,
    SaveSettings,
};
pub use schedule::{BudgetUse, NpcMemoryScheduler, SetMemoryTier};
pub use sets::NpcMemorySystems;
pub use settings::{NpcMemorySettings, ScheduleSettings};
pub use telemetry::{TELEMETRY_TARGET, Telemetry, TelemetryEvent, TraceFile};
pub use usage::{LlmUsage, UsageStats, diagnostics};

use crate::backends::{ChatBackend, OfflineBackend};
use crate::memory::MemoryFeatures;
use sets::{CollectStep, IntakeStep, LoadStep, PersistStep};

/// Gives NPCs LLM-driven dialogue with layered memory.
///
/// ```no_run
/// use bevy::prelude::*;
/// use bevy_npc_memory::prelude::*;
///
/// App::new()
///     .add_plugins((MinimalPlugins, AssetPlugin::default()))
///     .add_plugins(NpcMemoryPlugin::default().with_window(20))
///     .run();
/// ```
///
/// It needs `AssetPlugin` (part of `DefaultPlugins`) added before it.
pub struct NpcMemoryPlugin {
    settings: NpcMemorySettings,
    reply_backend: Arc<dyn ChatBackend>,
    summary_backend: Option<Arc<dyn ChatBackend>>,
    #[cfg(feature = "http")]
    runtime: Option<tokio::runtime::Handle>,
    trace_file: Option<PathBuf>,
    trace_file_limit: u64,
    saves: SaveSettings,
    clock: NpcMemoryClock,
    /// Lore files to load at startup and keep loaded.
    lore_files: Vec<String>,
    /// Local models among the backends, whose load result the game is told.
    #[cfg(feature = "local-llm")]
    local_models: [Option<crate::backends::LocalLlmBackend>; 2],
}

impl Default for NpcMemoryPlugin {
    fn default() -> Self {
        Self {
            settings: NpcMemorySettings::default(),
            reply_backend: Arc::new(OfflineBackend::default()),
            summary_backend: None,
            #[cfg(feature = "http")]
            runtime: None,
            trace_file: None,
            trace_file_limit: TraceFile::DEFAULT_MAX_BYTES,
            saves: SaveSettings::default(),
            clock: NpcMemoryClock::default(),
            lore_files: Vec::new(),
            #[cfg(feature = "local-llm")]
            local_models: [None, None],
        }
    }
}

impl NpcMemoryPlugin {
    /// Answers and summarizes with `backend` (the default is [`OfflineBackend`]).
    /// A `LocalLlmBackend` (feature `local-llm`) also makes the plugin send
    /// `LocalModelLoaded` or `LocalModelFailed` once its model has loaded or failed.
    pub fn with_backend(mut self, backend: impl ChatBackend) -> Self {
        #[cfg(feature = "local-llm")]
        {
            self.local_models[0] = crate::backends::LocalLlmBackend::of(&backend);
        }
        self.reply_backend = Arc::new(backend);
        self
    }

    /// Summarizes with a different backend, such as a cheaper model.
    pub fn with_summary_backend(mut self, backend: impl ChatBackend) -> Self {
        #[cfg(feature = "local-llm")]
        {
            self.local_models[1] = crate::backends::LocalLlmBackend::of(&backend);
        }
        self.summary_backend = Some(Arc::new(backend));
        self
    }

    /// Sets the default window size (system prompt included).
    pub fn with_window(mut self, max_context_window: usize) -> Self {
        self.settings.memory.max_context_window = max_context_window;
        self
    }

    /// Sets the default summary threshold (otherwise half the window).
    pub fn with_summary_threshold(mut self, threshold: usize) -> Self {
        self.settings.memory.summary_threshold = Some(threshold);
        self
    }

    /// Switches on memory features beyond basic mode for every NPC (personas may
    /// still switch them per NPC), e.g. `MemoryFeatures::layered(2000)`.
    pub fn with_features(mut self, features: MemoryFeatures) -> Self {
        self.settings.memory.features = features;
        self
    }

    /// Replaces all settings.
    pub fn with_settings(mut self, settings: NpcMemorySettings) -> Self {
        self.settings = settings;
        self
    }

    /// Runs requests on the game's own tokio runtime instead of Bevy's IO task pool.
    /// HTTP requests made off a tokio runtime run on one small runtime the HTTP
    /// backends share, so this is only needed to keep all async work in one place.
    #[cfg(feature = "http")]
    pub fn with_runtime(mut self, handle: tokio::runtime::Handle) -> Self {
        self.runtime = Some(handle);
        self
    }

    /// Restores every NPC's memory from `path` at startup if it exists, then
    /// autosaves to it after every message and summary (`.ron` for RON, anything
    /// else JSON, e.g. `savegame.json` as in the original ECHO-7 game).
    pub fn with_autosave(mut self, path: impl Into<PathBuf>) -> Self {
        self.saves.autosave = Some(path.into());
        self
    }

    /// Starts with this memory clock: a play-time clock at another time, or one the
    /// game drives from its calendar, and how prompts write dates (see
    /// [`NpcMemoryClock`]). The default counts play time from zero and writes
    /// `day N HH:MM`.
    pub fn with_clock(mut self, clock: NpcMemoryClock) -> Self {
        self.clock = clock;
        self
    }

    /// Loads the lore file at this asset path (`*.lore.ron`, see [`LoreFile`]) at
    /// startup and keeps it loaded, so its entries stay in [`NpcLore`] and edits to
    /// the file reach them (hot reload needs Bevy's `file_watcher` feature). Call
    /// it once per file. A game may instead load a `Handle<LoreFile>` itself and
    /// keep it: every live `LoreFile` asset feeds [`NpcLore`].
    pub fn with_lore(mut self, path: impl Into<String>) -> Self {
        self.lore_files.push(path.into());
        self
    }

    /// Also appends telemetry as JSON lines to `path`. Past a size cap
    /// ([`TraceFile::DEFAULT_MAX_BYTES`] unless set with
    /// [`with_trace_file_limit`](Self::with_trace_file_limit)) the file is rotated
    /// to `<path>.1`; see [`TraceFile`].
    pub fn with_trace_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.trace_file = Some(path.into());
        self
    }

    /// Sets the trace file's size cap, in bytes. Only matters with
    /// [`with_trace_file`](Self::with_trace_file).
    pub fn with_trace_file_limit(mut self, max_bytes: u64) -> Self {
        self.trace_file_limit = max_bytes;
        self
    }
}

impl Plugin for NpcMemoryPlugin {
    fn build(&self, app: &mut App) {
        assert!(
            app.is_plugin_added::<AssetPlugin>(),
            "NpcMemoryPlugin needs AssetPlugin: add DefaultPlugins, or AssetPlugin::default() next to MinimalPlugins, before it"
        );
        let telemetry = match &self.trace_file {
            Some(path) => Telemetry::with_trace_file(
                TraceFile::new(path.clone()).with_max_bytes(self.trace_file_limit),
            )
            .unwrap_or_else(|error| {
                tracing::error!(
                    "could not open the trace file {}: {error}; tracing to the log only",
                    path.display()
                );
                Telemetry::default()
            }),
            None => Telemetry::default(),
        };
        app.insert_resource(self.settings.clone())
            .insert_resource(telemetry)
            .insert_resource(bridge::LlmBridge::new(
                #[cfg(feature = "http")]
                self.runtime.clone(),
                self.reply_backend.clone(),
                self.summary_backend.clone(),
                self.settings.request_timeout,
                self.settings.max_concurrent_requests,
            ))
            .init_resource::<ChatLogs>()
            .init_resource::<RollingWindows>()
            .init_resource::<ContextMemoryManager>()
            .init_resource::<layers::MemoryChanges>()
            .init_resource::<NpcRequests>()
            .init_resource::<NpcMemoryLoads>()
            .init_resource::<persona::PersonaBindings>()
            .register_type::<TierMemory>()
            .init_resource::<NpcEntities>()
            .init_asset::<Persona>()
            .register_asset_reflect::<Persona>()
            .register_asset_loader(PersonaLoader)
            // Reflected so that inspectors show them and scenes and saves hold NPCs.
            .register_type::<Npc>()
            .register_type::<NpcMemorySettings>()
            .register_type::<NpcState>()
            .register_type::<TalkTo>()
            .register_type::<Interrupt>()
            .add_observer(persona::on_npc_inserted)
            .add_observer(entities::on_npc_inserted)
            .add_observer(entities::on_npc_discarded)
            .add_observer(entities::on_npc_removed)
            .add_observer(entity_events::on_talk_to)
            .add_observer(entity_events::on_interrupt)
            .configure_sets(
                Update,
                (
                    NpcMemorySystems::Personas,
                    NpcMemorySystems::Intake,
                    NpcMemorySystems::Collect,
                    NpcMemorySystems::Persist,
                )
                    .chain(),
            )
            .configure_sets(
                Update,
                (
                    IntakeStep::Changes,
                    IntakeStep::Tiers,
                    IntakeStep::Knowledge,
                    IntakeStep::Lines,
                )
                    .chain()
                    .in_set(NpcMemorySystems::Intake),
            )
            .configure_sets(
                Update,
                (
                    CollectStep::Results,
                    CollectStep::Actions,
                    CollectStep::Record,
                    CollectStep::Converse,
                    CollectStep::Dispatch,
                )
                    .chain()
                    .in_set(NpcMemorySystems::Collect),
            )
            .configure_sets(
                Update,
                (
                    LoadStep::Swap,
                    LoadStep::Settle,
                    LoadStep::Personas,
                    LoadStep::Bind,
                    LoadStep::Answer,
                )
                    .chain()
                    .in_set(NpcMemorySystems::Personas),
            )
            .configure_sets(
                Update,
                (PersistStep::Io, PersistStep::Settle, PersistStep::Snapshot)
                    .chain()
                    .in_set(NpcMemorySystems::Persist),
            );
        dialogue::plugin(app);
        clock::plugin(app, self.clock.clone());
        conversations::plugin(app);
        saves::plugin(app, self.saves.clone());
        messages::plugin(app);
        actions::plugin(app);
        knowledge::plugin(app);
        lore::plugin(app, self.lore_files.clone());
        usage::plugin(app);
        schedule::plugin(app);
        #[cfg(feature = "local-llm")]
        local_model::plugin(app, self.local_models.iter().flatten().cloned().collect());
    }
}
