//! Two good copies of an autosave slot from its first save on (issue 31): the
//! slot of the report, two short sessions and then the snapshot cut to its first
//! 40 bytes, loads everything at the next start, from the backup and the journal.

use std::fs;
use std::sync::Arc;

use crate::loads::long_save;
use crate::support::{Harness, Inbox, persona, temp_dir};
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::saves::{JournaledSlot, SaveGame, backup_path, journal_path};

/// Waits until the slot on disk holds `messages` messages of ECHO-7's.
fn wait_for_saved(h: &mut Harness, path: &std::path::Path, messages: usize) {
    h.run_until("the autosave holds every reply", |_| {
        SaveGame::read_from(path, u64::MAX)
            .is_ok_and(|(_, save)| save.npcs.iter().all(|n| n.memory.log.len() == messages))
    });
}

/// One session of the game: start (loading the slot), say `lines`, quit.
fn session(path: &std::path::Path, lines: &[&str], loaded_before: usize) -> Vec<(Role, String)> {
    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(path));
    h.spawn("echo7", persona("ECHO-7"));
    if loaded_before > 0 {
        h.wait_for::<MemoryLoaded>(1);
    }
    for (i, line) in lines.iter().enumerate() {
        h.say("echo7", line);
        h.settle();
        wait_for_saved(&mut h, path, loaded_before + 2 * (i + 1));
    }
    h.log("echo7")
}

#[test]
fn two_sessions_then_the_snapshot_cut_to_40_bytes_loads_everything() {
    let dir = temp_dir("two-copies");
    let path = dir.join("savegame.json");
    session(&path, &["Hello, I'm Alex.", "I fix power systems."], 0);
    let played = session(&path, &["I'm in the storage area now."], 4);
    assert_eq!(played.len(), 6);
    assert!(
        fs::metadata(journal_path(&path)).unwrap().len() > 28,
        "the second session's lines are in the journal, not a new snapshot"
    );
    let mut cut = fs::read(&path).unwrap();
    cut.truncate(40);
    fs::write(&path, &cut).unwrap();

    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&path));
    h.spawn("echo7", persona("ECHO-7"));
    h.run_until("the slot loads or fails", |world| {
        world.resource::<Inbox<MemoryLoaded>>().0.len()
            + world.resource::<Inbox<MemoryLoadFailed>>().0.len()
            > 0
    });
    if let Some(failed) = h.inbox::<MemoryLoadFailed>().first() {
        panic!("the slot does not load: {failed}");
    }
    assert_eq!(h.log("echo7"), played, "both sessions are remembered");
    let loaded = h.inbox::<MemoryLoaded>()[0].clone();
    assert_eq!(loaded.path, backup_path(&path), "read from the other copy");
    assert_eq!(loaded.journal, None, "with its whole journal");
    let from = loaded.recovered_from.expect("the game is told");
    assert_eq!(from.path, path);
    assert_eq!(fs::read(from.moved_to.unwrap()).unwrap(), cut, "kept aside");

    // Autosave goes on and writes both copies again: losing the new snapshot
    // loses nothing either.
    h.say("echo7", "Is the reactor back?");
    h.settle();
    wait_for_saved(&mut h, &path, 8);
    let now = h.log("echo7");
    drop(h);
    fs::write(&path, b"{").unwrap();
    let (read, save) = SaveGame::read_from(&path, u64::MAX).unwrap();
    assert_eq!(read, backup_path(&path));
    let texts: Vec<String> = save.npcs[0]
        .memory
        .log
        .iter()
        .map(|m| m.content.to_string())
        .collect();
    assert_eq!(
        texts,
        now.into_iter().map(|(_, text)| text).collect::<Vec<_>>()
    );
    fs::remove_dir_all(dir).ok();
}

/// The same through the API for games outside Bevy: two runs of a
/// `JournaledSlot`, then the snapshot cut.
#[test]
fn a_journaled_slot_written_in_two_runs_survives_its_snapshot_cut() {
    let dir = temp_dir("two-copies-api");
    let path = dir.join("slot.json");
    let saves: Vec<Arc<SaveGame>> = (0..6)
        .map(|n| Arc::new(long_save(&["echo7"], 20 + n, false, "run")))
        .collect();
    for run in saves.chunks(3) {
        let slot = JournaledSlot::new(&path, u64::MAX);
        for save in run {
            slot.write(save).unwrap();
        }
    }
    let mut cut = fs::read(&path).unwrap();
    cut.truncate(40);
    fs::write(&path, &cut).unwrap();
    let (read, loaded) = SaveGame::read_from(&path, u64::MAX).expect("the slot reads");
    assert_eq!(read, backup_path(&path));
    assert_eq!(loaded, *saves[5], "every write of both runs");
    fs::remove_dir_all(dir).ok();
}
