//! The OpenAI-compatible HTTP backend.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap, RETRY_AFTER};

use super::config::{ApiKey, OpenAiConfig};
use super::think::{ThinkFilter, strip_think};
use super::wire::{ChatCompletion, ChatCompletionRequest, ErrorBody, StreamOptions};
use crate::llm::{
    BackendError, BackendFuture, ChatBackend, ChatRequest, ChatResponse, Progress, Purpose,
    TokenUsage,
};

/// Talks to any server that speaks OpenAI's `/chat/completions`: DeepSeek,
/// Doubao/Ark, OpenAI, Ollama, llama.cpp's `llama-server`, and most others.
///
/// Replies stream; summaries do not. Failures are retried as [`RetryPolicy`]
/// describes. Reasoning is kept out of replies. The API key never appears in
/// `Debug` output, errors or logs.
///
/// [`RetryPolicy`]: super::RetryPolicy
#[derive(Clone)]
pub struct OpenAiBackend {
    inner: Arc<Inner>,
}

struct Inner {
    config: OpenAiConfig,
    key: Option<ApiKey>,
    client: reqwest::Client,
    endpoint: String,
}

/// Why one attempt failed, and whether another may follow.
struct Failure {
    error: BackendError,
    retryable: bool,
    retry_after: Option<Duration>,
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
        Box::pin(async move { inner.complete(request, progress).await })
    }
}

impl Inner {
    async fn complete(
        &self,
        request: ChatRequest,
        progress: Progress,
    ) -> Result<ChatResponse, BackendError> {
        let config = &self.config;
        let summary = request.purpose() == Purpose::Summary;
        let stream = !summary && config.stream;
        let body = ChatCompletionRequest {
            model: match (&config.summary_model, summary) {
                (Some(model), true) => model,
                _ => &config.model,
            },
            messages: &request.messages,
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
        };
        // Serialized once; every retry sends the same bytes.
        let body = serde_json::to_vec(&body).map_err(|error| {
            BackendError::Other(format!("could not encode the request: {error}"))
        })?;

        let mut retry = 0;
        loop {
            let mut shown = false;
            match self.attempt(&body, stream, &progress, &mut shown).await {
                Ok(response) => return Ok(response),
                Err(failure) if failure.retryable && !shown && retry < config.retry.max_retries => {
                    let wait = config.retry.delay(retry, failure.retry_after, jitter());
                    tracing::debug!(
                        target: crate::TELEMETRY_TARGET,
                        provider = %config.provider, retry = retry + 1, ?wait,
                        error = %failure.error, "retrying"
                    );
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
        let response = request
            .send()
            .await
            .map_err(|error| self.transport(&error))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            let text = response.text().await.unwrap_or_default();
            return Err(self.status_failure(status, retry_after, &text));
        }
        if stream {
            self.read_stream(response, progress, shown).await
        } else {
            self.read_whole(response).await
        }
    }

    async fn read_whole(&self, response: reqwest::Response) -> Result<ChatResponse, Failure> {
        let bytes = response
            .bytes()
            .await
            .map_err(|error| self.transport(&error))?;
        let completion: ChatCompletion = serde_json::from_slice(&bytes)
            .map_err(|error| self.malformed(format!("invalid JSON: {error}")))?;
        let usage = completion.usage.map(TokenUsage::from);
        let choice = completion
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| self.malformed("the reply has no choices".into()))?;
        let content = choice
            .message
            .unwrap_or_default()
            .content
            .unwrap_or_default();
        Ok(ChatResponse {
            content: if self.config.keep_reasoning {
                content
            } else {
                strip_think(&content)
            },
            usage,
            finish_reason: choice.finish_reason,
        })
    }

    async fn read_stream(
        &self,
        response: reqwest::Response,
        progress: &Progress,
        shown: &mut bool,
    ) -> Result<ChatResponse, Failure> {
        let mut events = response.bytes_stream().eventsource();
        let mut filter = ThinkFilter::default();
        let mut content = String::new();
        let mut usage = None;
        let mut finish_reason = None;
        let mut done = false;
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                // The connection broke mid-stream: the caller decides on a retry
                // from `shown`, so a partly shown reply is never repeated.
                Err(error) => {
                    let mut failure = self.truncated(content.chars().count());
                    failure.retryable = !*shown;
                    tracing::debug!(target: crate::TELEMETRY_TARGET, provider = %self.config.provider, error = %self.scrub(error.to_string()), "stream broke");
                    return Err(failure);
                }
            };
            if event.data.trim() == "[DONE]" {
                done = true;
                break;
            }
            let chunk: ChatCompletion = serde_json::from_str(&event.data)
                .map_err(|error| self.malformed(format!("invalid JSON in the stream: {error}")))?;
            if let Some(chunk_usage) = chunk.usage {
                usage = Some(TokenUsage::from(chunk_usage));
            }
            let Some(choice) = chunk.choices.into_iter().next() else {
                continue;
            };
            if let Some(text) = choice.delta.and_then(|delta| delta.content) {
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
        if !done && finish_reason.is_none() {
            return Err(self.truncated(content.chars().count()));
        }
        let rest = filter.finish();
        progress.delta(&rest);
        content.push_str(&rest);
        Ok(ChatResponse {
            content,
            usage,
            finish_reason,
        })
    }

    fn transport(&self, error: &reqwest::Error) -> Failure {
        let backend = self.config.provider.clone();
        let error = if error.is_timeout() {
            BackendError::Timeout {
                backend,
                after: self.config.read_timeout,
            }
        } else {
            BackendError::Connection {
                backend,
                reason: self.scrub(error_chain(error)),
            }
        };
        Failure {
            error,
            retryable: true,
            retry_after: None,
        }
    }

    fn status_failure(
        &self,
        status: StatusCode,
        retry_after: Option<Duration>,
        body: &str,
    ) -> Failure {
        let backend = self.config.provider.clone();
        let (error, retryable) = match status.as_u16() {
            401 | 403 => (BackendError::Auth { backend }, false),
            code => {
                let reason = serde_json::from_str::<ErrorBody>(body)
                    .map(|parsed| parsed.error.message)
                    .unwrap_or_else(|_| body.chars().take(300).collect());
                let retryable = matches!(code, 408 | 429 | 500..=599);
                (
                    BackendError::Http {
                        backend,
                        status: code,
                        reason: self.scrub(reason.trim().to_owned()),
                    },
                    retryable,
                )
            }
        };
        Failure {
            error,
            retryable,
            retry_after,
        }
    }

    fn malformed(&self, reason: String) -> Failure {
        Failure {
            error: BackendError::Malformed {
                backend: self.config.provider.clone(),
                reason: self.scrub(reason),
            },
            retryable: false,
            retry_after: None,
        }
    }

    fn truncated(&self, received_chars: usize) -> Failure {
        Failure {
            error: BackendError::Truncated {
                backend: self.config.provider.clone(),
                received_chars,
            },
            retryable: received_chars == 0,
            retry_after: None,
        }
    }

    /// Servers sometimes echo credentials in error bodies; they never get further.
    fn scrub(&self, text: String) -> String {
        match &self.key {
            Some(key) if !key.expose().is_empty() => text.replace(key.expose(), "<redacted>"),
            _ => text,
        }
    }
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds: f64 = headers
        .get(RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
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
