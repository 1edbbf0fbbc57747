//! Loads off the main thread with the autosave journal: the slot's snapshot is
//! read and its journal replayed in the load task, and after the swap autosave
//! appends to what the loaded slot holds on disk, never deltas from the memory
//! the load replaced.

use std::path::Path;
use std::sync::Arc;

use crate::loads::{log_len, long_save};
use crate::support::{Harness, add_inbox, persona, temp_dir};
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::saves::MemoryRestored;
use bevy_npc_memory::saves::NpcMemorySnapshot;
use bevy_npc_memory::saves::{JournaledSlot, SaveGame, journal_path};

/// The slot as loading sees it: snapshot plus journal.
fn on_disk(path: &Path) -> Vec<String> {
    let (_, save) = SaveGame::read_from(path, u64::MAX).unwrap();
    let npc = save
        .npcs
        .iter()
        .find(|npc| npc.id == NpcId::new("echo7"))
        .expect("echo7 is saved");
    npc.memory
        .log
        .iter()
        .map(|m| m.content.to_string())
        .collect()
}

fn in_use(h: &Harness) -> Vec<String> {
    h.log("echo7").into_iter().map(|(_, text)| text).collect()
}

/// Writes a journaled slot: a snapshot of `messages` lines, then `more` lines
/// appended to its journal, as autosave leaves it.
fn journaled_slot(path: &Path, messages: usize, more: usize, mark: &str) {
    let slot = JournaledSlot::new(path, u64::MAX);
    slot.write(&Arc::new(long_save(&["echo7"], messages, false, mark)))
        .unwrap();
    slot.write(&Arc::new(long_save(
        &["echo7"],
        messages + more,
        false,
        mark,
    )))
    .unwrap();
    assert!(journal_path(path).exists(), "the slot has a journal");
}

/// Waits for an autosave that holds the memory in use, then until no write has
/// come for a while.
fn wait_for_autosave_of_memory(h: &mut Harness, path: &Path) {
    h.settle();
    let want = in_use(h);
    h.run_until("the autosave holds the memory in use", |_| {
        SaveGame::read_from(path, u64::MAX).is_ok() && on_disk(path) == want
    });
    let (mut quiet, mut saves) = (0, h.inbox::<MemorySaved>().len());
    while quiet < 30 {
        h.app.update();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let now = h.inbox::<MemorySaved>().len();
        quiet = if now == saves { quiet + 1 } else { 0 };
        saves = now;
    }
}

/// Autosave on slot A; the game loads a journaled slot B. The load replays B's
/// journal off the main thread, autosave moves to B and appends there what
/// changed since B as read (not since A's memory), and A is left as it was.
#[test]
fn after_loading_a_journaled_slot_autosave_appends_to_it() {
    let dir = temp_dir("load-journaled");
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&a));
    h.wait_secs = 30;
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "Said on A.");
    wait_for_autosave_of_memory(&mut h, &a);
    let a_before = (
        std::fs::read(&a).unwrap(),
        std::fs::read(journal_path(&a)).ok(),
    );

    journaled_slot(&b, 300, 6, "b");
    h.start_load(&b);
    h.wait_for::<MemoryLoaded>(1);
    let loaded = h.inbox::<MemoryLoaded>()[0].clone();
    assert_eq!(loaded.path, b);
    assert_eq!(loaded.journal, None, "the journal replayed whole");
    assert_eq!(log_len(&h, "echo7"), 306, "snapshot and journal");
    assert_eq!(
        in_use(&h)[305],
        "b line 305: the lantern by the north gate was lit",
        "the journal's records are in memory"
    );

    let b_snapshot = std::fs::read(&b).unwrap().len();
    h.say("echo7", "Said on B.");
    wait_for_autosave_of_memory(&mut h, &b);
    assert!(on_disk(&b).iter().any(|line| line == "Said on B."));
    let first_on_b = h
        .inbox::<MemorySaved>()
        .iter()
        .find(|saved| saved.path == b)
        .expect("autosave moved to B")
        .bytes;
    assert!(
        first_on_b < b_snapshot / 4,
        "the first autosave after the load appended to B's journal ({first_on_b} bytes), \
         not a new snapshot ({b_snapshot} bytes)"
    );
    assert!(
        on_disk(&b).iter().all(|line| line != "Said on A."),
        "nothing of the memory the load replaced"
    );
    let a_after = (
        std::fs::read(&a).unwrap(),
        std::fs::read(journal_path(&a)).ok(),
    );
    assert!(a_after == a_before, "slot A untouched after the load");

    // And back to A: its journal is read again, and autosave appends to it.
    h.start_load(&a);
    h.wait_for::<MemoryLoaded>(2);
    assert_eq!(in_use(&h).len(), 2);
    assert_eq!(in_use(&h)[0], "Said on A.");
    h.say("echo7", "Back on A.");
    wait_for_autosave_of_memory(&mut h, &a);
    assert!(on_disk(&a).iter().all(|line| !line.starts_with("b line")));
    std::fs::remove_dir_all(dir).ok();
}

/// A snapshot the game restores replaces the memory; the next autosave turns the
/// slot into the restored memory (appending what differs from what the slot
/// holds), so the slot reads back as the memory in use.
#[test]
fn after_a_restore_the_autosave_slot_reads_back_as_the_memory_in_use() {
    let dir = temp_dir("restore-journaled");
    let slot = dir.join("autosave.json");
    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&slot));
    add_inbox::<MemoryRestored>(&mut h.app);
    h.wait_secs = 30;
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "Before the restore.");
    wait_for_autosave_of_memory(&mut h, &slot);

    *h.app.world_mut().resource_mut::<NpcMemorySnapshot>() =
        NpcMemorySnapshot::restore(long_save(&["echo7"], 40, false, "restored"));
    h.wait_for::<MemoryRestored>(1);
    h.say("echo7", "After the restore.");
    wait_for_autosave_of_memory(&mut h, &slot);
    let disk = on_disk(&slot);
    assert_eq!(disk.len(), 42);
    assert!(disk[0].starts_with("restored"));
    assert!(disk.iter().all(|line| line != "Before the restore."));
    std::fs::remove_dir_all(dir).ok();
}
