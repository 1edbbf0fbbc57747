//! Savegames through the plugin: exact round trips, autosave, restore rules, slots,
//! bad files, and the seed's Unity layout.

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

#[test]
fn a_round_trip_through_the_plugin_is_exact() {
    let dir = temp_dir("round-trip");
    let first = dir.join("slot.json");
    let mut h = played_app();
    assert!(
        !h.inbox::<NpcMemoryDegraded>().is_empty(),
        "the scenario includes a degradation"
    );
    h.save_to(&first);
    let saved = read_save(&first);
    assert_eq!(saved.npcs.len(), 2);
    let echo = &saved.npcs[0].memory;
    assert_eq!(echo.log.len(), 6);
    assert!(
        echo.history.len() >= 2,
        "several summaries: {:?}",
        echo.history
    );
    let degraded = saved.npcs.iter().any(|n| {
        n.memory
            .degradations
            .iter()
            .any(|d| matches!(d, Degradation::SummaryFailed { .. }))
    });
    assert!(degraded, "the degradation is saved");

    // A fresh game loads it and saves it again: the two saves are identical.
    let mut fresh = Harness::new(seed_sized(ScriptedBackend::new()));
    fresh.load_from(&first);
    assert_eq!(
        fresh.inbox::<MemoryLoaded>()[0].npcs,
        [NpcId::new("echo7"), NpcId::new("robot")]
    );
    let second = dir.join("again.ron");
    fresh.save_to(&second);
    let again = read_save(&second);
    // Play time went on between the load and the second save, never back.
    assert!(
        again.clock >= saved.clock,
        "{} < {}",
        again.clock,
        saved.clock
    );
    assert_eq!(
        again.with_clock(saved.clock),
        saved,
        "RON and JSON hold the same snapshot"
    );
    // The layers themselves match, L1 included.
    assert_eq!(fresh.log("echo7"), h.log("echo7"));
    assert_eq!(fresh.window("robot"), h.window("robot"));
    assert_eq!(fresh.summary("robot"), h.summary("robot"));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn autosave_writes_after_changes_coalesced_and_keeps_a_backup() {
    let dir = temp_dir("autosave");
    let path = dir.join("savegame.json");
    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&path));
    h.spawn("a", persona("A"));
    h.spawn("b", persona("B"));
    h.spawn("c", persona("C"));
    // Each spawn autosaves; wait for the write that holds all three.
    h.run_until("the spawns are saved", |world| {
        world
            .resource::<crate::support::Inbox<MemorySaved>>()
            .0
            .iter()
            .any(|s| s.npcs == 3)
    });
    let writes_before = h.inbox::<MemorySaved>().len();
    // Three NPCs change in the same frame: one write, not three.
    for npc in ["a", "b", "c"] {
        h.say(npc, "hello");
    }
    h.app.update();
    h.settle();
    wait_for_saved_logs(&mut h, &path, 2);
    assert_eq!(read_save(&path).npcs.len(), 3);
    let writes = h.inbox::<MemorySaved>().len() - writes_before;
    assert!(writes < 6, "6 messages were coalesced into {writes} writes");
    assert!(
        h.inbox::<MemorySaved>()[writes_before..]
            .iter()
            .all(|s| s.autosave && s.npcs == 3)
    );
    // The lines after the first snapshot were appended to its journal: the
    // snapshot is never rewritten for them, and the memory before each append is
    // the journal's earlier records.
    let journal = journal_path(&path);
    assert!(journal.exists(), "the changes went to the journal");
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_restored_window_keeps_unsummarized_messages_and_late_npcs_find_their_memory() {
    let dir = temp_dir("restore");
    let path = dir.join("slot.json");
    let backend = ScriptedBackend::new();
    for i in 0..4 {
        backend.push_reply(format!("reply {i}"));
    }
    for _ in 0..8 {
        backend.push_failure(Purpose::Summary, BackendError::Other("down".into()));
    }
    let mut h = Harness::new(seed_sized(backend));
    h.spawn("echo7", persona("ECHO-7"));
    h.spawn("ghost", persona("Ghost"));
    for i in 0..3 {
        h.say("echo7", &format!("line {i}"));
        h.settle();
    }
    h.say("ghost", "boo");
    h.settle();
    let window_before = h.window("echo7");
    assert_eq!(
        window_before.len(),
        7,
        "nothing was summarized, so nothing left the window"
    );
    h.save_to(&path);

    // The new game spawns only ECHO-7 at first.
    let mut fresh = Harness::new(seed_sized(ScriptedBackend::new()).with_autosave(&path));
    fresh.load_from(&path);
    assert_eq!(fresh.window("echo7"), window_before);
    // The ghost was never spawned, yet its memory is saved again with the next change.
    fresh.spawn("echo7", persona("ECHO-7"));
    fresh
        .app
        .world_mut()
        .write_message(ClearNpcMemory::new(NpcId::new("echo7")));
    fresh.wait_for::<MemorySaved>(1);
    let resaved = read_save(&path);
    assert_eq!(
        resaved
            .npcs
            .iter()
            .find(|n| n.id == NpcId::new("ghost"))
            .unwrap()
            .memory
            .log
            .len(),
        2
    );
    // Spawned later, the ghost finds it.
    fresh.spawn("ghost", persona("Ghost"));
    assert_eq!(fresh.log("ghost")[0], (Role::User, "boo".to_owned()));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn slots_never_leak_into_each_other() {
    let dir = temp_dir("slots");
    let (slot_a, slot_b) = (dir.join("a.json"), dir.join("b.json"));
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "I am from slot B");
    h.settle();
    h.save_to(&slot_b);
    h.app
        .world_mut()
        .write_message(ClearNpcMemory::new(NpcId::new("echo7")));
    h.say("echo7", "I am from slot A");
    h.settle();
    h.save_to(&slot_a);

    h.load_from(&slot_a);
    h.say("echo7", "secret only A knows");
    h.settle();
    h.load_from(&slot_b);
    let log = h.log("echo7");
    assert_eq!(log.len(), 2);
    assert!(
        log.iter()
            .all(|(_, text)| !text.contains("slot A") && !text.contains("secret")),
        "{log:?}"
    );
    assert!(h.summary("echo7").is_empty() || !h.summary("echo7").contains("secret"));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_files_fail_clearly_are_kept_and_touch_nothing() {
    let dir = temp_dir("bad-files");
    let good = {
        let mut h = Harness::new(NpcMemoryPlugin::default());
        h.spawn("echo7", persona("ECHO-7"));
        h.say("echo7", "remember me");
        h.settle();
        let path = dir.join("good.json");
        h.save_to(&path);
        fs::read_to_string(path).unwrap()
    };
    let current = format!("\"format_version\":{SAVE_FORMAT_VERSION}");
    let future = good.replacen(&current, "\"format_version\":99", 1);
    type Case = (&'static str, Vec<u8>, fn(&LoadError) -> bool);
    let cases: Vec<Case> = vec![
        (
            "truncated",
            good.as_bytes()[..good.len() / 2].to_vec(),
            |e| matches!(e, LoadError::Malformed(_)),
        ),
        ("invalid", b"{ this is not json".to_vec(), |e| {
            matches!(e, LoadError::Malformed(_))
        }),
        (
            "schema",
            br#"{"format_version": 1, "npcs": [{"name": "x"}], "crate_version": "0"}"#.to_vec(),
            |e| matches!(e, LoadError::Malformed(_)),
        ),
        ("future", future.into_bytes(), |e| {
            matches!(
                e,
                LoadError::UnsupportedVersion {
                    found: 99,
                    newest: SAVE_FORMAT_VERSION
                }
            )
        }),
        ("empty", Vec::new(), |e| *e == LoadError::Empty),
        ("utf8", vec![b'{', 0xff, 0xfe, b'}'], |e| {
            matches!(e, LoadError::NotText { offset: 1 })
        }),
    ];

    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "the memory in use");
    h.settle();
    let before = h.log("echo7");
    for (name, bytes, expected) in &cases {
        let path = dir.join(format!("{name}.json"));
        fs::write(&path, bytes).unwrap();
        h.load_from(&path);
        let failure = h.inbox::<MemoryLoadFailed>().last().unwrap().clone();
        assert!(expected(&failure.error), "{name}: {:?}", failure.error);
        assert_eq!(failure.path, path);
        let text = failure.to_string();
        assert!(
            text.contains(&format!("{name}.json")),
            "{name}: the message names the file: {text}"
        );
        assert!(failure.autosave_paused, "{name}");
        if *name == "future" {
            // A newer build's file is good: it stays where that build will look.
            assert_eq!(failure.moved_to, None);
            assert_eq!(fs::read(&path).unwrap(), *bytes, "{name}: left as it was");
        } else {
            let moved = failure.moved_to.expect("the bad file is moved aside");
            assert!(!path.exists() && moved.exists(), "{name}");
            assert_eq!(
                fs::read(&moved).unwrap(),
                *bytes,
                "{name}: moved, not changed"
            );
        }
        assert_eq!(
            h.log("echo7"),
            before,
            "{name}: the memory in use is untouched"
        );
    }

    // A file of several hundred MB is refused without being read.
    let huge = dir.join("huge.json");
    fs::File::create(&huge)
        .unwrap()
        .set_len(400 * 1024 * 1024)
        .unwrap();
    h.load_from(&huge);
    let failure = h.inbox::<MemoryLoadFailed>().last().unwrap();
    assert!(
        matches!(
            failure.error,
            LoadError::TooLarge {
                bytes: 419_430_400,
                ..
            }
        ),
        "{:?}",
        failure.error
    );
    assert_eq!(h.log("echo7"), before);

    h.load_from(&dir.join("missing.json"));
    assert_eq!(
        h.inbox::<MemoryLoadFailed>().last().unwrap().error,
        LoadError::NotFound
    );
    fs::remove_dir_all(dir).ok();
}

#[test]
fn the_autosave_slot_is_restored_at_startup() {
    let dir = temp_dir("startup-slot");
    let path = dir.join("savegame.json");
    {
        let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&path));
        h.spawn("echo7", persona("ECHO-7"));
        h.say("echo7", "I'm Alex.");
        h.settle();
    } // dropping the app flushes the last autosave
    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&path));
    h.spawn("echo7", persona("ECHO-7"));
    h.wait_for::<MemoryLoaded>(1);
    assert_eq!(
        h.log("echo7")[0].1,
        "I'm Alex.",
        "restored on start, like the seed's RestoreState"
    );
    fs::remove_dir_all(dir).ok();
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

#[test]
fn a_corrupt_slot_is_restored_from_its_backup_and_autosave_never_empties_the_backup() {
    let dir = temp_dir("recover-backup");
    let path = dir.join("savegame.json");
    let good = saved_memory(
        &dir.join("good.json"),
        &["I'm Alex.", "The reactor is down."],
    );
    fs::write(backup_path(&path), &good).unwrap();
    fs::write(&path, b"{ half a save").unwrap();

    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&path));
    h.spawn("echo7", persona("ECHO-7"));
    h.wait_for::<MemoryLoaded>(1);
    let loaded = h.inbox::<MemoryLoaded>()[0].clone();
    assert_eq!(loaded.path, backup_path(&path), "the backup was read");
    let recovered = h.log("echo7");
    assert_eq!(recovered.len(), 4);
    assert_eq!(recovered[0].1, "I'm Alex.");
    let aside = files_named(&dir, ".corrupt-");
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(fs::read(&aside[0]).unwrap(), b"{ half a save");
    let from = loaded
        .recovered_from
        .expect("the game is told it was a recovery");
    assert_eq!(from.path, path);
    assert!(
        matches!(from.error, LoadError::Malformed(_)),
        "{:?}",
        from.error
    );
    assert_eq!(from.moved_to.as_ref(), Some(&aside[0]));

    // Several more lines, each autosaved before the next: the first write after a
    // recovery is a whole snapshot, the rest go to its journal, and the backup is
    // never replaced by an empty memory.
    for i in 0..3 {
        h.say("echo7", &format!("more {i}"));
        h.settle();
        wait_for_saved_logs(&mut h, &path, 6 + 2 * i);
    }
    assert!(journal_path(&path).exists(), "later lines are journaled");
    let backup = read_save(&backup_path(&path));
    assert!(
        backup.npcs[0].memory.log.len() >= 4,
        "the backup is the file restored or a later save, never an empty memory"
    );
    assert_eq!(
        backup.npcs[0].memory.log[..4]
            .iter()
            .map(|m| m.content.to_string())
            .collect::<Vec<_>>(),
        recovered.iter().map(|(_, t)| t.clone()).collect::<Vec<_>>(),
        "the backup still holds the recovered memory"
    );
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_save_from_a_newer_build_is_left_in_place_and_never_written_over() {
    let dir = temp_dir("newer-build");
    let path = dir.join("savegame.json");
    let good = String::from_utf8(saved_memory(&dir.join("good.json"), &["I'm Alex."])).unwrap();
    let current = format!("\"format_version\":{SAVE_FORMAT_VERSION}");
    let future = good.replacen(&current, "\"format_version\":99", 1);
    assert_ne!(future, good);
    fs::write(&path, &future).unwrap();

    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&path));
    h.spawn("echo7", persona("ECHO-7"));
    h.wait_for::<MemoryLoadFailed>(1);
    let failure = h.inbox::<MemoryLoadFailed>()[0].clone();
    assert!(
        matches!(
            failure.error,
            LoadError::UnsupportedVersion {
                found: 99,
                newest: SAVE_FORMAT_VERSION
            }
        ),
        "{:?}",
        failure.error
    );
    assert_eq!(
        failure.moved_to, None,
        "a newer build's file is not renamed"
    );
    assert!(failure.autosave_paused);
    let text = failure.to_string();
    assert!(
        text.contains("version 99") && text.contains("left in place"),
        "{text}"
    );
    h.say("echo7", "hello");
    h.settle();
    wait_for_queued_writes(&mut h, &dir);
    assert_eq!(writes_to(&h, &path), 0, "autosave never tried the file");
    exit(&mut h);
    drop(h);
    assert_eq!(fs::read(&path).unwrap(), future.as_bytes(), "byte for byte");
    assert!(!backup_path(&path).exists());
    assert!(files_named(&dir, ".corrupt-").is_empty());
    fs::remove_dir_all(dir).ok();
}

#[test]
fn an_unreadable_slot_pauses_autosave() {
    let dir = temp_dir("io-error");
    let path = dir.join("savegame.json");
    // A folder where the save should be: reading it is an Io error, as root too.
    fs::create_dir(&path).unwrap();

    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&path));
    h.spawn("echo7", persona("ECHO-7"));
    h.wait_for::<MemoryLoadFailed>(1);
    let failure = h.inbox::<MemoryLoadFailed>()[0].clone();
    assert!(
        matches!(failure.error, LoadError::Io(_)),
        "{:?}",
        failure.error
    );
    assert_eq!(failure.moved_to, None);
    assert!(failure.autosave_paused);
    h.say("echo7", "hello");
    h.settle();
    wait_for_queued_writes(&mut h, &dir);
    assert_eq!(writes_to(&h, &path), 0, "autosave is paused");
    assert!(path.is_dir());

    // The player fixed the folder; the game lets autosave replace the slot.
    fs::remove_dir(&path).unwrap();
    h.app
        .world_mut()
        .write_message(ResumeAutosave::new(path.clone()));
    h.run_until("the slot is written", |world| {
        world
            .resource::<crate::support::Inbox<MemorySaved>>()
            .0
            .iter()
            .any(|s| s.path == path && s.autosave)
    });
    assert_eq!(read_save(&path).npcs[0].memory.log.len(), 2);
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_corrupt_slot_without_a_backup_pauses_autosave() {
    let dir = temp_dir("corrupt-no-backup");
    let path = dir.join("savegame.json");
    fs::write(&path, b"{ half a save").unwrap();
    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&path));
    h.spawn("echo7", persona("ECHO-7"));
    h.wait_for::<MemoryLoadFailed>(1);
    let moved = h.inbox::<MemoryLoadFailed>()[0].moved_to.clone().unwrap();
    assert_eq!(fs::read(moved).unwrap(), b"{ half a save");
    h.say("echo7", "hello");
    h.settle();
    wait_for_queued_writes(&mut h, &dir);
    assert_eq!(writes_to(&h, &path), 0, "autosave is paused");
    assert!(!path.exists());

    // An explicit save there is the game's word: autosave goes on after it.
    h.save_to(&path);
    h.say("echo7", "again");
    h.settle();
    h.run_until("autosave writes the slot again", |world| {
        world
            .resource::<crate::support::Inbox<MemorySaved>>()
            .0
            .iter()
            .any(|s| s.path == path && s.autosave)
    });
    wait_for_saved_logs(&mut h, &path, 4);
    fs::remove_dir_all(dir).ok();
}

#[test]
fn autosave_never_writes_over_a_slot_it_switched_to_without_reading() {
    let dir = temp_dir("switched-slot");
    let other = dir.join("other.json");
    let theirs = saved_memory(&other, &["from another game"]);
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    h.app.world_mut().resource_mut::<SaveSettings>().autosave = Some(other.clone());
    h.say("echo7", "hello");
    h.settle();
    wait_for_queued_writes(&mut h, &dir);
    assert_eq!(fs::read(&other).unwrap(), theirs, "the unread file is kept");
    let refused = h.inbox::<MemorySaveFailed>();
    assert_eq!(refused.len(), 1, "told once, then paused: {refused:?}");
    assert_eq!(refused[0].path, other);
    assert_eq!(refused[0].error, SaveError::Unread);
    h.say("echo7", "still paused");
    h.settle();
    wait_for_queued_writes(&mut h, &dir);
    assert_eq!(fs::read(&other).unwrap(), theirs);
    assert_eq!(h.inbox::<MemorySaveFailed>().len(), 1);

    h.app
        .world_mut()
        .write_message(ResumeAutosave::new(other.clone()));
    h.run_until("the slot is written", |world| {
        world
            .resource::<crate::support::Inbox<MemorySaved>>()
            .0
            .iter()
            .any(|s| s.path == other && s.autosave)
    });
    let log = &read_save(&other).npcs[0].memory.log;
    assert_eq!(
        log[0].content.to_string(),
        "hello",
        "the memory in use replaced it"
    );
    fs::remove_dir_all(dir).ok();
}

#[test]
fn two_quick_saves_and_an_exit_leave_the_newest_complete_file_and_no_temp_files() {
    let dir = temp_dir("quick-saves");
    let path = dir.join("slot.json");
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "first");
    h.settle();
    h.app
        .world_mut()
        .write_message(SaveMemory::new(path.clone()));
    h.app.update();
    h.say("echo7", "second");
    h.app
        .world_mut()
        .write_message(SaveMemory::new(path.clone()));
    exit(&mut h);
    let saved = read_save(&path);
    // The reply to "second" may or may not have arrived in that frame.
    assert_eq!(
        saved.npcs[0].memory.log.get(2).map(|m| &*m.content),
        Some("second"),
        "the newest save won"
    );
    drop(h);
    assert_eq!(read_save(&path), saved, "no older write landed later");
    assert!(files_named(&dir, ".tmp").is_empty());
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_save_the_reader_would_refuse_is_not_written() {
    let dir = temp_dir("oversized");
    let path = dir.join("slot.json");
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "short");
    h.settle();
    h.save_to(&path);
    let before = fs::read(&path).unwrap();
    h.app
        .world_mut()
        .resource_mut::<SaveSettings>()
        .max_file_bytes = before.len() as u64 + 64;
    h.say("echo7", &"long ".repeat(100));
    h.settle();
    h.app
        .world_mut()
        .write_message(SaveMemory::new(path.clone()));
    h.wait_for::<MemorySaveFailed>(1);
    let failure = h.inbox::<MemorySaveFailed>()[0].clone();
    assert_eq!(failure.path, path);
    let SaveError::TooLarge { bytes, max } = failure.error else {
        panic!("{:?}", failure.error)
    };
    assert!(bytes > max && max == before.len() as u64 + 64);
    assert!(failure.to_string().contains("over the limit"), "{failure}");
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "the previous file is untouched"
    );
    assert!(!backup_path(&path).exists());
    assert!(files_named(&dir, ".tmp").is_empty());
    fs::remove_dir_all(dir).ok();
}

#[test]
fn the_seeds_unity_save_is_imported_into_one_npc() {
    // The seed's example file, comments and all.
    let unity = r#"{
    "keys": [
        "ChatSystem", 
        "ContextMemory"
    ],
    "values": [
        // L2: 完整的对话流水账
        "{\"logs\":[{\"role\":\"user\",\"content\":\"你好，我是Alex。现在要去修复供电系统。\"}, {\"role\":\"assistant\",\"content\":\"已记录。建议先前往配电室检查主断路器；如提供所在区域可给出更短路线。\"}]}", 
        
        // L3: 提炼后的语义总结
        "{\"summary\":\"玩家名为Alex；当前目标是修复供电系统；已建议前往配电室检查主断路器，并可在提供所在区域后给出更短路线。\",\"counter\":2}"
    ]
}"#;
    let dir = temp_dir("unity");
    let path = dir.join("savegame.json");
    fs::write(&path, unity).unwrap();
    let mut h = Harness::new(seed_sized(ScriptedBackend::new()));
    h.spawn_from_file("echo7", "npcs/echo7.zh.npc.ron");
    h.app
        .world_mut()
        .write_message(bevy_npc_memory::saves::ImportUnitySave::new(
            path.clone(),
            NpcId::new("echo7"),
        ));
    h.wait_for::<MemoryLoaded>(1);
    assert_eq!(
        h.log("echo7"),
        [
            (
                Role::User,
                "你好，我是Alex。现在要去修复供电系统。".to_owned()
            ),
            (
                Role::Assistant,
                "已记录。建议先前往配电室检查主断路器；如提供所在区域可给出更短路线。".to_owned()
            ),
        ]
    );
    assert_eq!(
        h.summary("echo7"),
        "玩家名为Alex；当前目标是修复供电系统；已建议前往配电室检查主断路器，并可在提供所在区域后给出更短路线。"
    );
    // counter 2 = both messages arrived after that summary, so both stay uncovered
    // and in the window, and the system prompt carries the summary.
    let window = h.window("echo7");
    assert_eq!(window.len(), 3);
    assert!(
        window[0]
            .content
            .starts_with("你是地堡安保与引导 AI（ECHO-7）")
    );
    assert!(window[0].content.ends_with("[前情提要]: 玩家名为Alex；当前目标是修复供电系统；已建议前往配电室检查主断路器，并可在提供所在区域后给出更短路线。"));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn savegames_are_reflectable_for_reflection_based_save_systems() {
    use bevy::reflect::serde::{TypedReflectDeserializer, TypedReflectSerializer};
    use serde::de::DeserializeSeed;

    let mut h = played_app();
    let dir = temp_dir("reflect");
    let path = dir.join("slot.json");
    h.save_to(&path);
    let save = read_save(&path);

    let registry = h
        .app
        .world()
        .resource::<bevy::ecs::reflect::AppTypeRegistry>()
        .read();
    let json = serde_json::to_string(&TypedReflectSerializer::new(&save, &registry)).unwrap();
    let restored = TypedReflectDeserializer::of::<SaveGame>(&registry)
        .deserialize(&mut serde_json::Deserializer::from_str(&json))
        .unwrap()
        .try_take::<SaveGame>()
        .unwrap();
    assert_eq!(restored, save);
    fs::remove_dir_all(dir).ok();
}

#[test]
fn lines_waiting_when_the_game_quits_are_answered_after_the_next_start() {
    let dir = temp_dir("queued-on-quit");
    let slot = dir.join("savegame.json");
    let busy = ScriptedBackend::new();
    busy.push(Purpose::Reply, bevy_npc_memory::backends::ScriptStep::Hang);
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(busy)
            .with_autosave(&slot),
    );
    h.spawn("echo7", persona("ECHO-7"));
    for line in ["first", "second", "third"] {
        h.say("echo7", line);
    }
    h.app.update();
    assert_eq!(
        h.app
            .world()
            .resource::<NpcRequests>()
            .queued_lines(&NpcId::new("echo7"))
            .collect::<Vec<_>>(),
        ["second", "third"]
    );
    // The player quits while ECHO-7 is still thinking about the first line.
    h.app.world_mut().write_message(AppExit::Success);
    h.app.update();
    drop(h);
    let saved = read_save(&slot);
    assert_eq!(saved.npcs[0].queued, ["second", "third"]);
    assert_eq!(
        saved.npcs[0].memory.log.len(),
        1,
        "the line in flight is in L2"
    );

    let backend = ScriptedBackend::new();
    backend
        .push_reply("About the second line.")
        .push_reply("About the third line.");
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(backend)
            .with_autosave(&slot),
    );
    h.spawn("echo7", persona("ECHO-7"));
    h.wait_for_replies(2);
    assert_eq!(
        h.log("echo7"),
        [
            (Role::User, "first".to_owned()),
            (Role::User, "second".to_owned()),
            (Role::Assistant, "About the second line.".to_owned()),
            (Role::User, "third".to_owned()),
            (Role::Assistant, "About the third line.".to_owned()),
        ]
    );
    // Nothing waits any more, and the next autosave says so.
    h.settle();
    wait_for_saved_logs(&mut h, &slot, 5);
    assert!(read_save(&slot).npcs[0].queued.is_empty());
    fs::remove_dir_all(dir).ok();
}

#[test]
fn restored_lines_are_held_to_the_rules_of_new_ones() {
    let dir = temp_dir("queued-unfit");
    let path = dir.join("slot.json");
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "hello");
    h.wait_for_replies(1);
    h.save_to(&path);
    let mut save = read_save(&path);
    let npc = std::sync::Arc::make_mut(&mut save.npcs[0]);
    npc.queued = vec!["   ".into(), "x".repeat(10_000), "still fine".into()];
    fs::write(
        &path,
        save.to_bytes(bevy_npc_memory::saves::SaveFormat::Json)
            .unwrap(),
    )
    .unwrap();

    h.load_from(&path);
    h.wait_for_replies(2);
    let handed_back: Vec<_> = h
        .inbox::<NpcReplyFailed>()
        .iter()
        .map(|f| (f.error.clone(), f.unrecorded_line.clone().unwrap().len()))
        .collect();
    assert_eq!(
        handed_back,
        [
            (ReplyError::EmptyLine, 3),
            (
                ReplyError::LineTooLong {
                    chars: 10_000,
                    max: 4_000
                },
                10_000
            ),
        ]
    );
    assert_eq!(h.log("echo7")[2], (Role::User, "still fine".to_owned()));
    fs::remove_dir_all(dir).ok();
}

/// The game was killed while appending an autosave: the next start loads the
/// snapshot and every whole record, says what was dropped, and autosave goes on
/// appending after the last whole record.
#[test]
fn a_journal_cut_short_by_a_crash_loads_its_whole_records_and_autosave_goes_on() {
    let dir = temp_dir("torn-journal");
    let path = dir.join("savegame.json");
    {
        let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&path));
        h.spawn("echo7", persona("ECHO-7"));
        for i in 0..3 {
            h.say("echo7", &format!("line {i}"));
            h.settle();
            wait_for_saved_logs(&mut h, &path, 2 + 2 * i);
        }
    }
    let journal = journal_path(&path);
    let whole = fs::read(&journal).unwrap();
    // Half a record more: a length that promises bytes that never came.
    let mut torn = whole.clone();
    torn.extend_from_slice(&500u32.to_le_bytes());
    torn.extend_from_slice(b"\0\0\0\0{\"clock\":");
    fs::write(&journal, &torn).unwrap();

    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&path));
    h.spawn("echo7", persona("ECHO-7"));
    h.wait_for::<MemoryLoaded>(1);
    let loaded = h.inbox::<MemoryLoaded>()[0].clone();
    assert_eq!(h.log("echo7").len(), 6, "every whole record applied");
    let report = loaded.journal.expect("the dropped tail is reported");
    assert_eq!(
        report.problem,
        bevy_npc_memory::saves::JournalProblem::TornTail {
            bytes: (torn.len() - whole.len()) as u64
        }
    );
    assert_eq!(report.kept_at, None);
    assert!(files_named(&dir, ".corrupt-").is_empty());
    h.say("echo7", "after the crash");
    h.settle();
    wait_for_saved_logs(&mut h, &path, 8);
    let on_disk = fs::read(&journal).unwrap();
    assert_eq!(
        &on_disk[..whole.len()],
        &whole[..],
        "appended after the whole records"
    );
    fs::remove_dir_all(dir).ok();
}

/// An id of any length is the game's to choose: one past what a save holds is
/// shortened where it is made, so its NPC talks, saves and loads, and two long
/// ids that differ only at the end stay two NPCs. Saves of such an NPC used to
/// fail forever (the reader refused the id the writer had let in).
#[test]
fn npcs_with_ids_longer_than_a_save_holds_save_and_load_as_two() {
    let dir = temp_dir("long-ids");
    let path = dir.join("slot.json");
    let long = format!("{}\u{0915}\u{094D}\u{0937}👩‍🚀", "bunker-".repeat(80));
    let (first, second) = (format!("{long}a"), format!("{long}b"));
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn(&first, persona("First"));
    h.spawn(&second, persona("Second"));
    h.say(&first, "I am talking to the first.");
    h.say(&second, "And now to the second.");
    h.settle();
    h.save_to(&path);
    assert!(
        h.inbox::<MemorySaveFailed>().is_empty(),
        "{:?}",
        h.inbox::<MemorySaveFailed>()
    );

    let mut fresh = Harness::new(NpcMemoryPlugin::default());
    fresh.load_from(&path);
    assert!(fresh.inbox::<MemoryLoadFailed>().is_empty());
    let mut loaded = fresh.inbox::<MemoryLoaded>()[0].npcs.clone();
    loaded.sort();
    let mut made = vec![NpcId::new(first.as_str()), NpcId::new(second.as_str())];
    made.sort();
    assert_eq!(loaded, made, "both NPCs, under the ids the game makes");
    for (npc, line) in [
        (&first, "I am talking to the first."),
        (&second, "And now to the second."),
    ] {
        let log = fresh.log(npc);
        assert_eq!(log.len(), 2, "{log:?}");
        assert_eq!(log[0], (Role::User, line.to_owned()));
    }
    fs::remove_dir_all(dir).ok();
}
