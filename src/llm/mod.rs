//! Backends: the [`ChatBackend`] trait and the backends that ship with the crate.

mod backend;
#[cfg(feature = "local-llm")]
mod local;
mod offline;
mod offline_facts;
#[cfg(feature = "http")]
mod openai;
mod scripted;

pub use backend::{
    BackendError, BackendFuture, ChatBackend, ChatRequest, ChatResponse, Progress, Purpose,
    RequestKind, ResponsePart, TokenUsage, stream_words,
};
#[cfg(feature = "local-llm")]
pub use local::{
    ChatTemplateSource, DEFAULT_MODEL_PATH, GenerationStats, LocalLlmBackend, LocalLlmConfig,
    MaxTokensPolicy, ModelStatus, SpecialToken, SummaryForm,
};
pub use offline::OfflineBackend;
#[cfg(feature = "http")]
pub use openai::{ApiKey, OpenAiBackend, OpenAiConfig, ResponseLimits, RetryPolicy};
pub use scripted::{ScriptStep, ScriptedBackend};
