//! The features beyond basic mode, in the core, one file per topic, and the
//! helpers they share.

use super::*;
use crate::backends::OfflineBackend;
use crate::memory::{
    AssembledPrompt, DateFormat, FactKey, ForgettingPolicy, LogIndex, MemoryConfig, MemoryFeatures,
    MemoryParts, Now, PersonaPrompt, PromptMessage, Role, SectionKind, SummaryKind, SummaryOutcome,
    SummaryStyle, SummaryTrigger,
};
use std::time::Duration;

mod follow_ups;
mod segments;
mod summaries;
mod whole_logs;

fn persona() -> PersonaPrompt {
    PersonaPrompt {
        name: "ECHO-7".into(),
        text: "You are ECHO-7.".into(),
        style: SummaryStyle::english(),
    }
}

/// Plays `turns` exchanges, answering every summary job with the offline backend.
fn play(config: &MemoryConfig, turns: usize) -> NpcMemory {
    let mut memory = NpcMemory::new(persona(), config);
    let backend = OfflineBackend::default();
    for turn in 0..turns {
        let mut layers = memory.layers();
        let t = turn as f64 * 10.0;
        layers.record(
            Role::User,
            format!("Report {turn}: valve {} is stuck open.", turn % 13),
            t,
        );
        layers.record(Role::Assistant, format!("Logged report {turn}."), t + 1.0);
        layers.summarize_due(|job| Ok(backend.summarize(&job.input)));
    }
    memory
}

/// A window of 8 that folds every 4 messages into a segment of its own.
fn segmented() -> MemoryConfig {
    let mut config = MemoryConfig {
        summary_threshold: Some(4),
        ..MemoryConfig::with_window(8)
    };
    config.features.segments.enabled = true;
    config
}
