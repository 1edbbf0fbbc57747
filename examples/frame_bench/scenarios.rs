//! Scenarios A (idle) and B (talking), each run in the plugin app and the
//! baseline app with one executor.

use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy_npc_memory::prelude::*;

use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::dialogue::NpcRequests;

use crate::harness::{
    Counts, Executor, build_app, spawn_npcs, start_recording, stop_recording, timed_update,
    update_systems, warm_up,
};
use crate::stats::Stats;
use crate::{CHUNK, FRAME_SLEEP, FRAMES, IDLE_TARGET_US, LATENCY, TALK_EVERY, TALKERS};

pub(crate) struct Idle {
    pub(crate) frames_to_memory: usize,
    pub(crate) plugin_bracket: Stats,
    pub(crate) plugin_sets: Option<[Stats; 4]>,
    pub(crate) baseline_bracket: Stats,
    pub(crate) plugin_frame: Stats,
    pub(crate) baseline_frame: Stats,
}

impl Idle {
    /// The plugin's systems minus what the bracket costs on its own.
    pub(crate) fn bracket_overhead_us(&self) -> f64 {
        self.plugin_bracket.median_us - self.baseline_bracket.median_us
    }

    pub(crate) fn frame_overhead_us(&self) -> f64 {
        self.plugin_frame.median_us - self.baseline_frame.median_us
    }

    pub(crate) fn frame_ratio(&self) -> f64 {
        self.plugin_frame.median_us / self.baseline_frame.median_us
    }

    pub(crate) fn met(&self) -> bool {
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

pub(crate) struct Talking {
    pub(crate) talkers: usize,
    pub(crate) lines_sent: usize,
    pub(crate) replies: usize,
    pub(crate) busy: usize,
    pub(crate) other_failures: usize,
    pub(crate) summaries: usize,
    pub(crate) peak_in_flight: usize,
    pub(crate) peak_waiting: usize,
    pub(crate) elapsed: Duration,
    pub(crate) plugin_bracket: Stats,
    pub(crate) plugin_sets: Option<[Stats; 4]>,
    pub(crate) baseline_bracket: Stats,
    pub(crate) plugin_frame: Stats,
    pub(crate) baseline_frame: Stats,
}

impl Talking {
    pub(crate) fn met(&self) -> bool {
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
pub(crate) struct Run {
    pub(crate) executor: Executor,
    pub(crate) plugin_systems: usize,
    pub(crate) baseline_systems: usize,
    pub(crate) idle: Idle,
    pub(crate) talking: Talking,
}

pub(crate) fn run(executor: Executor, npcs: usize, sets: bool) -> Run {
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
