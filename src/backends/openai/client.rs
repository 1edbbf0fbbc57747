//! The OpenAI-compatible HTTP backend.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use reqwest::header::{CONTENT_TYPE, HeaderMap, RETRY_AFTER};

use super::config::{ApiKey, OpenAiConfig};
use super::redact::Redactor;
use super::retry_after;
use super::sse::SseReader;
use super::structured;
use super::think::{ThinkFilter, strip_think};
use super::tool_calls::{StreamedCalls, whole_calls};
use super::wire::{ChatCompletion, ChatCompletionRequest, StreamOptions, Tool};
use crate::backends::AbortOnDrop;
use crate::backends::{ActionChoice, call_object};
use crate::backends::{
    BackendError, BackendFuture, ChatBackend, ChatRequest, ChatResponse, Progress, Purpose,
    ResponsePart,
};
use crate::memory::ActionSpec;
use failures::{Failure, error_chain};

mod failures;

/// Talks to any server that speaks OpenAI's `/chat/completions`: DeepSeek,
/// Doubao/Ark, OpenAI, Ollama, llama.cpp's `llama-server`, and most others.
///
/// Replies stream; summaries do not. An NPC's actions are offered as function
/// `tools`, and the model's `tool_calls` (whole, or streamed in pieces) come back
/// as [`ChatResponse::action_calls`](crate::backends::ChatResponse::action_calls);
/// llama.cpp's server needs `--jinja` for them. Failures are retried as [`RetryPolicy`]
/// describes. Reasoning is kept out of replies. What is read from the server is
/// capped by [`ResponseLimits`]. Neither the API key nor credentials in the
/// `base_url` appear in `Debug` output, errors or logs.
///
/// [`RetryPolicy`]: super::RetryPolicy
/// [`ResponseLimits`]: super::ResponseLimits
#[derive(Clone)]
pub struct OpenAiBackend {
    inner: Arc<Inner>,
}

struct Inner {
    config: OpenAiConfig,
    key: Option<ApiKey>,
    client: reqwest::Client,
    endpoint: String,
    redactor: Redactor,
}

impl OpenAiBackend {
    /// A backend for `config`, with the key read from `config.api_key_env`. Fails
    /// when that variable is named but not set.
    pub fn new(config: OpenAiConfig) -> Result<Self, BackendError> {
        let key = match &config.api_key_env {
            Some(var) => Some(
                ApiKey::from_env(var).ok_or_else(|| BackendError::MissingKey {
                    backend: config.provider.clone(),
                    var: var.clone(),
                })?,
            ),
            None => None,
        };
        Self::build(config, key)
    }

    /// A backend with a key the game obtained itself.
    pub fn with_api_key(config: OpenAiConfig, key: ApiKey) -> Result<Self, BackendError> {
        Self::build(config, Some(key))
    }

    fn build(config: OpenAiConfig, key: Option<ApiKey>) -> Result<Self, BackendError> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.read_timeout)
            .build()
            .map_err(|error| {
                BackendError::Other(format!("could not set up the HTTP client: {error}"))
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                endpoint: config.endpoint(),
                redactor: Redactor::new(&config.base_url, key.as_ref().map(ApiKey::expose)),
                config,
                key,
                client,
            }),
        })
    }

    /// The settings in use.
    pub fn config(&self) -> &OpenAiConfig {
        &self.inner.config
    }
}

impl fmt::Debug for OpenAiBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiBackend")
            .field("config", &self.inner.config)
            .field("key", &self.inner.key)
            .finish()
    }
}

impl ChatBackend for OpenAiBackend {
    fn name(&self) -> &str {
        &self.inner.config.provider
    }

    fn complete(&self, request: ChatRequest, progress: Progress) -> BackendFuture {
        let inner = self.inner.clone();
        let call = async move { inner.complete(request, progress).await };
        if tokio::runtime::Handle::try_current().is_ok() {
            // Already on a tokio runtime (the game's own): reqwest can run in place.
            return Box::pin(call);
        }
        Box::pin(on_shared_runtime(self.name().to_owned(), call))
    }
}

/// reqwest needs a tokio reactor, and the plugin runs requests on Bevy's task
/// pool. Off a tokio runtime, requests run on one small runtime every HTTP backend
/// shares. Dropping the returned future aborts the request there.
async fn on_shared_runtime(
    backend: String,
    call: impl Future<Output = Result<ChatResponse, BackendError>> + Send + 'static,
) -> Result<ChatResponse, BackendError> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    let runtime = RUNTIME.get_or_init(|| {
        // One worker is plenty: the tasks wait on the network.
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("npc-memory-http")
            .enable_all()
            .build()
            .map_err(|error| error.to_string())
    });
    let runtime = runtime.as_ref().map_err(|error| {
        BackendError::Other(format!(
            "{backend}: could not start the HTTP runtime: {error}"
        ))
    })?;
    let join = runtime.spawn(call);
    let _abort = AbortOnDrop(join.abort_handle());
    match join.await {
        Ok(result) => result,
        // The plugin's panic guard reports it as `BackendError::Panicked`.
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        Err(_) => Err(BackendError::Cancelled),
    }
}

/// Drops the calls of actions this request did not offer, all of them under
/// [`ActionChoice::Off`]: a server may return tool calls it was not asked for, and
/// only what the game offered may ever run. The words, if any, stay the reply.
fn only_offered_calls(mut response: ChatResponse, offered: &[ActionSpec]) -> ChatResponse {
    let returned = response.action_calls.len();
    (response.action_calls).retain(|call| offered.iter().any(|action| action.name == call.name));
    let dropped = returned - response.action_calls.len();
    if dropped > 0 {
        tracing::warn!("the server returned {dropped} call(s) of actions not offered; dropped");
    }
    response
}

impl Inner {
    async fn complete(
        &self,
        request: ChatRequest,
        progress: Progress,
    ) -> Result<ChatResponse, BackendError> {
        let config = &self.config;
        let summary = request.purpose() == Purpose::Summary;
        let offered: &[ActionSpec] = if config.action_choice == ActionChoice::Off {
            &[]
        } else {
            &request.actions
        };
        let structured = config.structured_actions && !offered.is_empty();
        let messages = if structured {
            let offered: Vec<&ActionSpec> = offered.iter().collect();
            Cow::Owned(call_object::with_instructions(
                &request.messages,
                &offered,
                true,
            ))
        } else {
            Cow::Borrowed(&request.messages)
        };
        let stream = !summary && config.stream && !structured;
        let body = ChatCompletionRequest {
            model: match (&config.summary_model, summary) {
                (Some(model), true) => model,
                _ => &config.model,
            },
            messages: &messages,
            stream,
            max_tokens: if summary {
                config.summary_max_tokens
            } else {
                config.max_tokens
            },
            temperature: if summary {
                config.summary_temperature
            } else {
                config.temperature
            },
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
            tools: if structured {
                Vec::new()
            } else {
                offered.iter().map(Tool::function).collect()
            },
            tool_choice: (!structured
                && !offered.is_empty()
                && config.action_choice == ActionChoice::Required)
                .then_some("required"),
            response_format: structured.then(|| structured::response_format(offered)),
            prompt_cache_key: config
                .cache_routing
                .cache_key(&request.npc, request.purpose()),
            id_slot: config.cache_routing.slot(&request.npc),
        };
        // Serialized once; every retry sends the same bytes.
        let body = serde_json::to_vec(&body).map_err(|error| {
            BackendError::Other(format!("could not encode the request: {error}"))
        })?;

        let mut retry = 0;
        loop {
            let mut shown = false;
            match self.attempt(&body, stream, &progress, &mut shown).await {
                Ok(response) if structured => return self.structured_call(response),
                Ok(response) => return Ok(only_offered_calls(response, offered)),
                Err(failure) if failure.retryable && !shown && retry < config.retry.max_retries => {
                    let wait = config.retry.delay(retry, failure.retry_after, jitter());
                    tracing::debug!(
                        target: crate::trace::TELEMETRY_TARGET,
                        provider = %config.provider, retry = retry + 1, ?wait,
                        error = %failure.error, "retrying"
                    );
                    if failure.error.rate_limit().is_some() {
                        progress.rate_limited(failure.retry_after);
                    }
                    progress.retrying();
                    tokio::time::sleep(wait).await;
                    retry += 1;
                }
                Err(failure) => return Err(failure.error),
            }
        }
    }

    async fn attempt(
        &self,
        body: &[u8],
        stream: bool,
        progress: &Progress,
        shown: &mut bool,
    ) -> Result<ChatResponse, Failure> {
        let mut request = self
            .client
            .post(&self.endpoint)
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(key) = &self.key {
            request = request.bearer_auth(key.expose());
        }
        let mut response = request
            .send()
            .await
            .map_err(|error| self.transport(&error))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            // A broken error body is no worse than a short one: keep what came.
            let mut body = Vec::new();
            let limit = self.config.limits.error_body;
            let over = read_capped(&mut response, limit, &mut body)
                .await
                .unwrap_or(false);
            return Err(self.status_failure(status, retry_after, &body, over));
        }
        if stream {
            self.read_stream(response, progress, shown).await
        } else {
            self.read_whole(response).await
        }
    }

    async fn read_whole(&self, mut response: reqwest::Response) -> Result<ChatResponse, Failure> {
        let limit = self.config.limits.json_body;
        let declared = response.content_length().unwrap_or(0);
        if declared > limit as u64 {
            return Err(self.too_large(ResponsePart::Body, limit));
        }
        let mut bytes = Vec::with_capacity(declared as usize);
        if read_capped(&mut response, limit, &mut bytes)
            .await
            .map_err(|error| self.transport(&error))?
        {
            return Err(self.too_large(ResponsePart::Body, limit));
        }
        let mut completion: ChatCompletion = serde_json::from_slice(&bytes)
            .map_err(|error| self.malformed(format!("invalid JSON: {error}")))?;
        let usage = completion.token_usage();
        let choice = completion
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| self.malformed("the reply has no choices".into()))?;
        let message = choice.message.unwrap_or_default();
        let content = message.content.unwrap_or_default();
        let action_calls = whole_calls(message.tool_calls.unwrap_or_default())
            .map_err(|reason| self.malformed(reason))?;
        Ok(ChatResponse {
            content: if self.config.keep_reasoning {
                content
            } else {
                strip_think(&content)
            },
            usage,
            finish_reason: choice.finish_reason,
            action_calls,
        })
    }

    async fn read_stream(
        &self,
        mut response: reqwest::Response,
        progress: &Progress,
        shown: &mut bool,
    ) -> Result<ChatResponse, Failure> {
        let limits = self.config.limits;
        let mut reader = SseReader::new(limits.stream_event);
        let mut events = Vec::new();
        let mut received = 0usize;
        let mut filter = ThinkFilter::default();
        let mut content = String::new();
        let mut usage = None;
        let mut finish_reason = None;
        let mut calls = StreamedCalls::default();
        let mut done = false;
        'read: loop {
            let bytes = match response.chunk().await {
                Ok(Some(bytes)) => bytes,
                Ok(None) => break,
                // The connection broke mid-stream: the caller decides on a retry
                // from `shown`, so a partly shown reply is never repeated.
                Err(error) => {
                    let mut failure = self.truncated(content.chars().count());
                    failure.retryable = !*shown;
                    tracing::debug!(target: crate::trace::TELEMETRY_TARGET, provider = %self.config.provider, error = %self.scrub(error_chain(&error)), "stream broke");
                    return Err(failure);
                }
            };
            received = received.saturating_add(bytes.len());
            if received > limits.stream_total {
                return Err(self.too_large(ResponsePart::Stream, limits.stream_total));
            }
            reader
                .push(&bytes, &mut events)
                .map_err(|_| self.too_large(ResponsePart::StreamEvent, limits.stream_event))?;
            for data in events.drain(..) {
                if data.trim() == "[DONE]" {
                    done = true;
                    break 'read;
                }
                let mut chunk: ChatCompletion = serde_json::from_str(&data).map_err(|error| {
                    self.malformed(format!("invalid JSON in the stream: {error}"))
                })?;
                if let Some(chunk_usage) = chunk.token_usage() {
                    usage = Some(chunk_usage);
                }
                let Some(choice) = chunk.choices.into_iter().next() else {
                    continue;
                };
                let delta = choice.delta.unwrap_or_default();
                for piece in delta.tool_calls.into_iter().flatten() {
                    calls.push(piece).map_err(|reason| self.malformed(reason))?;
                }
                if let Some(text) = delta.content {
                    let visible = if self.config.keep_reasoning {
                        text
                    } else {
                        filter.push(&text)
                    };
                    *shown |= !visible.is_empty();
                    progress.delta(&visible);
                    content.push_str(&visible);
                }
                if choice.finish_reason.is_some() {
                    finish_reason = choice.finish_reason;
                }
            }
        }
        if !done && finish_reason.is_none() {
            return Err(self.truncated(content.chars().count()));
        }
        let rest = filter.finish();
        progress.delta(&rest);
        content.push_str(&rest);
        let action_calls = calls.finish().map_err(|reason| self.malformed(reason))?;
        Ok(ChatResponse {
            content,
            usage,
            finish_reason,
            action_calls,
        })
    }

    /// A structured answer read as the call it must be. A server that ignored the
    /// schema sent words, which are no call: malformed, and not retried. A call the
    /// token limit cut off says so, as the local model's does: a string argument
    /// the schema leaves unbounded can run on until the limit.
    fn structured_call(&self, mut response: ChatResponse) -> Result<ChatResponse, BackendError> {
        if response.action_calls.is_empty() {
            let cut = response.finish_reason.as_deref() == Some("length");
            let call = structured::read_call(&response.content).map_err(|reason| {
                match (cut, self.config.max_tokens) {
                    (true, Some(max_tokens)) => BackendError::MaxTokens {
                        backend: self.config.provider.clone(),
                        max_tokens,
                    },
                    (true, None) => {
                        self.malformed(format!("{reason}; the server's token limit cut it off"))
                            .error
                    }
                    (false, _) => self.malformed(reason).error,
                }
            })?;
            response.content.clear();
            response.action_calls.push(call);
            response.finish_reason = Some("tool_calls".to_owned());
        }
        Ok(response)
    }
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    retry_after::parse(headers.get(RETRY_AFTER)?.to_str().ok()?, SystemTime::now())
}

/// Reads the rest of `response` into `body`, stopping at `limit` bytes. True when
/// the server had more: the rest is never read, and dropping the response closes
/// the connection.
async fn read_capped(
    response: &mut reqwest::Response,
    limit: usize,
    body: &mut Vec<u8>,
) -> Result<bool, reqwest::Error> {
    while let Some(chunk) = response.chunk().await? {
        let room = limit.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok(true);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(false)
}

/// A number in [0, 1) that differs between calls and between processes.
fn jitter() -> f64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64);
    let mut x = nanos ^ COUNTER.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    (x >> 11) as f64 / (1u64 << 53) as f64
}
