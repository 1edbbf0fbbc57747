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

mod args;
mod harness;
mod load;
mod report;
#[path = "../shared/sampling.rs"]
mod sampling;
mod save;
mod scenarios;
mod stats;

use std::time::Duration;

use serde_json::json;

use args::parse_args;
use load::{LoadRun, run_load};
use report::{print_run, run_json};
use scenarios::{Run, run};

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
