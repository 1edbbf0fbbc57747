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

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bevy::ecs::schedule::SingleThreadedExecutor;
use bevy::prelude::*;
use bevy_npc_memory::memory::estimate_tokens;
use bevy_npc_memory::prelude::*;
use serde_json::{Value, json};

#[path = "shared/sampling.rs"]
mod sampling;
use bevy_npc_memory::dialogue::NpcMemoryDegraded;
use bevy_npc_memory::dialogue::NpcReplyStarted;
use bevy_npc_memory::dialogue::NpcSummaryUpdated;
use bevy_npc_memory::dialogue::TurnId;
use bevy_npc_memory::schedule::MemoryTier;
use bevy_npc_memory::schedule::NpcMemoryScheduler;
use sampling::{Lcg, percentile};

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

// ---------------------------------------------------------------------------
// The fake provider.

/// What the server saw, by purpose.
#[derive(Clone, Copy, Debug, Default)]
struct Traffic {
    requests: u64,
    rate_limited: u64,
    tokens_sent: u64,
    tokens_accepted: u64,
}

impl Traffic {
    fn json(&self, seconds: f64) -> Value {
        let per_hour = |x: u64| (x as f64 * 3600.0 / seconds).round();
        json!({
            "requests": self.requests,
            "rate_limited_429": self.rate_limited,
            "accepted": self.requests - self.rate_limited,
            "prompt_tokens_sent": self.tokens_sent,
            "prompt_tokens_accepted": self.tokens_accepted,
            "prompt_tokens_sent_per_hour": per_hour(self.tokens_sent),
            "prompt_tokens_accepted_per_hour": per_hour(self.tokens_accepted),
        })
    }
}

#[derive(Default)]
struct ServerState {
    /// When each accepted request of the last 60 s arrived, oldest first.
    accepted: VecDeque<Instant>,
    replies: Traffic,
    summaries: Traffic,
}

/// An OpenAI-compatible server that rate-limits like a provider. It runs until the
/// process ends; each mode starts its own, so windows do not carry over.
#[derive(Clone)]
struct FakeProvider {
    port: u16,
    limit: usize,
    state: Arc<Mutex<ServerState>>,
}

impl FakeProvider {
    fn start(limit: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let server = Self {
            port: listener.local_addr().expect("a bound port").port(),
            limit,
            state: Arc::default(),
        };
        let accepting = server.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let server = accepting.clone();
                std::thread::spawn(move || server.serve(stream));
            }
        });
        server
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn traffic(&self) -> (Traffic, Traffic) {
        let state = self.state.lock().expect("not poisoned");
        (state.replies, state.summaries)
    }

    fn serve(&self, mut stream: TcpStream) {
        let Some(body) = read_body(&stream) else {
            return;
        };
        let Ok(request) = serde_json::from_str::<Value>(&body) else {
            let _ = write_response(&mut stream, 400, &[], r#"{"error":{"message":"bad JSON"}}"#);
            return;
        };
        let summary = request["model"] == SUMMARY_MODEL;
        let streamed = request["stream"] == true;
        let tokens = prompt_tokens(&request);
        let now = Instant::now();
        // Decided under the lock, so concurrent requests cannot both take the
        // window's last place.
        let retry_after = {
            let mut state = self.state.lock().expect("not poisoned");
            while state
                .accepted
                .front()
                .is_some_and(|at| now.duration_since(*at) >= Duration::from_secs(60))
            {
                state.accepted.pop_front();
            }
            let full = state.accepted.len() >= self.limit;
            let retry_after = full.then(|| {
                let oldest = *state.accepted.front().expect("a full window");
                let free = (oldest + Duration::from_secs(60)).saturating_duration_since(now);
                free.as_secs_f64().ceil().max(1.0) as u64
            });
            if !full {
                state.accepted.push_back(now);
            }
            let traffic = if summary {
                &mut state.summaries
            } else {
                &mut state.replies
            };
            traffic.requests += 1;
            traffic.tokens_sent += tokens;
            match retry_after {
                Some(_) => traffic.rate_limited += 1,
                None => traffic.tokens_accepted += tokens,
            }
            retry_after
        };
        if let Some(seconds) = retry_after {
            let body = r#"{"error":{"message":"Rate limit reached: too many requests per minute","type":"rate_limit_exceeded"}}"#;
            let _ = write_response(
                &mut stream,
                429,
                &[("Retry-After", seconds.to_string())],
                body,
            );
            return;
        }
        std::thread::sleep(SERVER_LATENCY);
        let text = if summary {
            "The NPC overheard talk about families, work, art projects and plans for the \
             weekend; nothing urgent, but it remembers who said what."
        } else {
            "I hear you. Give me a moment and I'll see what I can do about that."
        };
        let completion = estimate_tokens(text) as u64;
        let usage = json!({"prompt_tokens": tokens, "completion_tokens": completion,
                           "total_tokens": tokens + completion});
        if streamed {
            let _ = write_stream(&mut stream, text, usage);
        } else {
            let body = json!({
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "model": request["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}],
                "usage": usage,
            });
            let _ = write_response(&mut stream, 200, &[], &body.to_string());
        }
    }
}

/// The crate's estimate of the prompt the request carries.
fn prompt_tokens(request: &Value) -> u64 {
    let messages = request["messages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    messages
        .iter()
        .map(|m| 4 + estimate_tokens(m["content"].as_str().unwrap_or("")) as u64)
        .sum()
}

/// Reads one HTTP/1.1 request and returns its body (sized by `Content-Length`).
fn read_body(stream: &TcpStream) -> Option<String> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    String::from_utf8(body).ok()
}

fn write_response(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(&str, String)],
    body: &str,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        429 => "Too Many Requests",
        _ => "Bad Request",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

/// A streamed reply: the text in two chunks, the finish reason, the usage, `[DONE]`.
fn write_stream(stream: &mut TcpStream, text: &str, usage: Value) -> std::io::Result<()> {
    stream.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
    )?;
    let middle = text.len() / 2;
    let middle = (middle..text.len())
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(text.len());
    let mut events: Vec<Value> = [&text[..middle], &text[middle..]]
        .iter()
        .map(|piece| json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]}))
        .collect();
    events.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}));
    events.push(json!({"choices": [], "usage": usage}));
    for event in events {
        stream.write_all(format!("data: {event}\n\n").as_bytes())?;
    }
    stream.write_all(b"data: [DONE]\n\n")?;
    stream.flush()
}

// ---------------------------------------------------------------------------
// The lines.

// Every mode hears the same schedule: it is drawn from a seeded `Lcg`.
impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Every turn of the LoCoMo file, or synthetic lines when it cannot be read.
fn load_lines(path: &str) -> (Vec<String>, &'static str) {
    let turns = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .map(|data| {
            let mut turns = Vec::new();
            for sample in data.as_array().into_iter().flatten() {
                let Some(conversation) = sample["conversation"].as_object() else {
                    continue;
                };
                // Sessions in order: session_1, session_2, ...
                for n in 1.. {
                    let Some(session) = conversation.get(&format!("session_{n}")) else {
                        break;
                    };
                    for turn in session.as_array().into_iter().flatten() {
                        if let Some(text) = turn["text"].as_str().map(str::trim)
                            && !text.is_empty()
                        {
                            turns.push(text.to_owned());
                        }
                    }
                }
            }
            turns
        })
        .unwrap_or_default();
    if !turns.is_empty() {
        return (turns, "locomo");
    }
    let mut rng = Lcg(SEED);
    let subjects = ["The cook", "A guard", "Someone", "The mechanic", "Old Tam"];
    let verbs = ["says", "mutters that", "swears", "heard that", "claims"];
    let rests = [
        "the east door sticks again",
        "the water filters need changing before the storm",
        "the radio picked up voices last night",
        "rations will be cut next week",
        "the kids found a way onto the roof",
    ];
    let lines = (0..500)
        .map(|_| {
            format!(
                "{} {} {}.",
                subjects[rng.below(subjects.len())],
                verbs[rng.below(verbs.len())],
                rests[rng.below(rests.len())]
            )
        })
        .collect();
    (lines, "synthetic")
}

/// What happens when, the same in every mode.
struct Schedule {
    /// (time from start, background NPC index, line).
    chatter: Vec<(Duration, usize, String)>,
    /// (time from start, line).
    player: Vec<(Duration, String)>,
}

fn schedule(args: &Args, lines: &[String]) -> Schedule {
    let mut rng = Lcg(SEED);
    let run = Duration::from_secs(args.seconds);
    let background = args.npcs - 1;
    let mut chatter = Vec::new();
    if background > 0 && args.chatter > 0.0 {
        let every = Duration::from_secs_f64(1.0 / args.chatter);
        let mut at = Duration::ZERO;
        while at < run {
            let npc = rng.below(background);
            chatter.push((at, npc, lines[rng.below(lines.len())].clone()));
            at += every;
        }
    }
    let mut player = Vec::new();
    let mut at = PLAYER_FIRST;
    let mut seen = HashMap::new();
    while at + PLAYER_QUIET_END <= run {
        // Lines are matched to their replies by text, so each is made unique.
        let line = &lines[rng.below(lines.len())];
        let n = seen.entry(line.clone()).or_insert(0);
        *n += 1;
        let line = if *n == 1 {
            line.clone()
        } else {
            format!("{line} ({n})")
        };
        player.push((at, line));
        at += PLAYER_EVERY;
    }
    Schedule { chatter, player }
}

// ---------------------------------------------------------------------------
// The app.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Unloaded,
    Scheduled,
    Unscheduled,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Unloaded => "unloaded",
            Mode::Scheduled => "scheduled",
            Mode::Unscheduled => "unscheduled",
        }
    }
}

/// The stamp taken before the plugin's systems and the times recorded after them:
/// wall time, and with the single-threaded executor (every system on this one
/// thread) the thread's CPU time, which time spent preempted does not count.
#[derive(Resource, Default)]
struct Bracket {
    started: Option<(Instant, Option<Duration>)>,
    samples: Vec<Duration>,
    cpu_samples: Vec<Duration>,
    /// Per frame: did the plugin take in, send or apply anything?
    active: Vec<bool>,
    /// This frame's CPU stamps after each of the plugin's sets but the last, so
    /// a frame over budget can say where its time went.
    set_stamps: Vec<Duration>,
    /// The same stamps in wall time.
    wall_stamps: Vec<Instant>,
    /// The thread's resource use when the bracket opened.
    usage_at_start: Option<ThreadUsage>,
    /// Frames over 1 ms of CPU during which the thread was preempted (an
    /// involuntary context switch inside the bracket).
    preempted_over_budget: usize,
    one_thread: bool,
}

/// A second bracket, around a fixed amount of busy work and nothing else.
///
/// This VM's thread CPU clock now and then jumps by 1-3 ms inside a bracket that
/// holds only a few microseconds of work (time the host or the kernel took is
/// charged to the thread), and such jumps land in the plugin's bracket too. The control runs every frame
/// for about as long as the plugin's mean frame, so both brackets are exposed to
/// the clock for the same CPU time: jumps of the clock alone show up in both at
/// the same rate, while plugin work over 1 ms shows up only in the plugin's.
#[derive(Resource, Default)]
struct Control {
    /// Spin iterations per microsecond of CPU, measured before the run.
    iterations_per_us: f64,
    /// `--control-work memory`: the control reads memory instead of spinning.
    reads_memory: bool,
    /// With `--control-work memory`, the buffer the control reads at random
    /// instead of spinning in registers.
    memory: Vec<u64>,
    samples: Vec<Duration>,
    /// The same brackets in wall time.
    wall_samples: Vec<Duration>,
    /// As [`Bracket::preempted_over_budget`].
    preempted_over_budget: usize,
}

/// Words of the memory-reading control's buffer: 16 MiB, far more than the
/// caches, so its reads touch many pages, as the plugin's tables and queues do.
const CONTROL_WORDS: usize = 2 << 20;

/// The control's busy work: arithmetic in registers, or reads at random through
/// `memory` when it is not empty.
fn control_work(iterations: u64, memory: &[u64]) -> u64 {
    if memory.is_empty() {
        return spin(iterations);
    }
    let mut at = 0x9E37_79B9_usize;
    let mut sum = 0u64;
    for _ in 0..iterations {
        at = at
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        sum = sum.wrapping_add(std::hint::black_box(memory[(at >> 20) % memory.len()]));
    }
    sum
}

/// Busy work the optimizer cannot remove.
fn spin(iterations: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15_u64;
    for i in 0..iterations {
        x = std::hint::black_box(x.rotate_left(5) ^ i).wrapping_mul(0x0100_0000_01B3);
    }
    x
}

/// How many iterations of the control's work a microsecond of CPU holds: the
/// fastest of several tries, so a clock jump during calibration cannot skew it.
fn calibrate_control(memory: &[u64]) -> f64 {
    const ITERATIONS: u64 = 200_000;
    let fastest = (0..20)
        .filter_map(|_| {
            let start = thread_cpu_time()?;
            std::hint::black_box(control_work(ITERATIONS, memory));
            Some(thread_cpu_time()?.saturating_sub(start))
        })
        .min()
        .unwrap_or_default();
    ITERATIONS as f64 / fastest.as_secs_f64().max(1e-9) / 1e6
}

fn control_bracket(mut control: ResMut<Control>, bracket: Res<Bracket>) {
    if !bracket.one_thread {
        return;
    }
    if control.iterations_per_us == 0.0 {
        if control.reads_memory {
            control.memory = (0..CONTROL_WORDS as u64).collect();
        }
        control.iterations_per_us = calibrate_control(&control.memory);
    }
    // Match the plugin's mean CPU per frame so far, each frame capped at the
    // budget so the clock's own jumps do not lengthen the control.
    let frames = bracket.cpu_samples.len().max(1) as f64;
    let mean_us = bracket
        .cpu_samples
        .iter()
        .map(|d| d.min(&FRAME_BUDGET).as_secs_f64() * 1e6)
        .sum::<f64>()
        / frames;
    let iterations = (mean_us * control.iterations_per_us) as u64;
    let usage = ThreadUsage::now();
    let wall_start = Instant::now();
    let (Some(start), _, Some(end)) = (
        thread_cpu_time(),
        std::hint::black_box(control_work(iterations, &control.memory)),
        thread_cpu_time(),
    ) else {
        return;
    };
    control.wall_samples.push(wall_start.elapsed());
    control.samples.push(end.saturating_sub(start));
    // Reads through the buffer run slower in the frame than in the calibration,
    // which the caches favour: follow their cost per iteration as measured, so
    // the control keeps the plugin's CPU seconds. A frame over budget is the
    // clock or the host, not the reads' cost, and is left out.
    let took_us = end.saturating_sub(start).as_secs_f64() * 1e6;
    if !control.memory.is_empty() && iterations > 0 && took_us > 0.0 && took_us < 1000.0 {
        let observed = iterations as f64 / took_us;
        control.iterations_per_us = 0.95 * control.iterations_per_us + 0.05 * observed;
    }
    let usage = usage.zip(ThreadUsage::now());
    if end.saturating_sub(start) > FRAME_BUDGET
        && usage.is_some_and(|(before, after)| after.preempted_since(before))
    {
        control.preempted_over_budget += 1;
    }
    if end.saturating_sub(start) > FRAME_BUDGET
        && spike_diagnostics()
        && let Some((before, after)) = usage
    {
        eprintln!(
            "control over 1 ms of CPU: {:.3} ms; {}",
            end.saturating_sub(start).as_secs_f64() * 1e3,
            after.since(before)
        );
    }
}

fn bracket_start(mut bracket: ResMut<Bracket>) {
    // Read before the CPU stamp, so the getrusage call is not in the bracket.
    bracket.usage_at_start = bracket.one_thread.then(ThreadUsage::now).flatten();
    let cpu = if bracket.one_thread {
        thread_cpu_time()
    } else {
        None
    };
    bracket.started = Some((Instant::now(), cpu));
    bracket.set_stamps.clear();
    bracket.wall_stamps.clear();
}

fn set_stamp(mut bracket: ResMut<Bracket>) {
    if bracket.one_thread
        && let Some(now) = thread_cpu_time()
    {
        bracket.set_stamps.push(now);
        bracket.wall_stamps.push(Instant::now());
    }
}

/// Milliseconds between consecutive stamps, from `start` to `end`: a bracket's
/// time per system set.
fn split_ms<T: Copy>(start: T, stamps: &[T], end: T, since: impl Fn(T, T) -> Duration) -> String {
    let mut split = Vec::new();
    let mut last = start;
    for stamp in stamps.iter().copied().chain([end]) {
        split.push(format!("{:.3}", since(stamp, last).as_secs_f64() * 1e3));
        last = stamp;
    }
    split.join(" / ")
}

fn bracket_end(mut bracket: ResMut<Bracket>) {
    let now = Instant::now();
    let cpu_now = if bracket.one_thread {
        thread_cpu_time()
    } else {
        None
    };
    let usage = bracket.usage_at_start.take().zip(ThreadUsage::now());
    if let Some((started, cpu_started)) = bracket.started.take() {
        bracket.samples.push(now - started);
        if let (Some(start), Some(end)) = (cpu_started, cpu_now) {
            bracket.cpu_samples.push(end.saturating_sub(start));
            let preempted = usage.is_some_and(|(before, after)| after.preempted_since(before));
            if end.saturating_sub(start) > FRAME_BUDGET && preempted {
                bracket.preempted_over_budget += 1;
            }
            let wall = now - started;
            let cpu = end.saturating_sub(start);
            if (cpu > FRAME_BUDGET || wall > FRAME_BUDGET) && spike_diagnostics() {
                let cpu_split =
                    split_ms(start, &bracket.set_stamps, end, |a, b| a.saturating_sub(b));
                let wall_split = split_ms(started, &bracket.wall_stamps, now, |a, b| a - b);
                let usage = usage.map_or(String::new(), |(before, after)| after.since(before));
                eprintln!(
                    "frame {} over 1 ms of {}: CPU {:.3} ms, wall {:.3} ms; by set (personas, intake, collect, persist): CPU {cpu_split}, wall {wall_split}; {usage}",
                    bracket.cpu_samples.len(),
                    if cpu > FRAME_BUDGET {
                        "CPU"
                    } else {
                        "wall time"
                    },
                    cpu.as_secs_f64() * 1e3,
                    wall.as_secs_f64() * 1e3,
                );
            }
        }
    }
}

/// `SCHEDULER_BENCH_SPIKES=1` prints every frame over 1 ms of CPU or of wall time
/// (single-threaded executor), split by set, with the thread's user and system
/// time, page faults and context switches.
fn spike_diagnostics() -> bool {
    std::env::var_os("SCHEDULER_BENCH_SPIKES").is_some()
}

/// The calling thread's resource use (`getrusage(RUSAGE_THREAD)`).
#[derive(Clone, Copy)]
struct ThreadUsage {
    user: Duration,
    system: Duration,
    minor_faults: i64,
    major_faults: i64,
    voluntary_switches: i64,
    involuntary_switches: i64,
}

impl ThreadUsage {
    #[cfg(target_os = "linux")]
    fn now() -> Option<Self> {
        // SAFETY: getrusage fills the one struct it is given; all-zero is a valid rusage.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } == 0;
        let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        ok.then(|| Self {
            user: time(usage.ru_utime),
            system: time(usage.ru_stime),
            minor_faults: usage.ru_minflt,
            major_faults: usage.ru_majflt,
            voluntary_switches: usage.ru_nvcsw,
            involuntary_switches: usage.ru_nivcsw,
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn now() -> Option<Self> {
        None
    }

    fn preempted_since(&self, before: Self) -> bool {
        self.involuntary_switches > before.involuntary_switches
    }

    fn since(&self, before: Self) -> String {
        let ms = |a: Duration, b: Duration| a.saturating_sub(b).as_secs_f64() * 1e3;
        format!(
            "user {:.3} ms, system {:.3} ms, page faults {} minor / {} major, context switches {} voluntary / {} involuntary",
            ms(self.user, before.user),
            ms(self.system, before.system),
            self.minor_faults - before.minor_faults,
            self.major_faults - before.major_faults,
            self.voluntary_switches - before.voluntary_switches,
            self.involuntary_switches - before.involuntary_switches,
        )
    }
}

/// Lets the calling thread run only on the CPUs `allowed` picks.
#[cfg(target_os = "linux")]
fn pin_this_thread(allowed: impl Fn(usize) -> bool) {
    let cpus = online_cpus();
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET writes inside it for
    // CPUs below CPU_SETSIZE, and sched_setaffinity reads the one set it is given.
    let ok = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in (0..cpus.min(libc::CPU_SETSIZE as usize)).filter(|&cpu| allowed(cpu)) {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    };
    if !ok {
        eprintln!(
            "--frame-cpu: sched_setaffinity failed: {}",
            std::io::Error::last_os_error()
        );
        std::process::exit(2);
    }
}

/// The machine's CPUs, whatever this process may run on (which is what
/// `available_parallelism` counts, and `scripts/quiet-core.sh` narrows).
#[cfg(unix)]
fn online_cpus() -> usize {
    // SAFETY: sysconf reads a system value and touches no memory of ours.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(cpus).unwrap_or(1).max(1)
}

#[cfg(not(unix))]
fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(not(target_os = "linux"))]
fn pin_this_thread(_allowed: impl Fn(usize) -> bool) {
    eprintln!("--frame-cpu needs Linux");
    std::process::exit(2);
}

/// CPU time the calling thread has run.
#[cfg(unix)]
fn thread_cpu_time() -> Option<Duration> {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, and `time` is one.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) } == 0;
    ok.then(|| Duration::new(time.tv_sec as u64, time.tv_nsec as u32))
}

#[cfg(not(unix))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

/// What came back from the plugin.
#[derive(Resource, Default)]
struct Observed {
    /// When each foreground line was written, by its text.
    written: HashMap<String, Instant>,
    /// Foreground turns being answered, and when their line was written.
    turns: HashMap<TurnId, Instant>,
    latencies: Vec<Duration>,
    foreground_failures: Vec<String>,
    background_replies: u64,
    summaries: u64,
    /// Messages the applied summaries folded in.
    covered: u64,
    overflows: u64,
    summary_failures: u64,
}

fn observe(
    mut observed: ResMut<Observed>,
    mut started: MessageReader<NpcReplyStarted>,
    mut replied: MessageReader<NpcReplied>,
    mut failed: MessageReader<NpcReplyFailed>,
    mut summaries: MessageReader<NpcSummaryUpdated>,
    mut degraded: MessageReader<NpcMemoryDegraded>,
    mut bracket: ResMut<Bracket>,
) {
    let now = Instant::now();
    let events = started.len() + replied.len() + failed.len() + summaries.len() + degraded.len();
    bracket.active.push(events > 0);
    for start in started.read() {
        if start.npc.as_str() == FOREGROUND
            && let Some(at) = observed.written.remove(&*start.line)
        {
            observed.turns.insert(start.turn, at);
        }
    }
    for reply in replied.read() {
        match observed.turns.remove(&reply.turn) {
            Some(at) => observed.latencies.push(now - at),
            None => observed.background_replies += 1,
        }
    }
    for failure in failed.read() {
        if failure.npc.as_str() == FOREGROUND {
            observed.foreground_failures.push(failure.error.to_string());
            if let Some(turn) = failure.turn {
                observed.turns.remove(&turn);
            }
            // Refused at once (busy): it never got a turn, so it is not waiting.
            if let Some(line) = &failure.unrecorded_line {
                observed.written.remove(line);
            }
        }
    }
    for summary in summaries.read() {
        observed.summaries += 1;
        observed.covered += summary.covered.end - summary.covered.start;
    }
    for event in degraded.read() {
        match event.degradation {
            bevy_npc_memory::memory::Degradation::WindowOverflow { ref dropped } => {
                observed.overflows += 1;
                if std::env::var_os("SCHEDULER_BENCH_OVERFLOWS").is_some() {
                    eprintln!("window overflow: {} dropped {dropped:?}", event.npc);
                }
            }
            _ => observed.summary_failures += 1,
        }
    }
}

fn build_app(mode: Mode, args: &Args, server: &FakeProvider) -> App {
    let mut settings = NpcMemorySettings::default();
    settings.memory.max_context_window = WINDOW;
    settings.memory.summary_threshold = Some(SUMMARY_EVERY);
    if mode != Mode::Unscheduled {
        let budget = ((args.limit as f64 * BUDGET_SHARE).floor() as u32).max(1);
        settings.schedule.requests_per_minute = Some(budget);
        settings.schedule.background_delay = Duration::from_secs(args.delay);
        if let Some(reserve) = args.reply_reserve {
            settings.schedule.reply_reserve = reserve;
        }
    }
    let config = OpenAiConfig::custom("fake", server.base_url(), REPLY_MODEL)
        .with_summary_model(SUMMARY_MODEL);
    let backend = OpenAiBackend::new(config).expect("no key is needed");

    let mut app = App::new();
    app.add_plugins((MinimalPlugins, AssetPlugin::default()))
        .add_plugins(
            NpcMemoryPlugin::default()
                .with_settings(settings)
                .with_backend(backend),
        )
        .insert_resource(Bracket {
            one_thread: args.single_threaded,
            ..default()
        })
        .init_resource::<Observed>()
        .insert_resource(Control {
            reads_memory: args.control_reads_memory,
            ..default()
        })
        .add_systems(
            Update,
            (
                bracket_start.before(NpcMemorySystems::Personas),
                set_stamp
                    .after(NpcMemorySystems::Personas)
                    .before(NpcMemorySystems::Intake),
                set_stamp
                    .after(NpcMemorySystems::Intake)
                    .before(NpcMemorySystems::Collect),
                set_stamp
                    .after(NpcMemorySystems::Collect)
                    .before(NpcMemorySystems::Persist),
                bracket_end.after(NpcMemorySystems::Persist),
                observe.after(bracket_end),
            ),
        );
    // Where the control runs: after the plugin, by default, or first in the frame,
    // closest to the thread waking from the pause between frames.
    if args.control_first {
        app.add_systems(Update, control_bracket.before(bracket_start));
    } else {
        app.add_systems(Update, control_bracket.after(observe));
    }
    if args.single_threaded {
        app.edit_schedule(Update, |schedule| {
            schedule.set_executor(SingleThreadedExecutor::new());
        });
    }
    // What the runner does before the first frame; `app.run()` is never called.
    app.finish();
    app.cleanup();

    let persona = Persona::new(
        "Villager",
        "You live in a small underground settlement. Answer in one or two sentences.",
    );
    let handle = app
        .world_mut()
        .resource_mut::<Assets<Persona>>()
        .add(persona);
    let fg = app
        .world_mut()
        .spawn(Npc::new(FOREGROUND, handle.clone()))
        .id();
    if mode == Mode::Scheduled || mode == Mode::Unloaded {
        app.world_mut()
            .entity_mut(fg)
            .insert(MemoryTier::Foreground);
    }
    if mode != Mode::Unloaded {
        for i in 0..args.npcs - 1 {
            let npc = app
                .world_mut()
                .spawn(Npc::new(format!("bg{i}"), handle.clone()))
                .id();
            if mode == Mode::Scheduled {
                app.world_mut()
                    .entity_mut(npc)
                    .insert(MemoryTier::Background);
            }
        }
    }
    let npcs = if mode == Mode::Unloaded { 1 } else { args.npcs };
    let deadline = Instant::now() + Duration::from_secs(60);
    while app.world().resource::<ContextMemoryManager>().len() < npcs {
        assert!(
            Instant::now() < deadline,
            "NPCs got no memory within a minute"
        );
        app.update();
    }
    let mut bracket = app.world_mut().resource_mut::<Bracket>();
    bracket.samples.clear();
    bracket.cpu_samples.clear();
    bracket.active.clear();
    bracket.preempted_over_budget = 0;
    let mut control = app.world_mut().resource_mut::<Control>();
    control.samples.clear();
    control.wall_samples.clear();
    control.preempted_over_budget = 0;
    app
}

/// Percentiles of durations, in ms.
#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    samples: usize,
    p50_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

impl Stats {
    fn of(samples: &[Duration]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let at = |p: f64| percentile(&sorted, p).as_secs_f64() * 1e3;
        Self {
            samples: sorted.len(),
            p50_ms: at(50.0),
            p95_ms: at(95.0),
            p99_ms: at(99.0),
            max_ms: sorted.last().expect("not empty").as_secs_f64() * 1e3,
        }
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

struct ModeReport {
    mode: Mode,
    npcs: usize,
    seconds: f64,
    frames: usize,
    player_lines: usize,
    chatter_lines: usize,
    latency: Stats,
    /// Foreground lines with no reply by the end of the run.
    unanswered: usize,
    foreground_failures: Vec<String>,
    bracket: Stats,
    frames_over_budget: usize,
    /// The bracket in the thread's CPU time (single-threaded executor only).
    cpu: Option<Stats>,
    cpu_over_budget: usize,
    /// Of those, frames in which the plugin took in, sent or applied anything.
    cpu_over_budget_active: usize,
    /// Of those, frames in which the thread was preempted inside the bracket.
    cpu_over_budget_preempted: usize,
    /// Of those, frames whose CPU time exceeds the wall time the bracket took
    /// (by more than [`CLOCK_READS`]). No thread runs longer than the time that
    /// passes, so these are the thread's CPU clock jumping, not work.
    cpu_over_budget_beyond_wall: usize,
    /// CPU seconds inside the plugin's bracket and inside the control's.
    cpu_total: f64,
    control: Option<Stats>,
    control_over_budget: usize,
    control_over_budget_preempted: usize,
    /// As `cpu_over_budget_beyond_wall`.
    control_over_budget_beyond_wall: usize,
    control_total: f64,
    plugin_requests: u64,
    replies: Traffic,
    summaries: Traffic,
    observed_summaries: u64,
    covered: u64,
    overflows: u64,
    summary_failures: u64,
    deferred_at_end: usize,
    queue_at_end: usize,
    budget: Option<u32>,
}

fn run_mode(mode: Mode, args: &Args, plan: &Schedule) -> ModeReport {
    // Threads inherit the affinity of the thread that starts them: everything the
    // server and the app start now gets the other CPUs, then the frame thread
    // takes its own.
    if let Some(cpu) = args.frame_cpu {
        pin_this_thread(|other| other != cpu);
    }
    let server = FakeProvider::start(args.limit);
    let mut app = build_app(mode, args, &server);
    if let Some(cpu) = args.frame_cpu {
        pin_this_thread(|other| other == cpu);
    }
    let loaded = mode != Mode::Unloaded;
    let run = Duration::from_secs(args.seconds);
    let (mut next_chatter, mut next_player) = (0, 0);
    let mut frames = 0;
    let start = Instant::now();
    loop {
        let now = start.elapsed();
        if now >= run {
            break;
        }
        let inputs = (next_chatter, next_player);
        while loaded && next_chatter < plan.chatter.len() && plan.chatter[next_chatter].0 <= now {
            let (_, npc, line) = &plan.chatter[next_chatter];
            app.world_mut()
                .write_message(NpcWitnessed::new([format!("bg{npc}")], line.as_str()));
            next_chatter += 1;
        }
        while next_player < plan.player.len() && plan.player[next_player].0 <= now {
            let line = &plan.player[next_player].1;
            app.world_mut()
                .resource_mut::<Observed>()
                .written
                .insert(line.clone(), Instant::now());
            app.world_mut()
                .write_message(TalkToNpc::new(FOREGROUND, line.as_str()));
            next_player += 1;
        }
        app.update();
        if inputs != (next_chatter, next_player)
            && let Some(active) = app.world_mut().resource_mut::<Bracket>().active.last_mut()
        {
            *active = true;
        }
        frames += 1;
        std::thread::sleep(FRAME_SLEEP);
    }
    let seconds = start.elapsed().as_secs_f64();
    let (replies, summaries) = server.traffic();
    let world = app.world_mut();
    let bracket = std::mem::take(&mut world.resource_mut::<Bracket>().samples);
    let cpu = std::mem::take(&mut world.resource_mut::<Bracket>().cpu_samples);
    let active = std::mem::take(&mut world.resource_mut::<Bracket>().active);
    let control = std::mem::take(&mut world.resource_mut::<Control>().samples);
    let control_wall = std::mem::take(&mut world.resource_mut::<Control>().wall_samples);
    let beyond_wall = |cpu: &[Duration], wall: &[Duration]| {
        cpu.iter()
            .zip(wall)
            .filter(|(cpu, wall)| **cpu > FRAME_BUDGET && **cpu > **wall + CLOCK_READS)
            .count()
    };
    let cpu_over_budget_preempted = world.resource::<Bracket>().preempted_over_budget;
    let control_over_budget_preempted = world.resource::<Control>().preempted_over_budget;
    let total = |samples: &[Duration]| samples.iter().sum::<Duration>().as_secs_f64();
    let scheduler = world.resource::<NpcMemoryScheduler>();
    let (plugin_requests, deferred_at_end, queue_at_end, budget) = (
        scheduler.requests_sent(),
        scheduler.deferred_summaries(),
        scheduler.queue_depth(),
        scheduler.budget_use().requests_per_minute,
    );
    let observed = world.resource::<Observed>();
    ModeReport {
        mode,
        npcs: if loaded { args.npcs } else { 1 },
        seconds,
        frames,
        player_lines: next_player,
        chatter_lines: next_chatter,
        latency: Stats::of(&observed.latencies),
        unanswered: observed.written.len() + observed.turns.len(),
        foreground_failures: observed.foreground_failures.clone(),
        frames_over_budget: bracket.iter().filter(|d| **d > FRAME_BUDGET).count(),
        bracket: Stats::of(&bracket),
        cpu_over_budget: cpu.iter().filter(|d| **d > FRAME_BUDGET).count(),
        cpu_over_budget_active: cpu
            .iter()
            .zip(&active)
            .filter(|(d, active)| **d > FRAME_BUDGET && **active)
            .count(),
        cpu_over_budget_preempted,
        cpu_over_budget_beyond_wall: beyond_wall(&cpu, &bracket),
        cpu_total: total(&cpu),
        cpu: (!cpu.is_empty()).then(|| Stats::of(&cpu)),
        control_over_budget: control.iter().filter(|d| **d > FRAME_BUDGET).count(),
        control_over_budget_preempted,
        control_over_budget_beyond_wall: beyond_wall(&control, &control_wall),
        control_total: total(&control),
        control: (!control.is_empty()).then(|| Stats::of(&control)),
        plugin_requests,
        replies,
        summaries,
        observed_summaries: observed.summaries,
        covered: observed.covered,
        overflows: observed.overflows,
        summary_failures: observed.summary_failures,
        deferred_at_end,
        queue_at_end,
        budget,
    }
}

impl ModeReport {
    fn total(&self) -> Traffic {
        Traffic {
            requests: self.replies.requests + self.summaries.requests,
            rate_limited: self.replies.rate_limited + self.summaries.rate_limited,
            tokens_sent: self.replies.tokens_sent + self.summaries.tokens_sent,
            tokens_accepted: self.replies.tokens_accepted + self.summaries.tokens_accepted,
        }
    }

    /// The plugin's and the control's CPU time per frame, when measured.
    fn cpu_cell(&self) -> String {
        match (&self.cpu, &self.control) {
            (Some(cpu), Some(control)) => format!(
                "{:.3} / {:.3}; {:.3} / {:.3}",
                cpu.p99_ms, cpu.max_ms, control.p99_ms, control.max_ms
            ),
            _ => "–".to_owned(),
        }
    }

    /// Frames over 1 ms of CPU in each bracket, with the CPU seconds each bracket
    /// held: the two counts compare only at about equal exposure.
    fn cpu_over_budget_cell(&self) -> String {
        match (&self.cpu, &self.control) {
            (Some(_), Some(_)) => format!(
                "{} ({}, {}, {}) in {:.2} s; {} ({}, {}) in {:.2} s",
                self.cpu_over_budget,
                self.cpu_over_budget_active,
                self.cpu_over_budget_preempted,
                self.cpu_over_budget_beyond_wall,
                self.cpu_total,
                self.control_over_budget,
                self.control_over_budget_preempted,
                self.control_over_budget_beyond_wall,
                self.control_total
            ),
            _ => "–".to_owned(),
        }
    }

    fn per_hour(&self, x: u64) -> f64 {
        x as f64 * 3600.0 / self.seconds
    }

    fn json(&self) -> Value {
        let latency = &self.latency;
        let bracket = &self.bracket;
        json!({
            "mode": self.mode.name(),
            "npcs": self.npcs,
            "seconds": round3(self.seconds),
            "frames": self.frames,
            "requests_per_minute_budget": self.budget,
            "player_lines": self.player_lines,
            "chatter_lines": self.chatter_lines,
            "foreground_reply_latency_ms": {
                "replies": latency.samples,
                "p50": round3(latency.p50_ms),
                "p95": round3(latency.p95_ms),
                "max": round3(latency.max_ms),
                "unanswered": self.unanswered,
                "failures": self.foreground_failures,
            },
            "plugin_frame_ms": {
                "frames": bracket.samples,
                "p50": round3(bracket.p50_ms),
                "p99": round3(bracket.p99_ms),
                "max": round3(bracket.max_ms),
                "over_1ms": self.frames_over_budget,
            },
            "plugin_frame_cpu_ms": self.cpu.as_ref().map(|cpu| json!({
                "frames": cpu.samples,
                "p50": round3(cpu.p50_ms),
                "p99": round3(cpu.p99_ms),
                "max": round3(cpu.max_ms),
                "over_1ms": self.cpu_over_budget,
                "over_1ms_in_frames_with_plugin_events": self.cpu_over_budget_active,
                "over_1ms_preempted": self.cpu_over_budget_preempted,
                "over_1ms_beyond_wall_time": self.cpu_over_budget_beyond_wall,
                "total_s": round3(self.cpu_total),
            })),
            "control_cpu_ms": self.control.as_ref().map(|control| json!({
                "frames": control.samples,
                "p50": round3(control.p50_ms),
                "p99": round3(control.p99_ms),
                "max": round3(control.max_ms),
                "over_1ms": self.control_over_budget,
                "over_1ms_preempted": self.control_over_budget_preempted,
                "over_1ms_beyond_wall_time": self.control_over_budget_beyond_wall,
                "total_s": round3(self.control_total),
            })),
            "plugin_requests_sent": self.plugin_requests,
            "server": {
                "all": self.total().json(self.seconds),
                "replies": self.replies.json(self.seconds),
                "summaries": self.summaries.json(self.seconds),
            },
            "summaries_applied": self.observed_summaries,
            "messages_covered_by_summaries": self.covered,
            "window_overflows": self.overflows,
            "summary_failures": self.summary_failures,
            "deferred_summaries_at_end": self.deferred_at_end,
            "queue_depth_at_end": self.queue_at_end,
        })
    }
}

fn print_table(reports: &[ModeReport]) {
    println!(
        "| mode | NPCs | fg replies | fg latency p50 / p95 / max (ms) | fg unanswered / failed | plugin frame p99 / worst (ms) | frames > 1 ms | CPU p99 / worst (ms): plugin; control | CPU > 1 ms: plugin (with plugin events, preempted, CPU beyond wall time); control (preempted, beyond wall) | plugin requests | server requests / 429s | prompt tokens sent / accepted | per hour: sent / accepted | summaries (messages covered) | window overflows |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in reports {
        let t = r.total();
        println!(
            "| {} | {} | {} | {:.0} / {:.0} / {:.0} | {} / {} | {:.3} / {:.3} | {} of {} | {} | {} | {} | {} / {} | {} / {} | {:.0} / {:.0} | {} ({}) | {} |",
            r.mode.name(),
            r.npcs,
            r.latency.samples,
            r.latency.p50_ms,
            r.latency.p95_ms,
            r.latency.max_ms,
            r.unanswered,
            r.foreground_failures.len(),
            r.bracket.p99_ms,
            r.bracket.max_ms,
            r.frames_over_budget,
            r.bracket.samples,
            r.cpu_cell(),
            r.cpu_over_budget_cell(),
            r.plugin_requests,
            t.requests,
            t.rate_limited,
            t.tokens_sent,
            t.tokens_accepted,
            r.per_hour(t.tokens_sent),
            r.per_hour(t.tokens_accepted),
            r.observed_summaries,
            r.covered,
            r.overflows,
        );
    }
}

// ---------------------------------------------------------------------------

struct Args {
    json: bool,
    npcs: usize,
    seconds: u64,
    limit: usize,
    chatter: f64,
    delay: u64,
    reply_reserve: Option<f32>,
    modes: Vec<Mode>,
    single_threaded: bool,
    control_first: bool,
    /// The CPU the frame thread runs on alone (`--frame-cpu`).
    frame_cpu: Option<usize>,
    control_reads_memory: bool,
    data: String,
}

fn parse_args() -> Args {
    let usage = "usage: scheduler_bench [--json] [--npcs N] [--seconds S] [--limit N] [--chatter LINES_PER_SEC] [--delay SECS] [--reply-reserve SHARE] [--modes unloaded,scheduled,unscheduled] [--executor multi|single] [--control first|last] [--control-work spin|memory] [--frame-cpu N] [--data PATH]";
    let fail = |why: &str| -> ! {
        eprintln!("{why}\n{usage}");
        std::process::exit(2);
    };
    let mut args = Args {
        json: false,
        npcs: DEFAULT_NPCS,
        seconds: DEFAULT_SECONDS,
        limit: DEFAULT_LIMIT,
        chatter: DEFAULT_CHATTER,
        delay: DEFAULT_DELAY_SECS,
        reply_reserve: None,
        modes: vec![Mode::Unloaded, Mode::Scheduled, Mode::Unscheduled],
        single_threaded: false,
        control_first: false,
        frame_cpu: None,
        control_reads_memory: false,
        data: "../shared/bench/locomo/locomo_dev.json".to_owned(),
    };
    let mut iter = std::env::args().skip(1);
    let number = |what: &str, iter: &mut dyn Iterator<Item = String>| -> f64 {
        iter.next()
            .and_then(|n| n.parse::<f64>().ok())
            .filter(|n| n.is_finite() && *n >= 0.0)
            .unwrap_or_else(|| fail(&format!("{what} needs a number")))
    };
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--json" => args.json = true,
            "--npcs" => args.npcs = number("--npcs", &mut iter) as usize,
            "--seconds" => args.seconds = number("--seconds", &mut iter) as u64,
            "--limit" => args.limit = number("--limit", &mut iter) as usize,
            "--chatter" => args.chatter = number("--chatter", &mut iter),
            "--delay" => args.delay = number("--delay", &mut iter) as u64,
            "--reply-reserve" => {
                args.reply_reserve = Some(number("--reply-reserve", &mut iter) as f32)
            }
            "--modes" => {
                let list = iter.next().unwrap_or_default();
                args.modes = list
                    .split(',')
                    .map(|name| match name {
                        "unloaded" => Mode::Unloaded,
                        "scheduled" => Mode::Scheduled,
                        "unscheduled" => Mode::Unscheduled,
                        _ => fail(&format!("unknown mode {name:?}")),
                    })
                    .collect();
            }
            "--executor" => {
                args.single_threaded = match iter.next().as_deref() {
                    Some("multi") => false,
                    Some("single") => true,
                    _ => fail("--executor takes multi or single"),
                }
            }
            "--control" => {
                args.control_first = match iter.next().as_deref() {
                    Some("first") => true,
                    Some("last") => false,
                    _ => fail("--control takes first or last"),
                }
            }
            "--control-work" => {
                args.control_reads_memory = match iter.next().as_deref() {
                    Some("memory") => true,
                    Some("spin") => false,
                    _ => fail("--control-work takes spin or memory"),
                }
            }
            "--frame-cpu" => args.frame_cpu = Some(number("--frame-cpu", &mut iter) as usize),
            "--data" => args.data = iter.next().unwrap_or_else(|| fail("--data needs a path")),
            "-h" | "--help" => {
                println!("{usage}");
                std::process::exit(0);
            }
            other => fail(&format!("unknown argument {other:?}")),
        }
    }
    if args.npcs < 1 || args.limit < 1 || args.seconds <= PLAYER_QUIET_END.as_secs() {
        fail("--npcs and --limit must be at least 1, --seconds over 10");
    }
    let cpus = online_cpus();
    if args.frame_cpu.is_some_and(|cpu| cpu >= cpus || cpus < 2) {
        fail(&format!(
            "--frame-cpu takes a CPU below {cpus}, and needs two CPUs or more"
        ));
    }
    args
}

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
