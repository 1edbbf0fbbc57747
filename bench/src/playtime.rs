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

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use bevy_npc_memory::backends::OfflineBackend;
use bevy_npc_memory::memory::{
    FollowUps, NpcMemory, PersonaPrompt, PromptMessage, Role, SummaryJob, SummaryKind,
    SummaryOutcome, estimate_prompt_tokens, estimate_tokens,
};
use serde_json::{Value, json};

use crate::billing::{Bill, Provider};
use crate::locomo::{Conversation, load, turn_text};
use crate::strategies::{full_history, memory_config};

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

/// One player line of the schedule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlannedLine {
    /// The hour of play it falls in, from 0.
    pub hour: usize,
    /// Game time in seconds since the session started.
    pub seconds: f64,
    /// Which NPC it is said to.
    pub npc: usize,
}

/// A small deterministic generator (SplitMix64), so runs repeat exactly.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A whole number in `lo..=hi`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi.saturating_sub(lo) as u64 + 1)) as usize
    }
}

/// The player's path: every line, which hour it falls in and which NPC hears it.
/// Conversations of `conversation_lines` lines with one NPC follow each other; the
/// next NPC is drawn by the Zipf law, never the one just left (with two or more).
pub fn schedule(settings: &Settings) -> Vec<PlannedLine> {
    let npcs = settings.npcs.max(1);
    let weights: Vec<f64> = (1..=npcs)
        .map(|k| 1.0 / (k as f64).powf(settings.zipf))
        .collect();
    let total: f64 = weights.iter().sum();
    let mut rng = Rng::new(settings.seed);
    let pick = |rng: &mut Rng, current: Option<usize>| loop {
        let mut target = rng.unit() * total;
        let mut chosen = npcs - 1;
        for (npc, weight) in weights.iter().enumerate() {
            if target < *weight {
                chosen = npc;
                break;
            }
            target -= weight;
        }
        if npcs == 1 || Some(chosen) != current {
            return chosen;
        }
    };
    let lines = settings.hours * settings.lines_per_hour;
    let step = 3600.0 / settings.lines_per_hour.max(1) as f64;
    let (lo, hi) = settings.conversation_lines;
    let mut plan = Vec::with_capacity(lines);
    let (mut npc, mut left) = (pick(&mut rng, None), rng.between(lo.max(1), hi.max(lo)));
    for k in 0..lines {
        if left == 0 {
            npc = pick(&mut rng, Some(npc));
            left = rng.between(lo.max(1), hi.max(lo));
        }
        left -= 1;
        plan.push(PlannedLine {
            hour: k / settings.lines_per_hour,
            seconds: (k as f64 + 0.5) * step,
            npc,
        });
    }
    plan
}

/// What one NPC says: its persona, and (player line, reply) pairs to go through.
#[derive(Clone, Debug)]
pub struct Script {
    /// The NPC's persona, from its conversation's speakers.
    pub persona: PersonaPrompt,
    /// The player's turns, each with the NPC's turns that follow it.
    pub pairs: Vec<(String, String)>,
    /// Where this NPC starts in `pairs` (NPCs sharing a conversation start apart).
    pub start: usize,
}

/// One [`Script`] per NPC: NPC `i` speaks conversation `i mod conversations`.
pub fn scripts(records: &[Value], npcs: usize, file: &Path) -> Result<Vec<Script>, String> {
    let mut by_conversation = Vec::new();
    for record in records {
        let conversation = Conversation::parse(record, file)?;
        let mut pairs: Vec<(String, String)> = Vec::new();
        let mut open = false;
        for turn in conversation.turns() {
            let text = turn_text(turn);
            if conversation.is_player(turn) {
                match pairs.last_mut() {
                    // The player spoke twice in a row: one line.
                    Some((line, reply)) if open && reply.is_empty() => {
                        line.push(' ');
                        line.push_str(&text);
                    }
                    _ => pairs.push((text, String::new())),
                }
                open = true;
            } else if open && let Some((_, reply)) = pairs.last_mut() {
                if !reply.is_empty() {
                    reply.push(' ');
                }
                reply.push_str(&text);
            }
        }
        pairs.retain(|(_, reply)| !reply.is_empty());
        if pairs.is_empty() {
            return Err(format!(
                "{}: conversation {}: no player line with a reply",
                file.display(),
                conversation.sample_id
            ));
        }
        by_conversation.push((conversation.persona(), pairs));
    }
    if by_conversation.is_empty() {
        return Err(format!("{}: no conversations", file.display()));
    }
    let count = by_conversation.len();
    Ok((0..npcs)
        .map(|npc| {
            let (persona, pairs) = &by_conversation[npc % count];
            Script {
                persona: persona.clone(),
                pairs: pairs.clone(),
                start: (npc / count * 53) % pairs.len(),
            }
        })
        .collect())
}

/// Requests, prompt tokens and completion tokens of one kind of request.
#[derive(Clone, Debug, Default)]
struct KindTally {
    requests: u64,
    prompt: u64,
    completion: u64,
}

/// Everything counted for one strategy.
#[derive(Clone, Debug)]
struct Tally {
    prompt_per_hour: Vec<u64>,
    completion_per_hour: Vec<u64>,
    requests_per_hour: Vec<u64>,
    summary_prompt_per_hour: Vec<u64>,
    uncached_per_hour: Vec<f64>,
    uncached_short_ttl_per_hour: Vec<f64>,
    /// Miss-equivalent tokens as each provider bills them.
    bill: Bill,
    /// The same for reply prompts alone: what the strategy would cost if its
    /// summary requests were free.
    reply_bill: Bill,
    kinds: BTreeMap<&'static str, KindTally>,
    per_npc_prompt: Vec<u64>,
    reply_shares: Vec<f64>,
    /// Reply prompt tokens, and those of them in a cacheable prefix.
    reply_tokens: (f64, f64),
    summary_shares: Vec<f64>,
    max_reply_prompt: usize,
    /// Per NPC, the previous request of each kind (reply, fold, compaction),
    /// serialized, and when it was sent.
    previous: Vec<[(String, f64); 3]>,
}

impl Tally {
    fn new(npcs: usize, hours: usize, hit_price: f64) -> Self {
        Self {
            bill: Bill::new(hours, hit_price),
            reply_bill: Bill::new(hours, hit_price),
            prompt_per_hour: vec![0; hours],
            completion_per_hour: vec![0; hours],
            requests_per_hour: vec![0; hours],
            summary_prompt_per_hour: vec![0; hours],
            uncached_per_hour: vec![0.0; hours],
            uncached_short_ttl_per_hour: vec![0.0; hours],
            kinds: BTreeMap::new(),
            per_npc_prompt: vec![0; npcs],
            reply_shares: Vec::new(),
            reply_tokens: (0.0, 0.0),
            summary_shares: Vec::new(),
            max_reply_prompt: 0,
            previous: vec![Default::default(); npcs],
        }
    }

    /// Counts one request of `kind` (`reply`, `summary`, `summary_facts`, `compaction`).
    fn count(
        &mut self,
        (npc, hour, now): (usize, usize, f64),
        kind: &'static str,
        messages: &[PromptMessage],
        completion: &str,
    ) {
        let prompt = estimate_prompt_tokens(messages);
        let completion = estimate_tokens(completion);
        let serialized = serde_json::to_string(messages).expect("messages serialize");
        let slot = match kind {
            "reply" => 0,
            "compaction" => 2,
            _ => 1,
        };
        // A provider reuses any prefix it still holds: the longest start shared with
        // the NPC's last request of any kind, and for the short TTL of one sent
        // within it.
        let (mut share, mut short_share) = (0.0f64, 0.0f64);
        for (previous, then) in &self.previous[npc] {
            let common = cached_share(previous, &serialized);
            share = share.max(common);
            if now - then <= SHORT_CACHE_TTL {
                short_share = short_share.max(common);
            }
        }
        self.previous[npc][slot] = (serialized, now);
        if kind == "reply" {
            self.reply_shares.push(share);
            self.reply_tokens.0 += prompt as f64;
            self.reply_tokens.1 += prompt as f64 * share;
            self.max_reply_prompt = self.max_reply_prompt.max(prompt);
        } else {
            self.summary_shares.push(share);
            self.summary_prompt_per_hour[hour] += prompt as u64;
        }
        self.prompt_per_hour[hour] += prompt as u64;
        self.completion_per_hour[hour] += completion as u64;
        self.requests_per_hour[hour] += 1;
        self.uncached_per_hour[hour] += prompt as f64 * (1.0 - share);
        self.uncached_short_ttl_per_hour[hour] += prompt as f64 * (1.0 - short_share);
        let prefix = (prompt as f64 * share).floor() as usize;
        let short_prefix = (prompt as f64 * short_share).floor() as usize;
        self.bill.add(hour, prompt, (prefix, short_prefix));
        if kind == "reply" {
            self.reply_bill.add(hour, prompt, (prefix, short_prefix));
        }
        self.per_npc_prompt[npc] += prompt as u64;
        let entry = self.kinds.entry(kind).or_default();
        entry.requests += 1;
        entry.prompt += prompt as u64;
        entry.completion += completion as u64;
    }
}

/// The share of `current`'s bytes that start it exactly as `previous` starts.
pub fn cached_share(previous: &str, current: &str) -> f64 {
    if current.is_empty() {
        return 0.0;
    }
    let common = previous
        .bytes()
        .zip(current.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    common as f64 / current.len() as f64
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

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

fn report(tally: &Tally, npcs: usize) -> Value {
    let prompt: u64 = tally.prompt_per_hour.iter().sum();
    let completion: u64 = tally.completion_per_hour.iter().sum();
    let requests: u64 = tally.requests_per_hour.iter().sum();
    let uncached: f64 = tally.uncached_per_hour.iter().sum();
    let summary_tokens: u64 = tally
        .kinds
        .iter()
        .filter(|(kind, _)| **kind != "reply")
        .map(|(_, k)| k.prompt + k.completion)
        .sum();
    let all_tokens = prompt + completion;
    let share = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
    let mut all_shares = tally.reply_shares.clone();
    all_shares.extend(&tally.summary_shares);
    json!({
        "tokens_per_hour": tally.prompt_per_hour,
        "completion_tokens_per_hour": tally.completion_per_hour,
        "requests_per_hour": tally.requests_per_hour,
        "summary_prompt_tokens_per_hour": tally.summary_prompt_per_hour,
        "uncached_tokens_per_hour": tally.uncached_per_hour.iter().map(|t| t.round()).collect::<Vec<_>>(),
        "uncached_tokens_per_hour_5min": tally.uncached_short_ttl_per_hour.iter().map(|t| t.round()).collect::<Vec<_>>(),
        "miss_equivalent_tokens_per_hour": tally.bill.report(),
        "miss_equivalent_reply_tokens_per_hour": tally.reply_bill.report(),
        "tokens_per_hour_per_npc": tally.prompt_per_hour.iter().map(|&t| t as f64 / npcs.max(1) as f64).collect::<Vec<_>>(),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "requests": requests,
        "by_kind": tally.kinds.iter().map(|(kind, k)| (kind.to_string(), json!({
            "requests": k.requests, "prompt_tokens": k.prompt, "completion_tokens": k.completion,
        }))).collect::<serde_json::Map<_, _>>(),
        "summary_share": share(summary_tokens as f64, all_tokens as f64),
        "cache_prefix_share": {
            "all": mean(&all_shares),
            "replies": mean(&tally.reply_shares),
            "summaries": mean(&tally.summary_shares),
        },
        "cached_token_share": share(prompt as f64 - uncached, prompt as f64),
        "cached_reply_token_share": share(tally.reply_tokens.1, tally.reply_tokens.0),
        "max_reply_prompt_tokens": tally.max_reply_prompt,
        "per_npc_prompt_tokens": tally.per_npc_prompt,
    })
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
