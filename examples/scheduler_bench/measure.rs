//! The brackets around the plugin's systems (wall time, and the frame thread's
//! CPU time with the single-threaded executor), and the control bracket around
//! busy work alone, which tells the CPU clock's own jumps from plugin work.

use std::time::{Duration, Instant};

use bevy::prelude::*;

use crate::FRAME_BUDGET;
use crate::thread::{ThreadUsage, thread_cpu_time};

/// The stamp taken before the plugin's systems and the times recorded after them:
/// wall time, and with the single-threaded executor (every system on this one
/// thread) the thread's CPU time, which time spent preempted does not count.
#[derive(Resource, Default)]
pub(crate) struct Bracket {
    pub(crate) started: Option<(Instant, Option<Duration>)>,
    pub(crate) samples: Vec<Duration>,
    pub(crate) cpu_samples: Vec<Duration>,
    /// Per frame: did the plugin take in, send or apply anything?
    pub(crate) active: Vec<bool>,
    /// This frame's CPU stamps after each of the plugin's sets but the last, so
    /// a frame over budget can say where its time went.
    pub(crate) set_stamps: Vec<Duration>,
    /// The same stamps in wall time.
    pub(crate) wall_stamps: Vec<Instant>,
    /// The thread's resource use when the bracket opened.
    pub(crate) usage_at_start: Option<ThreadUsage>,
    /// Frames over 1 ms of CPU during which the thread was preempted (an
    /// involuntary context switch inside the bracket).
    pub(crate) preempted_over_budget: usize,
    pub(crate) one_thread: bool,
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
pub(crate) struct Control {
    /// Spin iterations per microsecond of CPU, measured before the run.
    pub(crate) iterations_per_us: f64,
    /// `--control-work memory`: the control reads memory instead of spinning.
    pub(crate) reads_memory: bool,
    /// With `--control-work memory`, the buffer the control reads at random
    /// instead of spinning in registers.
    pub(crate) memory: Vec<u64>,
    pub(crate) samples: Vec<Duration>,
    /// The same brackets in wall time.
    pub(crate) wall_samples: Vec<Duration>,
    /// As [`Bracket::preempted_over_budget`].
    pub(crate) preempted_over_budget: usize,
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

pub(crate) fn control_bracket(mut control: ResMut<Control>, bracket: Res<Bracket>) {
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

pub(crate) fn bracket_start(mut bracket: ResMut<Bracket>) {
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

pub(crate) fn set_stamp(mut bracket: ResMut<Bracket>) {
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

pub(crate) fn bracket_end(mut bracket: ResMut<Bracket>) {
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
