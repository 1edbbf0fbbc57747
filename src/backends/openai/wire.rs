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
