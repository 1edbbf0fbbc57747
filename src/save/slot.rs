//! A save slot, read and written without losing what the player had. Loading: a
//! damaged file is moved aside and the slot's other copy read instead; a file this
//! build cannot read is left alone. Writing: one write per path at a time, never
//! over a file the caller has not read unless it says so, cancellable until it
//! starts, and (for autosave) leaving two good copies of the memory at every step.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

use std::sync::Arc;

use super::error::{LoadError, SaveError};
use super::file::{backup_path, with_path_lock};
use super::format::SaveGame;
use super::journal::write::{write_snapshot, write_whole};
use super::journal::{Append, BaseId, JournalReport, Journals, SlotJournal};

mod read;

pub(crate) use read::read_slot;

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
    /// The snapshot read.
    pub read: PathBuf,
    pub save: SaveGame,
    /// Why the main file was not used, when the backup was.
    pub recovered_from: Option<UnusableSave>,
    /// What the slot holds on disk, for autosave to append to: only for the main
    /// file in this build's format, with its backup still a second copy of it.
    /// [`load_slot`] takes it into its `Journals`.
    pub journal: Option<SlotJournal>,
    /// The journal where the replay stopped, when one could not be replayed whole
    /// or did not apply.
    pub journal_report: Option<JournalReport>,
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

/// Loads the slot at `path` (see [`read_slot`]). A missing or damaged main file
/// (moved aside) falls back to `path.bak` with the journals that continue it; a
/// damaged backup is moved aside too. An `Io` error or a newer build's file stops
/// here, leaving the files as they are: loading the backup would let the next
/// autosave replace the newer file.
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
        let mut loaded = read_slot(path, max_bytes, true, keep_journal);
        let held = match &mut loaded {
            Ok(recovered) => recovered.journal.take().filter(|_| keep_journal),
            Err(_) => None,
        };
        journals.set(path, held);
        loaded
    })
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
/// there is refused ([`SaveError::Unread`]). With `append` (autosave), what changed
/// since the slot's last write is appended to its journal while the journal is
/// small; a full journal is sealed and compacted into a new snapshot, and a slot
/// `journals` knows nothing of gets a new snapshot written twice (see
/// `journal/write.rs`). Without it (the game's `SaveMemory`) a whole snapshot is
/// written, the old one kept as the backup. Blocking.
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
        let compaction = if append {
            match journals.append(path, save, max_bytes)? {
                Append::Done(bytes) => {
                    ticket.mark_written();
                    return Ok(Some(bytes));
                }
                Append::Compact(compaction) => Some(compaction),
                Append::Snapshot => None,
            }
        } else {
            None
        };
        let bytes = save.encode_within(path, max_bytes)?;
        // Until the new snapshot and journal are in place, this slot has no
        // journal to append to.
        journals.set(path, None);
        let io = |e: std::io::Error| SaveError::Io(e.to_string());
        if append {
            let journal_len =
                write_snapshot(path, &bytes, save.clock, compaction, max_bytes).map_err(io)?;
            journals.set(
                path,
                Some(SlotJournal {
                    base: BaseId::of(&bytes),
                    journal_len,
                    held: save.clone(),
                }),
            );
        } else {
            // Only autosave slots keep what they hold, for the next append: a slot
            // written once by the game would keep an old copy of the memory alive.
            write_whole(path, &bytes).map_err(io)?;
        }
        ticket.mark_written();
        Ok(Some(bytes.len()))
    })
}

/// A save slot written the way the plugin's autosave writes it, for games and
/// tools outside Bevy: the first write is a whole snapshot, written twice (the
/// slot and its `.bak`), and each later one appends what changed since the
/// previous write to the slot's journal ([`journal_path`](super::journal_path)),
/// compacting it into a new snapshot once it outgrows a quarter of the snapshot.
/// From the first write on either copy, with the journals, holds the newest
/// memory, so one damaged file loses at most the journal records from the damage
/// on. [`SaveGame::read_from`] reads it back.
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
    /// (the length of one copy) the first time and when the journal is compacted.
    /// Share unchanged NPCs (`Arc`s) with the previous save and comparing them
    /// costs nothing. Blocking.
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
mod tests;
