//! Two good copies at every point of a slot's life: whichever one file of a slot
//! is damaged, cut short or with a byte flipped, after each of the first saves
//! (compactions among them), the slot loads the last save, or for a damaged
//! journal every record before the damage; and the next save leaves two good
//! copies again.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::super::load_slot;
use crate::memory::{MemoryParts, Role};
use crate::save::journal::{HEADER_LEN, Journals};
use crate::save::test_support::{autosave, npc, temp_dir};
use crate::save::{SaveGame, backup_path, journal_path};

/// `save` with one more line for `id`; a long one is about 8 KiB, and a small
/// save's journal compacts at 16 KiB, so with long lines every other save or so
/// compacts.
pub(super) fn with_line(save: &SaveGame, id: &str, n: usize, long: bool) -> Arc<SaveGame> {
    let mut next = save.clone();
    let at = next.npcs.iter().position(|n| n.id.as_str() == id).unwrap();
    let mut changed = next.npcs[at].as_ref().clone();
    let stamp = save.clock + 1.0;
    let mut memory = changed.memory.clone().into_memory().unwrap();
    let words = if long { 1000 } else { 3 };
    let text = format!("{id} save {n}, ünïcode: {}", "lantern ".repeat(words));
    memory.layers().record(Role::Assistant, text, stamp);
    changed.memory = MemoryParts::of(&memory.log, &memory.window, &memory.context);
    next.npcs[at] = Arc::new(changed);
    next.clock = stamp;
    Arc::new(next)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Damaged {
    Snapshot,
    Backup,
    Journal,
    BackupJournal,
}

impl Damaged {
    fn path(self, slot: &Path) -> PathBuf {
        match self {
            Damaged::Snapshot => slot.to_path_buf(),
            Damaged::Backup => backup_path(slot),
            Damaged::Journal => journal_path(slot),
            Damaged::BackupJournal => journal_path(&backup_path(slot)),
        }
    }

    fn is_journal(self) -> bool {
        matches!(self, Damaged::Journal | Damaged::BackupJournal)
    }
}

#[derive(Clone, Copy, Debug)]
enum Damage {
    CutTo40,
    CutToHalf,
    /// A letter of a message's text: a snapshot still parses.
    FlipInText,
    /// A `[` of the JSON, or a journal's framing (its header when it has no record).
    FlipInStructure,
}

fn find_last(bytes: &[u8], what: &[u8]) -> Option<usize> {
    bytes.windows(what.len()).rposition(|w| w == what)
}

fn find_first(bytes: &[u8], what: &[u8]) -> Option<usize> {
    bytes.windows(what.len()).position(|w| w == what)
}

/// Damages `bytes`; returns where the damage starts, or `None` when there is
/// nothing of that kind to damage in this file.
fn damage(bytes: &mut Vec<u8>, file: Damaged, how: Damage) -> Option<usize> {
    let at = match how {
        Damage::CutTo40 | Damage::CutToHalf => {
            let cut = match how {
                Damage::CutTo40 => 40,
                _ => bytes.len() / 2,
            };
            if cut >= bytes.len() {
                return None;
            }
            bytes.truncate(cut);
            return Some(cut);
        }
        // The `a` of the last "lantern": in a journal, inside its last record.
        Damage::FlipInText => find_last(bytes, b"lantern")? + 1,
        Damage::FlipInStructure if file.is_journal() => {
            if bytes.len() > HEADER_LEN {
                HEADER_LEN
            } else {
                8
            }
        }
        Damage::FlipInStructure => find_first(bytes, b"\"log\":[")? + 6,
    };
    bytes[at] ^= match how {
        Damage::FlipInText => 0x20,
        _ => 0x01,
    };
    Some(at)
}

/// Where each record of a journal ends.
fn record_ends(journal: &[u8]) -> Vec<usize> {
    let mut at = HEADER_LEN;
    let mut ends = Vec::new();
    while at + 8 <= journal.len() {
        let len = u32::from_le_bytes(journal[at..at + 4].try_into().unwrap()) as usize;
        at += 8 + len;
        ends.push(at);
    }
    ends
}

pub(super) fn describe(save: &SaveGame) -> String {
    let lines: Vec<usize> = save.npcs.iter().map(|n| n.memory.log.len()).collect();
    format!("clock {}, log lengths {lines:?}", save.clock)
}

/// Writes `files` (name, bytes) into a fresh folder.
fn lay_out(dir: &Path, files: &[(String, Vec<u8>)]) -> PathBuf {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).unwrap();
    for (name, bytes) in files {
        fs::write(dir.join(name), bytes).unwrap();
    }
    dir.join("slot.json")
}

/// Reads and loads the damaged slot at `slot`, which must give `expected`; then
/// plays on from what loaded, as the plugin does: after one more save the slot
/// has two good copies again, so losing the snapshot then loses nothing.
fn check(slot: &Path, expected: &SaveGame) -> Result<(), String> {
    // Reading changes no file, and finds what loading finds.
    let (_, read) =
        SaveGame::read_from(slot, u64::MAX).map_err(|error| format!("read_from fails: {error}"))?;
    if read != *expected {
        return Err(format!(
            "read_from gives {}, the save held {}",
            describe(&read),
            describe(expected)
        ));
    }
    let journals = Journals::default();
    let loaded = load_slot(slot, u64::MAX, &journals, true)
        .map_err(|failed| format!("the slot does not load: {}", failed.error))?;
    if loaded.save != *expected {
        return Err(format!(
            "{} loaded, the save held {}",
            describe(&loaded.save),
            describe(expected)
        ));
    }
    let next = with_line(&loaded.save, "a", 100, true);
    autosave(slot, &next, &journals);
    let mut cut = fs::read(slot).unwrap();
    cut.truncate(40);
    fs::write(slot, &cut).unwrap();
    match load_slot(slot, u64::MAX, &Journals::default(), true) {
        Ok(again) if again.save == *next => Ok(()),
        Ok(again) => Err(format!(
            "after one more save and the snapshot cut, {} loaded, the save held {}",
            describe(&again.save),
            describe(&next)
        )),
        Err(failed) => Err(format!(
            "after one more save and the snapshot cut, the slot does not load: {}",
            failed.error
        )),
    }
}

#[test]
fn any_one_damaged_file_loads_the_last_save_or_every_record_before_the_damage() {
    let root = temp_dir("every-file");
    let live = root.join("live");
    fs::create_dir_all(&live).unwrap();
    let path = live.join("slot.json");
    let journals = Journals::default();
    let mut states = vec![Arc::new(SaveGame::new(vec![npc("a", 20), npc("b", 20)]))];
    autosave(&path, &states[0], &journals);
    // Which save the snapshot on disk holds (the journal's records follow it).
    let mut snapshot_of = 0;
    let mut snapshot = fs::read(&path).unwrap();
    let (mut compactions, mut cases, mut failures) = (0, 0, Vec::new());
    for k in 1..=6usize {
        if k > 1 {
            let next = with_line(states.last().unwrap(), ["a", "b"][k % 2], k, true);
            autosave(&path, &next, &journals);
            states.push(next);
            let now = fs::read(&path).unwrap();
            if now != snapshot {
                snapshot = now;
                snapshot_of = k - 1;
                compactions += 1;
            }
        }
        let last = &states[k - 1];
        let files: Vec<(String, Vec<u8>)> = fs::read_dir(&live)
            .unwrap()
            .flatten()
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name, fs::read(e.path()).unwrap())
            })
            .collect();
        for file in [
            Damaged::Snapshot,
            Damaged::Backup,
            Damaged::Journal,
            Damaged::BackupJournal,
        ] {
            let Ok(pristine) = fs::read(file.path(&path)) else {
                continue;
            };
            for how in [
                Damage::CutTo40,
                Damage::CutToHalf,
                Damage::FlipInText,
                Damage::FlipInStructure,
            ] {
                let case = format!("after save {k}, {file:?} damaged by {how:?}");
                let slot = lay_out(&root.join("case"), &files);
                let mut bytes = pristine.clone();
                let Some(at) = damage(&mut bytes, file, how) else {
                    continue;
                };
                fs::write(file.path(&slot), &bytes).unwrap();
                cases += 1;
                let expected = if file == Damaged::Journal {
                    let whole = record_ends(&pristine)
                        .into_iter()
                        .filter(|&end| at >= HEADER_LEN && end <= at)
                        .count();
                    &states[snapshot_of + whole]
                } else {
                    last
                };
                if let Err(failure) = check(&slot, expected) {
                    failures.push(format!("{case}: {failure}"));
                }
            }
        }
    }
    assert!(compactions >= 2, "{compactions} compactions");
    assert!(cases >= 60, "{cases} cases");
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    fs::remove_dir_all(root).ok();
}

/// The slot of the report: two short sessions of autosave, then the snapshot cut
/// to its first 40 bytes. The next start keeps everything, from the other copy
/// and the journal.
#[test]
fn two_sessions_then_the_snapshot_cut_to_40_bytes_loses_nothing() {
    let dir = temp_dir("two-sessions");
    let path = dir.join("slot.json");
    let first = Journals::default();
    let mut state = Arc::new(SaveGame::new(vec![npc("a", 3)]));
    autosave(&path, &state, &first);
    for n in 0..2 {
        state = with_line(&state, "a", n, false);
        autosave(&path, &state, &first);
    }
    let second = Journals::default();
    let Ok(loaded) = load_slot(&path, u64::MAX, &second, true) else {
        panic!("the first session's slot loads")
    };
    assert!(loaded.save == *state);
    for n in 2..4 {
        state = with_line(&state, "a", n, false);
        autosave(&path, &state, &second);
    }
    let mut cut = fs::read(&path).unwrap();
    cut.truncate(40);
    fs::write(&path, &cut).unwrap();
    let loaded = match load_slot(&path, u64::MAX, &Journals::default(), true) {
        Ok(loaded) => loaded,
        Err(failed) => panic!("the slot does not load: {}", failed.error),
    };
    assert!(
        loaded.save == *state,
        "{} loaded, the save held {}",
        describe(&loaded.save),
        describe(&state)
    );
    let from = loaded.recovered_from.expect("the game is told");
    assert_eq!(from.path, path);
    assert_eq!(fs::read(from.moved_to.unwrap()).unwrap(), cut);
    fs::remove_dir_all(dir).ok();
}
