//! Reading a slot from whichever of its two copies gets further.
//!
//! A *chain* is a snapshot, the journal whose header names it replayed as far as
//! it is whole, and, when that journal ends in a seal, the journal naming the
//! sealed snapshot (see `journal/write.rs` for the files at rest). Loading picks,
//! in this order:
//! 1. `slot.json` parses and a journal names it: its chain. A damaged journal
//!    applies up to the damage, as it would from the backup.
//! 2. `slot.json` parses and `slot.json.journal` belongs to the backup's chain
//!    (names the backup, or a snapshot a seal on that chain names):
//!    - a seal on that chain names `slot.json`: a compaction stopped before it
//!      moved the sealed journal, which is moved now; `slot.json` alone.
//!    - the journal names a sealed snapshot that is not `slot.json`, or names
//!      the backup while `slot.json` is the backup's bytes but for a few: it is
//!      not the snapshot that was written (a flipped byte that still parses), and
//!      is moved aside; the backup's chain loads.
//!    - otherwise the journal names the backup, unsealed: a compaction by a build
//!      without seals stopped before it moved the journal; `slot.json` alone.
//! 3. `slot.json` parses and its journal names nothing reachable (or has no
//!    header): `slot.json` alone, the journal moved aside and reported.
//! 4. `slot.json` is missing or damaged (moved aside): the backup's chain.
//!
//! A file that cannot be read (`Io`) or comes from a newer build stops the load
//! with every file left in place.

use std::cell::OnceCell;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{NotRecovered, Recovered, UnusableSave};
use crate::save::error::LoadError;
use crate::save::file::{backup_path, copy_aside, move_aside, read_exactly, sync_folder};
use crate::save::format::{SAVE_FORMAT_VERSION, SaveGame};
use crate::save::journal::{
    BaseId, JournalProblem, JournalReport, Replay, SlotJournal, header_base, journal_path, replay,
    seal_of,
};

/// One of a slot's two journals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    /// `slot.json.journal`.
    Main,
    /// `slot.json.bak.journal`.
    Backup,
}

enum JournalFile {
    Missing,
    /// Not read: too large.
    Unreadable(String),
    Read(Vec<u8>),
}

impl JournalFile {
    /// `Err` only for an `Io` error: the file may be fine, the disk is not.
    fn read(path: &Path, max_bytes: u64) -> Result<Self, String> {
        match read_exactly(path, max_bytes) {
            Ok(bytes) => Ok(Self::Read(bytes)),
            Err(LoadError::NotFound) => Ok(Self::Missing),
            Err(LoadError::Io(why)) => Err(why),
            Err(error) => Ok(Self::Unreadable(error.to_string())),
        }
    }

    fn bytes(&self) -> Option<&[u8]> {
        match self {
            Self::Read(bytes) => Some(bytes),
            _ => None,
        }
    }

    fn names(&self) -> Option<BaseId> {
        self.bytes().and_then(header_base)
    }
}

/// A slot's paths and journals, each journal read once, when first needed.
struct Files {
    path: PathBuf,
    backup: PathBuf,
    max_bytes: u64,
    journal: JournalFile,
    backup_journal: OnceCell<JournalFile>,
}

impl Files {
    fn journal_path(&self, which: Which) -> PathBuf {
        match which {
            Which::Main => journal_path(&self.path),
            Which::Backup => journal_path(&self.backup),
        }
    }

    fn journal(&self, which: Which) -> &JournalFile {
        match which {
            Which::Main => &self.journal,
            Which::Backup => self.backup_journal.get_or_init(|| {
                // Only ever a second copy: one that cannot be read is not used.
                JournalFile::read(&self.journal_path(Which::Backup), self.max_bytes)
                    .unwrap_or_else(JournalFile::Unreadable)
            }),
        }
    }

    fn backup_chain(&self) -> Result<Chain, LoadError> {
        chain(
            self,
            read_exactly(&self.backup, self.max_bytes)?,
            [Which::Backup, Which::Main],
        )
    }
}

/// A snapshot with the journals that continue it replayed.
struct Chain {
    save: SaveGame,
    version: u32,
    /// The snapshot's.
    base: BaseId,
    /// The journals replayed, in order.
    used: Vec<Which>,
    /// The snapshots the seals passed name.
    seals: Vec<BaseId>,
    /// The last journal replayed, and how that went.
    last: Option<(Which, Replay)>,
}

/// Replays onto the snapshot `bytes` the journal (tried in `order`) naming it,
/// and after a seal the one naming the sealed snapshot.
fn chain(files: &Files, bytes: Vec<u8>, order: [Which; 2]) -> Result<Chain, LoadError> {
    let (mut save, version) = SaveGame::from_bytes_versioned(&bytes)?;
    let base = BaseId::of(&bytes);
    // Not held while the journals are read and replayed.
    drop(bytes);
    let (mut used, mut seals, mut last) = (Vec::new(), Vec::new(), None);
    let mut at = base;
    while let Some(which) = order
        .into_iter()
        .find(|&w| !used.contains(&w) && files.journal(w).names() == Some(at))
    {
        let journal = files.journal(which).bytes().unwrap_or_default();
        let outcome = replay(&mut save, at, journal);
        used.push(which);
        let next = outcome.sealed.filter(|_| outcome.problem.is_none());
        last = Some((which, outcome));
        let Some(next) = next else { break };
        seals.push(next);
        at = next;
    }
    Ok(Chain {
        save,
        version,
        base,
        used,
        seals,
        last,
    })
}

impl Chain {
    /// The last journal's problem, if it was not replayed whole.
    fn report(&self, files: &Files, tidy: bool) -> Option<JournalReport> {
        let (which, outcome) = self.last.as_ref()?;
        let problem = outcome.problem.clone()?;
        Some(report(
            files.journal_path(*which),
            outcome.applied,
            problem,
            tidy,
        ))
    }
}

/// With `tidy`, a journal that does not apply is moved aside and a damaged one
/// copied aside (its good start still counts); a torn tail is no damage.
fn report(path: PathBuf, applied: usize, problem: JournalProblem, tidy: bool) -> JournalReport {
    let refused = matches!(
        problem,
        JournalProblem::OtherSnapshot | JournalProblem::Unreadable(_)
    );
    let kept_at = match (&problem, tidy) {
        (_, false) | (JournalProblem::TornTail { .. }, _) => None,
        (_, true) if refused => move_aside(&path),
        (_, true) => copy_aside(&path),
    };
    JournalReport {
        path,
        applied,
        problem,
        kept_at,
    }
}

/// Reads the slot at `path` (see the module's documentation for which copy).
/// With `tidy` (the plugin's load) damaged files and journals that do not apply
/// are moved aside, and a compaction stopped halfway is finished; without it no
/// file changes. With `keep`, what the slot holds is returned for autosave to
/// append to, when the snapshot and its journal were read and the backup still
/// leads to the same memory; otherwise the next autosave writes both copies anew.
pub(crate) fn read_slot(
    path: &Path,
    max_bytes: u64,
    tidy: bool,
    keep: bool,
) -> Result<Recovered, Box<NotRecovered>> {
    let failed = |error| {
        Box::new(NotRecovered {
            error,
            moved_to: None,
            backup: None,
        })
    };
    let usable = |error: &LoadError| *error == LoadError::NotFound || error.is_damaged();
    let snapshot = match read_exactly(path, max_bytes) {
        Err(error) if !usable(&error) => return Err(failed(error)),
        read => read,
    };
    let journal = journal_path(path);
    let files = Files {
        path: path.to_path_buf(),
        backup: backup_path(path),
        max_bytes,
        journal: JournalFile::read(&journal, max_bytes).map_err(|why| {
            failed(LoadError::Io(format!(
                "its journal {} could not be read: {why}",
                journal.display()
            )))
        })?,
        backup_journal: OnceCell::new(),
    };
    match snapshot.and_then(|bytes| chain(&files, bytes, [Which::Main, Which::Backup])) {
        Ok(main) => with_snapshot(&files, main, tidy, keep),
        Err(error) if usable(&error) => from_backup(&files, error, None, tidy),
        Err(error) => Err(failed(error)),
    }
}

fn with_snapshot(
    files: &Files,
    main: Chain,
    tidy: bool,
    keep: bool,
) -> Result<Recovered, Box<NotRecovered>> {
    let mut report = main.report(files, tidy);
    if main.used.is_empty() {
        match unused_journal(files, &main, tidy) {
            Unused::Nothing => {}
            Unused::Refused(refused) => report = Some(refused),
            Unused::Contradicts(backup) => {
                let error = LoadError::Inconsistent(
                    "it differs from the snapshot its journal was written for \
                     (changed or damaged on disk)"
                        .into(),
                );
                return from_backup(files, error, Some(Ok(*backup)), tidy);
            }
        }
    }
    let journal = keep
        .then(|| appendable(files, &main))
        .flatten()
        .filter(|_| main.version == SAVE_FORMAT_VERSION && backup_leads_to(files, main.base))
        .map(|journal_len| SlotJournal {
            base: main.base,
            journal_len,
            held: Arc::new(main.save.clone()),
        });
    Ok(Recovered {
        read: files.path.clone(),
        save: main.save,
        recovered_from: None,
        journal,
        journal_report: report,
    })
}

/// What a main journal that does not name `slot.json` says of it.
enum Unused {
    Nothing,
    /// It does not apply: moved aside (with `tidy`) and reported.
    Refused(JournalReport),
    /// It continues the backup's chain past `slot.json`, which is then not the
    /// snapshot that was written: the backup's chain.
    Contradicts(Box<Chain>),
}

fn unused_journal(files: &Files, main: &Chain, tidy: bool) -> Unused {
    let refused =
        |problem| Unused::Refused(report(files.journal_path(Which::Main), 0, problem, tidy));
    let named = match &files.journal {
        JournalFile::Missing => return Unused::Nothing,
        JournalFile::Unreadable(why) => return refused(JournalProblem::Unreadable(why.clone())),
        journal => match journal.names() {
            Some(named) => named,
            None => {
                return refused(JournalProblem::Unreadable(
                    "it has no journal header".into(),
                ));
            }
        },
    };
    let backup = files.backup_chain().ok();
    let Some(backup) = backup.filter(|b| named == b.base || b.seals.contains(&named)) else {
        return refused(JournalProblem::OtherSnapshot);
    };
    if backup.seals.contains(&main.base) {
        // A compaction into this snapshot stopped before it moved the sealed
        // journal beside the backup: finished now.
        if tidy && named == backup.base {
            let _ = fs::rename(
                files.journal_path(Which::Main),
                files.journal_path(Which::Backup),
            );
            sync_folder(&files.path);
        }
        Unused::Nothing
    } else if named != backup.base || near_copies(&files.path, &files.backup, files.max_bytes) {
        Unused::Contradicts(Box::new(backup))
    } else {
        // A build without seals stopped compacting after writing this snapshot:
        // the journal is older than it.
        Unused::Nothing
    }
}

/// Whether two files are the same bytes but for a few: one a damaged copy of the
/// other. Two saves differ in their length or in far more bytes.
fn near_copies(a: &Path, b: &Path, max_bytes: u64) -> bool {
    const FEW: usize = 16;
    match (read_exactly(a, max_bytes), read_exactly(b, max_bytes)) {
        (Ok(a), Ok(b)) => {
            a.len() == b.len() && a.iter().zip(&b).filter(|(x, y)| x != y).nth(FEW).is_none()
        }
        _ => false,
    }
}

/// Where autosave's next record goes in the slot's journal, when it may append
/// there: after the records replayed, or in a new journal when there is none. Not
/// after a seal, nor to the backup's journal (after a crash in a twin write).
fn appendable(files: &Files, main: &Chain) -> Option<u64> {
    match (main.used.as_slice(), &main.last) {
        ([Which::Main], Some((_, outcome))) if main.seals.is_empty() => Some(outcome.valid_len),
        // A journal left in place (an older build's, naming the backup) would be
        // replaced by the first append: a whole write keeps it with the backup.
        ([], _) => (!files.journal_path(Which::Main).exists()).then_some(0),
        _ => None,
    }
}

/// Whether the backup is a second good copy of the snapshot `base`: the same
/// bytes, or a snapshot with a sealed journal that leads to it.
fn backup_leads_to(files: &Files, base: BaseId) -> bool {
    let Ok(backup) = read_exactly(&files.backup, files.max_bytes) else {
        return false;
    };
    let backup = BaseId::of(&backup);
    backup == base
        || [Which::Backup, Which::Main].into_iter().any(|which| {
            // Read again: loading may have just moved a sealed journal.
            read_exactly(&files.journal_path(which), files.max_bytes).is_ok_and(|journal| {
                header_base(&journal) == Some(backup) && seal_of(&journal) == Some(base)
            })
        })
}

/// Loads the backup's chain (`backup`, when already read) because the snapshot
/// could not be used for `error`; with `tidy` a damaged snapshot is moved aside,
/// with the main journal unless the backup's chain uses it.
fn from_backup(
    files: &Files,
    error: LoadError,
    backup: Option<Result<Chain, LoadError>>,
    tidy: bool,
) -> Result<Recovered, Box<NotRecovered>> {
    let moved_to = (tidy && error.is_damaged())
        .then(|| move_aside(&files.path))
        .flatten();
    match backup.unwrap_or_else(|| files.backup_chain()) {
        Ok(chain) => {
            let journal = files.journal_path(Which::Main);
            if moved_to.is_some() && !chain.used.contains(&Which::Main) && journal.exists() {
                // It extends the damaged file: kept with it, never applied to the
                // backup.
                move_aside(&journal);
            }
            Ok(Recovered {
                read: files.backup.clone(),
                journal_report: chain.report(files, tidy),
                save: chain.save,
                recovered_from: Some(UnusableSave {
                    path: files.path.clone(),
                    error,
                    moved_to,
                }),
                // Autosave writes both copies anew first.
                journal: None,
            })
        }
        Err(LoadError::NotFound) => Err(Box::new(NotRecovered {
            error,
            moved_to,
            backup: None,
        })),
        Err(backup_error) => {
            let backup_moved = (tidy && backup_error.is_damaged())
                .then(|| move_aside(&files.backup))
                .flatten();
            Err(Box::new(NotRecovered {
                error,
                moved_to,
                backup: Some(UnusableSave {
                    path: files.backup.clone(),
                    error: backup_error,
                    moved_to: backup_moved,
                }),
            }))
        }
    }
}
