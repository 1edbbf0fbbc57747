//! The contract between the memory pipeline and anything that can produce text.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::memory::{ActionCall, ActionSpec, NpcId, PromptMessage, ReplyInput, SummaryInput};

/// The future a backend returns. It runs on the plugin's async runtime, never on
/// the frame.
pub type BackendFuture = Pin<Box<dyn Future<Output = Result<ChatResponse, BackendError>> + Send>>;

/// Anything that turns a list of messages into a reply: an HTTP API, a local model,
/// or a script.
///
/// The same trait serves NPC replies and summaries; [`ChatRequest::kind`] says which.
/// Implementations must be cheap to call from the main thread: do the work inside
/// the returned future.
///
/// A backend that answers with the player's own words, streaming them first:
///
/// ```
/// use bevy_npc_memory::backends::{BackendFuture, ChatRequest, ChatResponse, Progress};
/// use bevy_npc_memory::prelude::*;
///
/// struct Parrot;
///
/// impl ChatBackend for Parrot {
///     fn name(&self) -> &str {
///         "parrot"
///     }
///
///     fn complete(&self, request: ChatRequest, progress: Progress) -> BackendFuture {
///         // Cheap here; anything slow belongs inside the future.
///         let last = request.messages.last().map(|m| m.content.to_string());
///         Box::pin(async move {
///             let text = last.unwrap_or_default();
///             progress.delta(&text);
///             Ok(ChatResponse::text(text))
///         })
///     }
/// }
///
/// let plugin = NpcMemoryPlugin::default().with_backend(Parrot);
/// # drop(plugin);
/// ```
pub trait ChatBackend: Send + Sync + 'static {
    /// A short name for logs and errors, such as `"offline"` or `"deepseek"`. Never
    /// a secret.
    fn name(&self) -> &str;

    /// Starts a request. Replies may stream their text through `progress` as it is
    /// produced; the final [`ChatResponse`] always carries the whole text.
    fn complete(&self, request: ChatRequest, progress: Progress) -> BackendFuture;

    /// Drops whatever the backend derived from `npc`'s past requests (every NPC's
    /// with `None`), such as a local model's evaluated prompt. The plugin calls it
    /// when an NPC's memory is cleared and when a load replaces every memory. Such
    /// state must never change an answer, only how fast it comes; the default keeps
    /// nothing and does nothing.
    fn forget(&self, npc: Option<&NpcId>) {
        let _ = npc;
    }
}

/// What a request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// The NPC answers the player.
    Reply,
    /// A stateless request that folds messages into the summary.
    Summary,
}

impl Purpose {
    /// `"reply"` or `"summary"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Reply => "reply",
            Purpose::Summary => "summary",
        }
    }
}

/// One request to a backend.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    /// The NPC it is for.
    pub npc: NpcId,
    /// What it is for, with structured context for backends that want it.
    pub kind: RequestKind,
    /// Exactly the messages to send.
    pub messages: Vec<PromptMessage>,
    /// The game actions the NPC may call in this answer, as tools. Empty for
    /// summaries, for NPCs without actions, and once a turn has used its rounds
    /// of actions; a backend that cannot call tools ignores them and answers with
    /// text.
    pub actions: Vec<ActionSpec>,
}

impl ChatRequest {
    /// Whether this is a reply or a summary.
    pub fn purpose(&self) -> Purpose {
        match self.kind {
            RequestKind::Reply(_) => Purpose::Reply,
            RequestKind::Summary(_) => Purpose::Summary,
        }
    }
}

/// What a request is for, with the pieces its messages were built from. Model
/// backends send [`ChatRequest::messages`] and can ignore this; the offline backend
/// uses it to answer without a model.
#[derive(Clone, Debug, PartialEq)]
pub enum RequestKind {
    /// The NPC answers the player.
    Reply(ReplyInput),
    /// A stateless summary request.
    Summary(SummaryInput),
}

/// A backend's answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatResponse {
    /// The whole text.
    pub content: String,
    /// Token counts, when the backend reports them.
    pub usage: Option<TokenUsage>,
    /// Why generation stopped, when the backend says (`"stop"`, `"length"`, ...).
    pub finish_reason: Option<String>,
    /// Actions the model called, in order, only from the
    /// [`ChatRequest::actions`] it was offered. The text may then be empty, or
    /// words the NPC says while acting.
    pub action_calls: Vec<ActionCall>,
}

impl ChatResponse {
    /// A response with only text.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }
}

impl ChatResponse {
    /// A response that calls actions, with the words said along with them
    /// (often none).
    pub fn calls(content: impl Into<String>, calls: Vec<ActionCall>) -> Self {
        Self {
            content: content.into(),
            action_calls: calls,
            ..Self::default()
        }
    }
}

impl BackendError {
    /// For a rate limit (HTTP 429, from [`RateLimited`](Self::RateLimited) or a
    /// backend's plain [`Http`](Self::Http) status), the wait the provider asked
    /// for, if any; `None` for every other error.
    pub fn rate_limit(&self) -> Option<Option<Duration>> {
        match self {
            BackendError::RateLimited { retry_after, .. } => Some(*retry_after),
            BackendError::Http { status: 429, .. } => Some(None),
            _ => None,
        }
    }
}

/// Token counts reported by a provider.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Tokens in the prompt.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
    /// Prompt tokens served from the provider's cache, when reported.
    pub cached_tokens: Option<u64>,
}

/// Why a request failed. Messages never contain an API key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// No answer in time.
    #[error("{backend} did not answer within {after:?}")]
    Timeout {
        /// The backend's name.
        backend: String,
        /// The limit that ran out.
        after: Duration,
    },
    /// The backend could not be reached.
    #[error("could not reach {backend}: {reason}")]
    Connection {
        /// The backend's name.
        backend: String,
        /// What went wrong.
        reason: String,
    },
    /// The provider refused the credentials.
    #[error("authentication failed for provider {backend}")]
    Auth {
        /// The backend's name.
        backend: String,
    },
    /// The provider answered with an error status.
    #[error("{backend} answered HTTP {status}: {reason}")]
    Http {
        /// The backend's name.
        backend: String,
        /// The HTTP status.
        status: u16,
        /// The provider's explanation, if any.
        reason: String,
    },
    /// The provider refused the request for now (HTTP 429): too many requests or
    /// tokens. The plugin's scheduler pauses every request until `retry_after`
    /// (or a doubling wait without it) and sends this one again.
    #[error("{backend} is rate limiting requests{}: {reason}", retry_after.map(|d| format!(" (retry after {d:?})")).unwrap_or_default())]
    RateLimited {
        /// The backend's name.
        backend: String,
        /// How long the provider asked to wait, from its `Retry-After` header.
        retry_after: Option<Duration>,
        /// The provider's explanation, if any.
        reason: String,
    },
    /// The answer could not be understood.
    #[error("malformed reply from {backend}: {reason}")]
    Malformed {
        /// The backend's name.
        backend: String,
        /// What was wrong with it.
        reason: String,
    },
    /// A streamed reply ended before the server said it was complete. The partial
    /// text is never committed as a reply.
    #[error("the reply from {backend} broke off after {received_chars} characters")]
    Truncated {
        /// The backend's name.
        backend: String,
        /// Characters received before the stream ended.
        received_chars: usize,
    },
    /// The backend needs an API key and none was found.
    #[error("no API key for provider {backend}: set the environment variable {var}")]
    MissingKey {
        /// The backend's name.
        backend: String,
        /// The variable that should hold the key.
        var: String,
    },
    /// A local model is missing, invalid, or failed to load, so nothing can answer.
    #[error("the model of {backend} is not available: {reason}")]
    ModelUnavailable {
        /// The backend's name.
        backend: String,
        /// What is wrong with the model, naming the file.
        reason: String,
    },
    /// The prompt does not fit the model's context, even with only the system prompt
    /// and the newest message left.
    #[error("the prompt for {backend} needs {prompt_tokens} tokens, over the {limit} that fit")]
    PromptTooLong {
        /// The backend's name.
        backend: String,
        /// Tokens the smallest acceptable prompt needs.
        prompt_tokens: usize,
        /// Tokens available: the context size minus the tokens kept for the answer.
        limit: usize,
    },
    /// Generation hit its token limit before the model ended the text, and the
    /// backend is set to refuse such text rather than keep it.
    #[error("{backend} stopped at its limit of {max_tokens} tokens before finishing")]
    MaxTokens {
        /// The backend's name.
        backend: String,
        /// The limit.
        max_tokens: u32,
    },
    /// The backend panicked while answering. The plugin caught it, so the NPC keeps
    /// working; the backend has a bug worth reporting.
    #[error("{backend} panicked: {message}")]
    Panicked {
        /// The backend's name.
        backend: String,
        /// The panic's message, shortened.
        message: String,
    },
    /// The server sent more than the backend's limit for one part of an answer (for
    /// the HTTP backend, `OpenAiConfig::limits`). Reading stopped at the limit, so a
    /// misbehaving server cannot fill memory or keep an NPC waiting; nothing of the
    /// answer is kept. Not retried: the same server would likely do it again.
    #[error("{backend} sent a {what} over the limit of {limit} bytes; reading stopped there")]
    ResponseTooLarge {
        /// The backend's name.
        backend: String,
        /// Which part of the answer was too large.
        what: ResponsePart,
        /// The limit it went over, in bytes.
        limit: usize,
    },
    /// The request was cancelled, for example because the NPC's memory was cleared.
    #[error("the request was cancelled")]
    Cancelled,
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

/// The part of a server's answer that went over its size limit, in
/// [`BackendError::ResponseTooLarge`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResponsePart {
    /// The whole body of an answer that is not streamed.
    Body,
    /// Everything a streamed answer sent, together.
    Stream,
    /// One line, or the data of one event, of a streamed answer.
    StreamEvent,
}

impl fmt::Display for ResponsePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ResponsePart::Body => "reply body",
            ResponsePart::Stream => "streamed reply",
            ResponsePart::StreamEvent => "single stream event",
        })
    }
}

/// How a backend reports on a request while it runs: streamed pieces of a reply,
/// retries, and rate limits it waits out itself.
///
/// The plugin turns each piece into an `NpcReplyDelta` message so a UI can typewrite,
/// and counts retries in its usage figures. Backends that cannot stream never call
/// [`Progress::delta`]. A backend that retries a rate-limited request itself calls
/// [`Progress::rate_limited`] first, so that the plugin's scheduler holds every
/// other request meanwhile instead of sending them into the same limit.
#[derive(Clone, Default)]
pub struct Progress {
    on_delta: Option<Arc<DeltaFn>>,
    on_rate_limit: Option<Arc<RateLimitFn>>,
    retries: Arc<AtomicU32>,
}

type DeltaFn = dyn Fn(&str) + Send + Sync;
type RateLimitFn = dyn Fn(Option<Duration>) + Send + Sync;

impl Progress {
    /// Progress that forwards every piece of the reply to `on_delta`.
    pub fn streaming(on_delta: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self {
            on_delta: Some(Arc::new(on_delta)),
            ..Self::default()
        }
    }

    /// The same progress, also telling `on_rate_limit` of every rate limit the
    /// backend waits out itself.
    pub(crate) fn on_rate_limit(
        mut self,
        on_rate_limit: impl Fn(Option<Duration>) + Send + Sync + 'static,
    ) -> Self {
        self.on_rate_limit = Some(Arc::new(on_rate_limit));
        self
    }

    /// Progress that nobody streams from, such as a summary's.
    pub fn silent() -> Self {
        Self::default()
    }

    /// Passes on the next piece of the reply. Empty pieces are skipped.
    pub fn delta(&self, piece: &str) {
        if let Some(on_delta) = &self.on_delta
            && !piece.is_empty()
        {
            on_delta(piece);
        }
    }

    /// Whether anybody listens to pieces, so a backend can skip streaming work.
    pub fn is_streaming(&self) -> bool {
        self.on_delta.is_some()
    }

    /// Records that the backend is about to try the request again.
    pub fn retrying(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    /// Records that the provider rate-limited the request (HTTP 429) and that the
    /// backend will wait and try again itself, `retry_after` being the wait the
    /// provider asked for, if it said. Call it before [`retrying`](Self::retrying).
    /// A backend that instead returns [`BackendError::RateLimited`] needs no call:
    /// the plugin sees the error.
    pub fn rate_limited(&self, retry_after: Option<Duration>) {
        if let Some(on_rate_limit) = &self.on_rate_limit {
            on_rate_limit(retry_after);
        }
    }

    /// Retries recorded so far.
    pub fn retries(&self) -> u32 {
        self.retries.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Progress")
            .field("streaming", &self.is_streaming())
            .field("retries", &self.retries())
            .finish()
    }
}

/// Streams `text` in word-sized pieces, for backends whose whole answer is ready at
/// once but whose callers expect a stream.
pub fn stream_words(text: &str, progress: &Progress) {
    if progress.is_streaming() {
        text.split_inclusive(' ')
            .for_each(|piece| progress.delta(piece));
    }
}
