//! What one strategy's requests cost, counted as they are sent, and its report.

use std::collections::BTreeMap;

use bevy_npc_memory::memory::{PromptMessage, estimate_prompt_tokens, estimate_tokens};
use serde_json::{Value, json};

use super::SHORT_CACHE_TTL;
use crate::billing::Bill;

/// Requests, prompt tokens and completion tokens of one kind of request.
#[derive(Clone, Debug, Default)]
struct KindTally {
    requests: u64,
    prompt: u64,
    completion: u64,
}

/// Everything counted for one strategy.
#[derive(Clone, Debug)]
pub(super) struct Tally {
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
    pub(super) fn new(npcs: usize, hours: usize, hit_price: f64) -> Self {
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
    pub(super) fn count(
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

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

pub(super) fn report(tally: &Tally, npcs: usize) -> Value {
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
