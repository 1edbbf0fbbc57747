//! What the save tests share: scratch folders, NPCs with a few lines, and an
//! autosave as the plugin writes one.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::journal::Journals;
use super::slot::{WriteTicket, write_slot};
use super::{NpcSave, SaveGame};
use crate::memory::{MemoryConfig, MemoryParts, NpcMemory, PersonaPrompt, Role};

/// A fresh folder for one test, named after it and the process.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("npc-save-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// An NPC with `lines` messages.
pub(crate) fn npc(id: &str, lines: usize) -> Arc<NpcSave> {
    let persona = PersonaPrompt {
        name: id.into(),
        text: "You guard.".into(),
        style: Default::default(),
    };
    let mut memory = NpcMemory::new(persona, &MemoryConfig::with_window(4));
    for i in 0..lines {
        memory
            .layers()
            .record(Role::User, format!("{id} line {i} ünïcode"), i as f64);
    }
    let parts = MemoryParts::of(&memory.log, &memory.window, &memory.context);
    Arc::new(NpcSave::new(id.into(), parts))
}

/// Writes `save` to `path` as autosave does; the bytes written.
pub(crate) fn autosave(path: &Path, save: &Arc<SaveGame>, journals: &Journals) -> usize {
    write_slot(
        save,
        path,
        u64::MAX,
        &WriteTicket::default(),
        true,
        journals,
        true,
    )
    .unwrap()
    .unwrap()
}
