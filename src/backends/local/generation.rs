//! One generation's settings, result and sampler chain.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use llama_cpp_2::sampling::LlamaSampler;

use super::status::GenerationStats;
use crate::backends::{ChatResponse, Purpose, TokenUsage};

/// How one generation may run.
pub(super) struct Limits {
    pub(super) max_tokens: u32,
    pub(super) temperature: f32,
    pub(super) stops: Vec<String>,
    pub(super) stream: bool,
    pub(super) calls: Calls,
}

/// Whether a generation may be an action call.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Calls {
    /// Words only.
    None,
    /// Words or one call.
    Maybe,
    /// One call.
    Only,
}

/// What one generation produced.
pub(super) struct Generation {
    pub(super) text: String,
    pub(super) prompt_tokens: usize,
    /// Prompt tokens the context held already, from the NPC's last request.
    pub(super) cached_tokens: usize,
    pub(super) generated: usize,
    pub(super) max_tokens: u32,
    pub(super) finish: &'static str,
    pub(super) prompt_time: Duration,
    pub(super) generation_time: Duration,
}

impl Generation {
    /// Two generations of one request counted as one.
    pub(super) fn plus(self, other: Generation) -> Generation {
        Generation {
            text: other.text,
            prompt_tokens: self.prompt_tokens + other.prompt_tokens,
            cached_tokens: self.cached_tokens + other.cached_tokens,
            generated: self.generated + other.generated,
            max_tokens: other.max_tokens,
            finish: other.finish,
            prompt_time: self.prompt_time + other.prompt_time,
            generation_time: self.generation_time + other.generation_time,
        }
    }

    pub(super) fn stats(&self, purpose: Purpose) -> GenerationStats {
        GenerationStats {
            purpose,
            prompt_tokens: self.prompt_tokens,
            cached_prompt_tokens: self.cached_tokens,
            prompt_time: self.prompt_time,
            generated_tokens: self.generated,
            generation_time: self.generation_time,
        }
    }

    pub(super) fn response(&self, content: String) -> ChatResponse {
        ChatResponse {
            content,
            usage: Some(TokenUsage {
                prompt_tokens: self.prompt_tokens as u64,
                completion_tokens: self.generated as u64,
                cached_tokens: Some(self.cached_tokens as u64),
            }),
            finish_reason: Some(self.finish.to_owned()),
            action_calls: Vec::new(),
        }
    }
}

/// Sampling for one request. Temperature 0 is greedy; otherwise the usual top-k,
/// top-p and min-p cut-offs. A light repetition penalty keeps small models from
/// looping on one phrase.
/// A grammar comes right after the penalty, before any cut-off, so the cut-offs
/// only ever choose among tokens it allows.
pub(super) fn sampler(
    temperature: f32,
    seed: Option<u32>,
    n_vocab: i32,
    grammar: Option<LlamaSampler>,
) -> LlamaSampler {
    static NEXT_SEED: AtomicU32 = AtomicU32::new(0);
    let seed = seed.unwrap_or_else(|| {
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .subsec_nanos();
        clock ^ NEXT_SEED.fetch_add(0x9e37_79b9, Ordering::Relaxed)
    });
    let mut chain = vec![LlamaSampler::penalties(n_vocab, 64, 1.1, 0.0, 0.0)];
    chain.extend(grammar);
    if temperature <= 0.0 {
        chain.push(LlamaSampler::greedy());
    } else {
        chain.extend([
            LlamaSampler::top_k(40),
            LlamaSampler::top_p(0.95, 1),
            LlamaSampler::min_p(0.05, 1),
            LlamaSampler::temp(temperature),
            LlamaSampler::dist(seed),
        ]);
    }
    LlamaSampler::chain_simple(chain)
}
