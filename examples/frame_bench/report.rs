//! The report of scenarios A and B: the printed tables and verdicts, and the
//! JSON.

use serde_json::{Value, json};

use crate::scenarios::Run;
use crate::stats::{Stats, micros, round2, sets_json};
use crate::{FRAME_BUDGET, FRAME_SLEEP, IDLE_TARGET_US, LATENCY, SET_NAMES, TALK_EVERY};

fn verdict(met: bool) -> &'static str {
    if met { "MET" } else { "MISSED" }
}

pub(crate) fn header() {
    println!(
        "  {:<34} {:>10} {:>10} {:>10} {:>8}",
        "", "median µs", "p99 µs", "max µs", ">1 ms"
    );
}

pub(crate) fn stats_row(label: &str, s: &Stats) {
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

pub(crate) fn print_run(run: &Run, npcs: usize) {
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

pub(crate) fn run_json(run: &Run, npcs: usize) -> Value {
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
