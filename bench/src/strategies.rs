//! What each benchmarked strategy is, as memory configuration and prompts.
//!
//! - **full**: the persona and every message of the log; no summaries.
//! - **basic** (`memory_bench`'s `summary`): the plugin's basic mode, L1 + L3: the
//!   persona with the summary, then the rolling window.
//! - **layered**: every feature beyond basic mode ([`MemoryFeatures::layered`]):
//!   recall with neighbours, pinned facts, segmented summaries, a prompt budget.

use bevy_npc_memory::memory::{MemoryConfig, MemoryFeatures, NpcMemory, PromptMessage, Role};

/// Parts of `layered` that can be switched off for ablations.
pub const LAYERED_PARTS: [&str; 4] = ["recall", "neighbours", "facts", "segments"];

/// The memory configuration of a strategy: a window of `window` messages and the
/// summary `threshold` (default half the window). With `layered`, every feature is
/// on within `budget` tokens, except the [`LAYERED_PARTS`] named in `without`.
pub fn memory_config(
    window: usize,
    threshold: Option<usize>,
    layered: bool,
    budget: Option<usize>,
    without: &[String],
) -> MemoryConfig {
    let mut config = MemoryConfig {
        summary_threshold: threshold,
        ..MemoryConfig::with_window(window)
    };
    if layered {
        let features = &mut config.features;
        *features = MemoryFeatures::layered(0);
        features.budget.max_tokens = budget;
        let off = |part: &str| without.iter().any(|p| p == part);
        features.recall.enabled = !off("recall");
        features.recall.neighbours = !off("neighbours");
        features.facts.enabled = !off("facts");
        features.segments.enabled = !off("segments");
    }
    config
}

/// The full-history prompt: the persona, then every message of the log.
pub fn full_history(memory: &NpcMemory) -> Vec<PromptMessage> {
    let mut messages = vec![PromptMessage::new(
        Role::System,
        memory.context.persona().text.clone(),
    )];
    messages.extend(memory.log.messages().iter().map(|m| m.to_prompt()));
    messages
}
