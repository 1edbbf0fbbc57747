//! A play session, simulated: what NPC memory costs in tokens per hour of play.
//!
//! A player walks around `npcs` NPCs for `hours` hours and says `lines_per_hour`
//! lines an hour. Each stop is a conversation of several lines with one NPC, and
//! which NPC comes next follows a Zipf law (a few NPCs are visited often, most
//! rarely), from a fixed seed. The same schedule is replayed for every strategy.
//!
//! Each NPC speaks one LoCoMo conversation: the player's lines are `speaker_a`'s
//! turns and the NPC's replies the `speaker_b` turns that follow, so lengths are
//! real. Every request the plugin would send is counted with the crate's token
//! estimate: each reply prompt (its completion is the reply text), and each summary
//! request the memory starts (folds, fold-with-facts JSON, segment compactions),
//! answered at once by the offline backend (its completion is that answer).
//!
//! **Prompt cache.** Providers such as DeepSeek and OpenAI bill the part of a
//! prompt that repeats the start of an earlier request at a lower price. For each
//! request, the share of its serialized messages (the JSON `messages` array the
//! HTTP backend sends) that is byte-identical to the start of an earlier request
//! is its cacheable share: the longest such start among the same NPC's last reply,
//! last fold and last compaction (a provider keeps every recent prefix, so a fold
//! reuses the last fold's instruction even with a compaction sent in between).

use std::path::Path;
use std::time::Duration;

use bevy_npc_memory::backends::OfflineBackend;
use bevy_npc_memory::memory::{
    FollowUps, NpcMemory, Role, SummaryJob, SummaryKind, SummaryOutcome,
};
use serde_json::{Value, json};

use crate::billing::Provider;
use crate::locomo::load;
use crate::strategies::{full_history, memory_config};

mod schedule;
mod tally;

pub use schedule::{PlannedLine, Rng, Script, schedule, scripts};
pub use tally::cached_share;
use tally::{Tally, report};

/// The window of `basic` and `layered`, as in the LoCoMo benchmark (threshold 10).
pub const WINDOW: usize = 20;

/// Seconds a cached prefix lives without use in `uncached_tokens_per_hour_5min`
/// (OpenAI's documented lower bound; DeepSeek keeps its disk cache for hours, which
/// `uncached_tokens_per_hour` assumes).
pub const SHORT_CACHE_TTL: f64 = 300.0;

/// The budgets `layered` runs at by default.
pub const BUDGETS: [usize; 3] = [1000, 2000, 4000];

/// The parameters of one simulated session.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// How many NPCs the player can talk to.
    pub npcs: usize,
    /// Hours of play.
    pub hours: usize,
    /// Player lines per hour, over all NPCs.
    pub lines_per_hour: usize,
    /// Seed of the player's path.
    pub seed: u64,
    /// Exponent of the Zipf law of NPC popularity (1.0: the k-th NPC is visited
    /// 1/k as often as the first).
    pub zipf: f64,
    /// Fewest and most lines of one conversation with one NPC.
    pub conversation_lines: (usize, usize),
    /// What a cached prompt token costs, as a share of a token not cached (0.1:
    /// DeepSeek's and OpenAI's list prices for cache hits, about a tenth).
    pub hit_price: f64,
    /// How layered prompts extend the last one within a conversation.
    pub follow_ups: FollowUps,
    /// Whether layered summaries ask for notes on lines (`FactsConfig::notes`).
    pub notes: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            npcs: 50,
            hours: 5,
            lines_per_hour: 120,
            seed: 15,
            zipf: 1.0,
            conversation_lines: (2, 12),
            hit_price: 0.1,
            follow_ups: FollowUps::default(),
            notes: true,
        }
    }
}

/// A strategy of the simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// The persona and every message, no summaries.
    Full,
    /// Basic mode: window 20, threshold 10, the summary in the system prompt.
    Basic,
    /// Every feature beyond basic mode, within this many prompt tokens.
    Layered(usize),
}

impl Strategy {
    /// The default list: full, basic, and layered at 1,000, 2,000 and 4,000 tokens.
    pub fn all() -> Vec<Strategy> {
        let mut all = vec![Strategy::Full, Strategy::Basic];
        all.extend(BUDGETS.iter().map(|&b| Strategy::Layered(b)));
        all
    }

    /// The strategy's name in reports: `full`, `basic`, `layered@2000`.
    pub fn name(&self) -> String {
        match self {
            Strategy::Full => "full".into(),
            Strategy::Basic => "basic".into(),
            Strategy::Layered(budget) => format!("layered@{budget}"),
        }
    }
}

/// Answers a summary job and every job that follows from it with the offline
/// backend, counting each request.
fn summarize(
    memory: &mut NpcMemory,
    mut job: Option<SummaryJob>,
    backend: &OfflineBackend,
    tally: &mut Tally,
    at: (usize, usize, f64),
) {
    while let Some(current) = job {
        let answer = backend.summarize(&current.input);
        let kind = if matches!(current.kind, SummaryKind::Compact { .. }) {
            "compaction"
        } else if current.input.wants_facts {
            "summary_facts"
        } else {
            "summary"
        };
        tally.count(at, kind, &current.messages, &answer);
        job = match memory
            .layers()
            .finish_summary(current.id, Ok(&answer), Duration::ZERO)
        {
            SummaryOutcome::Updated(update) => update.next,
            SummaryOutcome::Retry(retry) => Some(retry),
            SummaryOutcome::Degraded(_) | SummaryOutcome::Stale => None,
        };
    }
}

/// Plays the schedule through one strategy and counts every request.
fn play(
    strategy: Strategy,
    settings: &Settings,
    plan: &[PlannedLine],
    scripts: &[Script],
) -> Tally {
    let config = match strategy {
        Strategy::Full | Strategy::Basic => memory_config(WINDOW, None, false, None, &[]),
        Strategy::Layered(budget) => {
            let mut config = memory_config(WINDOW, None, true, Some(budget), &[]);
            config.features.budget.follow_ups = settings.follow_ups.clone();
            config.features.facts.notes = settings.notes;
            config
        }
    };
    let mut memories: Vec<NpcMemory> = scripts
        .iter()
        .map(|s| NpcMemory::new(s.persona.clone(), &config))
        .collect();
    let mut said = vec![0usize; scripts.len()];
    let backend = OfflineBackend::default();
    let mut tally = Tally::new(scripts.len(), settings.hours, settings.hit_price);
    for line in plan {
        let (npc, now) = (line.npc, line.seconds);
        let at = (npc, line.hour, now);
        let script = &scripts[npc];
        let (text, reply) = &script.pairs[(script.start + said[npc]) % script.pairs.len()];
        said[npc] += 1;
        let memory = &mut memories[npc];
        match strategy {
            Strategy::Full => {
                memory.layers().record(Role::User, text.as_str(), now);
                tally.count(at, "reply", &full_history(memory), reply);
                memory.layers().record(Role::Assistant, reply.as_str(), now);
            }
            Strategy::Basic | Strategy::Layered(_) => {
                let turn = memory.layers().say(text.as_str(), now);
                tally.count(at, "reply", &turn.messages, reply);
                summarize(memory, turn.summary, &backend, &mut tally, at);
                let replied = memory.layers().reply(reply.as_str(), now);
                summarize(memory, replied.summary, &backend, &mut tally, at);
            }
        }
    }
    tally
}

/// Runs the session for every strategy on the LoCoMo file `data` and returns the
/// report: `{"settings", "schedule", "strategies": {name: {"tokens_per_hour": [...],
/// ...}}, "headline"}`. `tokens_per_hour[h]` is hour `h + 1`'s prompt tokens over all
/// NPCs, replies and summary requests together.
pub fn run(settings: &Settings, strategies: &[Strategy], data: &Path) -> Result<Value, String> {
    if settings.npcs == 0 || settings.hours == 0 || settings.lines_per_hour == 0 {
        return Err("--npcs, --hours and --lines-per-hour must be at least 1".into());
    }
    let (lo, hi) = settings.conversation_lines;
    if lo == 0 || hi < lo {
        return Err("conversations need 1 ≤ fewest ≤ most lines".into());
    }
    let records = load(data)?;
    let scripts = scripts(&records, settings.npcs, data)?;
    let plan = schedule(settings);
    let mut lines_per_npc = vec![0u64; settings.npcs];
    for line in &plan {
        lines_per_npc[line.npc] += 1;
    }
    let visits = 1 + plan.windows(2).filter(|w| w[0].npc != w[1].npc).count();
    let mut results = serde_json::Map::new();
    for &strategy in strategies {
        let tally = play(strategy, settings, &plan, &scripts);
        results.insert(strategy.name(), report(&tally, settings.npcs));
    }
    let hour = settings.hours.min(5);
    let at = |name: &str, field: &str| {
        results
            .get(name)
            .and_then(|r| r[field].get(hour - 1))
            .and_then(Value::as_f64)
    };
    let ratio = |field: &str| match (at("full", field), at("layered@2000", field)) {
        (Some(full), Some(layered)) if layered > 0.0 => json!(full / layered),
        _ => Value::Null,
    };
    Ok(json!({
        "settings": {
            "npcs": settings.npcs,
            "hours": settings.hours,
            "lines_per_hour": settings.lines_per_hour,
            "seed": settings.seed,
            "zipf": settings.zipf,
            "conversation_lines": [lo, hi],
            "hit_price": settings.hit_price,
            "follow_ups": {
                "growth": settings.follow_ups.growth,
                "recall": settings.follow_ups.recall,
                "pause_secs": settings.follow_ups.pause_secs,
            },
            "window": WINDOW,
            "conversations": records.len(),
        },
        "schedule": {
            "lines": plan.len(),
            "visits": visits,
            "lines_per_npc": lines_per_npc,
        },
        "order": strategies.iter().map(Strategy::name).collect::<Vec<_>>(),
        "strategies": results,
        "headline": {
            "hour": hour,
            "full_tokens": at("full", "tokens_per_hour"),
            "layered2000_tokens": at("layered@2000", "tokens_per_hour"),
            "full_over_layered2000": ratio("tokens_per_hour"),
            "uncached_full_over_layered2000": ratio("uncached_tokens_per_hour"),
            "uncached_5min_full_over_layered2000": ratio("uncached_tokens_per_hour_5min"),
            "miss_equivalent_full_over_layered2000": Provider::ALL.into_iter().map(|provider| {
                let billed = |name: &str| results.get(name).and_then(|r| {
                    r["miss_equivalent_tokens_per_hour"]["session"][provider.name()].get(hour - 1)
                }).and_then(Value::as_f64);
                let ratio = match (billed("full"), billed("layered@2000")) {
                    (Some(full), Some(layered)) if layered > 0.0 => json!(full / layered),
                    _ => Value::Null,
                };
                (provider.name().to_owned(), ratio)
            }).collect::<serde_json::Map<_, _>>(),
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cached_share_is_the_common_prefix_over_the_new_request() {
        assert_eq!(cached_share("", "abcd"), 0.0);
        assert_eq!(cached_share("abcd", "abcdefgh"), 0.5);
        assert_eq!(cached_share("abXd", "abcd"), 0.5);
        assert_eq!(cached_share("abcd", ""), 0.0);
    }

    #[test]
    fn the_path_is_seeded_spread_by_popularity_and_made_of_conversations() {
        let settings = Settings {
            npcs: 20,
            hours: 10,
            ..Settings::default()
        };
        let plan = schedule(&settings);
        assert_eq!(plan, schedule(&settings), "the same seed, the same path");
        assert_ne!(
            plan,
            schedule(&Settings {
                seed: 16,
                ..settings.clone()
            })
        );
        assert_eq!(plan.len(), 1200);
        assert_eq!(plan[0].hour, 0);
        assert_eq!(plan[1199].hour, 9);
        assert!(plan.windows(2).all(|w| w[0].seconds < w[1].seconds));
        let mut lines = [0usize; 20];
        for line in &plan {
            lines[line.npc] += 1;
        }
        assert!(
            lines[0] > lines[9] && lines[0] > 4 * lines[19],
            "popular NPCs hear more: {lines:?}"
        );
        // Conversations: runs of 2-12 lines with one NPC (a run may hold two
        // conversations only if the draw picked the same NPC, which it never does).
        let mut run = 1;
        for pair in plan.windows(2) {
            if pair[0].npc == pair[1].npc {
                run += 1;
            } else {
                assert!((2..=12).contains(&run), "a conversation of {run} lines");
                run = 1;
            }
        }
    }
}
