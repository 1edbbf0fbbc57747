//! Writing a journaled slot so that it holds two good copies of the newest memory
//! from its first save on, at every step of every write.
//!
//! At rest a slot is one of:
//! - **twin**: `slot.json` and `slot.json.bak` are the same bytes (two files, not
//!   links) and `slot.json.journal` names them both: either copy plus the journal
//!   is the newest memory. Every whole snapshot that does not compact a journal
//!   this process appended to is written this way (the first autosave, the first
//!   after a load that could not confirm the backup, after a recovery).
//! - **compacted**: `slot.json.bak` is the snapshot before the last compaction and
//!   `slot.json.bak.journal` its journal, *sealed*: its last record brings the
//!   memory to the new snapshot's, and a seal names that snapshot.
//!   `slot.json.journal` names the new snapshot. So `slot.json` plus its journal,
//!   and `.bak` plus both journals, are each the newest memory.
//!
//! A damaged file leaves the other chain; a damaged journal record loses only the
//! records from it on, in both chains alike. Loading (`slot/read.rs`) picks the
//! chain.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::{
    BaseId, COMPACT_SHARE, HEADER_LEN, MIN_JOURNAL_BYTES, encode_record, encode_seal, header,
    header_base, journal_path,
};
use crate::save::error::SaveError;
use crate::save::file::{
    backup_path, read_exactly, sync_folder, with_path_lock, write_atomic, write_new_atomic,
};
use crate::save::format::SaveGame;

/// What a slot holds on disk, as this process last wrote or read it.
pub(crate) struct SlotJournal {
    /// The snapshot the journal extends.
    pub(crate) base: BaseId,
    /// Bytes of the journal that count, header included; 0 when there is none
    /// yet. The next record goes here (a torn tail after it is cut off).
    pub(crate) journal_len: u64,
    /// The memory the snapshot and the journal add up to.
    pub(crate) held: Arc<SaveGame>,
}

/// What became of an autosave offered to the slot's journal.
pub(crate) enum Append {
    /// Appended: the record's length (0 when nothing changed).
    Done(usize),
    /// The journal is full: compact it into a new snapshot.
    Compact(Compaction),
    /// No journal to append to (none known, another build's snapshot, or the
    /// append failed): write a new snapshot and its twin.
    Snapshot,
}

/// A full journal, to be sealed before the snapshot it compacts into is written.
pub(crate) struct Compaction {
    base: BaseId,
    journal_len: u64,
    /// The record that brings the journal to the new save.
    record: Vec<u8>,
}

/// The slots autosave appends to, by path. Shared by the IO tasks and the exit
/// flush; each path is only touched under its path lock.
#[derive(Clone, Default)]
pub(crate) struct Journals(Arc<Mutex<HashMap<PathBuf, SlotJournal>>>);

impl Journals {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, SlotJournal>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets (or forgets) what the slot at `path` holds: after a load, a full write.
    pub(crate) fn set(&self, path: &Path, slot: Option<SlotJournal>) {
        let mut slots = self.lock();
        match slot {
            Some(slot) => slots.insert(path.to_path_buf(), slot),
            None => slots.remove(path),
        };
    }

    /// Appends what changed from the memory the slot holds to `save`, or says
    /// which whole snapshot to write instead. Callers hold the path lock.
    pub(crate) fn append(
        &self,
        path: &Path,
        save: &Arc<SaveGame>,
        max_bytes: u64,
    ) -> Result<Append, SaveError> {
        let mut slots = self.lock();
        let Some(slot) = slots.get_mut(path) else {
            return Ok(Append::Snapshot);
        };
        // Records do not carry the versions: a snapshot from another build is
        // replaced by one from this build first.
        if slot.held.format_version != save.format_version
            || slot.held.crate_version != save.crate_version
        {
            return Ok(Append::Snapshot);
        }
        let Some(record) = encode_record(&slot.held, save)? else {
            slot.held = save.clone();
            return Ok(Append::Done(0));
        };
        let start = if slot.journal_len == 0 {
            HEADER_LEN as u64
        } else {
            slot.journal_len
        };
        let after = start + record.len() as u64;
        let limit = (slot.base.len / COMPACT_SHARE).max(MIN_JOURNAL_BYTES);
        if after > limit || after > max_bytes {
            return Ok(Append::Compact(Compaction {
                base: slot.base,
                journal_len: slot.journal_len,
                record,
            }));
        }
        let journal = journal_path(path);
        let written = if slot.journal_len == 0 {
            let mut bytes = Vec::with_capacity(HEADER_LEN + record.len());
            bytes.extend_from_slice(&header(slot.base));
            bytes.extend_from_slice(&record);
            write_new_atomic(&journal, &bytes)
        } else {
            append_at(&journal, slot.journal_len, &record)
        };
        match written {
            Ok(()) => {
                slot.journal_len = after;
                slot.held = save.clone();
                Ok(Append::Done(record.len()))
            }
            Err(error) => {
                // The snapshot is whole; writing a new one also starts a new journal.
                tracing::warn!(
                    "could not append to {}: {error}; writing a whole snapshot instead",
                    journal.display()
                );
                slots.remove(path);
                Ok(Append::Snapshot)
            }
        }
    }
}

/// Cuts the journal to `len` (dropping a torn tail) and appends `record`, fsynced.
fn append_at(journal: &Path, len: u64, record: &[u8]) -> std::io::Result<()> {
    let mut file = OpenOptions::new().write(true).open(journal)?;
    if file.metadata()?.len() != len {
        file.set_len(len)?;
    }
    file.seek(SeekFrom::Start(len))?;
    file.write_all(record)?;
    file.sync_data()
}

/// Writes an autosave's whole snapshot `bytes` (of a save at `clock`) to `path`
/// and starts its journal; returns the journal's length (0 if its header could
/// not be written: the next append writes it). With a `compaction` of the
/// snapshot still on disk, the old journal is sealed and the old snapshot kept
/// as the backup; otherwise the snapshot is written twice. Callers hold the path
/// lock.
pub(crate) fn write_snapshot(
    path: &Path,
    bytes: &[u8],
    clock: f64,
    compaction: Option<Compaction>,
    max_bytes: u64,
) -> std::io::Result<u64> {
    let next = BaseId::of(bytes);
    let sealed = compaction.is_some_and(|c| seal(path, c, next, clock, max_bytes));
    if sealed {
        // On disk after each step: the sealed journal beside its snapshot (which
        // it brings to the new one); the new snapshot, the old one as the backup
        // with the sealed journal still beside the new one, which loading tells
        // by its seal; the sealed journal beside the backup.
        killed_at("sealed");
        write_atomic(path, bytes)?;
        killed_at("rotated");
        if let Err(error) = fs::rename(journal_path(path), journal_path(&backup_path(path))) {
            // The backup alone then lags: the next load finds it no copy and has
            // the next autosave write both copies again.
            tracing::warn!(
                "could not move the sealed journal of {}: {error}",
                path.display()
            );
        }
        sync_folder(path);
        killed_at("retired");
    } else {
        write_twin(path, bytes, max_bytes)?;
    }
    Ok(start_journal(path, next))
}

/// Appends `compaction`'s record and a seal naming `next` to the journal, if the
/// snapshot on disk is still the one this slot wrote: only then does the old
/// snapshot become the backup. A snapshot changed behind the slot's back (or
/// damaged) is not kept, and a good backup is not replaced by it. False when it
/// cannot seal (and a twin is written instead).
fn seal(path: &Path, compaction: Compaction, next: BaseId, clock: f64, max_bytes: u64) -> bool {
    let on_disk = read_exactly(path, max_bytes).map(|bytes| BaseId::of(&bytes));
    if on_disk.ok() != Some(compaction.base) {
        return false;
    }
    let Ok(seal) = encode_seal(clock, next) else {
        return false;
    };
    let start = if compaction.journal_len == 0 {
        HEADER_LEN as u64
    } else {
        compaction.journal_len
    };
    // A journal the reader would refuse as too large seals nothing.
    if start + (compaction.record.len() + seal.len()) as u64 > max_bytes {
        return false;
    }
    let mut tail = compaction.record;
    tail.extend_from_slice(&seal);
    let journal = journal_path(path);
    let written = if compaction.journal_len == 0 {
        let mut bytes = header(compaction.base).to_vec();
        bytes.extend_from_slice(&tail);
        write_new_atomic(&journal, &bytes)
    } else {
        append_at(&journal, compaction.journal_len, &tail)
    };
    if let Err(error) = &written {
        tracing::warn!(
            "could not seal {}: {error}; writing the new snapshot twice instead",
            journal.display()
        );
    }
    written.is_ok()
}

/// Writes `bytes` as the backup and again as the snapshot, two files. The backup
/// goes first: from then on it is a whole copy of the new memory, so the old
/// journals may go. On disk after each step: the new backup beside the old
/// snapshot and its journal; that journal beside the backup (where loading still
/// finds it for the old snapshot, and never takes it for the new one's) or, when
/// it extends no snapshot there, no old journal; the new snapshot; no old journal.
fn write_twin(path: &Path, bytes: &[u8], max_bytes: u64) -> std::io::Result<()> {
    let journal = journal_path(path);
    let bak_journal = journal_path(&backup_path(path));
    write_new_atomic(&backup_path(path), bytes)?;
    killed_at("twin: backup written");
    let extends_snapshot = header_of(&journal).is_some_and(|named| {
        read_exactly(path, max_bytes).is_ok_and(|snapshot| BaseId::of(&snapshot) == named)
    });
    if extends_snapshot {
        fs::rename(&journal, &bak_journal)?;
    } else {
        remove_if_there(&journal)?;
        remove_if_there(&bak_journal)?;
    }
    sync_folder(path);
    killed_at("twin: journal moved");
    write_new_atomic(path, bytes)?;
    killed_at("twin: snapshot written");
    let _ = fs::remove_file(&bak_journal);
    sync_folder(path);
    killed_at("twin: old journal removed");
    Ok(())
}

/// The snapshot the journal at `path` names, reading only its header.
fn header_of(path: &Path) -> Option<BaseId> {
    let mut header = Vec::with_capacity(HEADER_LEN);
    fs::File::open(path)
        .ok()?
        .take(HEADER_LEN as u64)
        .read_to_end(&mut header)
        .ok()?;
    header_base(&header)
}

fn remove_if_there(path: &Path) -> std::io::Result<()> {
    match fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// Writes the new snapshot's journal, a header with no record yet, so that from
/// now on the snapshot has a checksum to be checked against: one with a flipped
/// byte that still parses is then told from the one the journal names.
fn start_journal(path: &Path, base: BaseId) -> u64 {
    match write_new_atomic(&journal_path(path), &header(base)) {
        Ok(()) => HEADER_LEN as u64,
        Err(error) => {
            tracing::warn!("could not start the journal of {}: {error}", path.display());
            0
        }
    }
}

impl SaveGame {
    /// Writes the save to `path` crash-safely (a temp file of its own, fsync, atomic
    /// rename; the previous file kept as `.bak`), in the format its extension names.
    /// A whole save: an autosave journal beside `path` moves beside the backup.
    /// A save over `max_bytes` is refused, as [`SaveGame::read_from`] would refuse
    /// it, and the file there is untouched. Two writes to one path from this process
    /// never interleave. Blocking: the plugin calls it on the IO task pool.
    pub fn write_to(&self, path: &Path, max_bytes: u64) -> Result<usize, SaveError> {
        let bytes = self.encode_within(path, max_bytes)?;
        with_path_lock(path, || write_whole(path, &bytes))
            .map_err(|e| SaveError::Io(e.to_string()))?;
        Ok(bytes.len())
    }
}

/// Writes a whole snapshot the game asked for (`SaveMemory`,
/// [`SaveGame::write_to`]): the old snapshot becomes the backup, and its journal
/// goes beside it first, so that a crash in between leaves the journal with the
/// snapshot it names. Without an old snapshot, a journal there belongs to
/// nothing and goes. Callers hold the path lock.
pub(crate) fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let journal = journal_path(path);
    if path.exists() {
        match fs::rename(&journal, journal_path(&backup_path(path))) {
            Ok(()) => sync_folder(path),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
    } else {
        let _ = fs::remove_file(&journal);
    }
    killed_at("whole: journal moved");
    write_atomic(path, bytes)
}

#[cfg(test)]
thread_local! {
    /// The step of a write at which a test stops it, as a kill would.
    pub(crate) static KILL_AT: std::cell::Cell<Option<&'static str>> =
        const { std::cell::Cell::new(None) };
}

/// Stops the write here (a panic, which releases the path lock) when a test
/// asked for it: the files are then as a kill at this step leaves them.
fn killed_at(step: &'static str) {
    #[cfg(test)]
    if KILL_AT.with(std::cell::Cell::get) == Some(step) {
        panic!("killed after {step}");
    }
    let _ = step;
}
