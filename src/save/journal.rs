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
//! When the journal outgrows a quarter of the snapshot, the next autosave writes a
//! fresh snapshot instead (atomically, the old one kept as `.bak`) and moves the
//! old journal beside the backup (`slot.json.bak.journal`), where it still
//! belongs.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::error::{LoadError, SaveError};
use super::file::{backup_path, with_suffix, write_new_atomic};
use super::format::{NpcSave, SAVE_FORMAT_VERSION, SaveGame, validate_npc};
use crate::memory::{
    ChatMessage, Degradation, LogIndex, LoreChanges, MemoryConfig, MemoryParts, NpcId,
    PersonaPrompt, PinnedFacts, RecallState, Segments, SpeakerId, SummaryRecord, shorten_to_chars,
};

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

/// Which snapshot a journal extends: its length and CRC-32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// One autosave's changes.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    clock: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lore: Option<LoreChanges>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    changes: Vec<Change>,
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

/// The end of a list from `from` on; everything before `from` is unchanged.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Tail<T> {
    from: u64,
    #[serde(default = "Vec::new")]
    items: Vec<T>,
}

/// One NPC's changes. `None` is "unchanged".
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NpcDelta {
    id: NpcId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log: Option<Tail<ChatMessage>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    history: Option<Tail<SummaryRecord>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    degradations: Option<Tail<Degradation>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    persona: Option<PersonaPrompt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    config: Option<MemoryConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    window_start: Option<LogIndex>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    summary: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    covered_until: Option<LogIndex>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    segments: Option<Segments>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    facts: Option<PinnedFacts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    recall: Option<RecallState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    queued: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    private_queued: Option<Vec<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    queued_speakers: Option<Vec<(u32, SpeakerId)>>,
}

fn tail<T: Clone + PartialEq>(old: &[T], new: &[T]) -> Option<Tail<T>> {
    let common = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    (common != old.len() || common != new.len()).then(|| Tail {
        from: common as u64,
        items: new[common..].to_vec(),
    })
}

fn changed<T: Clone + PartialEq>(old: &T, new: &T) -> Option<T> {
    (old != new).then(|| new.clone())
}

fn apply_tail<T>(list: &mut Vec<T>, tail: Option<Tail<T>>, field: &str) -> Result<(), String> {
    let Some(tail) = tail else { return Ok(()) };
    match usize::try_from(tail.from) {
        Ok(from) if from <= list.len() => {
            list.truncate(from);
            list.extend(tail.items);
            Ok(())
        }
        _ => Err(format!(
            "{field} continues from entry {} of {}",
            tail.from,
            list.len()
        )),
    }
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *slot = value;
    }
}

impl NpcDelta {
    /// What turns `old` into `new` (the same NPC), or `None` if they are equal.
    fn between(old: &NpcSave, new: &NpcSave) -> Option<Self> {
        // Named field by field, without `..`: a field added to the save and not to
        // the delta would be lost on every journaled load, so it must not compile.
        let NpcSave {
            id: _,
            memory: _,
            queued: _,
            private_queued: _,
            queued_speakers: _,
        } = new;
        let MemoryParts {
            persona: _,
            config: _,
            log: _,
            window_start: _,
            summary: _,
            covered_until: _,
            history: _,
            degradations: _,
            segments: _,
            facts: _,
            recall: _,
        } = &new.memory;
        let (a, b) = (&old.memory, &new.memory);
        let delta = Self {
            id: new.id.clone(),
            log: tail(&a.log, &b.log),
            history: tail(&a.history, &b.history),
            degradations: tail(&a.degradations, &b.degradations),
            persona: changed(&a.persona, &b.persona),
            config: changed(&a.config, &b.config),
            window_start: changed(&a.window_start, &b.window_start),
            summary: changed(&a.summary, &b.summary),
            covered_until: changed(&a.covered_until, &b.covered_until),
            segments: changed(&a.segments, &b.segments),
            facts: changed(&a.facts, &b.facts),
            recall: changed(&a.recall, &b.recall),
            queued: changed(&old.queued, &new.queued),
            private_queued: changed(&old.private_queued, &new.private_queued),
            queued_speakers: changed(&old.queued_speakers, &new.queued_speakers),
        };
        let empty = delta.log.is_none()
            && delta.history.is_none()
            && delta.degradations.is_none()
            && delta.persona.is_none()
            && delta.config.is_none()
            && delta.window_start.is_none()
            && delta.summary.is_none()
            && delta.covered_until.is_none()
            && delta.segments.is_none()
            && delta.facts.is_none()
            && delta.recall.is_none()
            && delta.queued.is_none()
            && delta.private_queued.is_none()
            && delta.queued_speakers.is_none();
        (!empty).then_some(delta)
    }

    fn apply(self, npc: &mut NpcSave) -> Result<(), String> {
        let memory = &mut npc.memory;
        apply_tail(&mut memory.log, self.log, "log")?;
        apply_tail(&mut memory.history, self.history, "history")?;
        apply_tail(&mut memory.degradations, self.degradations, "degradations")?;
        set(&mut memory.persona, self.persona);
        set(&mut memory.config, self.config);
        set(&mut memory.window_start, self.window_start);
        set(&mut memory.summary, self.summary);
        set(&mut memory.covered_until, self.covered_until);
        set(&mut memory.segments, self.segments);
        set(&mut memory.facts, self.facts);
        set(&mut memory.recall, self.recall);
        set(&mut npc.queued, self.queued);
        set(&mut npc.private_queued, self.private_queued);
        set(&mut npc.queued_speakers, self.queued_speakers);
        Ok(())
    }
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
    let record = Record {
        clock: new.clock,
        lore,
        changes,
    };
    let payload = serde_json::to_vec(&record).map_err(|e| SaveError::Encode(e.to_string()))?;
    let len = u32::try_from(payload.len())
        .map_err(|_| SaveError::Encode("a journal record over 4 GiB".into()))?;
    let mut framed = Vec::with_capacity(FRAME_LEN + payload.len());
    framed.extend_from_slice(&len.to_le_bytes());
    framed.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    framed.extend_from_slice(&payload);
    Ok(Some(framed))
}

/// Applies one record to `save` in place. On an error part of it may have been
/// applied: [`replay`] then starts again from the snapshot. The NPCs it changes
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

/// What replaying a journal did.
#[derive(Debug, PartialEq)]
pub(crate) struct Replay {
    /// Records applied.
    pub applied: usize,
    /// Bytes of the journal that were applied, header included: where the next
    /// record goes.
    pub valid_len: u64,
    /// Why the replay stopped early.
    pub problem: Option<JournalProblem>,
}

/// Replays `journal` onto `save`, the snapshot `base` was computed from. Stops at
/// the first record cut short or damaged; never panics, whatever the bytes.
pub(crate) fn replay(save: &mut SaveGame, base: BaseId, journal: &[u8]) -> Replay {
    let refused = |problem| Replay {
        applied: 0,
        valid_len: 0,
        problem: Some(problem),
    };
    if journal.len() < HEADER_LEN {
        // Journals are created whole (temp file and rename), header and first
        // record at once, so a short one was never ours.
        return refused(JournalProblem::Unreadable(
            "it has no journal header".into(),
        ));
    }
    if journal[..8] != MAGIC || u32_at(journal, 24) != crc32fast::hash(&journal[..24]) {
        return refused(JournalProblem::Unreadable(
            "it has no journal header".into(),
        ));
    }
    let version = u32_at(journal, 8);
    if version != SAVE_FORMAT_VERSION {
        // Journals exist from format 5 on. A format that changes what a record
        // holds must migrate older records here, as `migrate` does for snapshots.
        return refused(JournalProblem::Unreadable(format!(
            "its records have format version {version}, this build reads {SAVE_FORMAT_VERSION}"
        )));
    }
    let named = BaseId {
        len: u64_at(journal, 12),
        crc: u32_at(journal, 20),
    };
    if named != base {
        return refused(JournalProblem::OtherSnapshot);
    }
    // Shares every NPC with `save`: the first change to an NPC copies it once.
    let snapshot = save.clone();
    // Every NPC a record touched is checked once, at the end, not after each
    // record (that would cost the NPC's size per record).
    let mut touched = Vec::new();
    let fast = replay_records(save, journal, &mut touched, usize::MAX);
    let Err(mut reason) = check_touched(save, touched) else {
        return fast;
    };
    // A record left an NPC that does not hold together. Find the longest run of
    // records that leaves every NPC whole by halving: each try replays at most the
    // journal once, so recovery costs the journal's size times the log of its
    // record count, never its size times the record count.
    let (mut good, mut bad) = (0, fast.applied);
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        *save = snapshot.clone();
        let mut touched = Vec::new();
        replay_records(save, journal, &mut touched, mid);
        match check_touched(save, touched) {
            Ok(()) => good = mid,
            Err(problem) => (bad, reason) = (mid, problem),
        }
    }
    *save = snapshot;
    let kept = replay_records(save, journal, &mut Vec::new(), good);
    Replay {
        applied: good,
        valid_len: kept.valid_len,
        problem: Some(JournalProblem::Corrupt {
            record: good,
            reason: shorten_to_chars(&reason, 300).into_owned(),
            bytes: journal.len() as u64 - kept.valid_len,
        }),
    }
}

/// Checks each NPC in `touched` that the save still holds, once.
fn check_touched(save: &SaveGame, mut touched: Vec<NpcId>) -> Result<(), String> {
    touched.sort();
    touched.dedup();
    for id in &touched {
        if let Ok(at) = save.npcs.binary_search_by(|n| n.id.cmp(id)) {
            check_npc(&save.npcs[at])?;
        }
    }
    Ok(())
}

/// [`validate_npc`], counted in tests: recovery must not check an NPC per record.
fn check_npc(npc: &NpcSave) -> Result<(), String> {
    #[cfg(test)]
    tests::CHECKS.with(|checks| checks.set(checks.get() + 1));
    validate_npc(npc).map_err(|e| e.to_string())
}

/// Applies at most `limit` records after the header, stopping at the first torn
/// or bad one; see [`apply_record`] for `touched`.
fn replay_records(
    save: &mut SaveGame,
    journal: &[u8],
    touched: &mut Vec<NpcId>,
    limit: usize,
) -> Replay {
    let snapshot = save.clone();
    let mut payloads: Vec<(usize, usize)> = Vec::new();
    let mut at = HEADER_LEN;
    let mut applied = 0;
    let total = journal.len();
    let problem = loop {
        if at == total || applied == limit {
            break None;
        }
        let left = (total - at) as u64;
        if total - at < FRAME_LEN {
            break Some(JournalProblem::TornTail { bytes: left });
        }
        let len = u32_at(journal, at) as usize;
        let crc = u32_at(journal, at + 4);
        let Some(end) = (at + FRAME_LEN)
            .checked_add(len)
            .filter(|&end| end <= total)
        else {
            break Some(JournalProblem::TornTail { bytes: left });
        };
        let payload = &journal[at + FRAME_LEN..end];
        let corrupt = |reason: String| JournalProblem::Corrupt {
            record: applied,
            reason: shorten_to_chars(&reason, 300).into_owned(),
            bytes: left,
        };
        if crc32fast::hash(payload) != crc {
            // A kill leaves a short record, never a wrong one: the write either
            // reached the file or did not. A last record whose bytes are all there
            // but wrong is a write the machine lost power in.
            if end == total {
                break Some(JournalProblem::TornTail { bytes: left });
            }
            break Some(corrupt("its checksum does not match".into()));
        }
        let record = match serde_json::from_slice::<Record>(payload) {
            Ok(record) => record,
            Err(error) => break Some(corrupt(error.to_string())),
        };
        if let Err(error) = apply_record(save, record, touched) {
            // Part of the record may be in: apply the whole ones again from the
            // snapshot, so the record counts entirely or not at all.
            *save = snapshot;
            // They applied once, so they apply again; what they touched is
            // checked by the caller.
            for &(from, to) in &payloads {
                if let Ok(record) = serde_json::from_slice::<Record>(&journal[from..to]) {
                    let _ = apply_record(save, record, touched);
                }
            }
            break Some(corrupt(error));
        }
        payloads.push((at + FRAME_LEN, end));
        applied += 1;
        at = end;
    };
    Replay {
        applied,
        valid_len: at as u64,
        problem,
    }
}

/// Whether `journal` has a whole header naming `base`.
pub(crate) fn names_base(journal: &[u8], base: BaseId) -> bool {
    journal.len() >= HEADER_LEN
        && journal[..8] == MAGIC
        && u32_at(journal, 24) == crc32fast::hash(&journal[..24])
        && u64_at(journal, 12) == base.len
        && u32_at(journal, 20) == base.crc
}

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

    /// Appends what changed from the memory the slot holds to `save`. `Ok(None)`:
    /// no journal applies (none known, or it has grown enough to compact), so the
    /// caller writes a whole snapshot. Callers hold the path lock.
    pub(crate) fn append(
        &self,
        path: &Path,
        save: &Arc<SaveGame>,
        max_bytes: u64,
    ) -> Result<Option<usize>, SaveError> {
        let mut slots = self.lock();
        let Some(slot) = slots.get_mut(path) else {
            return Ok(None);
        };
        // Records do not carry the versions: a snapshot from another build is
        // replaced by one from this build first.
        if slot.held.format_version != save.format_version
            || slot.held.crate_version != save.crate_version
        {
            return Ok(None);
        }
        let Some(record) = encode_record(&slot.held, save)? else {
            slot.held = save.clone();
            return Ok(Some(0));
        };
        let start = if slot.journal_len == 0 {
            HEADER_LEN as u64
        } else {
            slot.journal_len
        };
        let after = start + record.len() as u64;
        let limit = (slot.base.len / COMPACT_SHARE).max(MIN_JOURNAL_BYTES);
        if after > limit || after > max_bytes {
            return Ok(None);
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
                Ok(Some(record.len()))
            }
            Err(error) => {
                // The snapshot is whole; writing a new one also starts a new journal.
                tracing::warn!(
                    "could not append to {}: {error}; writing a whole snapshot instead",
                    journal.display()
                );
                slots.remove(path);
                Ok(None)
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

/// After a whole snapshot replaced the one at `path` (now its `.bak` when
/// `rotated`), moves the journal that belonged to the old snapshot beside the
/// backup, where it still applies. Without a rotation, a journal there belongs to
/// nothing and goes. A crash before this step leaves a journal naming the backup's
/// snapshot beside the new one: loading sees that and ignores it.
pub(crate) fn retire_journal(path: &Path, rotated: bool) {
    let journal = journal_path(path);
    if rotated {
        let bak_journal = journal_path(&backup_path(path));
        match fs::rename(&journal, &bak_journal) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let _ = fs::remove_file(&bak_journal);
            }
            Err(_) => {}
        }
    } else {
        let _ = fs::remove_file(&journal);
    }
    let _ = File::open(path.parent().unwrap_or(Path::new("."))).map(|dir| dir.sync_all());
}

#[cfg(test)]
mod tests;
