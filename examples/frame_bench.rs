//! What the plugin costs the game per frame, headless, next to a baseline app
//! that has the same plugins except `NpcMemoryPlugin`.
//!
//! `cargo run --release --example frame_bench [-- --json] [--npcs N] [--executor multi|single|both] [--sets] [--scenario all|load]`
//!
//! Two tiny systems bracket the plugin's systems in `Update`: one runs
//! `.before(NpcMemorySystems::Personas)` and stamps the time, the other runs
//! `.after(NpcMemorySystems::Persist)` and records the time since the stamp. The
//! baseline app runs the same two systems chained, so its bracket measures what the
//! bracket itself costs. Whole `app.update()` times are measured too; they also
//! cover what the plugin adds outside `Update` (message buffers, asset events).
//!
//! - Scenario A, idle: every NPC has memory, nobody talks. The two apps run in
//!   alternating chunks of frames so drift (CPU clock, other load) hits both alike.
//! - Scenario B, talking: 100 NPCs each get a line every 20 frames, answered by a
//!   scripted backend after 50 ms, with a 1 ms sleep between frames so replies
//!   arrive while frames run. The baseline then runs the same loop without lines.
//!
//! - Scenario L, load (`--scenario load`, alone): a save of 100 NPCs × 10,000
//!   messages of LoCoMo-like synthetic English, recall on, is loaded with
//!   `LoadMemory` while frames run (1 ms sleep between frames), into NPCs with no
//!   memory and then again over the loaded memory. Every NPC's recall index is
//!   rebuilt from its log. Reported: the worst frame and p99 from the request to
//!   `MemoryLoaded` (and a few frames after), against an idle run of the same app
//!   with the same memory and frame loop. For comparison, main's synchronous path is
//!   emulated: one frame whose system rebuilds every NPC's memory from the save
//!   (`MemoryParts::into_memory`), as main's `finish_io` did on the main thread.
//!   `--load-npcs N` and `--load-messages N` change the save's size.
//!
//! Both scenarios run twice by default: with Bevy's default multi-threaded executor
//! for `Update` (what a game gets), and with the single-threaded executor, which
//! leaves out the cost of handing each system to a worker thread and so shows the
//! work inside the plugin's systems. `--sets` adds stamps between the plugin's four
//! sets and reports each set's time; the extra systems make the multi-threaded
//! figures somewhat larger.

use std::time::{Duration, Instant};

use bevy::ecs::schedule::SingleThreadedExecutor;
use bevy::prelude::*;
use bevy_npc_memory::prelude::*;
use serde_json::{Value, json};

#[path = "shared/sampling.rs"]
mod sampling;
use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::dialogue::NpcSummaryUpdated;
use sampling::{Lcg, percentile};

/// How many NPCs exist unless `--npcs` says otherwise.
const DEFAULT_NPCS: usize = 1_000;
/// Frames measured per scenario.
const FRAMES: usize = 2_000;
/// Idle frames each app runs before the other takes over.
const CHUNK: usize = 100;
/// Frames run before measuring, after every NPC has memory.
const WARMUP_FRAMES: usize = 200;
/// NPCs that talk in scenario B.
const TALKERS: usize = 100;
/// Each talking NPC gets a line every this many frames.
const TALK_EVERY: usize = 20;
/// How long the scripted backend takes to answer.
const LATENCY: Duration = Duration::from_millis(50);
/// The pause between frames in scenario B.
const FRAME_SLEEP: Duration = Duration::from_millis(1);
/// Requests that may run at once.
const MAX_CONCURRENT: usize = 128;
/// Target: the plugin's idle cost per frame.
const IDLE_TARGET_US: f64 = 20.0;
/// Target: no frame in which the plugin's systems take longer than this.
const FRAME_BUDGET: Duration = Duration::from_millis(1);
/// NPCs in the load scenario's save.
const LOAD_NPCS: usize = 100;
/// Messages per NPC in the load scenario's save.
const LOAD_MESSAGES: usize = 10_000;
/// Frames the load scenario's idle run measures.
const LOAD_IDLE_FRAMES: usize = 500;
/// Frames measured after `MemoryLoaded`, where the swapped memory settles.
const LOAD_TAIL_FRAMES: usize = 20;
/// The plugin's sets, in order.
const SET_NAMES: [&str; 4] = ["Personas", "Intake", "Collect", "Persist"];

/// The stamp taken before the plugin's systems and the times recorded after them.
#[derive(Resource, Default)]
struct Bracket {
    started: Option<Instant>,
    /// With `--sets`: the end of each set but the last, this frame.
    marks: Vec<Instant>,
    samples: Vec<Duration>,
    set_samples: Vec<[Duration; 4]>,
    recording: bool,
}

fn bracket_start(mut bracket: ResMut<Bracket>) {
    bracket.marks.clear();
    bracket.started = Some(Instant::now());
}

fn set_mark(mut bracket: ResMut<Bracket>) {
    bracket.marks.push(Instant::now());
}

fn bracket_end(mut bracket: ResMut<Bracket>) {
    let now = Instant::now();
    let Some(started) = bracket.started.take() else {
        return;
    };
    if !bracket.recording {
        return;
    }
    bracket.samples.push(now - started);
    if let [a, b, c] = bracket.marks[..] {
        bracket
            .set_samples
            .push([a - started, b - a, c - b, now - c]);
    }
}

/// What the plugin sent back during scenario B.
#[derive(Resource, Default)]
struct Counts {
    replies: usize,
    busy: usize,
    other_failures: usize,
    summaries: usize,
}

fn count_messages(
    mut counts: ResMut<Counts>,
    mut replies: MessageReader<NpcReplied>,
    mut failures: MessageReader<NpcReplyFailed>,
    mut summaries: MessageReader<NpcSummaryUpdated>,
) {
    counts.replies += replies.read().count();
    for failure in failures.read() {
        if matches!(failure.error, ReplyError::Busy { .. }) {
            counts.busy += 1;
        } else {
            counts.other_failures += 1;
        }
    }
    counts.summaries += summaries.read().count();
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Executor {
    Multi,
    Single,
}

impl Executor {
    fn name(self) -> &'static str {
        match self {
            Executor::Multi => "multi-threaded",
            Executor::Single => "single-threaded",
        }
    }
}

/// A headless app; with `backend`, the plugin is in it.
fn build_app(backend: Option<&ScriptedBackend>, executor: Executor, sets: bool) -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, AssetPlugin::default()))
        .init_resource::<Bracket>();
    if executor == Executor::Single {
        app.edit_schedule(Update, |schedule| {
            schedule.set_executor(SingleThreadedExecutor::new());
        });
    }
    match backend {
        Some(backend) => {
            let settings = NpcMemorySettings {
                max_concurrent_requests: MAX_CONCURRENT,
                ..default()
            };
            app.add_plugins(
                NpcMemoryPlugin::default()
                    .with_settings(settings)
                    .with_backend(backend.clone()),
            )
            .init_resource::<Counts>()
            .add_systems(
                Update,
                (
                    bracket_start.before(NpcMemorySystems::Personas),
                    bracket_end.after(NpcMemorySystems::Persist),
                    count_messages.after(bracket_end),
                ),
            );
            if sets {
                use NpcMemorySystems::*;
                app.add_systems(
                    Update,
                    (
                        set_mark.after(Personas).before(Intake),
                        set_mark.after(Intake).before(Collect),
                        set_mark.after(Collect).before(Persist),
                    ),
                );
            }
        }
        None => {
            app.add_systems(Update, (bracket_start, bracket_end).chain());
        }
    }
    // What the runner does before the first frame; `app.run()` is never called.
    app.finish();
    app.cleanup();
    app
}

/// Systems in `Update` once it has been built, sync points included.
fn update_systems(app: &App) -> usize {
    app.get_schedule(Update)
        .map_or(0, |schedule| schedule.systems_len())
}

/// Spawns `npcs` NPCs sharing one persona and runs frames until all have memory.
fn spawn_npcs(app: &mut App, npcs: usize) -> usize {
    let persona = Persona::new(
        "Guard",
        "You are a guard in an underground bunker. Answer in one or two sentences.",
    );
    let handle = app
        .world_mut()
        .resource_mut::<Assets<Persona>>()
        .add(persona);
    for i in 0..npcs {
        app.world_mut()
            .spawn(Npc::new(format!("npc{i}"), handle.clone()));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut frames = 0;
    while app.world().resource::<ContextMemoryManager>().len() < npcs {
        assert!(
            Instant::now() < deadline,
            "only {} of {npcs} NPCs got memory within a minute",
            app.world().resource::<ContextMemoryManager>().len()
        );
        app.update();
        frames += 1;
    }
    frames
}

fn warm_up(app: &mut App) {
    for _ in 0..WARMUP_FRAMES {
        app.update();
    }
}

/// Runs one frame and returns how long `app.update()` took.
fn timed_update(app: &mut App) -> Duration {
    let started = Instant::now();
    app.update();
    started.elapsed()
}

fn start_recording(app: &mut App) {
    let mut bracket = app.world_mut().resource_mut::<Bracket>();
    bracket.samples.clear();
    bracket.set_samples.clear();
    bracket.recording = true;
}

/// The bracket's samples, and each set's when `--sets` stamps them.
fn stop_recording(app: &mut App) -> (Stats, Option<[Stats; 4]>) {
    let mut bracket = app.world_mut().resource_mut::<Bracket>();
    bracket.recording = false;
    let samples = std::mem::take(&mut bracket.samples);
    let set_samples = std::mem::take(&mut bracket.set_samples);
    let sets = (!set_samples.is_empty()).then(|| {
        std::array::from_fn(|set| {
            Stats::of(&set_samples.iter().map(|s| s[set]).collect::<Vec<_>>())
        })
    });
    (Stats::of(&samples), sets)
}

/// Percentiles of one series of samples.
#[derive(Clone, Copy, Debug)]
struct Stats {
    samples: usize,
    median_us: f64,
    p99_us: f64,
    max_us: f64,
    over_budget: usize,
}

impl Stats {
    fn of(samples: &[Duration]) -> Self {
        assert!(!samples.is_empty(), "no samples were recorded");
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        Self {
            samples: sorted.len(),
            median_us: micros(percentile(&sorted, 50.0)),
            p99_us: micros(percentile(&sorted, 99.0)),
            max_us: micros(*sorted.last().expect("not empty")),
            over_budget: sorted.iter().filter(|d| **d > FRAME_BUDGET).count(),
        }
    }

    fn json(&self) -> Value {
        json!({
            "samples": self.samples,
            "median_us": round2(self.median_us),
            "p99_us": round2(self.p99_us),
            "max_us": round2(self.max_us),
            "over_1ms": self.over_budget,
        })
    }
}

fn sets_json(sets: &Option<[Stats; 4]>) -> Value {
    match sets {
        Some(sets) => SET_NAMES
            .iter()
            .zip(sets)
            .map(|(name, stats)| ((*name).to_owned(), stats.json()))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        None => Value::Null,
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

struct Idle {
    frames_to_memory: usize,
    plugin_bracket: Stats,
    plugin_sets: Option<[Stats; 4]>,
    baseline_bracket: Stats,
    plugin_frame: Stats,
    baseline_frame: Stats,
}

impl Idle {
    /// The plugin's systems minus what the bracket costs on its own.
    fn bracket_overhead_us(&self) -> f64 {
        self.plugin_bracket.median_us - self.baseline_bracket.median_us
    }

    fn frame_overhead_us(&self) -> f64 {
        self.plugin_frame.median_us - self.baseline_frame.median_us
    }

    fn frame_ratio(&self) -> f64 {
        self.plugin_frame.median_us / self.baseline_frame.median_us
    }

    fn met(&self) -> bool {
        self.bracket_overhead_us() < IDLE_TARGET_US && self.frame_overhead_us() < IDLE_TARGET_US
    }
}

/// Scenario A: both apps, alternating chunks, nobody talks.
fn run_idle(plugin_app: &mut App, baseline: &mut App, frames_to_memory: usize) -> Idle {
    let mut plugin_frames = Vec::with_capacity(FRAMES);
    let mut baseline_frames = Vec::with_capacity(FRAMES);
    start_recording(plugin_app);
    start_recording(baseline);
    for _ in 0..FRAMES / CHUNK {
        for _ in 0..CHUNK {
            plugin_frames.push(timed_update(plugin_app));
        }
        for _ in 0..CHUNK {
            baseline_frames.push(timed_update(baseline));
        }
    }
    let (plugin_bracket, plugin_sets) = stop_recording(plugin_app);
    let (baseline_bracket, _) = stop_recording(baseline);
    Idle {
        frames_to_memory,
        plugin_bracket,
        plugin_sets,
        baseline_bracket,
        plugin_frame: Stats::of(&plugin_frames),
        baseline_frame: Stats::of(&baseline_frames),
    }
}

struct Talking {
    talkers: usize,
    lines_sent: usize,
    replies: usize,
    busy: usize,
    other_failures: usize,
    summaries: usize,
    peak_in_flight: usize,
    peak_waiting: usize,
    elapsed: Duration,
    plugin_bracket: Stats,
    plugin_sets: Option<[Stats; 4]>,
    baseline_bracket: Stats,
    plugin_frame: Stats,
    baseline_frame: Stats,
}

impl Talking {
    fn met(&self) -> bool {
        self.plugin_bracket.over_budget == 0
    }
}

/// Scenario B: the plugin app with talking NPCs, then the baseline with the same loop.
fn run_talking(plugin_app: &mut App, baseline: &mut App, npcs: usize) -> Talking {
    let talkers = TALKERS.min(npcs);
    let names: Vec<String> = (0..talkers).map(|i| format!("npc{i}")).collect();
    *plugin_app.world_mut().resource_mut::<Counts>() = Counts::default();

    let mut lines_sent = 0;
    let mut peak_in_flight = 0;
    let mut peak_waiting = 0;
    let mut plugin_frames = Vec::with_capacity(FRAMES);
    start_recording(plugin_app);
    let started = Instant::now();
    for frame in 0..FRAMES {
        // Staggered, so each frame carries a few lines rather than all at once.
        for (i, name) in names.iter().enumerate() {
            if (frame + i) % TALK_EVERY == 0 {
                plugin_app.world_mut().write_message(TalkToNpc::new(
                    name.as_str(),
                    format!("Status report {frame}: is the corridor door still sealed?"),
                ));
                lines_sent += 1;
            }
        }
        plugin_frames.push(timed_update(plugin_app));
        let conversations = plugin_app.world().resource::<NpcRequests>();
        peak_in_flight = peak_in_flight.max(conversations.requests_in_flight());
        peak_waiting = peak_waiting.max(conversations.lines_waiting());
        std::thread::sleep(FRAME_SLEEP);
    }
    let elapsed = started.elapsed();
    let (plugin_bracket, plugin_sets) = stop_recording(plugin_app);

    let mut baseline_frames = Vec::with_capacity(FRAMES);
    start_recording(baseline);
    for _ in 0..FRAMES {
        baseline_frames.push(timed_update(baseline));
        std::thread::sleep(FRAME_SLEEP);
    }
    let (baseline_bracket, _) = stop_recording(baseline);

    let counts = plugin_app.world().resource::<Counts>();
    Talking {
        talkers,
        lines_sent,
        replies: counts.replies,
        busy: counts.busy,
        other_failures: counts.other_failures,
        summaries: counts.summaries,
        peak_in_flight,
        peak_waiting,
        elapsed,
        plugin_bracket,
        plugin_sets,
        baseline_bracket,
        plugin_frame: Stats::of(&plugin_frames),
        baseline_frame: Stats::of(&baseline_frames),
    }
}

/// Both scenarios with one executor.
struct Run {
    executor: Executor,
    plugin_systems: usize,
    baseline_systems: usize,
    idle: Idle,
    talking: Talking,
}

fn run(executor: Executor, npcs: usize, sets: bool) -> Run {
    // Enough script for every line scenario B can send, and a summary for each too.
    let backend = ScriptedBackend::new();
    for _ in 0..TALKERS * FRAMES.div_ceil(TALK_EVERY) {
        backend.push_reply_after(LATENCY, "Sealed since the last shift. Nothing got through.");
        backend.push_summary_after(
            LATENCY,
            "The player keeps asking whether the corridor door is sealed; it is.",
        );
    }

    let mut plugin_app = build_app(Some(&backend), executor, sets);
    let mut baseline = build_app(None, executor, false);
    let frames_to_memory = spawn_npcs(&mut plugin_app, npcs);
    warm_up(&mut plugin_app);
    warm_up(&mut baseline);

    let idle = run_idle(&mut plugin_app, &mut baseline, frames_to_memory);
    let talking = run_talking(&mut plugin_app, &mut baseline, npcs);
    Run {
        executor,
        plugin_systems: update_systems(&plugin_app),
        baseline_systems: update_systems(&baseline),
        idle,
        talking,
    }
}

struct Args {
    json: bool,
    npcs: usize,
    executors: Vec<Executor>,
    sets: bool,
    load_only: bool,
    load_npcs: usize,
    load_messages: usize,
}

fn parse_args() -> Args {
    let usage = "usage: frame_bench [--json] [--npcs N] [--executor multi|single|both] [--sets] [--scenario all|load] [--load-npcs N] [--load-messages N]";
    let fail = |why: &str| -> ! {
        eprintln!("{why}\n{usage}");
        std::process::exit(2);
    };
    let mut args = Args {
        json: false,
        npcs: DEFAULT_NPCS,
        executors: vec![Executor::Multi, Executor::Single],
        sets: false,
        load_only: false,
        load_npcs: LOAD_NPCS,
        load_messages: LOAD_MESSAGES,
    };
    let positive = |value: Option<String>, what: &str| -> usize {
        value
            .and_then(|n| n.parse().ok())
            .filter(|n| *n > 0)
            .unwrap_or_else(|| fail(&format!("{what} needs a positive number")))
    };
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--json" => args.json = true,
            "--sets" => args.sets = true,
            "--npcs" => {
                args.npcs = iter
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n > 0)
                    .unwrap_or_else(|| fail("--npcs needs a positive number"));
            }
            "--executor" => {
                args.executors = match iter.next().as_deref() {
                    Some("multi") => vec![Executor::Multi],
                    Some("single") => vec![Executor::Single],
                    Some("both") => vec![Executor::Multi, Executor::Single],
                    _ => fail("--executor takes multi, single or both"),
                };
            }
            "--scenario" => {
                args.load_only = match iter.next().as_deref() {
                    Some("all") => false,
                    Some("load") => true,
                    _ => fail("--scenario takes all or load"),
                };
            }
            "--load-npcs" => args.load_npcs = positive(iter.next(), "--load-npcs"),
            "--load-messages" => args.load_messages = positive(iter.next(), "--load-messages"),
            "-h" | "--help" => {
                println!("{usage}");
                std::process::exit(0);
            }
            other => fail(&format!("unknown argument {other:?}")),
        }
    }
    args
}

fn verdict(met: bool) -> &'static str {
    if met { "MET" } else { "MISSED" }
}

fn header() {
    println!(
        "  {:<34} {:>10} {:>10} {:>10} {:>8}",
        "", "median µs", "p99 µs", "max µs", ">1 ms"
    );
}

fn stats_row(label: &str, s: &Stats) {
    println!(
        "  {label:<34} {:>10.2} {:>10.2} {:>10.2} {:>8}",
        s.median_us, s.p99_us, s.max_us, s.over_budget
    );
}

fn sets_rows(sets: &Option<[Stats; 4]>) {
    if let Some(sets) = sets {
        for (name, stats) in SET_NAMES.iter().zip(sets) {
            stats_row(&format!("  set {name}"), stats);
        }
    }
}

fn print_run(run: &Run, npcs: usize) {
    let (idle, talking) = (&run.idle, &run.talking);
    println!(
        "== {} executor for Update ({} systems in Update with the plugin, {} without) ==",
        run.executor.name(),
        run.plugin_systems,
        run.baseline_systems
    );
    println!();
    println!(
        "Scenario A, idle: {npcs} NPCs with memory (ready after {} frames), nobody talks",
        idle.frames_to_memory
    );
    header();
    stats_row("plugin systems (bracket)", &idle.plugin_bracket);
    sets_rows(&idle.plugin_sets);
    stats_row("baseline bracket (empty)", &idle.baseline_bracket);
    stats_row("whole frame, plugin app", &idle.plugin_frame);
    stats_row("whole frame, baseline app", &idle.baseline_frame);
    println!(
        "  overhead (medians): bracket {:+.2} µs, whole frame {:+.2} µs; whole frame plugin/baseline {:.2}×",
        idle.bracket_overhead_us(),
        idle.frame_overhead_us(),
        idle.frame_ratio()
    );
    println!(
        "  target: idle overhead < {IDLE_TARGET_US} µs per frame at {npcs} NPCs (bracket and whole frame): {}",
        verdict(idle.met())
    );
    println!();
    println!(
        "Scenario B, talking: {} NPCs get a line every {TALK_EVERY} frames, reply latency {} ms, {} ms sleep between frames",
        talking.talkers,
        LATENCY.as_millis(),
        FRAME_SLEEP.as_millis()
    );
    header();
    stats_row("plugin systems (bracket)", &talking.plugin_bracket);
    sets_rows(&talking.plugin_sets);
    stats_row("baseline bracket (empty)", &talking.baseline_bracket);
    stats_row("whole frame, plugin app", &talking.plugin_frame);
    stats_row("whole frame, baseline app", &talking.baseline_frame);
    println!(
        "  in {:.2} s: {} lines sent, {} replies arrived, {} summaries, {} lines refused as busy, {} other failures",
        talking.elapsed.as_secs_f64(),
        talking.lines_sent,
        talking.replies,
        talking.summaries,
        talking.busy,
        talking.other_failures
    );
    println!(
        "  peak requests in flight (running or waiting for a slot): {}, peak lines queued: {}",
        talking.peak_in_flight, talking.peak_waiting
    );
    println!(
        "  target: no frame where the plugin's systems take over 1 ms while {} talk: {} ({} frames over)",
        talking.talkers,
        verdict(talking.met()),
        talking.plugin_bracket.over_budget
    );
    println!();
}

fn run_json(run: &Run, npcs: usize) -> Value {
    let (idle, talking) = (&run.idle, &run.talking);
    json!({
        "executor": run.executor.name(),
        "update_systems_plugin_app": run.plugin_systems,
        "update_systems_baseline_app": run.baseline_systems,
        "idle": {
            "npcs": npcs,
            "frames_to_memory": idle.frames_to_memory,
            "plugin_bracket": idle.plugin_bracket.json(),
            "plugin_sets": sets_json(&idle.plugin_sets),
            "baseline_bracket": idle.baseline_bracket.json(),
            "plugin_frame": idle.plugin_frame.json(),
            "baseline_frame": idle.baseline_frame.json(),
            "bracket_overhead_median_us": round2(idle.bracket_overhead_us()),
            "frame_overhead_median_us": round2(idle.frame_overhead_us()),
            "frame_ratio_median": round2(idle.frame_ratio()),
            "target_us": IDLE_TARGET_US,
            "target_met": idle.met(),
        },
        "talking": {
            "talkers": talking.talkers,
            "talk_every_frames": TALK_EVERY,
            "latency_ms": LATENCY.as_millis() as u64,
            "sleep_between_frames_ms": FRAME_SLEEP.as_millis() as u64,
            "elapsed_s": round2(talking.elapsed.as_secs_f64()),
            "lines_sent": talking.lines_sent,
            "replies": talking.replies,
            "summaries": talking.summaries,
            "busy": talking.busy,
            "other_failures": talking.other_failures,
            "peak_in_flight": talking.peak_in_flight,
            "peak_waiting": talking.peak_waiting,
            "plugin_bracket": talking.plugin_bracket.json(),
            "plugin_sets": sets_json(&talking.plugin_sets),
            "baseline_bracket": talking.baseline_bracket.json(),
            "plugin_frame": talking.plugin_frame.json(),
            "baseline_frame": talking.baseline_frame.json(),
            "target_budget_us": micros(FRAME_BUDGET),
            "target_met": talking.met(),
        },
    })
}

fn main() {
    let args = parse_args();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    if args.load_only {
        let runs: Vec<LoadRun> = args
            .executors
            .iter()
            .map(|executor| run_load(*executor, args.load_npcs, args.load_messages))
            .collect();
        if args.json {
            let report = json!({
                "release": !cfg!(debug_assertions),
                "cpus": cpus,
                "runs": runs.iter().map(LoadRun::json).collect::<Vec<_>>(),
            });
            println!("{report}");
        } else {
            println!(
                "frame_bench --scenario load (release build: {}, {cpus} CPUs)",
                !cfg!(debug_assertions)
            );
            println!();
            for run in &runs {
                run.print();
            }
        }
        return;
    }
    let runs: Vec<Run> = args
        .executors
        .iter()
        .map(|executor| run(*executor, args.npcs, args.sets))
        .collect();

    if args.json {
        let report = json!({
            "release": !cfg!(debug_assertions),
            "cpus": cpus,
            "npcs": args.npcs,
            "frames_per_scenario": FRAMES,
            "runs": runs.iter().map(|run| run_json(run, args.npcs)).collect::<Vec<_>>(),
        });
        println!("{report}");
    } else {
        println!(
            "frame_bench: what NpcMemoryPlugin costs per frame (release build: {}, {cpus} CPUs, {} frames per scenario)",
            !cfg!(debug_assertions),
            FRAMES
        );
        println!();
        for run in &runs {
            print_run(run, args.npcs);
        }
    }
}

// ---------------------------------------------------------------------------
// Scenario L: loading a large save while frames run.

// Every run loads the same save: its lines come from a seeded `Lcg`.
impl Lcg {
    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.next() as usize % words.len()]
    }
}

const WHEN: [&str; 8] = [
    "Yesterday",
    "Last weekend",
    "This morning",
    "Two weeks ago",
    "On Saturday",
    "Last summer",
    "A few days ago",
    "Back in May",
];
const DID: [&str; 16] = [
    "went hiking",
    "painted a sunset",
    "signed up for a pottery class",
    "adopted a puppy",
    "ran a charity race",
    "visited an art museum",
    "started volunteering at the shelter",
    "baked bread for the neighbours",
    "went camping by the river",
    "joined a book club",
    "played guitar at an open mic",
    "planted tomatoes in the garden",
    "took a photography workshop",
    "went to a pride parade",
    "learned to surf",
    "cooked dinner for my parents",
];
const WITH: [&str; 10] = [
    "my sister",
    "my mentor",
    "the kids",
    "my best friend",
    "my grandmother",
    "some coworkers",
    "my partner",
    "an old classmate",
    "my neighbour",
    "the support group",
];
const WHERE: [&str; 10] = [
    "near the lake",
    "downtown",
    "at the community centre",
    "in the mountains",
    "at the beach",
    "in the park",
    "at the library",
    "by the old bridge",
    "at the farmers market",
    "in the city",
];
const FELT: [&str; 10] = [
    "so relaxed",
    "really proud",
    "a bit nervous",
    "grateful",
    "inspired",
    "exhausted but happy",
    "closer to them",
    "like myself again",
    "hopeful about the future",
    "surprisingly calm",
];

/// One line of a LoCoMo-like chat between two friends catching up.
fn locomo_line(rng: &mut Lcg, player: bool) -> String {
    match (rng.next() % 4, player) {
        (0, _) => format!(
            "{} I {} with {} {}, and it made me feel {}.",
            rng.pick(&WHEN),
            rng.pick(&DID),
            rng.pick(&WITH),
            rng.pick(&WHERE),
            rng.pick(&FELT)
        ),
        (1, true) => format!(
            "Do you remember when you {} {}? How did {} like it?",
            rng.pick(&DID),
            rng.pick(&WHERE),
            rng.pick(&WITH)
        ),
        (1, false) => format!(
            "That sounds wonderful! I have been meaning to try that since I {}.",
            rng.pick(&DID)
        ),
        (2, _) => format!(
            "I've been thinking about what {} said {}; I felt {} afterwards.",
            rng.pick(&WITH),
            rng.pick(&WHEN).to_lowercase(),
            rng.pick(&FELT)
        ),
        _ => format!(
            "Next month I want to go back {} and maybe bring {} along.",
            rng.pick(&WHERE),
            rng.pick(&WITH)
        ),
    }
}

/// A save of `npcs` NPCs (the ids the bench spawns) with `messages` lines each,
/// recall on, the window at the end of the log.
fn big_save(npcs: usize, messages: usize, seed: u64) -> bevy_npc_memory::saves::SaveGame {
    use bevy_npc_memory::memory::{ChatMessage, MemoryParts, NpcMemory, Origin, PersonaPrompt};
    use bevy_npc_memory::saves::{NpcSave, SaveGame};
    use std::sync::Arc;

    let mut config = MemoryConfig::default();
    config.features.recall.enabled = true;
    let persona = PersonaPrompt {
        name: "Guard".into(),
        text: "You are a guard in an underground bunker. Answer in one or two sentences.".into(),
        style: Default::default(),
    };
    let empty = NpcMemory::new(persona, &config);
    let template = MemoryParts::of(&empty.log, &empty.window, &empty.context);
    let mut rng = Lcg(seed);
    let saves = (0..npcs)
        .map(|i| {
            let mut parts = template.clone();
            parts.log = (0..messages)
                .map(|m| ChatMessage {
                    role: if m % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    content: locomo_line(&mut rng, m % 2 == 0).into(),
                    index: m as u64,
                    timestamp: m as f64 * 30.0,
                    origin: Origin::default(),
                    speaker: None,
                })
                .collect();
            parts.window_start = messages.saturating_sub(4) as u64;
            Arc::new(NpcSave::new(NpcId::new(format!("npc{i}")), parts))
        })
        .collect();
    SaveGame::new(saves)
}

/// Frame times while loading, next to an idle run of the same app.
struct LoadPass {
    label: &'static str,
    /// From `LoadMemory` to `MemoryLoaded`.
    load_time: Duration,
    frames_during_load: usize,
    plugin_bracket: Stats,
    plugin_frame: Stats,
}

struct LoadRun {
    executor: Executor,
    npcs: usize,
    messages: usize,
    save_bytes: u64,
    idle_bracket: Stats,
    idle_frame: Stats,
    passes: Vec<LoadPass>,
    /// Main's path, emulated: every NPC rebuilt in one frame's system.
    sync_frame: Duration,
}

/// Loads `path` while frames run; returns once `MemoryLoaded` (or a failure) came
/// and a few frames more ran.
fn load_while_running(app: &mut App, path: &std::path::Path, label: &'static str) -> LoadPass {
    let loaded_before = app.world().resource::<LoadOutcomes>().loaded;
    let mut frames = Vec::new();
    start_recording(app);
    app.world_mut()
        .write_message(LoadMemory::new(path.to_owned()));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(600);
    let mut load_time = None;
    let mut frames_during_load = 0;
    let mut tail = 0;
    while tail < LOAD_TAIL_FRAMES {
        frames.push(timed_update(app));
        let outcomes = app.world().resource::<LoadOutcomes>();
        assert_eq!(outcomes.failed, 0, "the load failed");
        match load_time {
            None if outcomes.loaded > loaded_before => load_time = Some(started.elapsed()),
            None => frames_during_load += 1,
            Some(_) => tail += 1,
        }
        assert!(Instant::now() < deadline, "the load took over 10 minutes");
        std::thread::sleep(FRAME_SLEEP);
    }
    let (plugin_bracket, _) = stop_recording(app);
    LoadPass {
        label,
        load_time: load_time.expect("loaded"),
        frames_during_load,
        plugin_bracket,
        plugin_frame: Stats::of(&frames),
    }
}

#[derive(Resource, Default)]
struct LoadOutcomes {
    loaded: usize,
    failed: usize,
}

fn count_loads(
    mut outcomes: ResMut<LoadOutcomes>,
    mut loaded: MessageReader<MemoryLoaded>,
    mut failed: MessageReader<MemoryLoadFailed>,
) {
    outcomes.loaded += loaded.read().count();
    outcomes.failed += failed.read().count();
}

/// The save main's `finish_io` rebuilt on the main thread, and whether to do it
/// this frame.
#[derive(Resource, Default)]
struct SyncRebuild {
    save: Option<std::sync::Arc<bevy_npc_memory::saves::SaveGame>>,
    run: bool,
}

/// Main's path, emulated: every NPC's memory rebuilt inside one frame's system,
/// as main's `replace_memory` did.
fn sync_rebuild(mut rebuild: ResMut<SyncRebuild>) {
    if !std::mem::take(&mut rebuild.run) {
        return;
    }
    let Some(save) = &rebuild.save else {
        return;
    };
    let built: Vec<_> = save
        .npcs
        .iter()
        .filter_map(|npc| npc.memory.clone().into_memory().ok())
        .collect();
    std::hint::black_box(&built);
}

fn run_load(executor: Executor, npcs: usize, messages: usize) -> LoadRun {
    let dir = std::env::temp_dir().join(format!("frame-bench-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp folder");
    let first = dir.join("first.json");
    let second = dir.join("second.json");
    let save = big_save(npcs, messages, 7);
    save.write_to(&first, u64::MAX)
        .expect("the save is written");
    big_save(npcs, messages, 11)
        .write_to(&second, u64::MAX)
        .expect("the save is written");
    let save_bytes = std::fs::metadata(&first).map_or(0, |m| m.len());

    let backend = ScriptedBackend::new();
    let mut app = build_app(Some(&backend), executor, false);
    app.init_resource::<LoadOutcomes>()
        .insert_resource(SyncRebuild {
            save: Some(std::sync::Arc::new(save)),
            run: false,
        })
        .add_systems(
            Update,
            (
                count_loads.after(NpcMemorySystems::Persist),
                sync_rebuild.before(NpcMemorySystems::Personas),
            ),
        );
    spawn_npcs(&mut app, npcs);
    warm_up(&mut app);

    let into_empty = load_while_running(&mut app, &first, "into empty NPCs");
    let over_loaded = load_while_running(&mut app, &second, "over the loaded memory");

    // Idle, with the same memory and the same frame loop.
    let mut idle_frames = Vec::with_capacity(LOAD_IDLE_FRAMES);
    start_recording(&mut app);
    for _ in 0..LOAD_IDLE_FRAMES {
        idle_frames.push(timed_update(&mut app));
        std::thread::sleep(FRAME_SLEEP);
    }
    let (idle_bracket, _) = stop_recording(&mut app);

    app.world_mut().resource_mut::<SyncRebuild>().run = true;
    let sync_frame = timed_update(&mut app);
    std::fs::remove_dir_all(&dir).ok();
    LoadRun {
        executor,
        npcs,
        messages,
        save_bytes,
        idle_bracket,
        idle_frame: Stats::of(&idle_frames),
        passes: vec![into_empty, over_loaded],
        sync_frame,
    }
}

impl LoadRun {
    fn print(&self) {
        println!(
            "== {} executor: load a save of {} NPCs × {} messages ({:.1} MB JSON, recall on) while frames run ==",
            self.executor.name(),
            self.npcs,
            self.messages,
            self.save_bytes as f64 / 1e6
        );
        header();
        stats_row("idle: plugin systems (bracket)", &self.idle_bracket);
        stats_row("idle: whole frame", &self.idle_frame);
        for pass in &self.passes {
            println!(
                "  load {}: MemoryLoaded after {:.2} s, {} frames ran meanwhile",
                pass.label,
                pass.load_time.as_secs_f64(),
                pass.frames_during_load
            );
            stats_row("  plugin systems (bracket)", &pass.plugin_bracket);
            stats_row("  whole frame", &pass.plugin_frame);
        }
        println!(
            "  main's synchronous path (emulated, every NPC rebuilt in one frame): that frame took {:.1} ms",
            self.sync_frame.as_secs_f64() * 1e3
        );
        println!();
    }

    fn json(&self) -> Value {
        json!({
            "executor": self.executor.name(),
            "npcs": self.npcs,
            "messages_per_npc": self.messages,
            "save_bytes": self.save_bytes,
            "idle": {
                "plugin_bracket": self.idle_bracket.json(),
                "plugin_frame": self.idle_frame.json(),
            },
            "loads": self.passes.iter().map(|pass| json!({
                "label": pass.label,
                "load_time_s": round2(pass.load_time.as_secs_f64()),
                "frames_during_load": pass.frames_during_load,
                "plugin_bracket": pass.plugin_bracket.json(),
                "plugin_frame": pass.plugin_frame.json(),
            })).collect::<Vec<_>>(),
            "sync_path_frame_ms": round2(self.sync_frame.as_secs_f64() * 1e3),
        })
    }
}
