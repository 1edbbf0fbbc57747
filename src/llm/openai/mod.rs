//! The OpenAI-compatible HTTP backend (feature `http`).

mod client;
mod config;
mod think;
mod wire;

pub use client::OpenAiBackend;
pub use config::{ApiKey, OpenAiConfig, RetryPolicy};
