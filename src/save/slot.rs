//! A save slot, read and written without losing what the player had. Loading: a
//! damaged file is moved aside and its backup read instead; a file this build
//! cannot read is left alone. Writing: one write per path at a time, never over a
//! file the caller has not read unless it says so, and cancellable until it starts.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

use std::sync::Arc;

use super::error::{LoadError, SaveError};
use super::file::{
    backup_path, copy_aside, move_aside, read_exactly, with_path_lock, write_atomic,
};
use super::format::{SAVE_FORMAT_VERSION, SaveGame};
use super::journal::{
    BaseId, JournalProblem, JournalReport, Journals, SlotJournal, journal_path, names_base, replay,
    retire_journal,
};

/// A save file that could not be used, and what became of it.
#[derive(Clone, Debug, PartialEq)]
pub struct UnusableSave {
    /// The file.
    pub path: PathBuf,
    /// What was wrong with it.
    pub error: LoadError,
    /// Where it was moved so that no write replaces it. Only damaged files move
    /// (see [`LoadError::is_damaged`]); `None` means it was left where it was (or
    /// was not there at all).
    pub moved_to: Option<PathBuf>,
}

impl std::fmt::Display for UnusableSave {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.error)?;
        if let Some(moved) = &self.moved_to {
            write!(f, " (moved aside to {})", moved.display())?;
        }
        Ok(())
    }
}

/// A slot that loaded, from its main file or from its backup.
pub(crate) struct Recovered {
    /// The file read.
    pub read: PathBuf,
    pub save: SaveGame,
    /// Why the main file was not used, when the backup was.
    pub recovered_from: Option<UnusableSave>,
    /// What the slot holds on disk, for autosave to append to: only for the main
    /// file in this build's format. [`load_slot`] takes it into its `Journals`.
    pub journal: Option<SlotJournal>,
    /// The journal, when it could not be replayed whole.
    pub journal_report: Option<JournalReport>,
}

/// A snapshot read with its journal replayed.
pub(crate) struct SlotRead {
    pub save: SaveGame,
    pub journal: Option<SlotJournal>,
    pub report: Option<JournalReport>,
}

/// Reads the snapshot at `path` and replays its journal as far as it is whole.
/// With `tidy` (the plugin's load) a journal that does not apply is moved aside
/// and a damaged one copied aside; without it no file changes. A journal naming
/// the backup's snapshot is what a crash between writing a new snapshot and
/// retiring the old journal leaves: it is older than the snapshot and ignored.
pub(crate) fn read_with_journal(
    path: &Path,
    max_bytes: u64,
    tidy: bool,
) -> Result<SlotRead, LoadError> {
    let bytes = read_exactly(path, max_bytes)?;
    let (mut save, version) = SaveGame::from_bytes_versioned(&bytes)?;
    let base = BaseId::of(&bytes);
    drop(bytes);
    let journal = journal_path(path);
    let (journal_len, report) = match read_exactly(&journal, max_bytes) {
        Err(LoadError::NotFound) => (0, None),
        Err(LoadError::Io(why)) => {
            return Err(LoadError::Io(format!(
                "its journal {} could not be read: {why}",
                journal.display()
            )));
        }
        Err(error) => (
            0,
            Some((0, JournalProblem::Unreadable(error.to_string()), true)),
        ),
        Ok(bytes) => {
            let outcome = replay(&mut save, base, &bytes);
            match outcome.problem {
                None => (outcome.valid_len, None),
                Some(JournalProblem::OtherSnapshot) if names_backup(path, &bytes, max_bytes) => {
                    (0, None)
                }
                Some(problem @ (JournalProblem::OtherSnapshot | JournalProblem::Unreadable(_))) => {
                    (0, Some((0, problem, true)))
                }
                Some(problem) => (outcome.valid_len, Some((outcome.applied, problem, false))),
            }
        }
    };
    let report = report.map(|(applied, problem, refused)| {
        let kept_at = match (&problem, tidy) {
            (_, false) | (JournalProblem::TornTail { .. }, _) => None,
            (_, true) if refused => move_aside(&journal),
            (_, true) => copy_aside(&journal),
        };
        JournalReport {
            path: journal.clone(),
            applied,
            problem,
            kept_at,
        }
    });
    let journal = (version == SAVE_FORMAT_VERSION).then(|| SlotJournal {
        base,
        journal_len,
        held: Arc::new(save.clone()),
    });
    Ok(SlotRead {
        save,
        journal,
        report,
    })
}

/// Whether a journal's header names the snapshot in `path`'s backup.
fn names_backup(path: &Path, journal: &[u8], max_bytes: u64) -> bool {
    read_exactly(&backup_path(path), max_bytes)
        .is_ok_and(|backup| names_base(journal, BaseId::of(&backup)))
}

/// A slot that did not load.
pub(crate) struct NotRecovered {
    /// The main file's error.
    pub error: LoadError,
    /// Where the damaged main file went.
    pub moved_to: Option<PathBuf>,
    /// The backup, when it was tried and could not be used either.
    pub backup: Option<UnusableSave>,
}

/// Loads the slot at `path`. A missing or damaged main file (moved aside) falls
/// back to `path.bak`; a damaged backup is moved aside too. An `Io` error or a
/// newer build's file stops here, leaving both files as they are: loading the older
/// backup would let the next autosave replace the newer file.
///
/// What the slot holds on disk is recorded in `journals` under the same path lock
/// as the read (kept only with `keep_journal`, for an autosave slot; forgotten
/// otherwise, and when the load fails). So `journals` always describes the disk: a
/// write that lands after this read, however long the loaded memory then takes to
/// be built and swapped in, appends to what the read saw or replaces it whole, and
/// never to a journal of the memory the load replaces. The slot's journal is
/// replayed here too, on the caller's (IO) thread.
pub(crate) fn load_slot(
    path: &Path,
    max_bytes: u64,
    journals: &Journals,
    keep_journal: bool,
) -> Result<Recovered, Box<NotRecovered>> {
    with_path_lock(path, || {
        let mut loaded = load_locked(path, max_bytes);
        let held = match &mut loaded {
            Ok(recovered) => recovered.journal.take().filter(|_| keep_journal),
            Err(_) => None,
        };
        journals.set(path, held);
        loaded
    })
}

fn load_locked(path: &Path, max_bytes: u64) -> Result<Recovered, Box<NotRecovered>> {
    let error = match read_with_journal(path, max_bytes, true) {
        Ok(read) => {
            return Ok(Recovered {
                read: path.to_path_buf(),
                save: read.save,
                recovered_from: None,
                journal: read.journal,
                journal_report: read.report,
            });
        }
        Err(error) if error == LoadError::NotFound || error.is_damaged() => error,
        Err(error) => {
            return Err(Box::new(NotRecovered {
                error,
                moved_to: None,
                backup: None,
            }));
        }
    };
    let moved_to = error.is_damaged().then(|| move_aside(path)).flatten();
    if moved_to.is_some() && journal_path(path).exists() {
        // It extends the damaged file: kept with it, never applied to the backup.
        move_aside(&journal_path(path));
    }
    let backup = backup_path(path);
    match read_with_journal(&backup, max_bytes, true) {
        Ok(read) => Ok(Recovered {
            read: backup,
            save: read.save,
            recovered_from: Some(UnusableSave {
                path: path.to_path_buf(),
                error,
                moved_to,
            }),
            // Autosave writes a whole snapshot to the slot first.
            journal: None,
            journal_report: read.report,
        }),
        Err(LoadError::NotFound) => Err(Box::new(NotRecovered {
            error,
            moved_to,
            backup: None,
        })),
        Err(backup_error) => {
            let backup_moved = backup_error.is_damaged().then(|| move_aside(&backup));
            Err(Box::new(NotRecovered {
                error,
                moved_to,
                backup: Some(UnusableSave {
                    path: backup,
                    error: backup_error,
                    moved_to: backup_moved.flatten(),
                }),
            }))
        }
    }
}

/// Who runs a write: the task it was handed to, or someone who gives up waiting
/// for that task to start (the plugin's exit flush), whoever takes it first. The
/// writer takes it under the path lock, so once the other side sees it taken, its
/// own writes to that path come after.
#[derive(Default)]
pub(crate) struct WriteTicket(AtomicU8);

impl WriteTicket {
    const PENDING: u8 = 0;
    const TAKEN: u8 = 1;
    const CANCELLED: u8 = 2;
    const WRITTEN: u8 = 3;

    /// Claims the write for the writer; false if it was cancelled.
    pub(crate) fn take(&self) -> bool {
        self.swap_from_pending(Self::TAKEN)
    }

    /// Claims the write for the caller; false if the writer already took it.
    pub(crate) fn cancel(&self) -> bool {
        self.swap_from_pending(Self::CANCELLED)
    }

    /// Records that the write reached the disk, for a caller that never sees the
    /// writer's result.
    fn mark_written(&self) {
        self.0.store(Self::WRITTEN, Ordering::Release);
    }

    /// Whether the write under this ticket reached the disk.
    pub(crate) fn written(&self) -> bool {
        self.0.load(Ordering::Acquire) == Self::WRITTEN
    }

    fn swap_from_pending(&self, to: u8) -> bool {
        self.0
            .compare_exchange(Self::PENDING, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

/// Writes `save` to `path` unless the ticket was taken elsewhere (`Ok(None)`), and
/// returns the bytes written. Without `may_replace`, a file or backup already
/// there is refused ([`SaveError::Unread`]). With `append`, what changed since the
/// slot's last write is appended to its journal while the journal is small;
/// otherwise (and for a slot `journals` knows nothing of) a whole snapshot is
/// written and the journal starts again. Blocking.
pub(crate) fn write_slot(
    save: &Arc<SaveGame>,
    path: &Path,
    max_bytes: u64,
    ticket: &WriteTicket,
    may_replace: bool,
    journals: &Journals,
    append: bool,
) -> Result<Option<usize>, SaveError> {
    with_path_lock(path, || {
        if !ticket.take() {
            return Ok(None);
        }
        // A check that fails counts as "something is there": refusing is safe.
        let there = |path: &Path| path.try_exists().unwrap_or(true);
        if !may_replace && (there(path) || there(&backup_path(path))) {
            return Err(SaveError::Unread);
        }
        if append && let Some(bytes) = journals.append(path, save, max_bytes)? {
            ticket.mark_written();
            return Ok(Some(bytes));
        }
        let bytes = save.encode_within(path, max_bytes)?;
        let rotated = path.exists();
        // Until the new snapshot and journal are in place, this slot has no
        // journal to append to.
        journals.set(path, None);
        write_atomic(path, &bytes).map_err(|e| SaveError::Io(e.to_string()))?;
        retire_journal(path, rotated);
        // Only autosave slots keep what they hold, for the next append: a slot
        // written once by the game would keep an old copy of the memory alive.
        journals.set(
            path,
            append.then(|| SlotJournal {
                base: BaseId::of(&bytes),
                journal_len: 0,
                held: save.clone(),
            }),
        );
        ticket.mark_written();
        Ok(Some(bytes.len()))
    })
}

/// A save slot written the way the plugin's autosave writes it, for games and
/// tools outside Bevy: the first write is a whole snapshot, and each later one
/// appends what changed since the previous write to the slot's journal
/// ([`journal_path`]), compacting it into a new snapshot once it outgrows a quarter
/// of the snapshot. [`SaveGame::read_from`] reads it back.
pub struct JournaledSlot {
    path: PathBuf,
    max_bytes: u64,
    journals: Journals,
}

impl JournaledSlot {
    /// A slot at `path` whose files may not grow over `max_bytes`. Nothing is
    /// written until [`write`](Self::write); whatever is there is replaced.
    pub fn new(path: impl Into<PathBuf>, max_bytes: u64) -> Self {
        Self {
            path: path.into(),
            max_bytes,
            journals: Journals::default(),
        }
    }

    /// Writes `save` crash-safely and returns the bytes written: a journal record
    /// when only part of the memory changed since the last write, a whole snapshot
    /// the first time and when the journal is compacted. Share unchanged NPCs
    /// (`Arc`s) with the previous save and comparing them costs nothing. Blocking.
    pub fn write(&self, save: &Arc<SaveGame>) -> Result<usize, SaveError> {
        write_slot(
            save,
            &self.path,
            self.max_bytes,
            &WriteTicket::default(),
            true,
            &self.journals,
            true,
        )
        .map(Option::unwrap_or_default)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::save::SAVE_FORMAT_VERSION;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("npc-slot-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn good() -> Vec<u8> {
        serde_json::to_vec(&SaveGame::new(Vec::new())).unwrap()
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_damaged_main_file_is_moved_aside_and_its_backup_read() {
        let dir = temp_dir("damaged");
        let path = dir.join("s.json");
        fs::write(&path, b"{ half").unwrap();
        fs::write(backup_path(&path), good()).unwrap();
        let Ok(loaded) = load_slot(&path, 1024, &Journals::default(), false) else {
            panic!("the backup loads")
        };
        assert_eq!(loaded.read, backup_path(&path));
        let from = loaded.recovered_from.unwrap();
        assert!(matches!(from.error, LoadError::Malformed(_)));
        assert_eq!(fs::read(from.moved_to.unwrap()).unwrap(), b"{ half");
        assert!(!path.exists() && backup_path(&path).exists());
        fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_newer_build_s_file_and_its_backup_stay_untouched() {
        let dir = temp_dir("newer");
        let path = dir.join("s.json");
        let future = br#"{"format_version": 99}"#;
        fs::write(&path, future).unwrap();
        fs::write(backup_path(&path), good()).unwrap();
        let Err(failed) = load_slot(&path, 1024, &Journals::default(), false) else {
            panic!("a newer file is not replaced by its backup")
        };
        assert_eq!(
            failed.error,
            LoadError::UnsupportedVersion {
                found: 99,
                newest: SAVE_FORMAT_VERSION
            }
        );
        assert_eq!((failed.moved_to, failed.backup), (None, None));
        assert_eq!(fs::read(&path).unwrap(), future);
        assert_eq!(entries(&dir), ["s.json", "s.json.bak"]);
        fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn an_unreadable_main_file_stays_and_its_backup_is_not_tried() {
        let dir = temp_dir("io");
        let path = dir.join("s.json");
        fs::create_dir(&path).unwrap();
        fs::write(backup_path(&path), good()).unwrap();
        let Err(failed) = load_slot(&path, 1024, &Journals::default(), false) else {
            panic!("a folder is not a save")
        };
        assert!(
            matches!(failed.error, LoadError::Io(_)),
            "{:?}",
            failed.error
        );
        assert_eq!(entries(&dir), ["s.json", "s.json.bak"]);
        fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn when_both_are_damaged_both_move_aside_and_both_errors_are_told() {
        let dir = temp_dir("both");
        let path = dir.join("s.json");
        fs::write(&path, b"").unwrap();
        fs::write(backup_path(&path), b"\xff").unwrap();
        let Err(failed) = load_slot(&path, 1024, &Journals::default(), false) else {
            panic!("nothing loads")
        };
        assert_eq!(failed.error, LoadError::Empty);
        let backup = failed.backup.unwrap();
        assert_eq!(backup.error, LoadError::NotText { offset: 0 });
        assert_eq!(fs::read(backup.moved_to.unwrap()).unwrap(), b"\xff");
        assert!(failed.moved_to.is_some());
        assert!(!path.exists() && !backup_path(&path).exists());
        fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_missing_main_file_falls_back_and_says_so() {
        let dir = temp_dir("missing");
        let path = dir.join("s.json");
        let Err(failed) = load_slot(&path, 1024, &Journals::default(), false) else {
            panic!("there is nothing to load")
        };
        assert_eq!(
            (failed.error, failed.moved_to, failed.backup),
            (LoadError::NotFound, None, None)
        );
        fs::write(backup_path(&path), good()).unwrap();
        let Ok(loaded) = load_slot(&path, 1024, &Journals::default(), false) else {
            panic!("the backup loads")
        };
        assert_eq!(loaded.recovered_from.unwrap().error, LoadError::NotFound);
        fs::remove_dir_all(dir).ok();
    }
}
