//! Provider presets and settings of the OpenAI-compatible backend.

use std::fmt;
use std::time::Duration;

use crate::backends::{ActionChoice, Purpose};
use crate::memory::NpcId;

/// An API key. It is read at run time from the environment (or given by the game),
/// never stored in a persona file or a save, and redacted in `Debug` and `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Box<str>);

impl ApiKey {
    /// A key from a string the game obtained itself, e.g. from its own config.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into().into_boxed_str())
    }

    /// The key in the environment variable `var`, if it is set and not empty.
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var)
            .ok()
            .filter(|key| !key.trim().is_empty())
            .map(|key| Self::new(key.trim()))
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// When and how often a failed request is tried again.
///
/// Timeouts, connection errors, HTTP 408, 429 and 5xx are retried with exponential
/// backoff and jitter, honouring `Retry-After`. 400, 401, 403 and 404 never are.
/// A streamed reply that already showed text is never retried, so a UI never shows
/// the same words twice.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff; it doubles with each retry.
    pub base_delay: Duration,
    /// The longest backoff, and the longest `Retry-After` honoured.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The wait before retry number `retry` (0-based): the server's `Retry-After`
    /// when it gave one, else exponential backoff with "equal jitter" (half fixed,
    /// half random), so many NPCs hitting a rate limit do not retry in lockstep.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(self.max_delay);
        }
        let exponential = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry))
            .min(self.max_delay);
        exponential.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
    }
}

/// The most bytes read from a server for each part of an answer. A server that
/// sends more gets [`BackendError::ResponseTooLarge`] (or, for an error body, an
/// error that keeps only the start), and reading stops there: a misbehaving or
/// hostile server can neither fill memory nor keep an NPC waiting.
///
/// The defaults are far above what a chat reply needs. Raise them only for a
/// model that legitimately sends more, such as one streaming very long reasoning.
///
/// ```
/// use bevy_npc_memory::backends::{OpenAiConfig, ResponseLimits};
///
/// let config = OpenAiConfig::deepseek().with_limits(ResponseLimits {
///     stream_total: 32 << 20,
///     ..ResponseLimits::default()
/// });
/// assert_eq!(config.limits.stream_event, 1 << 20);
/// ```
///
/// [`BackendError::ResponseTooLarge`]: crate::backends::BackendError::ResponseTooLarge
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseLimits {
    /// The body of an error status (4xx, 5xx). Only its first few hundred
    /// characters reach the error message. Default 64 KiB.
    pub error_body: usize,
    /// The whole body of an answer that is not streamed (summaries, and replies
    /// when streaming is off). Default 4 MiB.
    pub json_body: usize,
    /// Everything one streamed reply sends, framing and reasoning included: each
    /// token costs about 100 to 200 bytes of framing. Default 8 MiB.
    pub stream_total: usize,
    /// One line of a stream, and the data of one event. Default 1 MiB.
    pub stream_event: usize,
}

impl Default for ResponseLimits {
    fn default() -> Self {
        Self {
            error_body: 64 << 10,
            json_body: 4 << 20,
            stream_total: 8 << 20,
            stream_event: 1 << 20,
        }
    }
}

/// Settings of an [`OpenAiBackend`](super::OpenAiBackend). Start from a preset.
///
/// ```
/// use bevy_npc_memory::backends::OpenAiConfig;
///
/// let config = OpenAiConfig::deepseek().with_summary_model("deepseek-chat");
/// assert_eq!(config.api_key_env.as_deref(), Some("DEEPSEEK_API_KEY"));
/// ```
///
/// `Debug` output shows `base_url` without its userinfo or query values, since a
/// URL may carry credentials.
#[derive(Clone, PartialEq)]
pub struct OpenAiConfig {
    /// A short name for logs and errors, e.g. `"deepseek"`.
    pub provider: String,
    /// The API root, up to and including `/v1` (or the provider's equivalent).
    /// Requests go to `{base_url}/chat/completions`; a query such as
    /// `?api-version=...` stays at the end. Credentials written here (as
    /// `user:pass@` or a `key`/`token` query parameter) are sent, but redacted from
    /// errors, logs and `Debug` output.
    pub base_url: String,
    /// The model for replies.
    pub model: String,
    /// A different model for summaries, e.g. a cheaper one.
    pub summary_model: Option<String>,
    /// The environment variable holding the API key. `None` for local servers.
    pub api_key_env: Option<String>,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// How long the server may stay silent while answering.
    pub read_timeout: Duration,
    /// Most tokens to generate per reply.
    pub max_tokens: Option<u32>,
    /// Most tokens to generate per summary; summaries should stay short.
    pub summary_max_tokens: Option<u32>,
    /// Sampling temperature of replies.
    pub temperature: Option<f32>,
    /// Sampling temperature of summaries; low, so summaries stay factual.
    pub summary_temperature: Option<f32>,
    /// Whether replies stream (summaries never do).
    pub stream: bool,
    /// Keep reasoning (`reasoning_content`, `<think>` blocks) in replies. Off by
    /// default: reasoning stays out of the NPC's words and its memory.
    pub keep_reasoning: bool,
    /// Whether replies may, must (`tool_choice: "required"`), or must not call
    /// the offered actions. With `Off` no tools are sent.
    pub action_choice: ActionChoice,
    /// Offer actions as structured output instead of `tools`: described in the
    /// system prompt, with a `response_format` JSON schema of one call object,
    /// `{"name": ..., "arguments": ...}`, which the answer is read back from. For
    /// servers whose chat template cannot show tools, such as llama.cpp's
    /// `llama-server` with SmolLM2. Every answer to a request with actions is then
    /// a call (unless `action_choice` is `Off`), and it is not streamed. A call
    /// that `max_tokens` cut off fails as [`BackendError::MaxTokens`](crate::backends::BackendError::MaxTokens).
    pub structured_actions: bool,
    /// Retries and backoff.
    pub retry: RetryPolicy,
    /// The most bytes read from the server for each part of an answer.
    pub limits: ResponseLimits,
    /// Whether each NPC's requests are steered to the server cache that holds its
    /// last prompt. Off by default.
    pub cache_routing: CacheRouting,
}

/// How an NPC's requests are steered to the server-side cache that holds its last
/// prompt, so the next one is served from it. Which fits depends on the server; see
/// `docs/backends.md`, "Prompt caches".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheRouting {
    /// Nothing extra is sent; the server's own matching decides (llama.cpp's
    /// server picks the slot whose cached prompt is most alike, OpenAI routes on
    /// the prompt's start).
    #[default]
    Off,
    /// OpenAI's `prompt_cache_key`: `"{npc}/{purpose}"`, so an NPC's replies (and
    /// its summaries) land where their shared prefix is cached.
    PromptCacheKey,
    /// llama.cpp's `id_slot`: each NPC keeps to one of the server's `slots`
    /// (its `--parallel`), chosen by a stable hash of its id, so another NPC's
    /// request does not evict its prompt. Requests for a busy slot wait for it.
    LlamaSlot {
        /// The server's slot count.
        slots: u32,
    },
}

impl CacheRouting {
    /// The `prompt_cache_key` to send for a request, if any.
    pub(crate) fn cache_key(self, npc: &NpcId, purpose: Purpose) -> Option<String> {
        (self == CacheRouting::PromptCacheKey).then(|| format!("{npc}/{}", purpose.as_str()))
    }

    /// The llama.cpp slot to send a request to, if any: the same for every
    /// request of one NPC, in every run and on every machine.
    pub(crate) fn slot(self, npc: &NpcId) -> Option<u32> {
        match self {
            CacheRouting::LlamaSlot { slots } if slots > 0 => {
                // FNV-1a: std's hasher may change between Rust releases.
                let hash = npc.as_str().bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
                Some((hash % u64::from(slots)) as u32)
            }
            _ => None,
        }
    }
}

impl OpenAiConfig {
    /// Any OpenAI-compatible server.
    pub fn custom(
        provider: impl Into<String>,
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        Self {
            provider: provider.into(),
            base_url: base_url.into(),
            model: model.into(),
            summary_model: None,
            api_key_env: None,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(60),
            max_tokens: Some(512),
            summary_max_tokens: Some(256),
            temperature: Some(0.7),
            summary_temperature: Some(0.2),
            stream: true,
            keep_reasoning: false,
            action_choice: ActionChoice::Auto,
            structured_actions: false,
            retry: RetryPolicy::default(),
            limits: ResponseLimits::default(),
            cache_routing: CacheRouting::Off,
        }
    }

    /// DeepSeek, key in `DEEPSEEK_API_KEY`.
    pub fn deepseek() -> Self {
        Self::custom("deepseek", "https://api.deepseek.com/v1", "deepseek-chat")
            .with_api_key_env("DEEPSEEK_API_KEY")
    }

    /// Doubao on Volcengine Ark, key in `ARK_API_KEY`. `model` is your model or
    /// endpoint id from the Ark console.
    pub fn doubao(model: impl Into<String>) -> Self {
        Self::custom("doubao", "https://ark.cn-beijing.volces.com/api/v3", model)
            .with_api_key_env("ARK_API_KEY")
    }

    /// OpenAI, key in `OPENAI_API_KEY`.
    pub fn openai() -> Self {
        Self::custom("openai", "https://api.openai.com/v1", "gpt-4o-mini")
            .with_api_key_env("OPENAI_API_KEY")
    }

    /// A local Ollama server; no key.
    pub fn ollama(model: impl Into<String>) -> Self {
        Self::custom("ollama", "http://localhost:11434/v1", model)
    }

    /// A llama.cpp `llama-server`; no key. It serves whichever model it loaded.
    pub fn llama_cpp(base_url: impl Into<String>) -> Self {
        Self::custom("llama.cpp", base_url, "default")
    }

    /// Uses another model for replies.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Uses another model for summaries.
    pub fn with_summary_model(mut self, model: impl Into<String>) -> Self {
        self.summary_model = Some(model.into());
        self
    }

    /// Reads the API key from another environment variable.
    pub fn with_api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key_env = Some(var.into());
        self
    }

    /// Uses another API root.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Steers each NPC's requests to the cache that holds its last prompt (see
    /// [`CacheRouting`]).
    pub fn with_cache_routing(mut self, routing: CacheRouting) -> Self {
        self.cache_routing = routing;
        self
    }

    /// Uses other limits on what is read from the server.
    pub fn with_limits(mut self, limits: ResponseLimits) -> Self {
        self.limits = limits;
        self
    }

    pub(crate) fn endpoint(&self) -> String {
        let (root, query) = match self.base_url.split_once('?') {
            Some((root, query)) => (root, Some(query)),
            None => (self.base_url.as_str(), None),
        };
        let mut endpoint = format!("{}/chat/completions", root.trim_end_matches('/'));
        if let Some(query) = query {
            endpoint.push('?');
            endpoint.push_str(query);
        }
        endpoint
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every field, so nothing is hidden by accident; only the URL is redacted.
        let Self {
            provider,
            base_url,
            model,
            summary_model,
            api_key_env,
            connect_timeout,
            read_timeout,
            max_tokens,
            summary_max_tokens,
            temperature,
            summary_temperature,
            stream,
            keep_reasoning,
            action_choice,
            structured_actions,
            retry,
            limits,
            cache_routing,
        } = self;
        f.debug_struct("OpenAiConfig")
            .field("provider", provider)
            .field("base_url", &super::redact::redact_url(base_url))
            .field("model", model)
            .field("summary_model", summary_model)
            .field("api_key_env", api_key_env)
            .field("connect_timeout", connect_timeout)
            .field("read_timeout", read_timeout)
            .field("max_tokens", max_tokens)
            .field("summary_max_tokens", summary_max_tokens)
            .field("temperature", temperature)
            .field("summary_temperature", summary_temperature)
            .field("stream", stream)
            .field("keep_reasoning", keep_reasoning)
            .field("action_choice", action_choice)
            .field("structured_actions", structured_actions)
            .field("retry", retry)
            .field("limits", limits)
            .field("cache_routing", cache_routing)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_stays_capped_and_honours_retry_after() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay(0, None, 1.0), Duration::from_millis(500));
        assert_eq!(policy.delay(1, None, 1.0), Duration::from_millis(1000));
        assert_eq!(policy.delay(1, None, 0.0), Duration::from_millis(500));
        assert_eq!(policy.delay(30, None, 1.0), policy.max_delay);
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(3)), 0.5),
            Duration::from_secs(3)
        );
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(3600)), 0.5),
            policy.max_delay
        );
        assert_eq!(policy.delay(0, Some(Duration::MAX), 0.5), policy.max_delay);
    }

    #[test]
    fn keys_never_show() {
        let key = ApiKey::new("sk-very-secret");
        assert!(!format!("{key:?} {key}").contains("very-secret"));
    }

    #[test]
    fn the_endpoint_tolerates_a_trailing_slash() {
        assert_eq!(
            OpenAiConfig::llama_cpp("http://127.0.0.1:8080/v1/").endpoint(),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
    }

    #[test]
    fn a_query_in_the_base_url_stays_at_the_end_of_the_endpoint() {
        assert_eq!(
            OpenAiConfig::custom("azure", "https://host/v1/?api-version=2024-06-01", "m")
                .endpoint(),
            "https://host/v1/chat/completions?api-version=2024-06-01"
        );
    }

    #[test]
    fn debug_output_redacts_credentials_in_the_url() {
        let config = OpenAiConfig::custom("x", "https://bob:hunter22@host/v1?key=k-123456", "m");
        let shown = format!("{config:?}");
        assert!(
            shown.contains("https://<redacted>@host/v1?key=<redacted>"),
            "{shown}"
        );
        assert!(
            !shown.contains("hunter22") && !shown.contains("k-123456"),
            "{shown}"
        );
    }

    #[test]
    fn cache_routing_keys_each_npc_the_same_way_every_time() {
        let (echo, rusty) = (NpcId::new("echo7"), NpcId::new("rusty"));
        let key = CacheRouting::PromptCacheKey;
        assert_eq!(
            key.cache_key(&echo, Purpose::Reply).as_deref(),
            Some("echo7/reply")
        );
        assert_eq!(
            key.cache_key(&echo, Purpose::Summary).as_deref(),
            Some("echo7/summary")
        );
        assert_eq!(key.slot(&echo), None);
        let slots = CacheRouting::LlamaSlot { slots: 4 };
        assert_eq!(slots.cache_key(&echo, Purpose::Reply), None);
        // FNV-1a of the id, fixed across runs and machines.
        assert_eq!(slots.slot(&echo), slots.slot(&NpcId::new("echo7")));
        assert!(slots.slot(&echo).unwrap() < 4 && slots.slot(&rusty).unwrap() < 4);
        let spread: std::collections::HashSet<u32> = (0..64)
            .filter_map(|i| slots.slot(&NpcId::new(format!("npc{i}"))))
            .collect();
        assert_eq!(spread.len(), 4, "64 NPCs use every slot");
        assert_eq!(CacheRouting::LlamaSlot { slots: 0 }.slot(&echo), None);
        assert_eq!(CacheRouting::Off.slot(&echo), None);
    }
}
