//! Savegames through the plugin: exact round trips, autosave, restore rules, slots,
//! bad files, and the seed's Unity layout. One file per topic; the helpers they
//! share are here.

use std::fs;
use std::path::Path;

use crate::support::{Harness, persona, seed_sized, temp_dir};
use bevy::app::AppExit;
use bevy_npc_memory::backends::BackendError;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::dialogue::NpcMemoryDegraded;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::memory::{Degradation, Role};
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::saves::ResumeAutosave;
use bevy_npc_memory::saves::SaveSettings;
use bevy_npc_memory::saves::{
    LoadError, SAVE_FORMAT_VERSION, SaveError, SaveGame, backup_path, journal_path,
};

mod damaged_files;
mod quits_and_imports;
mod round_trips;

/// The slot as loading sees it: the snapshot with its autosave journal replayed.
fn read_save(path: &Path) -> SaveGame {
    SaveGame::read_from(path, u64::MAX).unwrap().1
}

/// Waits until the autosave on disk holds `messages` log messages for every NPC.
/// A write taken before the replies arrived may land first, so waiting for a count
/// of writes alone would race the offline backend on a busy machine.
fn wait_for_saved_logs(h: &mut Harness, path: &Path, messages: usize) {
    h.run_until("the autosave holds every reply", |_| {
        SaveGame::read_from(path, u64::MAX)
            .ok()
            .map(|(_, save)| save)
            .is_some_and(|save| save.npcs.iter().all(|n| n.memory.log.len() == messages))
    });
}

/// Two NPCs, several summaries each, and one degradation.
fn played_app() -> Harness {
    let backend = ScriptedBackend::new();
    for i in 0..6 {
        backend.push_reply(format!("reply {i}"));
    }
    backend
        .push_summary("echo summary 1")
        .push_summary("robot summary 1")
        .push_failure(Purpose::Summary, BackendError::Other("down".into()))
        .push_failure(Purpose::Summary, BackendError::Other("down".into()))
        .push_summary("robot summary 2")
        .push_summary("echo summary 2");
    let mut h = Harness::new(seed_sized(backend));
    h.spawn("echo7", persona("ECHO-7"));
    h.spawn("robot", persona("Rusty"));
    for round in 0..3 {
        for npc in ["echo7", "robot"] {
            h.say(npc, &format!("{npc} line {round}"));
            h.settle();
        }
    }
    h
}

/// A save of ECHO-7 after `lines`, written by a game without autosave.
fn saved_memory(path: &Path, lines: &[&str]) -> Vec<u8> {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    for line in lines {
        h.say("echo7", line);
        h.settle();
    }
    h.save_to(path);
    fs::read(path).unwrap()
}

/// Waits until every write queued so far has finished: writes run one at a time, in
/// order, so once a save requested now is written, every autosave queued before it
/// has been written or refused.
fn wait_for_queued_writes(h: &mut Harness, dir: &Path) {
    h.save_to(&dir.join("barrier.json"));
}

/// Files in `dir` whose name contains `part`.
fn files_named(dir: &Path, part: &str) -> Vec<std::path::PathBuf> {
    fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(part))
        .map(|e| e.path())
        .collect()
}

fn writes_to(h: &Harness, path: &Path) -> usize {
    h.inbox::<MemorySaved>()
        .iter()
        .filter(|s| s.path == path)
        .count()
        + h.inbox::<MemorySaveFailed>()
            .iter()
            .filter(|s| s.path == path)
            .count()
}

fn exit(h: &mut Harness) {
    h.app.world_mut().write_message(AppExit::Success);
    h.app.update();
}
