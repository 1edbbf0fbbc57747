//! The JSON of `/chat/completions`. Unknown fields are ignored, so vendor extras
//! never break parsing.

use serde::{Deserialize, Serialize};

use super::tool_calls::WireToolCall;
use crate::backends::TokenUsage;
use crate::memory::{ActionSpec, PromptMessage};

#[derive(Serialize)]
pub(crate) struct ChatCompletionRequest<'a> {
    pub(crate) model: &'a str,
    pub(crate) messages: &'a [PromptMessage],
    pub(crate) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stream_options: Option<StreamOptions>,
    /// The actions the NPC may call; left out when there are none, since some
    /// servers refuse an empty list.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tools: Vec<Tool<'a>>,
    /// `"required"` or nothing: `"auto"` is every server's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_choice: Option<&'static str>,
    /// The JSON schema of a call object, when actions go as structured output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_format: Option<serde_json::Value>,
    /// OpenAI's routing key for its prompt cache ([`CacheRouting`]).
    ///
    /// [`CacheRouting`]: super::CacheRouting
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) prompt_cache_key: Option<String>,
    /// llama.cpp's slot for this request ([`CacheRouting`]).
    ///
    /// [`CacheRouting`]: super::CacheRouting
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id_slot: Option<u32>,
}

/// An action offered as an OpenAI function tool: its name, description and JSON
/// Schema are exactly the `function` object.
#[derive(Serialize)]
pub(crate) struct Tool<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) function: &'a ActionSpec,
}

impl<'a> Tool<'a> {
    pub(crate) fn function(spec: &'a ActionSpec) -> Self {
        Self {
            kind: "function",
            function: spec,
        }
    }
}

#[derive(Serialize)]
pub(crate) struct StreamOptions {
    pub(crate) include_usage: bool,
}

#[derive(Deserialize)]
pub(crate) struct ChatCompletion {
    #[serde(default)]
    pub(crate) choices: Vec<Choice>,
    pub(crate) usage: Option<Usage>,
    /// llama.cpp's server adds its own timings, with how much of the prompt its
    /// cache served.
    pub(crate) timings: Option<Timings>,
}

impl ChatCompletion {
    /// The usage as billed, with cached tokens from whichever shape the server
    /// reports them in: OpenAI's `prompt_tokens_details.cached_tokens`,
    /// DeepSeek's `prompt_cache_hit_tokens`, or llama.cpp's `timings.cache_n`.
    pub(crate) fn token_usage(&mut self) -> Option<TokenUsage> {
        let timings = self.timings.take();
        let mut usage = self.usage.take().map(TokenUsage::from);
        if let Some(Timings {
            cache_n: Some(cached),
            prompt_n,
        }) = timings
        {
            let usage = usage.get_or_insert(TokenUsage {
                // Counts from a server: a hostile one must not overflow them.
                prompt_tokens: cached.saturating_add(prompt_n.unwrap_or(0)),
                ..TokenUsage::default()
            });
            usage.cached_tokens = usage.cached_tokens.or(Some(cached));
        }
        usage
    }
}

/// The part of llama.cpp's `timings` that counts tokens.
#[derive(Deserialize)]
pub(crate) struct Timings {
    /// Prompt tokens served from the server's cache.
    pub(crate) cache_n: Option<u64>,
    /// Prompt tokens evaluated afresh.
    pub(crate) prompt_n: Option<u64>,
}

#[derive(Deserialize)]
pub(crate) struct Choice {
    pub(crate) message: Option<Message>,
    pub(crate) delta: Option<Message>,
    pub(crate) finish_reason: Option<String>,
}

/// A message or a streamed delta. Reasoning models (DeepSeek-R1 and others) also
/// send `reasoning_content`; it is deliberately not read, so reasoning never enters
/// the NPC's words or memory.
#[derive(Deserialize, Default)]
pub(crate) struct Message {
    pub(crate) content: Option<String>,
    /// Calls of the offered actions: whole in a message, in pieces in deltas.
    pub(crate) tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    pub(crate) prompt_tokens: u64,
    #[serde(default)]
    pub(crate) completion_tokens: u64,
    pub(crate) prompt_tokens_details: Option<PromptTokensDetails>,
    /// DeepSeek reports cache hits here instead.
    pub(crate) prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize)]
pub(crate) struct PromptTokensDetails {
    pub(crate) cached_tokens: Option<u64>,
}

impl From<Usage> for TokenUsage {
    fn from(usage: Usage) -> Self {
        TokenUsage {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cached_tokens: usage
                .prompt_tokens_details
                .and_then(|details| details.cached_tokens)
                .or(usage.prompt_cache_hit_tokens),
        }
    }
}

/// The error object most providers return.
#[derive(Deserialize)]
pub(crate) struct ErrorBody {
    pub(crate) error: ErrorDetail,
}

#[derive(Deserialize)]
pub(crate) struct ErrorDetail {
    pub(crate) message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage_of(json: &str) -> Option<TokenUsage> {
        serde_json::from_str::<ChatCompletion>(json)
            .expect("valid")
            .token_usage()
    }

    #[test]
    fn cached_tokens_are_read_from_every_shape_servers_send() {
        let openai = r#"{"choices":[],"usage":{"prompt_tokens":2048,"completion_tokens":9,
            "prompt_tokens_details":{"cached_tokens":1920}}}"#;
        let deepseek = r#"{"choices":[],"usage":{"prompt_tokens":700,"completion_tokens":9,
            "prompt_cache_hit_tokens":640,"prompt_cache_miss_tokens":60}}"#;
        let llama = r#"{"choices":[],"usage":{"prompt_tokens":640,"completion_tokens":9},
            "timings":{"cache_n":621,"prompt_n":19,"prompt_ms":109.0}}"#;
        assert_eq!(usage_of(openai).unwrap().cached_tokens, Some(1920));
        assert_eq!(usage_of(deepseek).unwrap().cached_tokens, Some(640));
        let llama = usage_of(llama).unwrap();
        assert_eq!((llama.prompt_tokens, llama.cached_tokens), (640, Some(621)));
    }

    #[test]
    fn timings_alone_still_count_the_prompt_and_the_usage_shape_wins() {
        // A streamed llama.cpp chunk may carry timings without usage.
        let only_timings = r#"{"choices":[],"timings":{"cache_n":100,"prompt_n":28}}"#;
        let usage = usage_of(only_timings).unwrap();
        assert_eq!((usage.prompt_tokens, usage.cached_tokens), (128, Some(100)));
        // When both say, the provider's own usage is what it bills.
        let both = r#"{"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":1,
            "prompt_tokens_details":{"cached_tokens":32}},"timings":{"cache_n":40,"prompt_n":10}}"#;
        assert_eq!(usage_of(both).unwrap().cached_tokens, Some(32));
        assert_eq!(usage_of(r#"{"choices":[]}"#), None);
        // Hostile counts saturate instead of overflowing.
        let huge = format!(
            r#"{{"choices":[],"timings":{{"cache_n":{},"prompt_n":9}}}}"#,
            u64::MAX
        );
        assert_eq!(usage_of(&huge).unwrap().prompt_tokens, u64::MAX);
        // Cache counts absent everywhere: unknown, not zero.
        let plain = r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}}"#;
        assert_eq!(usage_of(plain).unwrap().cached_tokens, None);
    }
}
