//! A headless app around the plugin, shared by the integration tests.
#![allow(dead_code)]

pub mod actions;
pub mod alloc;
pub mod fake_llm;
pub mod held;
pub mod logs;

use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy_npc_memory::dialogue::NpcMemoryDegraded;
use bevy_npc_memory::dialogue::NpcReplyDelta;
use bevy_npc_memory::dialogue::NpcReplyStarted;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::dialogue::NpcSummaryUpdated;
use bevy_npc_memory::memory::{PromptMessage, ShortLogs};
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::telemetry::LlmUsage;

/// Messages of one type the plugin wrote, kept for assertions.
#[derive(Resource)]
pub struct Inbox<M: Send + Sync + 'static>(pub Vec<M>);

fn collect<M: Message + Clone>(mut reader: MessageReader<M>, mut inbox: ResMut<Inbox<M>>) {
    inbox.0.extend(reader.read().cloned());
}

pub struct Harness {
    pub app: App,
    /// How long `run_until` waits before failing the test.
    pub wait_secs: u64,
}

impl Harness {
    pub fn new(plugin: NpcMemoryPlugin) -> Self {
        let mut app = App::new();
        app.add_plugins((MinimalPlugins, AssetPlugin::default(), plugin));
        add_inbox::<NpcReplyStarted>(&mut app);
        add_inbox::<NpcReplied>(&mut app);
        add_inbox::<NpcReplyDelta>(&mut app);
        add_inbox::<NpcReplyFailed>(&mut app);
        add_inbox::<NpcSummaryUpdated>(&mut app);
        add_inbox::<NpcMemoryDegraded>(&mut app);
        add_inbox::<MemorySaved>(&mut app);
        add_inbox::<MemorySaveFailed>(&mut app);
        add_inbox::<MemoryLoaded>(&mut app);
        add_inbox::<MemoryLoadFailed>(&mut app);
        Self { app, wait_secs: 5 }
    }

    /// Spawns an NPC with a persona built in code.
    pub fn spawn(&mut self, id: &str, persona: Persona) -> Entity {
        let handle = self
            .app
            .world_mut()
            .resource_mut::<Assets<Persona>>()
            .add(persona);
        let entity = self.app.world_mut().spawn(Npc::new(id, handle)).id();
        self.app.update();
        entity
    }

    /// Spawns an NPC whose persona loads from `assets/`, and waits for it.
    pub fn spawn_from_file(&mut self, id: &str, path: &str) -> Entity {
        let handle: Handle<Persona> = self
            .app
            .world()
            .resource::<AssetServer>()
            .load(path.to_owned());
        let entity = self.app.world_mut().spawn(Npc::new(id, handle)).id();
        let npc = NpcId::new(id);
        self.run_until(&format!("the persona {path} loads"), |world| {
            world.resource::<ContextMemoryManager>().get(&npc).is_some()
        });
        entity
    }

    pub fn say(&mut self, npc: &str, text: &str) {
        self.app
            .world_mut()
            .write_message(TalkToNpc::new(npc, text));
    }

    pub fn inbox<M: Send + Sync + 'static>(&self) -> &[M] {
        &self.app.world().resource::<Inbox<M>>().0
    }

    /// Updates the app until `done` holds, failing the test after `wait_secs`.
    pub fn run_until(&mut self, what: &str, done: impl Fn(&World) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(self.wait_secs);
        loop {
            self.app.update();
            if done(self.app.world()) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    pub fn wait_for_replies(&mut self, count: usize) {
        self.run_until(&format!("{count} replies"), |world| {
            world.resource::<Inbox<NpcReplied>>().0.len() >= count
        });
    }

    pub fn wait_for_summaries(&mut self, count: usize) {
        self.run_until(&format!("{count} summaries"), |world| {
            world.resource::<Inbox<NpcSummaryUpdated>>().0.len() >= count
        });
    }

    /// Waits until no request is in flight and no line waits.
    pub fn settle(&mut self) {
        self.run_until("the NPCs are idle", |world| {
            world.resource::<NpcRequests>().is_idle()
        });
    }

    /// Every failure so far: why, the turn, and the line handed back if any.
    pub fn failures(
        &self,
    ) -> Vec<(
        ReplyError,
        Option<bevy_npc_memory::dialogue::TurnId>,
        Option<String>,
    )> {
        self.inbox::<NpcReplyFailed>()
            .iter()
            .map(|f| (f.error.clone(), f.turn, f.unrecorded_line.clone()))
            .collect()
    }

    pub fn replies(&self, npc: &str) -> Vec<String> {
        let npc = NpcId::new(npc);
        self.inbox::<NpcReplied>()
            .iter()
            .filter(|r| r.npc == npc)
            .map(|r| r.text.to_string())
            .collect()
    }

    /// L2 of an NPC, whole entries (origin, speaker, stamps and all).
    pub fn messages(&self, npc: &str) -> Vec<bevy_npc_memory::memory::ChatMessage> {
        self.app
            .world()
            .resource::<ChatLogs>()
            .get(&NpcId::new(npc))
            .expect("the NPC has a log")
            .messages()
            .to_vec()
    }

    /// L2 of an NPC as (role, text).
    pub fn log(&self, npc: &str) -> Vec<(Role, String)> {
        let logs = self.app.world().resource::<ChatLogs>();
        logs.get(&NpcId::new(npc))
            .expect("the NPC has a log")
            .messages()
            .iter()
            .map(|m| (m.role, m.content.to_string()))
            .collect()
    }

    /// L1 of an NPC as a model sees it: the system prompt, then the window (no
    /// recalled lines).
    pub fn window(&self, npc: &str) -> Vec<PromptMessage> {
        let npc = NpcId::new(npc);
        let world = self.app.world();
        let log = world.resource::<ChatLogs>().get(&npc).expect("log");
        let window = world
            .resource::<RollingWindows>()
            .get(&npc)
            .expect("window");
        let context = world
            .resource::<ContextMemoryManager>()
            .get(&npc)
            .expect("context");
        bevy_npc_memory::memory::preview_prompt(log, window, context).messages
    }

    /// Every streamed delta so far, joined: what a typewriter UI showed.
    pub fn streamed(&self) -> String {
        self.inbox::<NpcReplyDelta>()
            .iter()
            .map(|d| d.delta.as_str())
            .collect()
    }

    pub fn summary(&self, npc: &str) -> String {
        let contexts = self.app.world().resource::<ContextMemoryManager>();
        contexts
            .get(&NpcId::new(npc))
            .expect("context")
            .summary()
            .to_owned()
    }
}

/// Keeps every message of type `M` for assertions, e.g. a feature's own messages.
pub fn add_inbox<M: Message + Clone>(app: &mut App) {
    app.insert_resource(Inbox::<M>(Vec::new()))
        .add_systems(Update, collect::<M>.after(NpcMemorySystems::Persist));
}

impl Harness {
    /// Waits until `count` messages of type `M` have arrived.
    pub fn wait_for<M: Send + Sync + 'static>(&mut self, count: usize) {
        let what = format!("{count} × {}", std::any::type_name::<M>());
        self.run_until(&what, |world| world.resource::<Inbox<M>>().0.len() >= count);
    }

    /// Saves every NPC to `path` and waits for the file.
    pub fn save_to(&mut self, path: &std::path::Path) {
        let before = self
            .inbox::<MemorySaved>()
            .iter()
            .filter(|s| !s.autosave)
            .count();
        self.app
            .world_mut()
            .write_message(SaveMemory::new(path.to_owned()));
        self.run_until("the save is written", |world| {
            world
                .resource::<Inbox<MemorySaved>>()
                .0
                .iter()
                .filter(|s| !s.autosave)
                .count()
                > before
        });
    }

    /// What the debug panel shows of an NPC.
    pub fn report(&self, npc: &str) -> bevy_npc_memory::debug::NpcMemoryReport {
        let world = self.app.world();
        bevy_npc_memory::debug::NpcMemoryReport::build(
            &NpcId::new(npc),
            world.resource::<ChatLogs>(),
            world.resource::<RollingWindows>(),
            world.resource::<ContextMemoryManager>(),
            world.resource::<NpcRequests>(),
            world.resource::<LlmUsage>(),
        )
        .expect("the NPC has memory")
    }

    /// Loads `path`, waits, and fails the test unless it loaded.
    pub fn load_ok(&mut self, path: &std::path::Path) {
        let loaded = self.inbox::<MemoryLoaded>().len();
        self.load_from(path);
        assert_eq!(
            self.inbox::<MemoryLoaded>().len(),
            loaded + 1,
            "{} did not load: {:?}",
            path.display(),
            self.inbox::<MemoryLoadFailed>()
        );
    }

    /// Asks the plugin to load `path`, without waiting: the load runs off the main
    /// thread while the test drives frames.
    pub fn start_load(&mut self, path: &std::path::Path) {
        self.app
            .world_mut()
            .write_message(LoadMemory::new(path.to_owned()));
    }

    /// Loads `path` and waits for the outcome.
    pub fn load_from(&mut self, path: &std::path::Path) {
        let before = self.inbox::<MemoryLoaded>().len() + self.inbox::<MemoryLoadFailed>().len();
        self.start_load(path);
        self.run_until("the load finishes", |world| {
            world.resource::<Inbox<MemoryLoaded>>().0.len()
                + world.resource::<Inbox<MemoryLoadFailed>>().0.len()
                > before
        });
    }
}

/// The path of an example binary. Integration tests live in `target/<profile>/deps`;
/// cargo builds the examples one level up.
pub fn example_binary(name: &str) -> std::path::PathBuf {
    let deps = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    deps.parent().unwrap().join("examples").join(name)
}

/// A fresh, empty folder for one test, in cargo's scratch folder for integration
/// tests (`target/tmp`). Each test process has a folder of its own there, and the
/// folders of processes that have ended are removed when the next one starts, so
/// runs leave at most their own files behind, however their tests end.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = run_dir().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run_dir() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("integration");
        for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            let pid = entry.file_name().to_str().and_then(|name| {
                name.strip_prefix("run-")
                    .and_then(|pid| pid.parse::<i32>().ok())
            });
            if pid.is_some_and(|pid| !running(pid)) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        root.join(format!("run-{}", std::process::id()))
    })
}

#[cfg(unix)]
fn running(pid: i32) -> bool {
    // Signal 0 only asks whether the process exists (EPERM: it does, not ours).
    // SAFETY: kill with signal 0 sends nothing and touches no memory.
    let exists = unsafe { libc::kill(pid, 0) == 0 };
    exists || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn running(_pid: i32) -> bool {
    true
}

/// The plugin sized as in the seed's walk-through: window 4, threshold 2.
pub fn seed_sized(backend: impl ChatBackend) -> NpcMemoryPlugin {
    NpcMemoryPlugin::default()
        .with_backend(backend)
        .with_window(4)
        .with_summary_threshold(2)
}

/// Every layered feature within `budget` tokens, every prompt built afresh
/// (no follow-ups) and layered even for a short log, with folds from the first
/// lines ([`ShortLogs::Layered`]): what the tests of recall, facts and summaries
/// on short scenes need. By default a log that fits the budget is sent whole,
/// folds wait, and a conversation's lines extend its last prompt.
pub fn layered_from_the_start(budget: usize) -> MemoryFeatures {
    let mut features = MemoryFeatures::layered(budget);
    features.budget.short_logs = ShortLogs::Layered;
    features.budget.follow_ups.growth = 0.0;
    features
}

/// The plugin sized as in the seed, with every feature beyond it on (budget 1500),
/// layered from the first line.
pub fn layered_plugin() -> NpcMemoryPlugin {
    seed_sized(OfflineBackend::default()).with_features(layered_from_the_start(1500))
}

/// The lines of a short layered scene: a name and a goal the offline backend pins
/// as facts, a place, small talk, then a question about the place (log index 4).
pub const LAYERED_SCENE: [&str; 5] = [
    "My name is Alex.",
    "I need to fix the power system.",
    "The red hatch leads to the reactor.",
    "Lunch was beans again.",
    "Where does the red hatch lead?",
];

/// ECHO-7 after [`LAYERED_SCENE`], every request finished.
pub fn layered_scene() -> Harness {
    let mut h = Harness::new(layered_plugin());
    h.spawn("echo7", persona("ECHO-7"));
    for line in LAYERED_SCENE {
        h.say("echo7", line);
        h.settle();
    }
    h
}

/// Settings for a real model on this machine: the seed's window 4 and threshold 2,
/// and a request timeout long enough for a slow CPU.
pub fn slow_model_settings() -> NpcMemorySettings {
    let mut settings = NpcMemorySettings {
        request_timeout: Duration::from_secs(120),
        ..Default::default()
    };
    settings.memory = MemoryConfig {
        summary_threshold: Some(2),
        ..MemoryConfig::with_window(4)
    };
    settings
}

/// Every system message of a prompt, joined by blank lines: what it tells the
/// model besides the conversation. Layered prompts carry what was found for the
/// newest line (lore, recalled lines) in a system message of its own before it.
pub fn system_text(messages: &[PromptMessage]) -> String {
    messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| &*m.content)
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A persona for tests that do not care about wording.
pub fn persona(name: &str) -> Persona {
    Persona::new(name, format!("You are {name}."))
}

/// The system prompt of the traced reply request whose last message is `line`.
pub fn traced_system_prompt(events: &[serde_json::Value], line: &str) -> String {
    let request = events
        .iter()
        .find(|e| {
            e["event"] == "request"
                && e["purpose"] == "reply"
                && e["messages"].as_array().unwrap().last().unwrap()["content"] == line
        })
        .unwrap_or_else(|| panic!("no traced reply request for {line:?}"));
    request["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Reads a JSON-lines trace file.
pub fn read_trace(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("the trace file exists")
        .lines()
        .map(|line| serde_json::from_str(line).expect("each trace line is JSON"))
        .collect()
}
