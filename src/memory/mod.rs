//! The engine-agnostic memory core: plain Rust, no Bevy.
//!
//! - [`ChatLog`] is L2, the full log.
//! - [`RollingWindow`] is L1, the recent messages sent with each request.
//! - [`ContextMemory`] is L3, the summary folded into the system prompt.
//!
//! [`LayersMut`] is the only way to change them, so they never disagree.

mod chat_log;
mod config;
mod context;
mod message;
mod parts;
mod pipeline;
mod tokens;
mod window;

#[cfg(test)]
mod tests;

pub use chat_log::ChatLog;
pub use config::{MemoryConfig, PromptLanguage, SummaryStyle};
pub use context::{
    ContextMemory, Degradation, PersonaPrompt, SummaryJobId, SummaryRecord, SummaryTrigger,
    compose_system_prompt,
};
pub use message::{ChatMessage, LogIndex, NpcId, PromptMessage, Role};
pub use parts::{MemoryParts, PersonaParts};
pub use pipeline::{
    LayersMut, NpcMemory, Recorded, SUMMARY_ATTEMPTS, SummaryInput, SummaryJob, SummaryOutcome,
    SummaryUpdate,
};
pub use tokens::{
    MESSAGE_OVERHEAD_TOKENS, estimate_message_tokens, estimate_prompt_tokens, estimate_tokens,
};
pub use window::RollingWindow;
