//! A write killed at any step of keeping two copies leaves a slot that loads the
//! memory before the write or after it, with no file taken for damaged; and the
//! next save leaves two good copies again.

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;

use super::super::load_slot;
use super::copies::{describe, with_line};
use crate::save::journal::Journals;
use crate::save::journal::write::KILL_AT;
use crate::save::test_support::{autosave, npc, temp_dir};
use crate::save::{LoadError, SaveGame};

#[derive(Clone, Copy, Debug)]
enum Write {
    /// An autosave whose record fills the journal.
    Compaction,
    /// An autosave to a slot this process has not read: written twice.
    Twin,
    /// The first autosave after the snapshot was found damaged and the slot
    /// loaded from its backup and both journals: written twice.
    TwinAfterRecovery,
    /// The game's whole save ([`SaveGame::write_to`], `SaveMemory`).
    Whole,
}

fn corrupt_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".corrupt-"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_write_killed_at_any_step_loads_the_memory_before_or_after_it() {
    let root = temp_dir("killed");
    // The step the write is killed after, and whether the new memory is on disk.
    let steps = [
        ("sealed", Write::Compaction, true),
        ("rotated", Write::Compaction, true),
        ("retired", Write::Compaction, true),
        ("twin: backup written", Write::Twin, false),
        ("twin: journal moved", Write::Twin, false),
        ("twin: snapshot written", Write::Twin, true),
        ("twin: old journal removed", Write::Twin, true),
        ("twin: backup written", Write::TwinAfterRecovery, true),
        ("twin: journal moved", Write::TwinAfterRecovery, true),
        ("twin: snapshot written", Write::TwinAfterRecovery, true),
        ("twin: old journal removed", Write::TwinAfterRecovery, true),
        ("whole: journal moved", Write::Whole, false),
    ];
    for (step, write, lands) in steps {
        let case = format!("{write:?} killed after {step}");
        let dir = root.join(case.replace([':', ' '], "-"));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("slot.json");
        // A snapshot written twice and a journal of one long line: one more fills
        // it.
        let mut journals = Journals::default();
        let first = Arc::new(SaveGame::new(vec![npc("a", 20), npc("b", 20)]));
        autosave(&path, &first, &journals);
        let mut before = with_line(&first, "a", 1, true);
        autosave(&path, &before, &journals);
        if let Write::TwinAfterRecovery = write {
            // Compacted, one record more, then the snapshot cut: the memory is in
            // the backup and both journals.
            for n in 2..4 {
                before = with_line(&before, ["a", "b"][n % 2], n, true);
                autosave(&path, &before, &journals);
            }
            fs::write(&path, b"{").unwrap();
            journals = Journals::default();
            let Ok(recovered) = load_slot(&path, u64::MAX, &journals, true) else {
                panic!("{case}: the slot recovers")
            };
            assert!(recovered.save == *before, "{case}: recovered whole");
        }
        let damaged_before = corrupt_files(&dir);
        let new = with_line(&before, "b", 9, true);
        KILL_AT.with(|at| at.set(Some(step)));
        let killed = catch_unwind(AssertUnwindSafe(|| match write {
            Write::Compaction | Write::TwinAfterRecovery => {
                autosave(&path, &new, &journals);
            }
            Write::Twin => {
                autosave(&path, &new, &Journals::default());
            }
            Write::Whole => {
                new.write_to(&path, u64::MAX).unwrap();
            }
        }));
        KILL_AT.with(|at| at.set(None));
        assert!(killed.is_err(), "{case}: the write never got there");

        let expected = if lands { &new } else { &before };
        let after = Journals::default();
        let loaded = match load_slot(&path, u64::MAX, &after, true) {
            Ok(loaded) => loaded,
            Err(failed) => panic!("{case}: the slot does not load: {}", failed.error),
        };
        assert!(
            loaded.save == **expected,
            "{case}: {} loaded, expected {}",
            describe(&loaded.save),
            describe(expected)
        );
        // A snapshot already gone (moved aside before the write) is still missing.
        let missing = |from: &super::super::UnusableSave| {
            from.error == LoadError::NotFound && from.moved_to.is_none()
        };
        assert!(
            loaded.recovered_from.as_ref().is_none_or(missing) && loaded.journal_report.is_none(),
            "{case}: nothing is found damaged: {:?} {:?}",
            loaded.recovered_from,
            loaded.journal_report
        );
        assert_eq!(
            corrupt_files(&dir),
            damaged_before,
            "{case}: nothing moved aside"
        );

        let next = with_line(&loaded.save, "a", 10, true);
        autosave(&path, &next, &after);
        let mut cut = fs::read(&path).unwrap();
        cut.truncate(40);
        fs::write(&path, &cut).unwrap();
        match load_slot(&path, u64::MAX, &Journals::default(), true) {
            Ok(again) => assert!(
                again.save == *next,
                "{case}, saved again, snapshot cut: {} loaded, expected {}",
                describe(&again.save),
                describe(&next)
            ),
            Err(failed) => panic!(
                "{case}, saved again, snapshot cut: no load: {}",
                failed.error
            ),
        }
    }
    fs::remove_dir_all(root).ok();
}
