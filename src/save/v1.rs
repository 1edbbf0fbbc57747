//! Format 1, frozen: what crate versions before segments, pinned facts and recall
//! wrote. Kept only to migrate such saves to the current format.
//!
//! Version 1 had no segments, facts or recall state, so those start empty. Its
//! summary style had no language; a Chinese label means the Chinese headings.

use std::sync::Arc;

use serde::Deserialize;

use super::format::{NpcSave, SAVE_FORMAT_VERSION, SaveGame};
use crate::memory::{
    ChatMessage, Degradation, LogIndex, MemoryConfig, MemoryParts, NpcId, PersonaPrompt,
    PromptLanguage, SummaryRecord,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SaveGameV1 {
    #[allow(
        dead_code,
        reason = "read to check the shape; the migrated save gets the current version"
    )]
    format_version: u32,
    crate_version: String,
    npcs: Vec<NpcSaveV1>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NpcSaveV1 {
    id: NpcId,
    memory: MemoryPartsV1,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryPartsV1 {
    persona: PersonaPrompt,
    config: MemoryConfig,
    log: Vec<ChatMessage>,
    window_start: LogIndex,
    summary: Arc<str>,
    covered_until: LogIndex,
    history: Vec<SummaryRecord>,
    degradations: Vec<Degradation>,
}

impl SaveGameV1 {
    pub(super) fn migrate(self) -> SaveGame {
        let npcs = self
            .npcs
            .into_iter()
            .map(|npc| Arc::new(NpcSave::new(npc.id, npc.memory.migrate())))
            .collect();
        SaveGame {
            format_version: SAVE_FORMAT_VERSION,
            crate_version: self.crate_version,
            npcs,
            // Set when the timestamps are rebased.
            clock: 0.0,
            lore: Default::default(),
        }
    }
}

impl MemoryPartsV1 {
    fn migrate(self) -> MemoryParts {
        let mut persona = self.persona;
        if persona.style.label.contains("前情提要") || persona.style.player_name == "玩家" {
            persona.style.language = PromptLanguage::Chinese;
        }
        MemoryParts {
            persona,
            config: self.config,
            log: self.log,
            window_start: self.window_start,
            summary: self.summary,
            covered_until: self.covered_until,
            history: self.history,
            degradations: self.degradations,
            segments: Default::default(),
            facts: Default::default(),
            recall: Default::default(),
        }
    }
}
