//! The bunker: ECHO-7's terminal and RUSTY-3 the maintenance robot, each with its own
//! memory, a chat panel, and the memory debug panel (F1).
//!
//! ```text
//! cargo run --example bunker --features debug-ui -- [--zh] [--autoplay]
//!     [--screenshot PATH] [--save PATH] [--trace FILE] [--model PATH]
//! ```
//!
//! The backend, first match wins:
//! 1. `--model PATH` runs that GGUF in-process (feature `local-llm`);
//! 2. `DEEPSEEK_API_KEY` or `OPENAI_API_KEY` in the environment gives the HTTP backend;
//! 3. `LLAMA_SERVER_URL` a llama.cpp server;
//! 4. the demo model at `assets/models/` (from `scripts/fetch-model.sh`) runs
//!    in-process when the `local-llm` feature is on;
//! 5. otherwise the offline backend runs and a banner says so.
//!
//! A label in the corner names the backend in use. At the "Shift change" button
//! ECHO-7 and RUSTY-3 talk for a few lines about what each saw on its shift (the
//! comms log shows the talk, the debug panel's Knowledge section what each heard
//! from the other); then RUSTY-3 briefs ECHO-7 on what the player told it: ECHO-7
//! then knows it and who told it, except what the player asked RUSTY-3 to keep
//! secret ("Send secretly").
//!
//! ECHO-7 can open doors and switch lights, RUSTY-3 can repair machines
//! (`actions.rs`); the scene shows what they did.
//!
//! `--autoplay` plays the ECHO-7 walk-through, then a shift change
//! (`assets/autoplay/shift_change.txt`), then a turn of actions for each NPC
//! (`assets/autoplay/actions.txt`), through the offline backend and, for the
//! talk's lines and the actions, scripted ones, with the debug panel open on
//! ECHO-7's Actions and Knowledge sections; each line of the talk is also logged
//! (`comms: NAME: text`); with `--screenshot` it saves a screenshot once the
//! conversation is done, then exits.

mod actions;
mod backend_choice;
mod comms;
mod room;
mod script;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};
use bevy::window::WindowResolution;
use bevy_egui::EguiPrimaryContextPass;
use bevy_npc_memory::debug::{DebugSection, NpcMemoryDebugPlugin, NpcMemoryDebugState};
use bevy_npc_memory::prelude::*;

use backend_choice::backend;
#[cfg(feature = "local-llm")]
use backend_choice::follow_model;
use bevy_npc_memory::conversations::{NpcConversations, StartConversation};
use bevy_npc_memory::dialogue::NpcRequests;
use comms::{chat_panel, follow_briefing, follow_replies, follow_talk};
use room::{build_bunker, spawn_npcs};
use script::{AutoplayBackend, ECHO, ROBOT, ShiftChange, Step};

struct Args {
    chinese: bool,
    autoplay: bool,
    screenshot: Option<PathBuf>,
    save: PathBuf,
    trace: Option<PathBuf>,
    model: Option<PathBuf>,
}

fn args() -> Args {
    let mut args = Args {
        chinese: false,
        autoplay: false,
        screenshot: None,
        save: "savegame.json".into(),
        trace: None,
        model: None,
    };
    let mut raw = std::env::args().skip(1);
    while let Some(flag) = raw.next() {
        match flag.as_str() {
            "--zh" => args.chinese = true,
            "--autoplay" => args.autoplay = true,
            "--screenshot" => args.screenshot = raw.next().map(PathBuf::from),
            "--save" => args.save = raw.next().map_or(args.save, PathBuf::from),
            "--trace" => args.trace = raw.next().map(PathBuf::from),
            "--model" => args.model = raw.next().map(PathBuf::from),
            other => eprintln!("ignoring unknown argument {other:?}"),
        }
    }
    args
}

#[derive(Resource)]
struct Scene {
    /// What the corner label says; `None` means the offline backend.
    backend: Option<String>,
    chinese: bool,
}

/// The chat panel's state.
#[derive(Resource)]
struct Chat {
    talking_to: NpcId,
    input: String,
    streaming: HashMap<NpcId, String>,
    errors: HashMap<NpcId, String>,
    shift: ShiftChange,
    /// What the last shift change passed on, for the panel.
    briefing: Option<String>,
    /// How the last shift change's talk went, for the panel.
    talk: Option<String>,
}

/// The scripted conversation of `--autoplay`.
#[derive(Resource)]
struct Autoplay {
    steps: VecDeque<Step>,
    screenshot: Option<PathBuf>,
    backend: AutoplayBackend,
    /// Idle frames between two steps: a pause to follow the conversation, or none
    /// to speak of when a screenshot run has no one watching.
    pace_frames: u32,
    idle_frames: u32,
    waited_frames: u32,
    shot_at: Option<u32>,
}

fn main() -> AppExit {
    let args = args();
    let autoplay_backend = AutoplayBackend::default();
    let (with_backend, backend_label) = backend(&args, &autoplay_backend);
    let mut memory = with_backend(
        NpcMemoryPlugin::default()
            .with_autosave(&args.save)
            .with_lore("lore/bunker.lore.ron"),
    );
    if args.autoplay {
        memory = memory.with_window(4).with_summary_threshold(2);
    }
    if let Some(trace) = &args.trace {
        memory = memory.with_trace_file(trace);
    }
    let mut debug = NpcMemoryDebugPlugin::default();
    if args.autoplay {
        debug = debug.open();
    }
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title: "bevy_npc_memory: the bunker".into(),
                    resolution: WindowResolution::new(1280, 720),
                    resizable: false,
                    ..default()
                }),
                ..default()
            })
            // Find the personas wherever the binary is started from.
            .set(AssetPlugin {
                file_path: concat!(env!("CARGO_MANIFEST_DIR"), "/assets").into(),
                ..default()
            }),
    )
    .add_plugins((memory, debug, actions::plugin))
    .insert_resource(ClearColor(Color::srgb(0.06, 0.07, 0.08)))
    .insert_resource(Scene {
        backend: backend_label,
        chinese: args.chinese,
    })
    .insert_resource(Chat {
        talking_to: NpcId::new(ECHO),
        input: String::new(),
        streaming: HashMap::new(),
        errors: HashMap::new(),
        shift: ShiftChange::default(),
        briefing: None,
        talk: None,
    })
    .add_systems(Startup, (build_bunker, spawn_npcs))
    .add_systems(
        Update,
        (follow_replies, follow_briefing, follow_talk).after(NpcMemorySystems::Collect),
    )
    .add_systems(EguiPrimaryContextPass, chat_panel);
    #[cfg(feature = "local-llm")]
    app.add_systems(Update, follow_model);
    if args.autoplay {
        let file = if args.chinese {
            "assets/autoplay/echo7.zh.txt"
        } else {
            "assets/autoplay/echo7.txt"
        };
        let read = |file: &str| {
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/").to_owned() + file)
                .unwrap_or_default()
        };
        let steps = script::parse(&read(file))
            .into_iter()
            .chain(script::parse(&read("assets/autoplay/shift_change.txt")))
            .chain(script::parse(&read("assets/autoplay/actions.txt")))
            .collect();
        app.insert_resource(Autoplay {
            steps,
            pace_frames: if args.screenshot.is_some() { 2 } else { 20 },
            screenshot: args.screenshot,
            backend: autoplay_backend,
            idle_frames: 0,
            waited_frames: 0,
            shot_at: None,
        })
        .add_systems(Update, autoplay.before(NpcMemorySystems::Intake));
    }
    app.run()
}

/// Plays the script one line at a time, waiting for each answer and summary, then
/// takes the screenshot and exits.
#[allow(clippy::too_many_arguments)]
fn autoplay(
    mut commands: Commands,
    mut script: ResMut<Autoplay>,
    mut chat: ResMut<Chat>,
    mut debug: ResMut<NpcMemoryDebugState>,
    (requests, talks, contexts): (
        Res<NpcRequests>,
        Res<NpcConversations>,
        Res<ContextMemoryManager>,
    ),
    (mut talk, mut start): (MessageWriter<TalkToNpc>, MessageWriter<StartConversation>),
    mut exit: MessageWriter<AppExit>,
) {
    let ready =
        contexts.get(&NpcId::new(ECHO)).is_some() && contexts.get(&NpcId::new(ROBOT)).is_some();
    script.waited_frames += 1;
    if script.waited_frames > 3000 {
        eprintln!("autoplay gave up: the NPCs never became ready or idle");
        exit.write(AppExit::error());
        return;
    }
    // Between two lines of a talk no request may be in flight, so the requests
    // alone would let the next step cut in; and the briefing follows the talk.
    if !ready || !requests.is_idle() || !talks.is_empty() || chat.shift.briefing_due() {
        script.idle_frames = 0;
        return;
    }
    script.idle_frames += 1;
    if script.idle_frames < script.pace_frames {
        return;
    }
    if let Some(step) = script.steps.pop_front() {
        match step.talk() {
            Some(line) => {
                chat.talking_to = line.npc.clone();
                talk.write(line);
            }
            None if matches!(step, Step::Act { .. }) => {
                script.backend.queue(&step);
                debug.focus = vec![DebugSection::Actions, DebugSection::Knowledge];
            }
            None if matches!(step, Step::Says { .. }) => {
                script.backend.queue(&step);
                // Queued lines wait for the talk; no pause to watch.
                script.idle_frames = script.pace_frames;
                return;
            }
            None => {
                let shift_talk = chat.shift.start();
                start.write(shift_talk);
                // Show where the talk and the briefing land, and with whose names.
                debug.focus = vec![DebugSection::Window, DebugSection::Knowledge];
            }
        }
        debug.selected = Some(NpcId::new(ECHO));
        script.idle_frames = 0;
        return;
    }
    let Some(path) = script.screenshot.clone() else {
        return;
    };
    match script.shot_at {
        // A few frames more, so the panel shows the last step before the shot.
        None if script.idle_frames < 10 => {}
        None => {
            commands
                .spawn(Screenshot::primary_window())
                .observe(save_to_disk(path));
            script.shot_at = Some(script.idle_frames);
        }
        Some(at) if path.exists() && script.idle_frames > at + 10 => {
            exit.write(AppExit::Success);
        }
        Some(at) if script.idle_frames > at + 600 => {
            eprintln!("the screenshot was never written");
            exit.write(AppExit::error());
        }
        Some(_) => {}
    }
}
