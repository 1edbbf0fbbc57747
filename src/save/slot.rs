//! A save slot, read and written without losing what the player had. Loading: a
//! damaged file is moved aside and its backup read instead; a file this build
//! cannot read is left alone. Writing: one write per path at a time, never over a
//! file the caller has not read unless it says so, and cancellable until it starts.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

use super::error::{LoadError, SaveError};
use super::file::{backup_path, move_aside, read_exactly, with_path_lock, write_atomic};
use super::format::SaveGame;

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
pub(crate) fn load_slot(path: &Path, max_bytes: u64) -> Result<Recovered, Box<NotRecovered>> {
    with_path_lock(path, || load_locked(path, max_bytes))
}

fn load_locked(path: &Path, max_bytes: u64) -> Result<Recovered, Box<NotRecovered>> {
    let error = match read_one(path, max_bytes) {
        Ok(save) => {
            return Ok(Recovered {
                read: path.to_path_buf(),
                save,
                recovered_from: None,
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
    let backup = backup_path(path);
    match read_one(&backup, max_bytes) {
        Ok(save) => Ok(Recovered {
            read: backup,
            save,
            recovered_from: Some(UnusableSave {
                path: path.to_path_buf(),
                error,
                moved_to,
            }),
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

fn read_one(path: &Path, max_bytes: u64) -> Result<SaveGame, LoadError> {
    SaveGame::from_bytes(&read_exactly(path, max_bytes)?)
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

/// Writes `save` to `path` unless the ticket was taken elsewhere (`Ok(None)`).
/// Without `may_replace`, a file or backup already there is refused
/// ([`SaveError::Unread`]). Blocking.
pub(crate) fn write_slot(
    save: &SaveGame,
    path: &Path,
    max_bytes: u64,
    ticket: &WriteTicket,
    may_replace: bool,
) -> Result<Option<usize>, SaveError> {
    let bytes = save.encode_within(path, max_bytes)?;
    with_path_lock(path, || {
        if !ticket.take() {
            return Ok(None);
        }
        // A check that fails counts as "something is there": refusing is safe.
        let there = |path: &Path| path.try_exists().unwrap_or(true);
        if !may_replace && (there(path) || there(&backup_path(path))) {
            return Err(SaveError::Unread);
        }
        write_atomic(path, &bytes).map_err(|e| SaveError::Io(e.to_string()))?;
        ticket.mark_written();
        Ok(Some(bytes.len()))
    })
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
        let Ok(loaded) = load_slot(&path, 1024) else {
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
        let Err(failed) = load_slot(&path, 1024) else {
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
        let Err(failed) = load_slot(&path, 1024) else {
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
        let Err(failed) = load_slot(&path, 1024) else {
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
        let Err(failed) = load_slot(&path, 1024) else {
            panic!("there is nothing to load")
        };
        assert_eq!(
            (failed.error, failed.moved_to, failed.backup),
            (LoadError::NotFound, None, None)
        );
        fs::write(backup_path(&path), good()).unwrap();
        let Ok(loaded) = load_slot(&path, 1024) else {
            panic!("the backup loads")
        };
        assert_eq!(loaded.recovered_from.unwrap().error, LoadError::NotFound);
        fs::remove_dir_all(dir).ok();
    }
}
