use std::fs;

use proptest::prelude::*;
use serde::Deserialize;

use super::*;
use crate::memory::{LoreChanges, MemoryParts, Role, SpeakerId};
use crate::save::file::backup_path;
use crate::save::slot::{Recovered, read_slot};
pub(super) use crate::save::test_support::{autosave, npc, temp_dir};
use crate::save::{WaitingLine, WriteTicket, write_slot};

thread_local! {
    /// NPC checks replay made on this thread (see `check_npc`).
    pub(super) static CHECKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// `save` with one more line for `id`.
pub(super) fn with_line(save: &SaveGame, id: &str, text: &str) -> Arc<SaveGame> {
    let mut next = save.clone();
    let at = next.npcs.iter().position(|n| n.id.as_str() == id).unwrap();
    let mut changed = next.npcs[at].as_ref().clone();
    let stamp = changed.memory.log.len() as f64;
    let mut memory = changed.memory.clone().into_memory().unwrap();
    memory.layers().record(Role::Assistant, text, stamp);
    changed.memory = MemoryParts::of(&memory.log, &memory.window, &memory.context);
    next.npcs[at] = Arc::new(changed);
    next.clock = stamp + 1.0;
    Arc::new(next)
}

/// Loads the slot as the plugin does, keeping what it holds for autosave.
fn load(path: &Path) -> Recovered {
    let Ok(read) = read_slot(path, u64::MAX, true, true) else {
        panic!("{} loads", path.display())
    };
    read
}

/// Reads the snapshot at `path` with the journals that continue it, as the
/// slot's backup is read.
fn read_chain(path: &Path) -> Recovered {
    let Ok(read) = read_slot(path, u64::MAX, false, false) else {
        panic!("{} reads", path.display())
    };
    read
}

/// A slot with a snapshot of two NPCs and `records` journal records, and the
/// memory after each write.
fn journaled(dir: &Path, records: usize) -> (PathBuf, Vec<Arc<SaveGame>>) {
    let path = dir.join("slot.json");
    let journals = Journals::default();
    let mut states = vec![Arc::new(SaveGame::new(vec![npc("a", 30), npc("b", 30)]))];
    autosave(&path, &states[0], &journals);
    for i in 0..records {
        let next = with_line(states.last().unwrap(), ["a", "b"][i % 2], &format!("r{i}"));
        autosave(&path, &next, &journals);
        states.push(next);
    }
    (path, states)
}

/// Byte offsets where each record of a journal ends.
pub(super) fn record_ends(journal: &[u8]) -> Vec<usize> {
    let mut at = HEADER_LEN;
    let mut ends = Vec::new();
    while at < journal.len() {
        at += FRAME_LEN + u32_at(journal, at) as usize;
        ends.push(at);
    }
    ends
}

#[test]
fn an_autosave_appends_only_what_changed_and_loads_back_exactly() {
    let dir = temp_dir("append");
    let (path, states) = journaled(&dir, 6);
    let snapshot = fs::metadata(&path).unwrap().len();
    let journal = fs::read(journal_path(&path)).unwrap();
    let ends = record_ends(&journal);
    assert_eq!(ends.len(), 6);
    let biggest = ends
        .iter()
        .scan(HEADER_LEN, |at, &end| {
            let len = end - *at;
            *at = end;
            Some(len)
        })
        .max()
        .unwrap();
    assert!(
        (biggest as u64) * 4 < snapshot,
        "a record of one line ({biggest} bytes) is far smaller than the snapshot ({snapshot})"
    );
    let read = load(&path);
    assert_eq!(read.journal_report, None);
    assert_eq!(&read.save, states.last().unwrap().as_ref());
    assert_eq!(
        SaveGame::read_from(&path, u64::MAX).unwrap().1,
        *states[6],
        "read_from replays the journal too"
    );
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_torn_tail_keeps_every_whole_record_before_it() {
    let dir = temp_dir("torn");
    let (path, states) = journaled(&dir, 4);
    let journal = fs::read(journal_path(&path)).unwrap();
    let ends = record_ends(&journal);
    // Cut in the middle of the last record.
    let cut = ends[2] + (ends[3] - ends[2]) / 2;
    fs::write(journal_path(&path), &journal[..cut]).unwrap();
    let read = load(&path);
    assert_eq!(read.save, *states[3]);
    let report = read.journal_report.unwrap();
    assert_eq!(report.applied, 3);
    assert_eq!(
        report.problem,
        JournalProblem::TornTail {
            bytes: (cut - ends[2]) as u64
        }
    );
    assert_eq!(report.kept_at, None, "a torn tail is no damage");
    // The next autosave cuts the torn bytes off and appends after record 3.
    let journals = Journals::default();
    journals.set(&path, read.journal);
    let next = with_line(&states[3], "a", "after the crash");
    autosave(&path, &next, &journals);
    let read = load(&path);
    assert_eq!(
        (read.save, read.journal_report),
        (next.as_ref().clone(), None)
    );
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_corrupt_record_in_the_middle_stops_the_replay_there_and_is_kept() {
    let dir = temp_dir("corrupt");
    let (path, states) = journaled(&dir, 5);
    let mut journal = fs::read(journal_path(&path)).unwrap();
    let ends = record_ends(&journal);
    // Flip one byte inside record 2's payload.
    journal[ends[1] + FRAME_LEN + 3] ^= 0x20;
    fs::write(journal_path(&path), &journal).unwrap();
    let read = load(&path);
    assert_eq!(read.save, *states[2], "records 0 and 1 applied");
    let report = read.journal_report.unwrap();
    assert_eq!(report.applied, 2);
    assert!(
        matches!(
            &report.problem,
            JournalProblem::Corrupt { record: 2, bytes, .. } if *bytes == (journal.len() - ends[1]) as u64
        ),
        "{report}"
    );
    let kept = report.kept_at.unwrap();
    assert_eq!(
        fs::read(kept).unwrap(),
        journal,
        "the damaged journal is kept"
    );
    assert_eq!(read.journal.unwrap().journal_len, ends[1] as u64);
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_record_that_does_not_fit_the_save_is_refused_whole() {
    let dir = temp_dir("misfit");
    let (path, states) = journaled(&dir, 1);
    // A well-framed record that extends a log from past its end.
    let bad = br#"{"clock":1.0,"changes":[{"Delta":{"id":"a","log":{"from":999,"items":[]}}}]}"#;
    let mut journal = fs::read(journal_path(&path)).unwrap();
    journal.extend_from_slice(&(bad.len() as u32).to_le_bytes());
    journal.extend_from_slice(&crc32fast::hash(bad).to_le_bytes());
    journal.extend_from_slice(bad);
    fs::write(journal_path(&path), &journal).unwrap();
    let read = load(&path);
    assert_eq!(read.save, *states[1]);
    let report = read.journal_report.unwrap();
    assert!(
        matches!(&report.problem, JournalProblem::Corrupt { record: 1, reason, .. } if reason.contains("log continues from entry 999")),
        "{report}"
    );
    fs::remove_dir_all(dir).ok();
}

/// A record that decodes and fits, but leaves a memory the loader would refuse
/// (a window starting past the log): the replay stops before it. (Each NPC is
/// checked once the records are in; only when that fails are they applied again,
/// checked one by one, to find the first bad record.)
#[test]
fn a_record_leaving_an_invalid_memory_stops_the_replay_before_it() {
    let dir = temp_dir("invalid");
    let (path, states) = journaled(&dir, 2);
    let mut journal = fs::read(journal_path(&path)).unwrap();
    for bad in [
        &br#"{"clock":40.0,"changes":[{"Delta":{"id":"a","window_start":10000}}]}"#[..],
        br#"{"clock":41.0,"changes":[{"Delta":{"id":"b","window_start":0}}]}"#,
    ] {
        journal.extend_from_slice(&(bad.len() as u32).to_le_bytes());
        journal.extend_from_slice(&crc32fast::hash(bad).to_le_bytes());
        journal.extend_from_slice(bad);
    }
    fs::write(journal_path(&path), &journal).unwrap();
    let read = load(&path);
    assert_eq!(read.save, *states[2]);
    let report = read.journal_report.unwrap();
    assert!(
        matches!(&report.problem, JournalProblem::Corrupt { record: 2, reason, .. } if reason.contains("window_start")),
        "{report}"
    );
    fs::remove_dir_all(dir).ok();
}

/// Recovery from a record that leaves an invalid memory is bounded by the
/// journal's size: it checks each NPC a few times per halving of the records, not
/// once per record (which cost the NPC's size per record, on the slot's lock).
#[test]
fn finding_a_bad_record_among_many_checks_each_npc_a_logarithmic_number_of_times() {
    let dir = temp_dir("halving");
    let (path, states) = journaled(&dir, 1);
    let mut journal = fs::read(journal_path(&path)).unwrap();
    let mut frame = |record: String| {
        journal.extend_from_slice(&(record.len() as u32).to_le_bytes());
        journal.extend_from_slice(&crc32fast::hash(record.as_bytes()).to_le_bytes());
        journal.extend_from_slice(record.as_bytes());
    };
    // 300 records that each move the clock forward; the 201st (record 201, after
    // the first autosave's) breaks NPC a, and every later one touches a again.
    for i in 0..300 {
        let change = match i {
            200 => r#"{"Delta":{"id":"a","window_start":10000}}"#,
            201.. => r#"{"Delta":{"id":"a"}}"#,
            _ => r#"{"Delta":{"id":"b","window_start":0}}"#,
        };
        frame(format!(r#"{{"clock":{},"changes":[{change}]}}"#, 100 + i));
    }
    fs::write(journal_path(&path), &journal).unwrap();
    CHECKS.with(|checks| checks.set(0));
    let read = load(&path);
    let checks = CHECKS.with(std::cell::Cell::get);
    let report = read.journal_report.unwrap();
    assert!(
        matches!(&report.problem, JournalProblem::Corrupt { record: 201, reason, .. } if reason.contains("window_start")),
        "{report}"
    );
    // Everything before the bad record is in (the clock of the record before it,
    // b's window), and nothing of it or after it (a as the last autosave left it).
    assert_eq!(read.save.clock, 299.0);
    assert_eq!(read.save.npcs[0], states[1].npcs[0]);
    assert_eq!(read.save.npcs[1].memory.window_start, 0);
    // One check at the end, then at most two NPCs per halving of 302 records.
    assert!(checks <= 2 + 2 * 10, "{checks} NPC checks");
    fs::remove_dir_all(dir).ok();
}

#[test]
fn compaction_writes_a_snapshot_and_keeps_the_old_journal_with_the_backup() {
    let dir = temp_dir("compact");
    let path = dir.join("slot.json");
    let journals = Journals::default();
    let mut state = Arc::new(SaveGame::new(vec![npc("a", 10), npc("b", 10)]));
    autosave(&path, &state, &journals);
    let mut compactions = 0;
    for i in 0..400 {
        state = with_line(&state, "a", &format!("line {i} {}", "x".repeat(100)));
        let had_journal = journal_path(&path).exists();
        let bytes = autosave(&path, &state, &journals);
        let snapshot = fs::metadata(&path).unwrap().len() as usize;
        if bytes == snapshot {
            compactions += 1;
            assert!(had_journal, "only a grown journal is compacted");
            assert_eq!(
                fs::read(journal_path(&path)).unwrap(),
                header(BaseId::of(&fs::read(&path).unwrap())),
                "the journal starts again, naming the new snapshot"
            );
            // The backup and its journal, sealed, add up to the new memory.
            let backup = read_chain(&backup_path(&path));
            assert_eq!(backup.journal_report, None);
            assert_eq!(&backup.save, state.as_ref());
            assert_eq!(
                seal_of(&fs::read(journal_path(&backup_path(&path))).unwrap()),
                Some(BaseId::of(&fs::read(&path).unwrap()))
            );
        } else {
            let journal = fs::metadata(journal_path(&path)).unwrap().len();
            assert!(
                journal <= (snapshot as u64 / COMPACT_SHARE).max(MIN_JOURNAL_BYTES),
                "the journal stays within its share"
            );
        }
        let read = load(&path);
        assert_eq!((&read.save, read.journal_report), (state.as_ref(), None));
    }
    assert!(compactions >= 2, "{compactions}");
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_crash_between_snapshot_and_journal_retirement_still_loads() {
    let dir = temp_dir("crash-compact");
    let (path, states) = journaled(&dir, 3);
    let stale_journal = fs::read(journal_path(&path)).unwrap();
    // A whole snapshot lands (the old one becomes the backup), then a build that
    // moved the journal after the snapshot (this one moves it first) dies before
    // moving it.
    let newest = with_line(&states[3], "b", "newest");
    newest.write_to(&path, u64::MAX).unwrap();
    fs::write(journal_path(&path), &stale_journal).unwrap();
    let read = load(&path);
    assert_eq!(read.save, *newest, "the stale journal is not applied");
    assert_eq!(read.journal_report, None, "and nothing was lost");
    // The backup with its journal is the memory before.
    fs::write(journal_path(&backup_path(&path)), &stale_journal).unwrap();
    let backup = read_chain(&backup_path(&path));
    assert_eq!(backup.save, *states[3]);
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_journal_for_another_snapshot_is_refused_and_moved_aside() {
    let dir = temp_dir("generation");
    let (path, states) = journaled(&dir, 2);
    // Another slot: another snapshot, and a journal extending it.
    let other = temp_dir("generation-other").join("slot.json");
    let journals = Journals::default();
    let small = Arc::new(SaveGame::new(vec![npc("a", 5)]));
    autosave(&other, &small, &journals);
    autosave(&other, &with_line(&small, "a", "elsewhere"), &journals);
    let foreign = fs::read(journal_path(&other)).unwrap();
    fs::write(journal_path(&path), &foreign).unwrap();
    let read = load(&path);
    assert_eq!(read.save, *states[0], "the snapshot alone");
    let report = read.journal_report.unwrap();
    assert_eq!(
        (report.applied, &report.problem),
        (0, &JournalProblem::OtherSnapshot)
    );
    assert_eq!(fs::read(report.kept_at.unwrap()).unwrap(), foreign);
    assert!(!journal_path(&path).exists());
    // Not a journal at all.
    fs::write(journal_path(&path), b"hello").unwrap();
    let report = load(&path).journal_report.unwrap();
    assert!(matches!(report.problem, JournalProblem::Unreadable(_)));
    fs::remove_dir_all(dir).ok();
    fs::remove_dir_all(temp_dir("generation-other")).ok();
}

#[test]
fn new_and_removed_npcs_and_lore_changes_are_journaled() {
    let dir = temp_dir("npcs");
    let path = dir.join("slot.json");
    let journals = Journals::default();
    let first = Arc::new(SaveGame::new(vec![npc("a", 20), npc("b", 20)]));
    autosave(&path, &first, &journals);
    let second = Arc::new(SaveGame::new(vec![npc("a", 20), npc("c", 3)]).with_clock(50.0));
    let bytes = autosave(&path, &second, &journals);
    assert!(bytes < fs::metadata(&path).unwrap().len() as usize);
    let read = load(&path);
    assert_eq!((&read.save, read.journal_report), (second.as_ref(), None));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_change_the_loader_would_refuse_is_not_appended() {
    let dir = temp_dir("refuse");
    let (path, states) = journaled(&dir, 1);
    let journals = Journals::default();
    journals.set(&path, load(&path).journal);
    let mut bad = states[1].as_ref().clone();
    let mut npc = bad.npcs[0].as_ref().clone();
    npc.memory.window_start = 10_000;
    bad.npcs[0] = Arc::new(npc);
    let before = fs::read(journal_path(&path)).unwrap();
    let refused = write_slot(
        &Arc::new(bad),
        &path,
        u64::MAX,
        &WriteTicket::default(),
        true,
        &journals,
        true,
    );
    assert!(matches!(refused, Err(SaveError::WouldNotLoad(_))));
    assert_eq!(fs::read(journal_path(&path)).unwrap(), before);
    fs::remove_dir_all(dir).ok();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Cut the journal anywhere: the load is always the snapshot plus the whole
    /// records before the cut, never a panic or an error.
    #[test]
    fn any_truncation_loads_a_prefix(cut_at in 0.0f64..=1.0, flip in proptest::option::of(0usize..100_000)) {
        let dir = temp_dir("prop");
        let (path, states) = journaled(&dir, 5);
        let mut journal = fs::read(journal_path(&path)).unwrap();
        let ends = record_ends(&journal);
        let cut = HEADER_LEN + ((journal.len() - HEADER_LEN) as f64 * cut_at) as usize;
        journal.truncate(cut);
        if let Some(at) = flip.filter(|_| cut > HEADER_LEN) {
            let at = HEADER_LEN + at % (cut - HEADER_LEN);
            journal[at] ^= 0x01;
        }
        fs::write(journal_path(&path), &journal).unwrap();
        let read = load(&path);
        let whole = ends.iter().filter(|&&end| end <= cut).count();
        // A flipped byte can only stop the replay earlier.
        let applied = (0..=whole).rev().find(|&n| read.save == *states[n]);
        prop_assert!(applied.is_some(), "the load is one of the states before the cut");
        if flip.is_none() {
            prop_assert_eq!(applied, Some(whole));
        }
        fs::remove_dir_all(dir).ok();
    }
}

#[test]
fn queued_lines_with_their_speakers_and_privacy_are_journaled() {
    let dir = temp_dir("queued");
    let path = dir.join("slot.json");
    let journals = Journals::default();
    let first = Arc::new(SaveGame::new(vec![npc("a", 3)]));
    autosave(&path, &first, &journals);
    let bob = SpeakerId::new("p2", "Bob").unwrap();
    let mut waiting = first.npcs[0].as_ref().clone();
    waiting = waiting.with_waiting(vec![
        WaitingLine::new("From the player."),
        WaitingLine {
            text: "From Bob, quietly.".into(),
            private: true,
            speaker: bob.clone(),
        },
    ]);
    let second = Arc::new(SaveGame::new(vec![Arc::new(waiting)]));
    autosave(&path, &second, &journals);
    assert!(
        fs::metadata(journal_path(&path)).unwrap().len() > HEADER_LEN as u64,
        "the queue change went to the journal"
    );
    let read = load(&path);
    assert_eq!(read.journal_report, None);
    assert_eq!(&read.save, second.as_ref());
    let lines = read.save.npcs[0].waiting_lines();
    assert_eq!(lines[1].speaker, bob);
    assert!(lines[1].private && !lines[0].private);
    fs::remove_dir_all(dir).ok();
}

// Seals: what a compaction appends to the journal it retires.

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
