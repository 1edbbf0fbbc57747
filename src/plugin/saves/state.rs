//! Snapshots, queued writes and IO in flight, and which files autosave may replace.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bevy::prelude::*;
use bevy::tasks::IoTaskPool;
use crossbeam_channel::{Receiver, Sender, unbounded};

use crate::memory::{NpcId, NpcMemory};
use crate::save::{
    Journals, LoadError, NotRecovered, NpcSave, Recovered, SaveError, SaveGame, WriteTicket,
    with_path_lock, write_slot,
};

use super::messages::SaveSettings;
use super::sources::SaveSources;

pub(super) enum IoDone {
    Saved {
        id: u64,
        path: PathBuf,
        npcs: usize,
        autosave: bool,
        result: Result<Option<usize>, SaveError>,
    },
    Loaded {
        /// Which load asked, so that only the newest is used.
        generation: u64,
        path: PathBuf,
        result: Result<Box<Recovered>, Box<NotRecovered>>,
    },
    Imported {
        path: PathBuf,
        npc: NpcId,
        result: Result<Box<NpcMemory>, LoadError>,
    },
}

#[derive(Clone)]
pub(super) struct WriteJob {
    pub(super) path: PathBuf,
    pub(super) save: Arc<SaveGame>,
    pub(super) autosave: bool,
    pub(super) max_bytes: u64,
}

pub(super) struct InFlight {
    pub(super) id: u64,
    pub(super) job: WriteJob,
    pub(super) ticket: Arc<WriteTicket>,
}

/// Writes one job unless its ticket was taken by someone else (`Ok(None)` then).
/// An autosave appends to the slot's journal; a `SaveMemory` writes a whole
/// snapshot.
pub(super) fn run_write(
    job: &WriteJob,
    ticket: &WriteTicket,
    may_replace: bool,
    journals: &Journals,
) -> Result<Option<usize>, SaveError> {
    write_slot(
        &job.save,
        &job.path,
        job.max_bytes,
        ticket,
        may_replace,
        journals,
        job.autosave,
    )
}

/// Snapshots, queued writes, IO in flight, and which files autosave may replace.
#[derive(Resource)]
pub(crate) struct SaveState {
    pub(super) snapshot: HashMap<NpcId, Arc<NpcSave>>,
    /// The save built from `snapshot`, until an NPC changes.
    latest: Option<Arc<SaveGame>>,
    /// Memory changed since autosave last queued a write.
    pub(super) autosave_due: bool,
    /// The lore revision `latest` was built with: run-time lore changes are saved
    /// too, and change apart from any NPC.
    pub(super) lore_revision: u64,
    pub(super) queue: VecDeque<WriteJob>,
    pub(super) in_flight: Option<InFlight>,
    pub(super) next_write: u64,
    /// Reads in flight by path. Autosave waits for all; a write waits for reads of
    /// its own path, so it never replaces a file before it was read.
    pub(super) reads: HashMap<PathBuf, usize>,
    /// Files autosave may replace: this game loaded or wrote them.
    pub(super) trusted: HashSet<PathBuf>,
    /// Files autosave leaves alone until the game resumes them.
    pub(super) paused: HashSet<PathBuf>,
    /// A load or restore is in flight: the memory in use is about to be replaced,
    /// so autosave does not write it.
    pub(super) loading: bool,
    pub(super) sender: Sender<IoDone>,
    pub(super) receiver: Receiver<IoDone>,
    /// What each slot holds on disk, for autosave to append only what changed.
    pub(super) journals: Journals,
}

/// An app dropped without `AppExit` (a test, an embedding editor) still gets its
/// queued autosaves written.
impl Drop for SaveState {
    fn drop(&mut self) {
        self.finish_writes();
    }
}

impl Default for SaveState {
    fn default() -> Self {
        let (sender, receiver) = unbounded();
        Self {
            snapshot: HashMap::new(),
            latest: None,
            autosave_due: false,
            lore_revision: 0,
            queue: VecDeque::new(),
            in_flight: None,
            next_write: 0,
            reads: HashMap::new(),
            trusted: HashSet::new(),
            paused: HashSet::new(),
            loading: false,
            sender,
            receiver,
            journals: Journals::default(),
        }
    }
}

impl SaveState {
    /// Takes apart again the NPCs changed since the last call; the rest stay shared
    /// with the previous snapshot. Returns whether any (or the lore) had changed.
    pub(super) fn refresh(&mut self, sources: &mut SaveSources) -> bool {
        let lore = sources.lore.revision();
        let lore_changed = lore != self.lore_revision;
        if lore_changed {
            self.lore_revision = lore;
            self.latest = None;
            self.autosave_due = true;
        }
        let changed = sources.layers.take_changed();
        if changed.is_empty() {
            return lore_changed;
        }
        for npc in changed {
            match sources.layers.parts(&npc) {
                Some(memory) => {
                    let save =
                        NpcSave::new(npc.clone(), memory).with_waiting(sources.queued_lines(&npc));
                    self.snapshot.insert(npc, Arc::new(save))
                }
                None => self.snapshot.remove(&npc),
            };
        }
        self.latest = None;
        self.autosave_due = true;
        true
    }

    /// Every NPC's memory as it is now, built again only after a change. Its clock
    /// is the one at that change; [`SaveState::snapshot`] brings it up to date.
    pub(super) fn memory(&mut self, sources: &mut SaveSources) -> Arc<SaveGame> {
        self.refresh(sources);
        let clock = sources.clock.seconds();
        if let Some(latest) = &self.latest {
            return latest.clone();
        }
        let npcs = self.snapshot.values().cloned().collect();
        let lore = sources.lore.changes();
        let save = Arc::new(SaveGame::new(npcs).with_clock(clock).with_lore(lore));
        self.latest = Some(save.clone());
        save
    }

    /// A save of every NPC's memory and the clock as they are now.
    pub(super) fn snapshot(&mut self, sources: &mut SaveSources) -> Arc<SaveGame> {
        let memory = self.memory(sources);
        let clock = sources.clock.seconds();
        if memory.clock == clock {
            return memory;
        }
        // Copies one pointer per NPC; only taken when a save is written.
        Arc::new(memory.as_ref().clone().with_clock(clock))
    }

    /// The memory just became `save`'s (a load or a restore): nothing needs saving.
    /// Returns the snapshots it replaced, for the caller to drop off the main thread.
    pub(super) fn replaced_by(&mut self, save: &SaveGame) -> impl Send + use<> {
        let snapshot = save
            .npcs
            .iter()
            .map(|npc| (npc.id.clone(), npc.clone()))
            .collect();
        let replaced = (
            std::mem::replace(&mut self.snapshot, snapshot),
            self.latest.take(),
        );
        self.autosave_due = false;
        replaced
    }

    pub(super) fn reading(&self) -> bool {
        !self.reads.is_empty()
    }

    pub(super) fn begin_read(&mut self, path: &Path) {
        *self.reads.entry(path.to_path_buf()).or_default() += 1;
    }

    pub(super) fn end_read(&mut self, path: &Path) {
        if let Some(count) = self.reads.get_mut(path) {
            *count -= 1;
            if *count == 0 {
                self.reads.remove(path);
            }
        }
    }

    pub(super) fn autosave_may_write(&self, path: &Path) -> bool {
        !self.reading() && !self.loading && !self.paused.contains(path)
    }

    pub(super) fn resume(&mut self, path: &Path) {
        self.paused.remove(path);
        self.trusted.insert(path.to_path_buf());
    }

    /// Cancels the autosave to `path` in flight if its task has not started it yet:
    /// a load of `path` is starting, and that write holds the memory the load
    /// replaces. One already running finishes under the path lock before the load
    /// reads the file. The task still reports back (skipped), freeing the slot.
    pub(super) fn cancel_autosave_to(&mut self, path: &Path) {
        if let Some(flight) = &self.in_flight
            && flight.job.autosave
            && flight.job.path == path
        {
            flight.ticket.cancel();
        }
    }

    /// Forgets what the slot at `path` holds, so autosave writes it whole next
    /// time: on the IO pool, under the path lock, since the copy of the memory it
    /// holds can be large to free.
    pub(super) fn forget_journal(&self, path: PathBuf) {
        let journals = self.journals.clone();
        IoTaskPool::get()
            .spawn(async move { with_path_lock(&path, || journals.set(&path, None)) })
            .detach();
    }

    /// Stops autosave writing `path`, including autosaves already queued for it.
    pub(super) fn pause(&mut self, path: &Path) {
        self.paused.insert(path.to_path_buf());
        self.trusted.remove(path);
        self.queue.retain(|job| !(job.autosave && job.path == path));
    }

    /// Writes what is queued and waits for the write in flight, blocking: the game
    /// is closing, and the last changes must reach the disk. A write whose task has
    /// not started (the IO pool is busy) is written here instead and its task skips
    /// it; one already running is waited for, so the newest save lands last.
    pub(super) fn finish_writes(&mut self) {
        if let Some(InFlight { job, ticket, .. }) = self.in_flight.take() {
            if ticket.cancel() {
                match self
                    .queue
                    .iter_mut()
                    .find(|waiting| waiting.path == job.path)
                {
                    Some(newer) => newer.autosave &= job.autosave,
                    None => self.queue.push_front(job),
                }
            } else {
                with_path_lock(&job.path, || ());
                if ticket.written() {
                    self.trusted.insert(job.path);
                }
            }
        }
        while let Some(job) = self.queue.pop_front() {
            let may_replace = !job.autosave || self.trusted.contains(&job.path);
            match run_write(&job, &WriteTicket::default(), may_replace, &self.journals) {
                Ok(_) => {
                    self.trusted.insert(job.path);
                }
                Err(error) => {
                    tracing::error!("could not save {} on exit: {error}", job.path.display());
                }
            }
        }
    }

    /// Queues a write; a newer save for the same file replaces one still waiting.
    /// The merged write counts as the game's own if either was, so a `SaveMemory`
    /// is always answered.
    pub(super) fn queue_write(&mut self, job: WriteJob) {
        let explicit = self
            .queue
            .iter()
            .any(|waiting| waiting.path == job.path && !waiting.autosave);
        self.queue.retain(|waiting| waiting.path != job.path);
        self.queue.push_back(WriteJob {
            autosave: job.autosave && !explicit,
            ..job
        });
    }

    /// Starts the first queued write whose file is not being read, if none runs.
    pub(super) fn start_next_write(&mut self) {
        if self.in_flight.is_some() {
            return;
        }
        // Autosaves wait while a load is in flight: they hold the memory being
        // replaced, and one on the file being loaded would land on it after it
        // was read. The game's own saves go ahead.
        let Some(index) = self
            .queue
            .iter()
            .position(|job| !(self.reads.contains_key(&job.path) || job.autosave && self.loading))
        else {
            return;
        };
        let Some(job) = self.queue.remove(index) else {
            return;
        };
        let may_replace = !job.autosave || self.trusted.contains(&job.path);
        let (id, ticket) = (self.next_write, Arc::new(WriteTicket::default()));
        self.next_write += 1;
        self.in_flight = Some(InFlight {
            id,
            job: job.clone(),
            ticket: ticket.clone(),
        });
        let (sender, journals) = (self.sender.clone(), self.journals.clone());
        IoTaskPool::get()
            .spawn(async move {
                let result = run_write(&job, &ticket, may_replace, &journals);
                let _ = sender.send(IoDone::Saved {
                    id,
                    npcs: job.save.npcs.len(),
                    path: job.path,
                    autosave: job.autosave,
                    result,
                });
            })
            .detach();
    }

    pub(super) fn autosave_job(
        &mut self,
        sources: &mut SaveSources,
        settings: &SaveSettings,
    ) -> Option<WriteJob> {
        let path = settings.autosave.clone()?;
        let save = self.snapshot(sources);
        self.autosave_due = false;
        Some(WriteJob {
            path,
            save,
            autosave: true,
            max_bytes: settings.max_file_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn save_marked(mark: &str) -> Arc<SaveGame> {
        let mut save = SaveGame::new(Vec::new());
        save.crate_version = mark.to_owned();
        Arc::new(save)
    }

    fn job(path: &Path, mark: &str, autosave: bool) -> WriteJob {
        WriteJob {
            path: path.to_path_buf(),
            save: save_marked(mark),
            autosave,
            max_bytes: u64::MAX,
        }
    }

    fn mark_on_disk(path: &Path) -> String {
        SaveGame::from_bytes(&std::fs::read(path).unwrap())
            .unwrap()
            .crate_version
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("npc-writes-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn an_autosave_replacing_a_waiting_save_memory_still_answers_it() {
        let dir = temp_dir("merge");
        let path = dir.join("slot.json");
        let mut state = SaveState::default();
        state.queue_write(job(&path, "explicit", false));
        state.queue_write(job(&path, "autosave", true));
        assert_eq!(state.queue.len(), 1);
        assert!(!state.queue[0].autosave, "reported as the game's own save");
        drop(state); // writes what is queued
        assert_eq!(mark_on_disk(&path), "autosave", "the newer snapshot");
        std::fs::remove_dir_all(dir).ok();
    }

    /// The IO pool had not started the write in flight when the game quit: the exit
    /// flush writes the newer save, and the stale task, running later, skips.
    #[test]
    fn a_write_whose_task_never_started_never_lands_after_the_exit_flush() {
        let dir = temp_dir("exit-race");
        let path = dir.join("slot.json");
        let mut state = SaveState::default();
        let stale = job(&path, "older", false);
        let ticket = Arc::new(WriteTicket::default());
        state.in_flight = Some(InFlight {
            id: 0,
            job: stale.clone(),
            ticket: ticket.clone(),
        });
        state.queue_write(job(&path, "newer", false));
        state.finish_writes();
        assert_eq!(mark_on_disk(&path), "newer");
        assert_eq!(
            run_write(&stale, &ticket, true, &state.journals),
            Ok(None),
            "the task skips"
        );
        assert_eq!(mark_on_disk(&path), "newer");
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn the_exit_flush_writes_a_write_whose_task_never_started() {
        let dir = temp_dir("exit-alone");
        let path = dir.join("slot.json");
        let mut state = SaveState::default();
        let pending = job(&path, "only", false);
        let ticket = Arc::new(WriteTicket::default());
        state.in_flight = Some(InFlight {
            id: 0,
            job: pending.clone(),
            ticket: ticket.clone(),
        });
        state.finish_writes();
        assert_eq!(mark_on_disk(&path), "only");
        assert_eq!(
            run_write(&pending, &ticket, true, &state.journals),
            Ok(None)
        );
        std::fs::remove_dir_all(dir).ok();
    }

    /// The write in flight already ran: the exit flush learns the file is ours, so
    /// the last autosave is not refused as "unread".
    #[test]
    fn a_write_that_ran_makes_its_file_autosave_s_own() {
        let dir = temp_dir("exit-ran");
        let path = dir.join("slot.json");
        let mut state = SaveState::default();
        let first = job(&path, "first", true);
        let ticket = Arc::new(WriteTicket::default());
        assert_eq!(
            run_write(&first, &ticket, false, &state.journals),
            Ok(Some(std::fs::metadata(&path).unwrap().len() as usize))
        );
        state.in_flight = Some(InFlight {
            id: 0,
            job: first,
            ticket,
        });
        state.queue_write(job(&path, "last", true));
        state.finish_writes();
        assert_eq!(mark_on_disk(&path), "last");
        std::fs::remove_dir_all(dir).ok();
    }
}
