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
//! A label in the corner names the backend in use. The "Shift change" button makes
//! RUSTY-3 brief ECHO-7 on what the player told it: ECHO-7 then knows it and who
//! told it, except what the player asked RUSTY-3 to keep secret ("Send secretly").
//!
//! ECHO-7 can open doors and switch lights, RUSTY-3 can repair machines
//! (`actions.rs`); the scene shows what they did.
//!
//! `--autoplay` plays the ECHO-7 walk-through, then a shift change
//! (`assets/autoplay/shift_change.txt`), then a turn of actions for each NPC
//! (`assets/autoplay/actions.txt`), through the offline backend and, for the
//! actions, the scripted one, with the debug panel open on ECHO-7's Actions and
//! Knowledge sections; with `--screenshot` it saves a screenshot once the
//! conversation is done, then exits.

mod actions;
mod script;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};
use bevy::window::WindowResolution;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use bevy_npc_memory::backends::{OpenAiBackend, OpenAiConfig};
use bevy_npc_memory::debug::{DebugSection, NpcMemoryDebugPlugin, NpcMemoryDebugState};
use bevy_npc_memory::memory::{ActionStep, ChatMessage, Origin};
use bevy_npc_memory::prelude::*;

use bevy_npc_memory::LocalModelFailed;
use bevy_npc_memory::LocalModelLoaded;
use bevy_npc_memory::dialogue::NpcReplyDelta;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::knowledge::KnowledgeShared;
use bevy_npc_memory::knowledge::ShareKnowledge;
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

type WithBackend = Box<dyn FnOnce(NpcMemoryPlugin) -> NpcMemoryPlugin>;

/// Which backend runs, and what the corner label calls it (`None`: offline).
fn backend(args: &Args, autoplay: &AutoplayBackend) -> (WithBackend, Option<String>) {
    let http = |config: OpenAiConfig| {
        OpenAiBackend::new(config)
            .map_err(|e| eprintln!("{e}"))
            .ok()
            .map(|backend| {
                let label = format!("{} over HTTP", backend.config().provider);
                let with: WithBackend = Box::new(move |plugin| plugin.with_backend(backend));
                (with, Some(label))
            })
    };
    let autoplay = autoplay.clone();
    let chosen = if args.autoplay {
        let with: WithBackend = Box::new(move |plugin| plugin.with_backend(autoplay));
        return (with, None);
    } else if let Some(path) = &args.model {
        local(path.clone())
    } else if std::env::var_os("DEEPSEEK_API_KEY").is_some() {
        http(OpenAiConfig::deepseek())
    } else if std::env::var_os("OPENAI_API_KEY").is_some() {
        http(OpenAiConfig::openai())
    } else if let Ok(url) = std::env::var("LLAMA_SERVER_URL") {
        http(OpenAiConfig::llama_cpp(url))
    } else {
        default_model().and_then(local)
    };
    chosen.unwrap_or_else(|| {
        (
            Box::new(|plugin: NpcMemoryPlugin| plugin.with_backend(OfflineBackend::default())),
            None,
        )
    })
}

#[cfg(feature = "local-llm")]
fn default_model() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(bevy_npc_memory::backends::DEFAULT_MODEL_PATH);
    path.is_file().then_some(path)
}

#[cfg(not(feature = "local-llm"))]
fn default_model() -> Option<PathBuf> {
    None
}

/// The GGUF at `path`, run in-process; it loads in the background while the scene
/// starts.
#[cfg(feature = "local-llm")]
fn local(path: PathBuf) -> Option<(WithBackend, Option<String>)> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let config = LocalLlmConfig::new(path).with_max_tokens(160);
    let backend = LocalLlmBackend::new(config)
        .map_err(|e| eprintln!("{e}"))
        .ok()?;
    let with: WithBackend = Box::new(move |plugin| plugin.with_backend(backend));
    Some((with, Some(format!("local {name} (loading)"))))
}

#[cfg(not(feature = "local-llm"))]
fn local(path: PathBuf) -> Option<(WithBackend, Option<String>)> {
    eprintln!(
        "--model {} needs the local-llm feature: cargo run --example bunker --features debug-ui,local-llm -- --model PATH",
        path.display()
    );
    None
}

/// Keeps the corner label true to the model's state.
#[cfg(feature = "local-llm")]
fn follow_model(
    mut scene: ResMut<Scene>,
    mut loaded: MessageReader<LocalModelLoaded>,
    mut failed: MessageReader<LocalModelFailed>,
) {
    for model in loaded.read() {
        scene.backend = Some(format!(
            "local {} (loaded in {} ms)",
            model.path.file_name().unwrap_or_default().to_string_lossy(),
            model.load_time.as_millis()
        ));
    }
    for model in failed.read() {
        scene.backend = Some(format!("local model FAILED: {}", model.reason));
    }
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
    })
    .add_systems(Startup, (build_bunker, spawn_npcs))
    .add_systems(
        Update,
        (follow_replies, follow_briefing).after(NpcMemorySystems::Collect),
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

fn build_bunker(mut commands: Commands) {
    commands.spawn(Camera2d);
    let rect = |color: Color, w: f32, h: f32, x: f32, y: f32, z: f32| {
        (
            Sprite::from_color(color, Vec2::new(w, h)),
            Transform::from_xyz(x, y, z),
        )
    };
    // Floor tiles and walls.
    commands.spawn(rect(
        Color::srgb(0.11, 0.12, 0.13),
        1280.0,
        720.0,
        0.0,
        0.0,
        0.0,
    ));
    for i in 0..16 {
        commands.spawn(rect(
            Color::srgb(0.09, 0.10, 0.11),
            2.0,
            720.0,
            -640.0 + i as f32 * 80.0,
            0.0,
            0.1,
        ));
    }
    for j in 0..9 {
        commands.spawn(rect(
            Color::srgb(0.09, 0.10, 0.11),
            1280.0,
            2.0,
            0.0,
            -360.0 + j as f32 * 80.0,
            0.1,
        ));
    }
    commands.spawn(rect(
        Color::srgb(0.20, 0.21, 0.23),
        1280.0,
        90.0,
        0.0,
        315.0,
        0.2,
    ));
    for k in 0..20 {
        let color = if k % 2 == 0 {
            Color::srgb(0.85, 0.65, 0.10)
        } else {
            Color::srgb(0.12, 0.12, 0.12)
        };
        commands.spawn(rect(
            color,
            32.0,
            14.0,
            -624.0 + k as f32 * 32.0,
            263.0,
            0.3,
        ));
    }
    // ECHO-7's terminal: a desk, a bezel and a glowing screen.
    commands.spawn(rect(
        Color::srgb(0.25, 0.27, 0.30),
        260.0,
        60.0,
        -420.0,
        30.0,
        0.5,
    ));
    commands.spawn(rect(
        Color::srgb(0.15, 0.16, 0.18),
        220.0,
        150.0,
        -420.0,
        150.0,
        0.5,
    ));
    commands.spawn(rect(
        Color::srgb(0.05, 0.55, 0.50),
        196.0,
        124.0,
        -420.0,
        150.0,
        0.6,
    ));
    commands.spawn(rect(
        Color::srgba(0.2, 0.9, 0.8, 0.08),
        420.0,
        300.0,
        -420.0,
        140.0,
        0.4,
    ));
    label(
        &mut commands,
        "ECHO-7  security & guidance AI",
        -420.0,
        245.0,
    );
    // RUSTY-3: body, head, eye and wheels.
    commands.spawn(rect(
        Color::srgb(0.80, 0.42, 0.12),
        90.0,
        110.0,
        -130.0,
        60.0,
        0.5,
    ));
    commands.spawn(rect(
        Color::srgb(0.70, 0.36, 0.10),
        64.0,
        50.0,
        -130.0,
        145.0,
        0.5,
    ));
    commands.spawn(rect(
        Color::srgb(0.3, 0.9, 1.0),
        30.0,
        10.0,
        -130.0,
        150.0,
        0.6,
    ));
    commands.spawn(rect(
        Color::srgb(0.1, 0.1, 0.1),
        100.0,
        16.0,
        -130.0,
        0.0,
        0.6,
    ));
    label(&mut commands, "RUSTY-3  maintenance", -130.0, 195.0);
}

fn label(commands: &mut Commands, text: &str, x: f32, y: f32) {
    commands.spawn((
        Text2d::new(text),
        TextFont::from_font_size(16.0),
        TextColor(Color::srgb(0.75, 0.95, 0.9)),
        Transform::from_xyz(x, y, 1.0),
    ));
}

fn spawn_npcs(mut commands: Commands, assets: Res<AssetServer>, scene: Res<Scene>) {
    let echo = if scene.chinese {
        "npcs/echo7.zh.npc.ron"
    } else {
        "npcs/echo7.npc.ron"
    };
    commands.spawn(Npc::new(ECHO, assets.load(echo)));
    commands.spawn(Npc::new(ROBOT, assets.load("npcs/rusty.npc.ron")));
}

fn follow_replies(
    mut chat: ResMut<Chat>,
    mut deltas: MessageReader<NpcReplyDelta>,
    mut replies: MessageReader<NpcReplied>,
    mut failures: MessageReader<NpcReplyFailed>,
) {
    for delta in deltas.read() {
        chat.streaming
            .entry(delta.npc.clone())
            .or_default()
            .push_str(&delta.delta);
    }
    for reply in replies.read() {
        chat.streaming.remove(&reply.npc);
        chat.errors.remove(&reply.npc);
    }
    for failure in failures.read() {
        chat.streaming.remove(&failure.npc);
        chat.errors
            .insert(failure.npc.clone(), failure.error.to_string());
    }
}

/// Tells the panel what the last shift change passed on.
fn follow_briefing(mut chat: ResMut<Chat>, mut shared: MessageReader<KnowledgeShared>) {
    let learned: usize = shared.read().map(|told| told.learned.len()).sum();
    if learned > 0 {
        chat.briefing = Some(format!(
            "Shift change: RUSTY-3 briefed ECHO-7 on {learned} thing(s). Secrets stay with RUSTY-3."
        ));
    }
}

/// How the comms log shows one entry: who said it, or where the NPC got it.
fn comms_line(message: &ChatMessage, npc_name: &str) -> String {
    match (&message.origin, message.role) {
        (Origin::Heard(hearsay), _) => {
            let teller = hearsay.teller().map_or("someone", |t| t.name.as_str());
            format!("[{teller} told {npc_name}] {}", message.content)
        }
        (Origin::Witnessed { .. }, _) => format!("[{npc_name} saw] {}", message.content),
        (Origin::Acted(note), _) => match note.step {
            ActionStep::Called => format!("[{npc_name} uses {} {}]", note.name, message.content),
            _ => format!("[{} {:?}] {}", note.name, note.step, message.content),
        },
        (Origin::SaidPrivately, Role::User) => format!("You (secret): {}", message.content),
        (_, Role::User) => format!("You: {}", message.content),
        _ => format!("{npc_name}: {}", message.content),
    }
}

#[allow(clippy::too_many_arguments)]
fn chat_panel(
    mut egui: EguiContexts,
    mut chat: ResMut<Chat>,
    scene: Res<Scene>,
    logs: Res<ChatLogs>,
    contexts: Res<ContextMemoryManager>,
    conversations: Res<NpcRequests>,
    mut talk: MessageWriter<TalkToNpc>,
    mut share: MessageWriter<ShareKnowledge>,
) -> Result {
    let ctx = egui.ctx_mut()?;
    match &scene.backend {
        None => {
            egui::Area::new("offline".into()).fixed_pos([20.0, 8.0]).show(ctx, |ui| {
                ui.colored_label(egui::Color32::from_rgb(255, 120, 90), "OFFLINE: no language model connected, replies are placeholders (run scripts/fetch-model.sh, or set DEEPSEEK_API_KEY, OPENAI_API_KEY or LLAMA_SERVER_URL)");
            });
        }
        Some(backend) => {
            egui::Area::new("backend".into())
                .fixed_pos([20.0, 8.0])
                .show(ctx, |ui| {
                    ui.colored_label(
                        egui::Color32::from_rgb(150, 200, 160),
                        format!("Backend: {backend}"),
                    );
                });
        }
    }
    egui::Window::new("Comms")
        .default_pos([20.0, 400.0])
        .default_size([780.0, 300.0])
        .show(ctx, |ui| {
            ui.horizontal(|ui| {
                ui.label("Talk to");
                for (id, name) in [(ECHO, "ECHO-7"), (ROBOT, "RUSTY-3")] {
                    let npc = NpcId::new(id);
                    if ui.selectable_label(chat.talking_to == npc, name).clicked() {
                        chat.talking_to = npc;
                    }
                }
            });
            let npc = chat.talking_to.clone();
            let name = contexts
                .get(&npc)
                .map_or(npc.to_string(), |c| c.persona().name.clone());
            egui::ScrollArea::vertical()
                .max_height(190.0)
                .stick_to_bottom(true)
                .show(ui, |ui| {
                    for message in logs.get(&npc).map(|l| l.messages()).unwrap_or_default() {
                        ui.label(comms_line(message, &name));
                    }
                    match chat.streaming.get(&npc) {
                        Some(partial) => {
                            ui.label(format!("{name}: {partial}▌"));
                        }
                        None if conversations.reply_in_flight(&npc) => {
                            ui.weak(format!("{name} is thinking…"));
                        }
                        None => {}
                    }
                    if let Some(error) = chat.errors.get(&npc) {
                        ui.colored_label(egui::Color32::LIGHT_RED, format!("No answer: {error}"));
                    }
                });
            ui.horizontal(|ui| {
                let field = ui.add(
                    egui::TextEdit::singleline(&mut chat.input)
                        .desired_width(640.0)
                        .hint_text("Say something…"),
                );
                let enter = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                let send = ui.button("Send").clicked() || enter;
                let secret = ui
                    .button("Send secretly")
                    .on_hover_text("The NPC answers, but never passes this line on")
                    .clicked();
                if (send || secret) && !chat.input.trim().is_empty() {
                    let line = TalkToNpc::new(npc.clone(), std::mem::take(&mut chat.input));
                    talk.write(if secret { line.privately() } else { line });
                    field.request_focus();
                }
            });
            ui.horizontal(|ui| {
                if ui
                    .button("Shift change")
                    .on_hover_text("RUSTY-3 briefs ECHO-7 on what you told it")
                    .clicked()
                {
                    share.write_batch(chat.shift.briefing(&logs));
                    chat.briefing =
                        Some("Shift change: RUSTY-3 had nothing new to pass on.".into());
                }
                if let Some(briefing) = &chat.briefing {
                    ui.weak(briefing);
                }
            });
        });
    Ok(())
}

/// Plays the script one line at a time, waiting for each answer and summary, then
/// takes the screenshot and exits.
#[allow(clippy::too_many_arguments)]
fn autoplay(
    mut commands: Commands,
    mut script: ResMut<Autoplay>,
    mut chat: ResMut<Chat>,
    mut debug: ResMut<NpcMemoryDebugState>,
    (conversations, contexts, logs): (Res<NpcRequests>, Res<ContextMemoryManager>, Res<ChatLogs>),
    mut talk: MessageWriter<TalkToNpc>,
    mut share: MessageWriter<ShareKnowledge>,
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
    if !ready || !conversations.is_idle() {
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
            None => {
                share.write_batch(chat.shift.briefing(&logs));
                // Show where the briefing lands, and with whose name on it.
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
