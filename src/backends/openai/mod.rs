//! The OpenAI-compatible HTTP backend (feature `http`).

mod client;
mod config;
mod redact;
mod retry_after;
mod sse;
mod structured;
mod think;
mod tool_calls;
mod wire;

pub use client::OpenAiBackend;
pub use config::{ApiKey, CacheRouting, OpenAiConfig, ResponseLimits, RetryPolicy};
