//! Replaying a journal onto its snapshot, record by record, stopping at the first
//! record cut short or damaged; and reading a journal's header and seal.

use super::{
    BaseId, FRAME_LEN, HEADER_LEN, JournalProblem, MAGIC, Record, apply_record, u32_at, u64_at,
};
use crate::memory::{NpcId, shorten_to_chars};
use crate::save::format::{NpcSave, SAVE_FORMAT_VERSION, SaveGame, validate_npc};

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
    /// The snapshot the journal continues in, when the replay reached its seal.
    pub sealed: Option<BaseId>,
}

/// Replays `journal` onto `save`, the snapshot `base` was computed from. Stops at
/// the first record cut short or damaged; never panics, whatever the bytes.
pub(crate) fn replay(save: &mut SaveGame, base: BaseId, journal: &[u8]) -> Replay {
    let refused = |problem| Replay {
        applied: 0,
        valid_len: 0,
        problem: Some(problem),
        sealed: None,
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
    if header_base(journal) != Some(base) {
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
        sealed: None,
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
    super::tests::CHECKS.with(|checks| checks.set(checks.get() + 1));
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
    let mut sealed = None;
    let total = journal.len();
    let problem = loop {
        if at == total || applied == limit {
            break None;
        }
        let left = (total - at) as u64;
        if sealed.is_some() {
            // Nothing is appended to a sealed journal: the bytes after the seal
            // are not this journal's.
            break Some(JournalProblem::Corrupt {
                record: applied,
                reason: "it follows the journal's seal".into(),
                bytes: left,
            });
        }
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
        let seal = record.sealed;
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
        sealed = seal;
    };
    Replay {
        applied,
        valid_len: at as u64,
        problem,
        sealed,
    }
}

/// The snapshot `journal`'s header names, if it has a whole header.
pub(crate) fn header_base(journal: &[u8]) -> Option<BaseId> {
    (journal.len() >= HEADER_LEN
        && journal[..8] == MAGIC
        && u32_at(journal, 24) == crc32fast::hash(&journal[..24]))
    .then(|| BaseId {
        len: u64_at(journal, 12),
        crc: u32_at(journal, 20),
    })
}

/// The snapshot a whole, sealed `journal` continues in. Only the framing and
/// checksums are checked and the last record read, not every record applied: for
/// telling whether a backup still leads to the snapshot, at each load.
pub(crate) fn seal_of(journal: &[u8]) -> Option<BaseId> {
    header_base(journal)?;
    let mut at = HEADER_LEN;
    let mut last = None;
    while at < journal.len() {
        if journal.len() - at < FRAME_LEN {
            return None;
        }
        let len = u32_at(journal, at) as usize;
        let end = (at + FRAME_LEN)
            .checked_add(len)
            .filter(|&end| end <= journal.len())?;
        let payload = &journal[at + FRAME_LEN..end];
        if crc32fast::hash(payload) != u32_at(journal, at + 4) {
            return None;
        }
        last = Some(payload);
        at = end;
    }
    // A seal is a few dozen bytes; a longer last record is an autosave's.
    let last = last.filter(|payload| payload.len() <= 256)?;
    serde_json::from_slice::<Record>(last).ok()?.sealed
}
