//! What the in-process model costs: load time, prompt and generation speed at 1 and
//! 2 threads, and what a generating model does to a headless game's frame times.
//!
//! ```text
//! bash scripts/fetch-model.sh
//! cargo run --release --features local-llm --example local_bench [-- --model PATH] [--frames N] [--niceness N]
//! ```
//!
//! - **Load**: a fresh backend per run, from `LocalLlmBackend::new` until the worker
//!   reports the model ready (the file is in the OS cache after the first run).
//! - **Throughput**: a ~250-token prompt, then 128 tokens generated greedily with no
//!   stop sequence; the median of 3 runs after a warm-up, per thread count.
//! - **Frames**: a headless Bevy app (`MinimalPlugins`, the plugin, one NPC) whose
//!   `Update` does a fixed ~1 ms of game work, paced at 60 frames per second. Each
//!   frame's `app.update()` time is recorded while the model sits idle, then while
//!   it generates replies one after another (with 1 inference thread, the default
//!   on 2 cores). Idle and generating phases alternate so drift hits both alike.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy_npc_memory::backends::ModelStatus;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::{
    ChatRequest, DEFAULT_MODEL_PATH, KernelFeatures, Progress, RequestKind,
};
use bevy_npc_memory::dialogue::NpcReplyDelta;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::memory::{PromptMessage, ReplyInput, Role};
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::telemetry::LlmUsage;

/// Frames per phase (fewer when `--frames` is small); phases alternate idle,
/// generating, idle, ...
const PHASE_FRAMES: usize = 300;
const FRAME: Duration = Duration::from_micros(16_667);
const GAME_WORK: Duration = Duration::from_millis(1);

/// What the command line asked for.
struct Args {
    model: PathBuf,
    frames: usize,
    niceness: i32,
    phases: Vec<String>,
}

/// The bench's parts, in the order they run.
const PHASES: [&str; 5] = ["load", "throughput", "first-token", "reuse", "frames"];

impl Args {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut parsed = Args {
            model: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_MODEL_PATH),
            frames: 1_800,
            niceness: LocalLlmConfig::new("").inference_niceness,
            phases: PHASES.iter().map(|p| p.to_string()).collect(),
        };
        while let Some(flag) = args.next() {
            let mut value = |what: &str| args.next().ok_or_else(|| format!("{flag} needs {what}"));
            match flag.as_str() {
                "--model" => parsed.model = value("a path")?.into(),
                "--frames" => parsed.frames = number(&flag, &value("a number")?)?,
                "--niceness" => parsed.niceness = number(&flag, &value("a number")?)?,
                "--phases" => {
                    let list = value("a comma-separated list")?;
                    parsed.phases = list.split(',').map(str::to_owned).collect();
                    if let Some(unknown) =
                        parsed.phases.iter().find(|p| !PHASES.contains(&p.as_str()))
                    {
                        return Err(format!(
                            "--phases: unknown phase {unknown:?} (known: {})",
                            PHASES.join(", ")
                        ));
                    }
                }
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        // One idle and one generating frame at the least, or there is nothing to
        // compare.
        if parsed.frames < 2 {
            return Err(format!(
                "--frames {} is too few: the bench needs at least 2 (one idle, one generating)",
                parsed.frames
            ));
        }
        if !parsed.model.is_file() {
            return Err(format!(
                "no model at {}: run `bash scripts/fetch-model.sh`",
                parsed.model.display()
            ));
        }
        Ok(parsed)
    }
}

fn number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{flag} needs a number, not {text:?}"))
}

fn main() {
    let Args {
        model,
        frames,
        niceness,
        phases,
    } = Args::parse(std::env::args().skip(1)).unwrap_or_else(|error| {
        eprintln!("local_bench: {error}");
        eprintln!(
            "usage: local_bench [--model PATH] [--frames N (at least 2)] [--niceness N] [--phases {}]",
            PHASES.join(",")
        );
        std::process::exit(2)
    });
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("model: {}", model.display());
    println!("llama.cpp kernels: {}", KernelFeatures::detect());
    println!("cores: {cores}, load average before: {}", load_average());

    let run = |phase: &str| phases.iter().any(|p| p == phase);
    if run("load") {
        let loads: Vec<Duration> = (0..3).map(|_| load_time(&model)).collect();
        println!(
            "load time: {} ms (runs: {})",
            millis(median(&loads)),
            loads
                .iter()
                .map(|d| format!("{} ms", millis(*d)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if run("throughput") {
        for threads in [1, 2] {
            let (prompt, generated, prompt_tokens, generated_tokens) = throughput(&model, threads);
            println!(
                "threads {threads}: prompt {prompt:.0} tok/s ({prompt_tokens} tokens), generation {generated:.1} tok/s ({generated_tokens} tokens)"
            );
        }
    }
    if run("first-token") {
        let (cold, warm, prompt_tokens) = first_token_times(&model);
        println!(
            "time to first token, {prompt_tokens}-token prompt, 2 threads: cold {} ms, warm {} ms (the NPC's last prompt reused): {:.1}x faster",
            millis(cold),
            millis(warm),
            cold.as_secs_f64() / warm.as_secs_f64().max(1e-9)
        );
    }
    if run("reuse") {
        let (cached, prompt) = conversation_reuse(&model, CONVERSATION_LINES);
        println!(
            "KV reuse, {CONVERSATION_LINES} lines with a layered NPC (budget 1,500): {cached} of {prompt} reply prompt tokens came from the cache ({:.1} %)",
            100.0 * cached as f64 / prompt.max(1) as f64
        );
    }
    if run("frames") {
        let (idle, busy, tokens) = frame_times(&model, frames, niceness);
        println!(
            "frames (app.update(), {} ms game work, 60 fps pacing, 1 inference thread at nice {niceness}):",
            millis(GAME_WORK)
        );
        println!("  idle:       {})", frame_figures(&idle));
        println!(
            "  generating: {}, {tokens} tokens streamed)",
            frame_figures(&busy)
        );
        println!(
            "  ratio generating/idle: p50 {:.2}, p99 {:.2} (target p99 <= 1.2)",
            ms(percentile(&busy, 50.0)) / ms(percentile(&idle, 50.0)),
            ms(percentile(&busy, 99.0)) / ms(percentile(&idle, 99.0)),
        );
    }
    println!("load average after: {}", load_average());
}

fn load_time(model: &std::path::Path) -> Duration {
    let backend = LocalLlmBackend::new(LocalLlmConfig::new(model)).expect("worker starts");
    match backend.wait_until_loaded(Duration::from_secs(120)) {
        ModelStatus::Ready { load_time, .. } => load_time,
        other => panic!("the model did not load: {other:?}"),
    }
}

/// A request with a prompt of roughly 250 tokens.
fn long_request() -> ChatRequest {
    request_with_reports("echo7", 6)
}

/// A request whose window holds `reports` exchanges (about 37 tokens each) after a
/// short system prompt, ending with a player's question.
fn request_with_reports(npc: &str, reports: usize) -> ChatRequest {
    let mut messages = vec![PromptMessage::new(
        Role::System,
        "You are ECHO-7, the security and guidance AI of an underground bunker. You speak in short, calm sentences and you help the player repair the power.",
    )];
    for i in 0..reports {
        messages.push(PromptMessage::new(
            Role::User,
            format!(
                "Report {i}: I checked corridor {i}; the lights flicker and the fans are loud."
            ),
        ));
        messages.push(PromptMessage::new(
            Role::Assistant,
            format!("Noted. Corridor {i} is on the auxiliary line. Check the breaker panel next."),
        ));
    }
    messages.push(PromptMessage::new(
        Role::User,
        "Describe the whole bunker for me, room by room.",
    ));
    ChatRequest {
        npc: NpcId::new(npc),
        kind: RequestKind::Reply(ReplyInput {
            npc_name: "ECHO-7".into(),
            summary: "".into(),
        }),
        messages,
        actions: Vec::new(),
    }
}

fn throughput(model: &std::path::Path, threads: u32) -> (f64, f64, usize, usize) {
    // Every run reads the whole prompt: each is a new NPC, and no NPC's evaluated
    // prompt is kept.
    let config = LocalLlmConfig::new(model)
        .with_threads(threads)
        .with_max_tokens(128)
        .with_temperature(0.0)
        .with_stop([""; 0])
        .with_prompt_cache_bytes(0);
    let (backend, runtime) = loaded(config);
    let mut prompt = Vec::new();
    let mut generated = Vec::new();
    let mut last = None;
    for run in 0..4 {
        let mut request = long_request();
        request.npc = NpcId::new(format!("throughput-{run}"));
        runtime
            .block_on(backend.complete(request, Progress::silent()))
            .expect("a reply");
        let stats = backend.last_stats().expect("stats");
        if run > 0 {
            prompt.push(stats.prompt_tokens_per_second());
            generated.push(stats.generation_tokens_per_second());
        }
        last = Some(stats);
    }
    let last = last.unwrap();
    prompt.sort_by(f64::total_cmp);
    generated.sort_by(f64::total_cmp);
    (
        prompt[prompt.len() / 2],
        generated[generated.len() / 2],
        last.prompt_tokens,
        last.generated_tokens,
    )
}

/// A backend with its model loaded, and a runtime to await its requests on.
fn loaded(config: LocalLlmConfig) -> (LocalLlmBackend, tokio::runtime::Runtime) {
    let backend = LocalLlmBackend::new(config).expect("worker starts");
    backend.wait_until_loaded(Duration::from_secs(120));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    (backend, runtime)
}

/// Wall time from sending a request until its first streamed piece, in seconds.
fn first_piece(
    runtime: &tokio::runtime::Runtime,
    backend: &LocalLlmBackend,
    request: ChatRequest,
) -> Duration {
    let first = std::sync::Arc::new(std::sync::Mutex::new(None::<Instant>));
    let seen = first.clone();
    let progress = Progress::streaming(move |_| {
        seen.lock().unwrap().get_or_insert_with(Instant::now);
    });
    let started = Instant::now();
    runtime
        .block_on(backend.complete(request, progress))
        .expect("a reply");
    let first = first.lock().unwrap().unwrap_or_else(Instant::now);
    first.duration_since(started)
}

/// Time to first token for a ~1,500-token prompt read from scratch (a new NPC)
/// against the same NPC's next line, whose prompt extends its last one; medians of
/// 3 alternating runs. Returns (cold, warm, prompt tokens).
fn first_token_times(model: &std::path::Path) -> (Duration, Duration, usize) {
    let config = LocalLlmConfig::new(model)
        .with_threads(2)
        .with_max_tokens(8)
        .with_temperature(0.0)
        .with_stop([""; 0]);
    let (backend, runtime) = loaded(config);
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    let mut prompt_tokens = 0;
    for run in 0..3 {
        let npc = format!("first-token-{run}");
        let first = request_with_reports(&npc, 28);
        cold.push(first_piece(&runtime, &backend, first.clone()));
        prompt_tokens = backend.last_stats().expect("stats").prompt_tokens;
        // The player's next line: the same prompt, the reply and one line more.
        let mut next = first;
        next.messages.push(PromptMessage::new(
            Role::Assistant,
            "The north corridor is dark.",
        ));
        next.messages
            .push(PromptMessage::new(Role::User, "And the south one?"));
        warm.push(first_piece(&runtime, &backend, next));
    }
    (median(&cold), median(&warm), prompt_tokens)
}

/// Lines of the KV-reuse conversation.
const CONVERSATION_LINES: usize = 50;

/// A conversation of `lines` player lines with an NPC that uses every memory
/// feature (recall, facts, segments, a 1,500-token budget), as the bunker's
/// RUSTY-3 does; returns (cached, total) reply prompt tokens as the usage figures
/// count them.
fn conversation_reuse(model: &std::path::Path, lines: usize) -> (u64, u64) {
    const LINES: [&str; 10] = [
        "The generator in room {n} is rattling again.",
        "I found a cracked pipe near hatch {n}.",
        "Can you check the vent fan in corridor {n}?",
        "My name is Alex, by the way.",
        "The storage lights flicker every {n} minutes.",
        "What did I say about the generator?",
        "There is water on the floor of bay {n}.",
        "Where did I find the cracked pipe?",
        "The red hatch leads to the reactor.",
        "How many things are broken so far?",
    ];
    let backend = LocalLlmBackend::new(
        LocalLlmConfig::new(model)
            .with_threads(2)
            .with_max_tokens(48),
    )
    .expect("worker starts");
    backend.wait_until_loaded(Duration::from_secs(120));
    let mut app = headless_app(
        NpcMemoryPlugin::default()
            .with_backend(backend)
            .with_features(MemoryFeatures::layered(1_500)),
        "rusty",
        Persona::new(
            "RUSTY-3",
            "You are RUSTY-3, the bunker's cheerful maintenance robot. You fix pipes, vents and generators, speak in short sentences, and report what you are repairing.",
        ),
    );
    app.update();
    let idle = |app: &mut App| {
        while !app.world().resource::<NpcRequests>().is_idle() {
            app.update();
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    for line in 0..lines {
        let text = LINES[line % LINES.len()].replace("{n}", &(line + 1).to_string());
        app.world_mut().write_message(TalkToNpc::new("rusty", text));
        app.update();
        idle(&mut app);
    }
    let usage = app.world().resource::<LlmUsage>();
    let replies = usage
        .npc(&NpcId::new("rusty"), Purpose::Reply)
        .expect("replies were counted");
    (replies.cached_tokens, replies.prompt_tokens)
}

/// A headless app (`MinimalPlugins`) with `plugin` and one NPC, `id`.
fn headless_app(plugin: NpcMemoryPlugin, id: &str, persona: Persona) -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, AssetPlugin::default(), plugin));
    let persona = app
        .world_mut()
        .resource_mut::<Assets<Persona>>()
        .add(persona);
    app.world_mut().spawn(Npc::new(id, persona));
    app
}

#[derive(Resource, Default)]
struct Streamed(usize);

/// Stands in for a game's own per-frame work, so frame times have a realistic floor.
fn game_work() {
    let started = Instant::now();
    let mut x = 1u64;
    while started.elapsed() < GAME_WORK {
        for _ in 0..256 {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

fn keep_talking(
    mut talk: MessageWriter<TalkToNpc>,
    conversations: Res<NpcRequests>,
    mut deltas: MessageReader<NpcReplyDelta>,
    mut streamed: ResMut<Streamed>,
    talking: Res<Talking>,
) {
    streamed.0 += deltas.read().count();
    if talking.0 && conversations.is_idle() {
        talk.write(TalkToNpc::new(
            "echo7",
            "Describe the whole bunker for me, room by room.",
        ));
    }
}

#[derive(Resource)]
struct Talking(bool);

fn frame_times(
    model: &std::path::Path,
    frames: usize,
    niceness: i32,
) -> (Vec<Duration>, Vec<Duration>, usize) {
    let mut config = LocalLlmConfig::new(model)
        .with_threads(1)
        .with_max_tokens(256)
        .with_stop([""; 0]);
    config.inference_niceness = niceness;
    let backend = LocalLlmBackend::new(config).expect("worker starts");
    backend.wait_until_loaded(Duration::from_secs(120));
    let mut app = headless_app(
        // A large window: the bench measures inference next to the frame, not
        // summaries.
        NpcMemoryPlugin::default()
            .with_backend(backend)
            .with_window(1_000),
        "echo7",
        Persona::new(
            "ECHO-7",
            "You are ECHO-7, the security AI of an underground bunker.",
        ),
    );
    app.init_resource::<Streamed>()
        .insert_resource(Talking(false))
        .add_systems(Update, (game_work, keep_talking));
    for _ in 0..60 {
        app.update();
    }

    // Short runs get shorter phases, so both kinds of frame are always measured.
    let phase_frames = PHASE_FRAMES.min(frames / 2).max(1);
    let mut idle = Vec::new();
    let mut busy = Vec::new();
    let mut phase = 0;
    while idle.len() + busy.len() < frames {
        let talking = phase % 2 == 1;
        app.world_mut().resource_mut::<Talking>().0 = talking;
        if !talking {
            // Let the reply in flight finish so idle frames really are idle.
            while !app.world().resource::<NpcRequests>().is_idle() {
                app.update();
                std::thread::sleep(Duration::from_millis(5));
            }
        } else {
            // Start generating before measuring.
            app.update();
            std::thread::sleep(Duration::from_millis(200));
        }
        for _ in 0..phase_frames {
            let started = Instant::now();
            app.update();
            let took = started.elapsed();
            if talking { &mut busy } else { &mut idle }.push(took);
            std::thread::sleep(FRAME.saturating_sub(started.elapsed()));
        }
        phase += 1;
    }
    let streamed = app.world().resource::<Streamed>().0;
    (idle, busy, streamed)
}

/// `p50 .. ms, p99 .. ms, max .. ms (N frames` of one phase's frame times.
fn frame_figures(frames: &[Duration]) -> String {
    format!(
        "p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} frames",
        ms(percentile(frames, 50.0)),
        ms(percentile(frames, 99.0)),
        ms(percentile(frames, 100.0)),
        frames.len()
    )
}

fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn median(samples: &[Duration]) -> Duration {
    percentile(samples, 50.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn millis(d: Duration) -> u128 {
    d.as_millis()
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}
