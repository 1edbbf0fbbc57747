//! Seals: what a compaction appends to the journal it retires.

use std::fs;
use std::sync::Arc;

use serde::Deserialize;

use super::tests::{autosave, npc, record_ends, temp_dir, with_line};
use super::*;
use crate::memory::LoreChanges;
use crate::save::file::backup_path;

/// A build from before seals reads a sealed journal (the backup's, after a
/// compaction) up to its seal: the seal is a record of its own after the one
/// that carries the last changes, and only it has a field such a build refuses.
/// So the journal's format version stays, and that build loses nothing.
#[test]
fn a_build_without_seals_reads_a_sealed_journal_up_to_its_seal() {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct RecordBeforeSeals {
        clock: f64,
        #[serde(default)]
        lore: Option<LoreChanges>,
        #[serde(default)]
        changes: Vec<Change>,
    }
    let dir = temp_dir("before-seals");
    let path = dir.join("slot.json");
    let journals = Journals::default();
    let mut state = Arc::new(SaveGame::new(vec![npc("a", 10)]));
    autosave(&path, &state, &journals);
    while !journal_path(&backup_path(&path)).exists() {
        state = with_line(&state, "a", &"x".repeat(3000));
        autosave(&path, &state, &journals);
    }
    let sealed = fs::read(journal_path(&backup_path(&path))).unwrap();
    let ends = record_ends(&sealed);
    let mut at = HEADER_LEN;
    for (i, &end) in ends.iter().enumerate() {
        let payload = &sealed[at + FRAME_LEN..end];
        let before_seals = serde_json::from_slice::<RecordBeforeSeals>(payload);
        assert_eq!(
            before_seals.is_ok(),
            i + 1 < ends.len(),
            "record {i} of {}: only the seal is new",
            ends.len()
        );
        at = end;
    }
    let backup = fs::read(backup_path(&path)).unwrap();
    let mut read = SaveGame::from_bytes(&backup).unwrap();
    let unsealed = &sealed[..ends[ends.len() - 2]];
    let outcome = replay(&mut read, BaseId::of(&backup), unsealed);
    assert_eq!((outcome.problem, outcome.sealed), (None, None));
    assert_eq!(
        read, *state,
        "the records before the seal reach the new memory"
    );
    fs::remove_dir_all(dir).ok();
}
