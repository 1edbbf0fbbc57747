//! Bad, corrupt, foreign and cut files: each fails clearly, loses nothing, and
//! autosave never writes over what it could not read.

use super::*;

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
