//! Prompt-cache billing as providers apply it: which part of a prompt's cacheable
//! prefix is billed as a cache hit, and what a request then costs in
//! miss-equivalent tokens (a hit costs a fraction of a miss).
//!
//! - **OpenAI** caches only prompts of 1,024 tokens or more, and counts hits in
//!   steps of 128 tokens.
//! - **DeepSeek** counts hits in units of 64 tokens.
//! - **Ideal** bills every prefix token as a hit: the bound no provider beats.

use serde_json::{Value, json};

/// How a provider turns a cacheable prefix into billed cache hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    /// Every prefix token is a hit.
    Ideal,
    /// Prompts of 1,024 tokens or more, hits in 128-token steps.
    OpenAi,
    /// Hits in 64-token units.
    DeepSeek,
}

impl Provider {
    /// Every provider, in report order.
    pub const ALL: [Provider; 3] = [Provider::Ideal, Provider::OpenAi, Provider::DeepSeek];

    /// The provider's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Ideal => "ideal",
            Provider::OpenAi => "openai",
            Provider::DeepSeek => "deepseek",
        }
    }

    /// Tokens billed as cache hits for a `prompt`-token request whose first
    /// `prefix` tokens repeat an earlier request's start.
    pub fn cached(self, prompt: usize, prefix: usize) -> usize {
        let prefix = prefix.min(prompt);
        match self {
            Provider::Ideal => prefix,
            Provider::OpenAi if prompt < 1024 || prefix < 1024 => 0,
            Provider::OpenAi => prefix / 128 * 128,
            Provider::DeepSeek => prefix / 64 * 64,
        }
    }
}

/// What a request costs in miss-equivalent tokens when a hit costs `hit_price` of a
/// miss.
pub fn miss_equivalent(prompt: usize, cached: usize, hit_price: f64) -> f64 {
    let cached = cached.min(prompt);
    (prompt - cached) as f64 + hit_price * cached as f64
}

/// Miss-equivalent tokens per hour, for each provider and both cache lifetimes.
#[derive(Clone, Debug)]
pub struct Bill {
    hit_price: f64,
    /// Indexed by provider, then hour: a cache that lasts the whole session.
    session: [Vec<f64>; 3],
    /// The same with a prefix unused for 5 minutes gone.
    short_ttl: [Vec<f64>; 3],
}

impl Bill {
    /// An empty bill over `hours` hours.
    pub fn new(hours: usize, hit_price: f64) -> Self {
        Self {
            hit_price,
            session: std::array::from_fn(|_| vec![0.0; hours]),
            short_ttl: std::array::from_fn(|_| vec![0.0; hours]),
        }
    }

    /// Adds one request of `prompt` tokens in `hour` whose first `prefix` tokens
    /// are cacheable with a session-long cache, and the first `short_prefix` with
    /// one that forgets a prefix unused for the short TTL.
    pub fn add(&mut self, hour: usize, prompt: usize, (prefix, short_prefix): (usize, usize)) {
        for (slot, provider) in Provider::ALL.into_iter().enumerate() {
            let cached = provider.cached(prompt, prefix);
            self.session[slot][hour] += miss_equivalent(prompt, cached, self.hit_price);
            let cached = provider.cached(prompt, short_prefix);
            self.short_ttl[slot][hour] += miss_equivalent(prompt, cached, self.hit_price);
        }
    }

    /// Miss-equivalent tokens in `hour` for `provider` with a session-long cache.
    pub fn session(&self, provider: Provider, hour: usize) -> f64 {
        self.session[provider as usize][hour]
    }

    /// `{"hit_price", "session": {provider: [per hour]}, "ttl_5min": {...}}`.
    pub fn report(&self) -> Value {
        let per_provider = |bills: &[Vec<f64>; 3]| {
            Provider::ALL
                .into_iter()
                .map(|p| {
                    let hours: Vec<f64> = bills[p as usize].iter().map(|t| t.round()).collect();
                    (p.name().to_owned(), json!(hours))
                })
                .collect::<serde_json::Map<_, _>>()
        };
        json!({
            "hit_price": self.hit_price,
            "session": per_provider(&self.session),
            "ttl_5min": per_provider(&self.short_ttl),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_round_hits_as_they_bill_them() {
        assert_eq!(Provider::Ideal.cached(1000, 999), 999);
        // OpenAI: nothing under 1,024 tokens, then whole 128-token steps.
        assert_eq!(Provider::OpenAi.cached(1000, 999), 0);
        assert_eq!(Provider::OpenAi.cached(3000, 1000), 0);
        assert_eq!(Provider::OpenAi.cached(3000, 1024), 1024);
        assert_eq!(Provider::OpenAi.cached(3000, 1300), 1280);
        // DeepSeek: whole 64-token units.
        assert_eq!(Provider::DeepSeek.cached(500, 130), 128);
        assert_eq!(Provider::DeepSeek.cached(500, 63), 0);
        // A prefix never counts past the prompt.
        assert_eq!(Provider::Ideal.cached(10, 50), 10);
    }

    #[test]
    fn a_hit_costs_its_price_and_a_cold_cache_costs_everything() {
        assert_eq!(miss_equivalent(1000, 900, 0.1), 190.0);
        assert_eq!(miss_equivalent(1000, 0, 0.1), 1000.0);
        let mut bill = Bill::new(2, 0.1);
        bill.add(1, 2048, (2048, 0));
        assert!((bill.session(Provider::OpenAi, 1) - 204.8).abs() < 1e-9);
        assert_eq!(bill.session(Provider::OpenAi, 0), 0.0);
        let report = bill.report();
        assert_eq!(report["ttl_5min"]["openai"][1], 2048.0);
        assert_eq!(report["session"]["deepseek"][1], 205.0);
    }
}
