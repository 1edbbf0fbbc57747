//! The autosave journal: what changed since the slot's snapshot, appended record by
//! record, so an autosave writes bytes in proportion to the change and not to the
//! save.
//!
//! `slot.json` stays a whole save in the usual format (the *snapshot*).
//! `slot.json.journal` beside it holds a header naming that snapshot (its length
//! and CRC-32) and then records, each `length (u32 LE) | CRC-32 (u32 LE) | JSON`,
//! one per autosave: the clock, the lore if it changed, and for each NPC that
//! changed either the new tail of its append-only lists (log, summary history,
//! degradations) with the small state that changed, the whole NPC when it is new,
//! or its removal. Loading reads the snapshot and replays the records in order; it
//! stops at the first record that is cut short or damaged, keeping everything
//! before it. A journal whose header names another snapshot is not applied.
//!
//! When the journal outgrows a quarter of the snapshot, the next autosave
//! compacts: it *seals* the journal (a last record of what changed, then a seal
//! naming the new snapshot), writes the new snapshot (the old one kept as `.bak`)
//! and moves the sealed journal beside the backup (`slot.json.bak.journal`). The
//! backup, its sealed journal and the new snapshot's journal then add up to the
//! newest memory without the new snapshot: see [`write`](mod@write) for the files
//! at each step and `slot/read.rs` for how loading chooses between the copies.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::error::{LoadError, SaveError};
use super::file::with_suffix;
use super::format::{NpcSave, SAVE_FORMAT_VERSION, SaveGame, validate_npc};
use crate::memory::{LoreChanges, NpcId};

mod delta;
mod replay;
pub(crate) mod write;

use delta::NpcDelta;
pub(crate) use replay::{Replay, header_base, replay, seal_of};
pub(crate) use write::{Append, Journals, SlotJournal};

/// `savegame.json` → `savegame.json.journal`: the changes autosave appended since
/// the snapshot in `savegame.json` was written.
pub fn journal_path(path: &Path) -> PathBuf {
    with_suffix(path, ".journal")
}

const MAGIC: [u8; 8] = *b"NPCJRNL\n";
/// Magic, format version, base length, base CRC, header CRC.
pub(crate) const HEADER_LEN: usize = 8 + 4 + 8 + 4 + 4;
/// Length and CRC before each record's payload.
const FRAME_LEN: usize = 8;
/// A journal is compacted into a new snapshot once it would pass this share of
/// the snapshot's size...
const COMPACT_SHARE: u64 = 4;
/// ...or this many bytes, whichever is larger, so that a tiny save is not
/// rewritten on every change.
const MIN_JOURNAL_BYTES: u64 = 16 * 1024;

/// Which snapshot a journal extends (or, in a seal, continues in): its length
/// and CRC-32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BaseId {
    len: u64,
    crc: u32,
}

impl BaseId {
    pub(crate) fn of(bytes: &[u8]) -> Self {
        Self {
            len: bytes.len() as u64,
            crc: crc32fast::hash(bytes),
        }
    }
}

fn header(base: BaseId) -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(&MAGIC);
    header[8..12].copy_from_slice(&SAVE_FORMAT_VERSION.to_le_bytes());
    header[12..20].copy_from_slice(&base.len.to_le_bytes());
    header[20..24].copy_from_slice(&base.crc.to_le_bytes());
    let crc = crc32fast::hash(&header[..24]);
    header[24..].copy_from_slice(&crc.to_le_bytes());
    header
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// One autosave's changes, or a journal's seal.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    clock: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lore: Option<LoreChanges>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    changes: Vec<Change>,
    /// The snapshot this journal continues in: the last record of a journal
    /// compacted into that snapshot, in a record of its own. A build from before
    /// seals refuses it as an unknown field, after applying every record before
    /// it, so the journal's records need no new format version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sealed: Option<BaseId>,
}

/// What happened to one NPC.
#[derive(Debug, Serialize, Deserialize)]
enum Change {
    /// New in the save: the whole NPC.
    Put(Box<NpcSave>),
    /// Changed: what differs from the NPC as the journal had it.
    Delta(Box<NpcDelta>),
    /// No longer in the save.
    Removed(NpcId),
}

/// The record that turns `old` into `new`, framed (length, CRC, JSON), or `None`
/// when nothing changed. Every NPC it carries is checked as loading checks it, so
/// the journal never holds a change the loader would refuse.
fn encode_record(old: &SaveGame, new: &SaveGame) -> Result<Option<Vec<u8>>, SaveError> {
    let refuse = SaveError::WouldNotLoad;
    if !new.clock.is_finite() {
        return Err(refuse(LoadError::Inconsistent(
            "the memory clock is not a finite number".into(),
        )));
    }
    let mut changes = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < old.npcs.len() || j < new.npcs.len() {
        let order = match (old.npcs.get(i), new.npcs.get(j)) {
            (Some(a), Some(b)) => a.id.cmp(&b.id),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match order {
            std::cmp::Ordering::Less => {
                changes.push(Change::Removed(old.npcs[i].id.clone()));
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                let npc = &new.npcs[j];
                validate_npc(npc).map_err(refuse)?;
                changes.push(Change::Put(Box::new(npc.as_ref().clone())));
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                let (a, b) = (&old.npcs[i], &new.npcs[j]);
                if !Arc::ptr_eq(a, b)
                    && let Some(delta) = NpcDelta::between(a, b)
                {
                    validate_npc(b).map_err(refuse)?;
                    changes.push(Change::Delta(Box::new(delta)));
                }
                i += 1;
                j += 1;
            }
        }
    }
    if new.npcs.windows(2).any(|w| w[0].id >= w[1].id) {
        return Err(refuse(LoadError::Inconsistent(
            "NPCs are not sorted by id, or one appears twice".into(),
        )));
    }
    let lore = (old.lore != new.lore).then(|| new.lore.clone());
    if let Some(lore) = &lore {
        lore.validate()
            .map_err(|invalid| refuse(LoadError::Inconsistent(invalid.to_string())))?;
    }
    if changes.is_empty() && lore.is_none() && old.clock == new.clock {
        return Ok(None);
    }
    frame(&Record {
        clock: new.clock,
        lore,
        changes,
        sealed: None,
    })
    .map(Some)
}

/// The seal that ends a journal compacted into the snapshot `next`, framed. It
/// changes nothing: the record before it already brought the memory to `next`'s.
fn encode_seal(clock: f64, next: BaseId) -> Result<Vec<u8>, SaveError> {
    frame(&Record {
        clock,
        lore: None,
        changes: Vec::new(),
        sealed: Some(next),
    })
}

fn frame(record: &Record) -> Result<Vec<u8>, SaveError> {
    let payload = serde_json::to_vec(record).map_err(|e| SaveError::Encode(e.to_string()))?;
    let len = u32::try_from(payload.len())
        .map_err(|_| SaveError::Encode("a journal record over 4 GiB".into()))?;
    let mut framed = Vec::with_capacity(FRAME_LEN + payload.len());
    framed.extend_from_slice(&len.to_le_bytes());
    framed.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    framed.extend_from_slice(&payload);
    Ok(framed)
}

/// Applies one record to `save` in place. On an error part of it may have been
/// applied: [`replay()`] then starts again from the snapshot. The NPCs it changes
/// are listed in `touched`, for one check once the records are in instead of one
/// after every record (which would cost the NPC's size per record).
fn apply_record(
    save: &mut SaveGame,
    record: Record,
    touched: &mut Vec<NpcId>,
) -> Result<(), String> {
    if !record.clock.is_finite() {
        return Err("the memory clock is not a finite number".into());
    }
    if let Some(lore) = &record.lore {
        lore.validate().map_err(|invalid| invalid.to_string())?;
    }
    for change in record.changes {
        match change {
            Change::Put(npc) => {
                touched.push(npc.id.clone());
                match save.npcs.binary_search_by(|n| n.id.cmp(&npc.id)) {
                    Ok(at) => save.npcs[at] = Arc::new(*npc),
                    Err(at) => save.npcs.insert(at, Arc::new(*npc)),
                }
            }
            Change::Delta(delta) => {
                let Ok(at) = save.npcs.binary_search_by(|n| n.id.cmp(&delta.id)) else {
                    return Err(format!(
                        "changes NPC {}, which the save does not hold",
                        delta.id
                    ));
                };
                let id = delta.id.clone();
                // Unique after the first change to this NPC: no copy per record.
                let npc = Arc::make_mut(&mut save.npcs[at]);
                delta.apply(npc).map_err(|e| format!("NPC {id}: {e}"))?;
                touched.push(id);
            }
            Change::Removed(id) => {
                let Ok(at) = save.npcs.binary_search_by(|n| n.id.cmp(&id)) else {
                    return Err(format!("removes NPC {id}, which the save does not hold"));
                };
                save.npcs.remove(at);
            }
        }
    }
    save.clock = record.clock;
    if let Some(lore) = record.lore {
        save.lore = lore;
    }
    Ok(())
}

/// Why a slot's journal was not replayed whole.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum JournalProblem {
    /// The last record was cut short: the game stopped while appending it (a crash
    /// or a kill). Everything before it was applied; the unfinished record was
    /// never a complete save and is dropped.
    TornTail {
        /// How many bytes were dropped.
        bytes: u64,
    },
    /// A record is damaged (wrong checksum, not a record, or a change that does
    /// not fit the save). It and everything after it were not applied.
    Corrupt {
        /// Which record, counting from 0.
        record: usize,
        /// What is wrong with it.
        reason: String,
        /// How many bytes were not applied.
        bytes: u64,
    },
    /// The journal was written for another snapshot than the one loaded, so none
    /// of it applies.
    OtherSnapshot,
    /// The file is not a journal this build can read (no journal header, a newer
    /// format, over the size limit).
    Unreadable(String),
}

impl std::fmt::Display for JournalProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JournalProblem::TornTail { bytes } => {
                write!(f, "its last record was cut short ({bytes} bytes dropped)")
            }
            JournalProblem::Corrupt {
                record,
                reason,
                bytes,
            } => write!(
                f,
                "record {record} is damaged ({reason}); it and the {bytes} bytes from it on were not applied"
            ),
            JournalProblem::OtherSnapshot => {
                write!(f, "it belongs to another snapshot and was not applied")
            }
            JournalProblem::Unreadable(why) => write!(f, "it cannot be read: {why}"),
        }
    }
}

/// A slot's journal that could not be replayed whole, reported with the load
/// ([`MemoryLoaded::journal`](crate::prelude::MemoryLoaded::journal)).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct JournalReport {
    /// The journal.
    pub path: PathBuf,
    /// How many of its records were applied.
    pub applied: usize,
    /// What stopped the replay.
    pub problem: JournalProblem,
    /// Where a copy of the unused part was kept, for a damaged or foreign journal.
    pub kept_at: Option<PathBuf>,
}

impl std::fmt::Display for JournalReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "journal {} ({} records applied): {}",
            self.path.display(),
            self.applied,
            self.problem
        )?;
        if let Some(kept) = &self.kept_at {
            write!(f, " (kept as {})", kept.display())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
