//! Backends: the [`ChatBackend`] trait and the backends that ship with the crate.
//!
//! - [`OfflineBackend`]: no model; replies say so, summaries are extractive. The
//!   default, so examples and tests run anywhere.
//! - [`ScriptedBackend`]: queued replies, failures, delays and hangs, for tests.
//! - `OpenAiBackend` (feature `http`): any OpenAI-compatible server.
//! - `LocalLlmBackend` (feature `local-llm`): a GGUF model run in-process.
//!
//! Implement [`ChatBackend`] for anything else: return a future that does the work,
//! stream pieces through [`Progress`], and fail with a [`BackendError`].

mod action_choice;
mod backend;
#[cfg(any(feature = "local-llm", feature = "http"))]
mod call_object;
#[cfg(feature = "local-llm")]
mod local;
mod offline;
mod offline_facts;
#[cfg(feature = "http")]
mod openai;
mod scripted;
#[cfg(feature = "http")]
mod tokio_task;

pub use action_choice::ActionChoice;
pub use backend::{
    BackendError, BackendFuture, ChatBackend, ChatRequest, ChatResponse, Progress, Purpose,
    RequestKind, ResponsePart, TokenUsage, stream_words,
};
#[cfg(feature = "local-llm")]
pub use local::{
    ChatTemplateSource, DEFAULT_MODEL_PATH, GenerationStats, KernelFeatures, LocalLlmBackend,
    LocalLlmConfig, MaxTokensPolicy, ModelStatus, SpecialToken, SummaryForm,
};
pub use offline::OfflineBackend;
#[cfg(feature = "http")]
pub use openai::{ApiKey, CacheRouting, OpenAiBackend, OpenAiConfig, ResponseLimits, RetryPolicy};
pub use scripted::{ScriptStep, ScriptedBackend};
#[cfg(feature = "http")]
pub(crate) use tokio_task::AbortOnDrop;
