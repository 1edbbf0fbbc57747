//! ECHO-7 over stdin and stdout, headless: one player line per input line, each
//! reply printed as `ECHO-7: ...`. Memory events go to stderr as `[Memory]` lines.
//!
//! ```text
//! cargo run --example terminal_chat -- [--backend offline|scripted|openai|local] [--window N]
//!     [--threshold N] [--persona PATH] [--trace FILE]
//!     [--base-url URL] [--model NAME|PATH] [--api-key-env VAR] [--save PATH] [--threads N]
//! ```
//!
//! `--save PATH` loads the save if it exists and autosaves to it after every message
//! and summary, so a second run remembers the first.
//!
//! `--backend openai` talks to any OpenAI-compatible server: `--base-url` is its API
//! root (e.g. `http://127.0.0.1:8080/v1` for llama.cpp), and the key, if the server
//! needs one, is read from the environment variable `--api-key-env` names.
//!
//! `--backend local` (feature `local-llm`) runs a GGUF model in-process: `--model` is
//! its path, by default the demo model `scripts/fetch-model.sh` fetches, and
//! `--threads` its inference threads.

use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, TryRecvError, channel};
use std::time::Duration;

use bevy::app::ScheduleRunnerPlugin;
use bevy::prelude::*;
use bevy_npc_memory::LocalModelFailed;
use bevy_npc_memory::LocalModelLoaded;
use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::backends::{OpenAiBackend, OpenAiConfig};
use bevy_npc_memory::dialogue::NpcMemoryDegraded;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::dialogue::NpcSummaryUpdated;
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::saves::backup_path;

const USAGE: &str = "usage: terminal_chat [--backend offline|scripted|openai|local] [--window N] [--threshold N] [--persona PATH] [--trace FILE] [--base-url URL] [--model NAME|PATH] [--api-key-env VAR] [--save PATH] [--threads N]";

struct Args {
    backend: String,
    window: usize,
    threshold: Option<usize>,
    persona: PathBuf,
    trace: Option<PathBuf>,
    base_url: Option<String>,
    model: Option<String>,
    api_key_env: Option<String>,
    save: Option<PathBuf>,
    /// Only the in-process backend has threads to set.
    #[cfg_attr(not(feature = "local-llm"), allow(dead_code))]
    threads: Option<usize>,
}

impl Args {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut parsed = Args {
            backend: "offline".into(),
            window: 20,
            threshold: None,
            persona: PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/assets/npcs/echo7.npc.ron"
            )),
            trace: None,
            base_url: None,
            model: None,
            api_key_env: None,
            save: None,
            threads: None,
        };
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
            let number = |text: String| {
                text.parse::<usize>()
                    .map_err(|_| format!("{flag} needs a number, got {text:?}"))
            };
            match flag.as_str() {
                "--backend" => parsed.backend = value()?,
                "--window" => parsed.window = number(value()?)?,
                "--threshold" => parsed.threshold = Some(number(value()?)?),
                "--persona" => parsed.persona = value()?.into(),
                "--trace" => parsed.trace = Some(value()?.into()),
                "--base-url" => parsed.base_url = Some(value()?),
                "--model" => parsed.model = Some(value()?),
                "--api-key-env" => parsed.api_key_env = Some(value()?),
                "--save" => parsed.save = Some(value()?.into()),
                "--threads" => parsed.threads = Some(number(value()?)?),
                "--help" | "-h" => return Err(String::new()),
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        Ok(parsed)
    }
}

/// The player's lines from stdin, and whether a reply is awaited.
#[derive(Resource)]
struct Terminal {
    lines: Mutex<Receiver<String>>,
    awaiting_reply: bool,
    npc_name: String,
}

#[derive(Resource)]
struct Echo7(Persona);

fn main() -> AppExit {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(error) => {
            eprintln!("{error}\n{USAGE}");
            return AppExit::error();
        }
    };
    let persona = match std::fs::read_to_string(&args.persona)
        .map_err(|e| e.to_string())
        .and_then(|text| Persona::from_ron(&text).map_err(|e| e.to_string()))
    {
        Ok(persona) => persona,
        Err(error) => {
            eprintln!(
                "could not load the persona {}: {error}",
                args.persona.display()
            );
            return AppExit::error();
        }
    };

    let mut plugin = NpcMemoryPlugin::default().with_window(args.window);
    if let Some(threshold) = args.threshold {
        plugin = plugin.with_summary_threshold(threshold);
    }
    if let Some(trace) = &args.trace {
        plugin = plugin.with_trace_file(trace);
    }
    // The plugin restores an existing autosave slot at startup; wait for it.
    let restoring = args
        .save
        .as_ref()
        .is_some_and(|path| path.exists() || backup_path(path).exists());
    if let Some(save) = &args.save {
        plugin = plugin.with_autosave(save);
    }
    plugin = match args.backend.as_str() {
        "offline" => plugin.with_backend(OfflineBackend::default()),
        "scripted" => plugin.with_backend(seed_script()),
        "openai" => match openai_backend(&args) {
            Ok(backend) => plugin.with_backend(backend),
            Err(error) => {
                eprintln!("{error}\n{USAGE}");
                return AppExit::error();
            }
        },
        #[cfg(feature = "local-llm")]
        "local" => match local_backend(&args) {
            Ok(backend) => plugin.with_backend(backend),
            Err(error) => {
                eprintln!("{error}");
                return AppExit::error();
            }
        },
        #[cfg(not(feature = "local-llm"))]
        "local" => {
            eprintln!(
                "--backend local needs the local-llm feature: cargo run --features local-llm --example terminal_chat -- --backend local"
            );
            return AppExit::error();
        }
        other => {
            eprintln!("unknown backend {other:?}\n{USAGE}");
            return AppExit::error();
        }
    };

    let (sender, receiver) = channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });

    App::new()
        .add_plugins((
            MinimalPlugins.set(ScheduleRunnerPlugin::run_loop(Duration::from_millis(2))),
            AssetPlugin::default(),
            plugin,
        ))
        .insert_resource(Terminal {
            lines: Mutex::new(receiver),
            awaiting_reply: restoring,
            npc_name: persona.name.clone(),
        })
        .insert_resource(Echo7(persona))
        .add_systems(Startup, spawn_npc)
        .add_systems(Update, feed_lines.before(NpcMemorySystems::Intake))
        .add_systems(Update, print_events.after(NpcMemorySystems::Collect))
        .add_systems(Update, print_model_status)
        .run()
}

fn openai_backend(args: &Args) -> Result<OpenAiBackend, String> {
    let base_url = args
        .base_url
        .clone()
        .ok_or("--backend openai needs --base-url")?;
    let model = args.model.clone().unwrap_or_else(|| "default".into());
    let mut config = OpenAiConfig::custom("openai-compatible", base_url, model);
    config.api_key_env = args.api_key_env.clone();
    OpenAiBackend::new(config).map_err(|error| error.to_string())
}

/// The in-process model: `--model PATH`, or the demo model fetched by
/// `scripts/fetch-model.sh`.
#[cfg(feature = "local-llm")]
fn local_backend(args: &Args) -> Result<LocalLlmBackend, String> {
    let path = match &args.model {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(bevy_npc_memory::backends::DEFAULT_MODEL_PATH),
    };
    if !path.is_file() {
        return Err(format!(
            "no model at {}: run `bash scripts/fetch-model.sh`, or pass --model PATH to any GGUF",
            path.display()
        ));
    }
    let mut config = LocalLlmConfig::new(path).with_max_tokens(128);
    if let Some(threads) = args.threads {
        config = config.with_threads(threads as u32);
    }
    LocalLlmBackend::new(config).map_err(|error| error.to_string())
}

fn spawn_npc(mut commands: Commands, echo7: Res<Echo7>, mut personas: ResMut<Assets<Persona>>) {
    commands.spawn(Npc::new("echo7", personas.add(echo7.0.clone())));
}

/// Sends the next line once the previous one is answered and its summary, if any, is
/// done, the way a player reads before typing; this keeps piped runs reproducible.
/// Exits at the end of input once nothing is in flight, so the trace is complete.
fn feed_lines(
    mut terminal: ResMut<Terminal>,
    conversations: Res<NpcRequests>,
    mut talk: MessageWriter<TalkToNpc>,
    mut exit: MessageWriter<AppExit>,
) {
    if terminal.awaiting_reply || !conversations.is_idle() {
        return;
    }
    let next = terminal.lines.lock().expect("stdin lock").try_recv();
    match next {
        Ok(line) if line.trim().is_empty() => {}
        Ok(line) => {
            talk.write(TalkToNpc::new("echo7", line));
            terminal.awaiting_reply = true;
        }
        Err(TryRecvError::Empty) => {}
        Err(TryRecvError::Disconnected) => {
            exit.write(AppExit::Success);
        }
    }
}

fn print_events(
    mut terminal: ResMut<Terminal>,
    mut replies: MessageReader<NpcReplied>,
    mut failures: MessageReader<NpcReplyFailed>,
    mut summaries: MessageReader<NpcSummaryUpdated>,
    mut degradations: MessageReader<NpcMemoryDegraded>,
    mut loaded: MessageReader<MemoryLoaded>,
    mut load_failed: MessageReader<MemoryLoadFailed>,
) {
    for load in loaded.read() {
        eprintln!(
            "[Memory] loaded {} ({} NPCs)",
            load.path.display(),
            load.npcs.len()
        );
        if let Some(unusable) = &load.recovered_from {
            eprintln!("[Memory] restored from the backup, because {unusable}");
        }
        terminal.awaiting_reply = false;
    }
    for failure in load_failed.read() {
        eprintln!("[error] {failure}");
        terminal.awaiting_reply = false;
    }
    for reply in replies.read() {
        println!("{}: {}", terminal.npc_name, reply.text);
        terminal.awaiting_reply = false;
    }
    for failure in failures.read() {
        eprintln!("[error] {}", failure.error);
        terminal.awaiting_reply = false;
    }
    for summary in summaries.read() {
        eprintln!(
            "[Memory] summary of messages {}..{} ({} ms): {}",
            summary.covered.start,
            summary.covered.end,
            summary.latency.as_millis(),
            summary.new
        );
    }
    for degraded in degradations.read() {
        eprintln!("[Memory] degraded: {}", degraded.degradation);
    }
}

#[cfg(feature = "local-llm")]
fn print_model_status(
    mut loaded: MessageReader<LocalModelLoaded>,
    mut failed: MessageReader<LocalModelFailed>,
) {
    for model in loaded.read() {
        eprintln!(
            "[Model] {} loaded in {} ms",
            model.path.display(),
            model.load_time.as_millis()
        );
    }
    for model in failed.read() {
        eprintln!("[error] the model did not load: {}", model.reason);
    }
}

#[cfg(not(feature = "local-llm"))]
fn print_model_status() {}

/// The ECHO-7 walk-through, in English, for `--backend scripted`.
fn seed_script() -> ScriptedBackend {
    let backend = ScriptedBackend::new();
    backend
        .push_reply("Logged. Head to the switch room first and check the main breaker; tell me where you are and I can give you a shorter route.")
        .push_summary("The player is Alex; current goal: repair the power system; advised to go to the switch room and check the main breaker, with a shorter route once the player's location is known.")
        .push_reply("From the storage area, turn right into the maintenance corridor, follow the main passage and take the second fork left to reach the switch room. Check the main breaker and the backup power indicators there.")
        .push_summary("The player is Alex; current goal: repair the power system; Alex is in the storage area and has the route to the switch room via the maintenance corridor; check the main breaker and backup power indicators on arrival.")
        .push_reply("You are Alex. Your current goal is to repair the power system: go to the switch room, check the main breaker, and use the indicators to decide whether to switch to backup power.")
        .push_summary("The player is Alex; goal: repair the power system; heading to the switch room to check the main breaker and the backup power indicators.");
    backend
}
