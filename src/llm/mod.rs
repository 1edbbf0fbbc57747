//! Backends: the [`ChatBackend`] trait and the backends that ship with the crate.

mod backend;
mod offline;
mod scripted;

pub use backend::{
    BackendError, BackendFuture, ChatBackend, ChatRequest, ChatResponse, Progress, Purpose,
    ReplyInput, RequestKind, TokenUsage, stream_words,
};
pub use offline::OfflineBackend;
pub use scripted::{ScriptStep, ScriptedBackend};
