//! Usage and cost figures per NPC and per purpose: the cost dashboard.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use bevy::diagnostic::{Diagnostic, Diagnostics, RegisterDiagnostic};
use bevy::prelude::*;
use serde::Serialize;

use crate::backends::{Purpose, TokenUsage};
use crate::memory::NpcId;
use crate::plugin::sets::{CollectStep, NpcMemorySystems};

/// Latency samples kept per figure; percentiles describe the most recent ones.
const LATENCY_SAMPLES: usize = 512;

/// Bevy diagnostics the plugin records, one measurement per finished request.
pub mod diagnostics {
    use bevy::diagnostic::DiagnosticPath;

    /// Prompt tokens the provider reported for a request.
    pub const PROMPT_TOKENS: DiagnosticPath = DiagnosticPath::const_new("npc_memory/prompt_tokens");
    /// Completion tokens the provider reported for a request.
    pub const COMPLETION_TOKENS: DiagnosticPath =
        DiagnosticPath::const_new("npc_memory/completion_tokens");
    /// Wall-clock latency of a request, in milliseconds.
    pub const REQUEST_LATENCY_MS: DiagnosticPath =
        DiagnosticPath::const_new("npc_memory/request_latency_ms");
    /// Retries a request needed.
    pub const RETRIES: DiagnosticPath = DiagnosticPath::const_new("npc_memory/retries");
}

/// Requests, failures, retries, tokens and latency of one kind of request.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UsageStats {
    /// Requests that came back, successfully or not; also one cancelled after it
    /// was sent (a clear, an interrupt, a conversation ended) whose answer still
    /// came: the provider answered it.
    pub requests: u64,
    /// Requests that failed.
    pub failures: u64,
    /// Retries made inside requests.
    pub retries: u64,
    /// Prompt tokens the provider reported.
    pub prompt_tokens: u64,
    /// Completion tokens the provider reported.
    pub completion_tokens: u64,
    /// Prompt tokens served from the provider's cache, where reported.
    pub cached_tokens: u64,
    #[serde(skip)]
    latencies: VecDeque<Duration>,
}

impl UsageStats {
    fn record(&mut self, outcome: &RequestOutcome) {
        self.requests += 1;
        self.failures += u64::from(!outcome.ok);
        self.retries += u64::from(outcome.retries);
        if let Some(usage) = outcome.usage {
            self.prompt_tokens += usage.prompt_tokens;
            self.completion_tokens += usage.completion_tokens;
            self.cached_tokens += usage.cached_tokens.unwrap_or(0);
        }
        if self.latencies.len() == LATENCY_SAMPLES {
            self.latencies.pop_front();
        }
        self.latencies.push_back(outcome.latency);
    }

    /// The share of prompt tokens the provider's cache served (0.0 to 1.0), or
    /// `None` before any prompt token was reported. A server that never reports
    /// cached tokens shows 0; one that reports more cached tokens than prompt
    /// tokens shows 1.
    pub fn cached_share(&self) -> Option<f64> {
        (self.prompt_tokens > 0)
            .then(|| (self.cached_tokens as f64 / self.prompt_tokens as f64).min(1.0))
    }

    /// The median latency of recent requests.
    pub fn latency_p50(&self) -> Option<Duration> {
        self.latency_percentile(0.50)
    }

    /// The 95th-percentile latency of recent requests.
    pub fn latency_p95(&self) -> Option<Duration> {
        self.latency_percentile(0.95)
    }

    /// A latency percentile (0.0 to 1.0) of the most recent requests.
    pub fn latency_percentile(&self, quantile: f64) -> Option<Duration> {
        if self.latencies.is_empty() {
            return None;
        }
        let mut sorted: Vec<Duration> = self.latencies.iter().copied().collect();
        sorted.sort_unstable();
        let rank = (quantile.clamp(0.0, 1.0) * (sorted.len() - 1) as f64).round() as usize;
        Some(sorted[rank])
    }
}

/// A request finished: the dialogue writes one for every request, and the usage
/// figures are kept from them, so the turn pipeline never borrows [`LlmUsage`].
#[derive(Message, Clone, Debug)]
pub(crate) struct RequestFinished {
    pub(crate) npc: NpcId,
    pub(crate) purpose: Purpose,
    pub(crate) outcome: RequestOutcome,
}

/// What one finished request contributes to the figures.
#[derive(Clone, Debug)]
pub(crate) struct RequestOutcome {
    pub(crate) ok: bool,
    pub(crate) retries: u32,
    pub(crate) latency: Duration,
    pub(crate) usage: Option<TokenUsage>,
}

/// Usage figures per NPC and purpose, and in total. Read it for a cost dashboard;
/// the requests that finish in a frame are in it once [`NpcMemorySystems::Collect`]
/// has run.
#[derive(Resource, Default, Debug)]
pub struct LlmUsage {
    per_npc: HashMap<(NpcId, Purpose), UsageStats>,
    total: HashMap<Purpose, UsageStats>,
}

impl LlmUsage {
    /// Figures of one NPC for one purpose.
    pub fn npc(&self, npc: &NpcId, purpose: Purpose) -> Option<&UsageStats> {
        self.per_npc.get(&(npc.clone(), purpose))
    }

    /// Figures over all NPCs for one purpose.
    pub fn total(&self, purpose: Purpose) -> Option<&UsageStats> {
        self.total.get(&purpose)
    }

    pub(crate) fn record(&mut self, npc: &NpcId, purpose: Purpose, outcome: &RequestOutcome) {
        self.per_npc
            .entry((npc.clone(), purpose))
            .or_default()
            .record(outcome);
        self.total.entry(purpose).or_default().record(outcome);
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<LlmUsage>()
        .add_message::<RequestFinished>()
        .add_systems(
            Update,
            (
                // Current once Collect ends, as when the dialogue kept the figures.
                record_usage
                    .after(CollectStep::Results)
                    .in_set(NpcMemorySystems::Collect),
                measure_diagnostics.after(NpcMemorySystems::Persist),
            ),
        );
    for path in [
        diagnostics::PROMPT_TOKENS,
        diagnostics::COMPLETION_TOKENS,
        diagnostics::REQUEST_LATENCY_MS,
        diagnostics::RETRIES,
    ] {
        app.register_diagnostic(Diagnostic::new(path));
    }
}

/// Adds the requests that finished this frame to the figures.
fn record_usage(mut finished: MessageReader<RequestFinished>, mut usage: ResMut<LlmUsage>) {
    for RequestFinished {
        npc,
        purpose,
        outcome,
    } in finished.read()
    {
        usage.record(npc, *purpose, outcome);
    }
}

/// Turns finished requests into Bevy diagnostics. The only plugin system with
/// deferred work, and ordered last, so it adds no sync point inside the pipeline.
fn measure_diagnostics(mut finished: MessageReader<RequestFinished>, mut diagnostics: Diagnostics) {
    for RequestFinished { outcome, .. } in finished.read() {
        measure(&mut diagnostics, outcome);
    }
}

fn measure(diagnostics: &mut Diagnostics, outcome: &RequestOutcome) {
    if let Some(usage) = outcome.usage {
        diagnostics.add_measurement(&diagnostics::PROMPT_TOKENS, || usage.prompt_tokens as f64);
        diagnostics.add_measurement(&diagnostics::COMPLETION_TOKENS, || {
            usage.completion_tokens as f64
        });
    }
    diagnostics.add_measurement(&diagnostics::REQUEST_LATENCY_MS, || {
        outcome.latency.as_secs_f64() * 1000.0
    });
    diagnostics.add_measurement(&diagnostics::RETRIES, || f64::from(outcome.retries));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(ms: u64, ok: bool) -> RequestOutcome {
        RequestOutcome {
            ok,
            retries: 1,
            latency: Duration::from_millis(ms),
            usage: Some(TokenUsage {
                prompt_tokens: 10,
                completion_tokens: 2,
                cached_tokens: Some(4),
            }),
        }
    }

    #[test]
    fn figures_add_up_and_percentiles_follow_the_samples() {
        let mut usage = LlmUsage::default();
        let npc = NpcId::new("echo7");
        for ms in 1..=100 {
            usage.record(&npc, Purpose::Reply, &outcome(ms, ms % 10 != 0));
        }
        let stats = usage.npc(&npc, Purpose::Reply).unwrap();
        assert_eq!(
            (stats.requests, stats.failures, stats.retries),
            (100, 10, 100)
        );
        assert_eq!(
            (
                stats.prompt_tokens,
                stats.completion_tokens,
                stats.cached_tokens
            ),
            (1000, 200, 400)
        );
        assert_eq!(stats.cached_share(), Some(0.4));
        assert_eq!(UsageStats::default().cached_share(), None);
        let overclaimed = UsageStats {
            prompt_tokens: 10,
            cached_tokens: 30,
            ..UsageStats::default()
        };
        assert_eq!(overclaimed.cached_share(), Some(1.0));
        assert_eq!(stats.latency_p50(), Some(Duration::from_millis(51)));
        assert_eq!(stats.latency_p95(), Some(Duration::from_millis(95)));
        assert!(usage.npc(&npc, Purpose::Summary).is_none());
        assert_eq!(usage.total(Purpose::Reply).unwrap().requests, 100);
    }

    #[test]
    fn only_recent_latencies_count() {
        let mut stats = UsageStats::default();
        for _ in 0..LATENCY_SAMPLES {
            stats.record(&outcome(1000, true));
        }
        for _ in 0..LATENCY_SAMPLES {
            stats.record(&outcome(1, true));
        }
        assert_eq!(stats.latency_p95(), Some(Duration::from_millis(1)));
    }
}
