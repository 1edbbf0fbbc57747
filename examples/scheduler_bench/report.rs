//! What a mode's run reports: percentiles, the per-mode figures, and their JSON
//! and Markdown table forms.

use std::time::Duration;

use serde_json::{Value, json};

use crate::app::Mode;
use crate::provider::Traffic;
use crate::sampling::percentile;

/// Percentiles of durations, in ms.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Stats {
    samples: usize,
    p50_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

impl Stats {
    pub(crate) fn of(samples: &[Duration]) -> Self {
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

pub(crate) struct ModeReport {
    pub(crate) mode: Mode,
    pub(crate) npcs: usize,
    pub(crate) seconds: f64,
    pub(crate) frames: usize,
    pub(crate) player_lines: usize,
    pub(crate) chatter_lines: usize,
    pub(crate) latency: Stats,
    /// Foreground lines with no reply by the end of the run.
    pub(crate) unanswered: usize,
    pub(crate) foreground_failures: Vec<String>,
    pub(crate) bracket: Stats,
    pub(crate) frames_over_budget: usize,
    /// The bracket in the thread's CPU time (single-threaded executor only).
    pub(crate) cpu: Option<Stats>,
    pub(crate) cpu_over_budget: usize,
    /// Of those, frames in which the plugin took in, sent or applied anything.
    pub(crate) cpu_over_budget_active: usize,
    /// Of those, frames in which the thread was preempted inside the bracket.
    pub(crate) cpu_over_budget_preempted: usize,
    /// Of those, frames whose CPU time exceeds the wall time the bracket took
    /// (by more than [`CLOCK_READS`]). No thread runs longer than the time that
    /// passes, so these are the thread's CPU clock jumping, not work.
    pub(crate) cpu_over_budget_beyond_wall: usize,
    /// CPU seconds inside the plugin's bracket and inside the control's.
    pub(crate) cpu_total: f64,
    pub(crate) control: Option<Stats>,
    pub(crate) control_over_budget: usize,
    pub(crate) control_over_budget_preempted: usize,
    /// As `cpu_over_budget_beyond_wall`.
    pub(crate) control_over_budget_beyond_wall: usize,
    pub(crate) control_total: f64,
    pub(crate) plugin_requests: u64,
    pub(crate) replies: Traffic,
    pub(crate) summaries: Traffic,
    pub(crate) observed_summaries: u64,
    pub(crate) covered: u64,
    pub(crate) overflows: u64,
    pub(crate) summary_failures: u64,
    pub(crate) deferred_at_end: usize,
    pub(crate) queue_at_end: usize,
    pub(crate) budget: Option<u32>,
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

    pub(crate) fn json(&self) -> Value {
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

pub(crate) fn print_table(reports: &[ModeReport]) {
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
