//! The memory scheduler under load: 200 NPCs, background chatter and a provider
//! that answers HTTP 429 above a per-minute limit. Does the foreground NPC still
//! answer about as fast as when it is alone, does any frame's plugin work pass
//! 1 ms, and how many prompt tokens an hour does the load cost, with and without
//! scheduling?
//!
//! `cargo run --release --example scheduler_bench [-- --json] [--npcs N] [--seconds S] [--limit N] [--chatter L] [--delay S] [--reply-reserve F] [--modes unloaded,scheduled,unscheduled] [--executor multi|single] [--control first|last] [--control-work spin|memory] [--frame-cpu N] [--data PATH]`
//!
//! - **The provider** is a fake OpenAI-compatible server in this process (a std
//!   `TcpListener` on 127.0.0.1, one thread per connection). The plugin talks to it
//!   through the real `OpenAiBackend` (`http` feature), retries included. It answers
//!   after a fixed latency (80 ms), streaming replies as server-sent events as a
//!   real provider does. It accepts at most `--limit` requests in any 60 seconds
//!   (a rolling window over *accepted* requests, so a storm of rejected retries
//!   does not lock a client out for good: the kinder reading for the unscheduled
//!   mode); any request over it gets 429 at once, with `Retry-After` set to the
//!   seconds until the oldest accepted request leaves the window.
//! - **Tokens** are counted by the server, from what it received: for each message
//!   of the request body, the crate's own estimate (`estimate_tokens`, one token
//!   per four characters of English) plus 4 for the framing, which is what the
//!   plugin's budget uses too. The server returns that figure as `usage`. "Sent"
//!   counts every request that reached it, 429s included; "accepted" only the
//!   ones it answered (what a provider bills).
//! - **The NPCs.** One foreground NPC, whom the player talks to every 4 seconds
//!   (until 10 s before the end, so its last replies can arrive), and `--npcs` - 1
//!   background NPCs that overhear chatter (`NpcWitnessed`: lines that need no
//!   reply but enter memory and are summarized like the conversation) at a steady
//!   `--chatter` lines a second over all of them, each line to an NPC drawn by a
//!   seeded generator. Lines are LoCoMo turns (`--data`, default
//!   `../shared/bench/locomo/locomo_dev.json`, read at run time), or synthetic
//!   English when the file is missing. Every NPC has a window of 8 messages and
//!   summarizes every 4 (hard cap 16).
//! - **Modes**, one after the other in this process, each with its own server,
//!   the same seed and the same line schedule:
//!   (a) `unloaded`: only the foreground NPC, the same settings as (b);
//!   (b) `scheduled`: background NPCs `MemoryTier::Background`, the foreground one
//!   `MemoryTier::Foreground`, `requests_per_minute` just under the server's limit
//!   (90 % of it) and `background_delay` (`--delay`, 10 s by default);
//!   (c) `unscheduled`: every NPC at the default tier, no budget, so only the HTTP
//!   client's own retries (and the plugin's pause after a 429 that is left) pace
//!   requests. The plugin cannot be built without its scheduler, so this is the
//!   scheduler with nothing configured, not the code before it.
//!   `--reply-reserve F` sets `ScheduleSettings::reply_reserve` in (a) and (b)
//!   (0 shows the scheduler before the reserve existed); `--modes` runs a subset.
//!   `--executor single` runs `Update` on Bevy's single-threaded executor, as
//!   `frame_bench` does: on a 2-core machine shared with the HTTP client and the
//!   server's threads, the multi-threaded executor's hand-offs alone put frames
//!   over 1 ms, and the single-threaded one shows the work inside the systems.
//!   With it the bracket is also read in the frame thread's CPU time
//!   (`CLOCK_THREAD_CPUTIME_ID`), which leaves out time the thread spent preempted
//!   by the client's and server's threads (`plugin_frame_cpu_ms` in the JSON).
//!   A control bracket runs after it each frame, around nothing but busy
//!   arithmetic lasting the plugin's mean CPU time per frame (`control_cpu_ms`):
//!   on a virtual machine the thread's CPU clock itself jumps by a millisecond or
//!   more now and then, and a jump in the control at the same rate as over-1-ms
//!   frames in the plugin's bracket says those frames are the clock, not the
//!   plugin. Frames over 1 ms are also counted apart when the plugin took in,
//!   sent or applied anything in them, and when the thread was preempted inside
//!   the bracket (an involuntary context switch, from `getrusage`), and when the
//!   bracket's CPU time exceeds the wall time it took: no thread runs longer
//!   than the time that passes, so such a frame is the clock, not work.
//!   `--control-work memory` makes the control read a 16 MiB buffer at random
//!   instead of spinning in registers: on a VM, time the host spends on the
//!   guest's memory is charged to whatever code reads it.
//!   `SCHEDULER_BENCH_SPIKES=1` prints each frame over 1 ms of CPU or of wall
//!   time: its CPU and wall time per system set, user and system time, page
//!   faults and context switches. `--control first` runs the control at the
//!   start of the frame instead of the end.
//!   `--frame-cpu N` gives the frame thread CPU `N` and every other thread of the
//!   process (the HTTP client's, the server's, Bevy's task pools) the other CPUs,
//!   as a game's main thread has a core of its own; `scripts/quiet-core.sh N`
//!   moves the rest of the machine's threads and interrupts off that CPU too.
//!
//! Reported per mode: the foreground reply latency (from writing `TalkToNpc` before
//! a frame to the frame that reads `NpcReplied`) at p50 and p95; the plugin's work
//! per frame, bracketed as `frame_bench` does (`.before(NpcMemorySystems::Personas)`
//! to `.after(NpcMemorySystems::Persist)`), worst and p99; requests the plugin sent,
//! requests and 429s the server saw, prompt tokens sent and accepted, and those
//! extrapolated to an hour (× 3600 / seconds run); summaries applied and the
//! messages they covered.
//!
//! **Time scale.** A 2-minute run must show what an hour of play does, so chatter
//! is dense (10 lines a second over 199 NPCs: one line per NPC every ~20 s) and
//! summaries are frequent (every 4 messages). Without scheduling that asks for about
//! 2.5 summaries a second, over twice the 60 a minute the server accepts. The
//! per-minute window is real time (the scheduler's budget is per real minute), so
//! the first minute of a run fills it and later minutes run against it.

mod app;
mod args;
mod lines;
mod measure;
mod provider;
mod report;
mod run;
#[path = "../shared/sampling.rs"]
mod sampling;
mod thread;

use std::time::Duration;

use serde_json::json;

use args::parse_args;
use lines::{load_lines, schedule};
use report::{ModeReport, print_table};
use run::run_mode;
use thread::online_cpus;

/// NPCs unless `--npcs` says otherwise: one foreground, the rest background.
const DEFAULT_NPCS: usize = 200;
/// Seconds each mode runs unless `--seconds` says otherwise.
const DEFAULT_SECONDS: u64 = 120;
/// Requests the fake server accepts in any 60 seconds unless `--limit` says otherwise.
const DEFAULT_LIMIT: usize = 60;
/// Chatter lines a second over all background NPCs unless `--chatter` says otherwise.
const DEFAULT_CHATTER: f64 = 10.0;
/// How long background summaries wait in the scheduled mode unless `--delay` says.
/// The library's default is 30 s; chatter here is several times denser than in a
/// game, so the delay is shortened with it, or background summaries would hardly
/// compete for the budget within a 2-minute run.
const DEFAULT_DELAY_SECS: u64 = 10;
/// The scheduled mode's budget, as a share of the server's limit: just under it,
/// so the budget, not the server's 429, is what paces requests.
const BUDGET_SHARE: f64 = 0.9;
/// How long the fake server takes to answer a request it accepts.
const SERVER_LATENCY: Duration = Duration::from_millis(80);
/// The player says a line to the foreground NPC this often.
const PLAYER_EVERY: Duration = Duration::from_secs(4);
/// The player's first line, after the NPCs have memory.
const PLAYER_FIRST: Duration = Duration::from_secs(1);
/// The player stops this long before the end, so its last replies can arrive.
const PLAYER_QUIET_END: Duration = Duration::from_secs(10);
/// The pause between frames: replies and results arrive while frames run, and the
/// bench leaves CPU to the requests' threads and the server.
const FRAME_SLEEP: Duration = Duration::from_millis(2);
/// Messages in every NPC's window, and messages between two summaries.
const WINDOW: usize = 8;
const SUMMARY_EVERY: usize = 4;
/// Target: no frame in which the plugin's systems take longer than this.
const FRAME_BUDGET: Duration = Duration::from_millis(1);
/// How much longer a bracket's CPU span may honestly read than its wall span:
/// the CPU stamps enclose the wall stamps, so the clock reads between them count
/// in the CPU span alone. A bracket reading more CPU time beyond its wall time
/// than this is the clock jumping.
const CLOCK_READS: Duration = Duration::from_micros(100);
/// The seed of the chatter schedule, the same in every mode.
const SEED: u64 = 15;
const FOREGROUND: &str = "fg";
/// The model names tell the server a reply from a summary.
const REPLY_MODEL: &str = "fake-chat";
const SUMMARY_MODEL: &str = "fake-summary";

fn main() {
    let args = parse_args();
    let (lines, source) = load_lines(&args.data);
    let plan = schedule(&args, &lines);
    let reports: Vec<ModeReport> = args
        .modes
        .iter()
        .map(|&mode| {
            if !args.json {
                eprintln!("running {} for {} s ...", mode.name(), args.seconds);
            }
            run_mode(mode, &args, &plan)
        })
        .collect();
    let cpus = online_cpus();
    if args.json {
        let report = json!({
            "release": !cfg!(debug_assertions),
            "cpus": cpus,
            "lines": source,
            "settings": {
                "npcs": args.npcs,
                "seconds": args.seconds,
                "server_limit_per_minute": args.limit,
                "server_latency_ms": SERVER_LATENCY.as_millis() as u64,
                "chatter_lines_per_second": args.chatter,
                "background_delay_s": args.delay,
                "reply_reserve": args.reply_reserve,
                "executor": if args.single_threaded { "single" } else { "multi" },
                "frame_cpu": args.frame_cpu,
                "control_work": if args.control_reads_memory { "memory" } else { "spin" },
                "player_line_every_s": PLAYER_EVERY.as_secs(),
                "window": WINDOW,
                "summary_every": SUMMARY_EVERY,
                "seed": SEED,
            },
            "modes": reports.iter().map(ModeReport::json).collect::<Vec<_>>(),
        });
        println!("{report}");
        return;
    }
    println!(
        "scheduler_bench (release build: {}, {cpus} CPUs, {} executor, frame thread on {}, {} lines): {} NPCs, {} s per mode, server limit {}/min, {} chatter lines/s, background delay {} s, reply reserve {}",
        !cfg!(debug_assertions),
        if args.single_threaded {
            "single-threaded"
        } else {
            "multi-threaded"
        },
        args.frame_cpu
            .map_or("any CPU".to_owned(), |cpu| format!("CPU {cpu} alone")),
        source,
        args.npcs,
        args.seconds,
        args.limit,
        args.chatter,
        args.delay,
        args.reply_reserve
            .map_or("default".to_owned(), |r| r.to_string())
    );
    println!();
    print_table(&reports);
    for r in &reports {
        for failure in r.foreground_failures.iter().take(3) {
            println!("{}: foreground failure: {failure}", r.mode.name());
        }
    }
}
