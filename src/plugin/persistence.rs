//! Saving and loading through the plugin: messages, autosave, and the IO tasks.
//!
//! The main thread only takes a snapshot, which shares every unchanged NPC with
//! the previous one. Encoding and writing run on Bevy's IO task pool, one write at
//! a time, in order.
//!
//! Autosave never writes over a file this game has not read. A path is trusted once
//! it loaded, was written, or was found empty by a write; a failed load pauses
//! autosave for its path until the game loads it, saves there with [`SaveMemory`],
//! or sends [`ResumeAutosave`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy::tasks::IoTaskPool;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::dialogue::Dialogue;
use super::persona::Persona;
use crate::memory::{MemoryParts, NpcId, PersonaPrompt};
use crate::save::{
    LoadError, NotRecovered, NpcSave, Recovered, SaveError, SaveGame, UnusableSave, WriteTicket,
    backup_path, import_unity_save, load_slot, read_bounded, with_path_lock, write_slot,
};

/// Save every NPC's memory to a file (`.ron` for RON, anything else JSON). It may
/// replace any file, and lifts an autosave pause on that path once written. The
/// snapshot is taken when asked; if that file is being loaded, the write waits for
/// the load to finish.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct SaveMemory {
    /// Where to write.
    pub path: PathBuf,
}

/// Replace every NPC's memory with a save's. Requests in flight are cancelled. With
/// autosave on, the loaded file becomes the autosave slot.
///
/// If the file is missing or damaged (see [`LoadError::is_damaged`]; a damaged file
/// is moved aside first), its `.bak` is read instead and [`MemoryLoaded`] says so.
/// A file from a newer build, or one that cannot be read (`LoadError::Io`), is left
/// in place. Any failure but a plain [`LoadError::NotFound`] pauses autosave for
/// that path (see [`ResumeAutosave`]).
#[derive(Message, Clone, Debug, PartialEq)]
pub struct LoadMemory {
    /// What to read.
    pub path: PathBuf,
}

/// Lets autosave write `path` again after a failed load (or a refusal to replace a
/// file it never read) paused it, accepting that the memory in use replaces what is
/// there. If `path` is the autosave slot, the memory in use is written at once.
/// A successful [`LoadMemory`] or a [`SaveMemory`] of that path lifts the pause too.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct ResumeAutosave {
    /// The paused file.
    pub path: PathBuf,
}

/// Import the seed's Unity `savegame.json` layout into one NPC's memory.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct ImportUnitySave {
    /// The Unity save file.
    pub path: PathBuf,
    /// Whose memory it becomes.
    pub npc: NpcId,
}

/// A save was written.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct MemorySaved {
    /// Where.
    pub path: PathBuf,
    /// NPCs in it.
    pub npcs: usize,
    /// Its size.
    pub bytes: usize,
    /// Whether autosave wrote it.
    pub autosave: bool,
}

/// A save could not be written. The memory in use and the file there are untouched.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct MemorySaveFailed {
    /// Where it should have gone.
    pub path: PathBuf,
    /// Why it failed.
    pub error: SaveError,
}

impl std::fmt::Display for MemorySaveFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "could not save {}: {}", self.path.display(), self.error)
    }
}

/// A save (or a Unity import) was loaded.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct MemoryLoaded {
    /// The file actually read: the one asked for, or its `.bak`.
    pub path: PathBuf,
    /// The NPCs whose memory it set.
    pub npcs: Vec<NpcId>,
    /// Set when the backup was read: why the file asked for was not used (missing,
    /// or damaged and moved aside).
    pub recovered_from: Option<UnusableSave>,
}

/// A save could not be loaded. The memory in use is untouched. A damaged file has
/// been moved aside so no autosave overwrites it; a newer build's file or one that
/// could not be read is left in place.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct MemoryLoadFailed {
    /// The file asked for.
    pub path: PathBuf,
    /// What was wrong with it.
    pub error: LoadError,
    /// Where the damaged file now is.
    pub moved_to: Option<PathBuf>,
    /// The `.bak`, when it was tried and could not be used either.
    pub backup: Option<UnusableSave>,
    /// Whether autosave now leaves `path` alone (see [`ResumeAutosave`]): after
    /// every failure but a plain "there is no such file".
    pub autosave_paused: bool,
}

impl std::fmt::Display for MemoryLoadFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "could not load {}: {}", self.path.display(), self.error)?;
        if let Some(moved) = &self.moved_to {
            write!(f, " (moved aside to {})", moved.display())?;
        } else if matches!(
            self.error,
            LoadError::Io(_) | LoadError::UnsupportedVersion { .. }
        ) {
            write!(f, " (the file is left in place)")?;
        }
        if let Some(backup) = &self.backup {
            write!(f, "; its backup {backup}")?;
        }
        if self.autosave_paused {
            write!(
                f,
                "; autosave will not write this file until it loads, SaveMemory writes it, or ResumeAutosave"
            )?;
        }
        Ok(())
    }
}

/// Save settings. Change them at run time, e.g. to switch the autosave slot.
#[derive(Resource, Clone, Debug, PartialEq)]
pub struct SaveSettings {
    /// Where autosave writes after every message and summary. `None` turns it off.
    /// A slot that exists when the app starts is loaded first, as the seed restores
    /// its state on start; autosave waits for that load, so it never overwrites a
    /// save it has not read. If that load fails, autosave pauses for the slot (see
    /// [`ResumeAutosave`]). Switched at run time to a file this game has not read,
    /// autosave refuses it once with [`SaveError::Unread`] and pauses likewise.
    pub autosave: Option<PathBuf>,
    /// Larger files are refused unread, and a save that would be larger is not
    /// written ([`SaveError::TooLarge`]): it could never be loaded.
    pub max_file_bytes: u64,
}

impl Default for SaveSettings {
    fn default() -> Self {
        Self {
            autosave: None,
            max_file_bytes: 256 * 1024 * 1024,
        }
    }
}

enum IoDone {
    Saved {
        id: u64,
        path: PathBuf,
        npcs: usize,
        autosave: bool,
        result: Result<Option<usize>, SaveError>,
    },
    Loaded {
        path: PathBuf,
        result: Result<Box<Recovered>, Box<NotRecovered>>,
    },
    Imported {
        path: PathBuf,
        npc: NpcId,
        result: Result<Box<MemoryParts>, LoadError>,
    },
}

#[derive(Clone)]
struct WriteJob {
    path: PathBuf,
    save: Arc<SaveGame>,
    autosave: bool,
    max_bytes: u64,
}

struct InFlight {
    id: u64,
    job: WriteJob,
    ticket: Arc<WriteTicket>,
}

/// Writes one job unless its ticket was taken by someone else (`Ok(None)` then).
fn run_write(
    job: &WriteJob,
    ticket: &WriteTicket,
    may_replace: bool,
) -> Result<Option<usize>, SaveError> {
    write_slot(&job.save, &job.path, job.max_bytes, ticket, may_replace)
}

/// Snapshots, queued writes, IO in flight, and which files autosave may replace.
#[derive(Resource)]
pub(crate) struct SaveState {
    snapshot: HashMap<NpcId, Arc<NpcSave>>,
    queue: VecDeque<WriteJob>,
    in_flight: Option<InFlight>,
    next_write: u64,
    /// Reads in flight by path. Autosave waits for all; a write waits for reads of
    /// its own path, so it never replaces a file before it was read.
    reads: HashMap<PathBuf, usize>,
    /// Files autosave may replace: this game loaded or wrote them.
    trusted: HashSet<PathBuf>,
    /// Files autosave leaves alone until the game resumes them.
    paused: HashSet<PathBuf>,
    sender: UnboundedSender<IoDone>,
    receiver: UnboundedReceiver<IoDone>,
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
        let (sender, receiver) = unbounded_channel();
        Self {
            snapshot: HashMap::new(),
            queue: VecDeque::new(),
            in_flight: None,
            next_write: 0,
            reads: HashMap::new(),
            trusted: HashSet::new(),
            paused: HashSet::new(),
            sender,
            receiver,
        }
    }
}

impl SaveState {
    /// A save of every NPC. Only NPCs changed since the last snapshot are taken
    /// apart again; the rest are shared with it.
    fn snapshot(&mut self, dialogue: &mut Dialogue) -> Arc<SaveGame> {
        for npc in dialogue.layers().take_changed() {
            match dialogue.layers().parts(&npc) {
                Some(memory) => {
                    let mut save = NpcSave::new(npc.clone(), memory);
                    save.queued = dialogue.queued_lines(&npc);
                    self.snapshot.insert(npc, Arc::new(save))
                }
                None => self.snapshot.remove(&npc),
            };
        }
        Arc::new(SaveGame::new(self.snapshot.values().cloned().collect()))
    }

    fn reading(&self) -> bool {
        !self.reads.is_empty()
    }

    fn begin_read(&mut self, path: &Path) {
        *self.reads.entry(path.to_path_buf()).or_default() += 1;
    }

    fn end_read(&mut self, path: &Path) {
        if let Some(count) = self.reads.get_mut(path) {
            *count -= 1;
            if *count == 0 {
                self.reads.remove(path);
            }
        }
    }

    fn autosave_may_write(&self, path: &Path) -> bool {
        !self.reading() && !self.paused.contains(path)
    }

    fn resume(&mut self, path: &Path) {
        self.paused.remove(path);
        self.trusted.insert(path.to_path_buf());
    }

    /// Stops autosave writing `path`, including autosaves already queued for it.
    fn pause(&mut self, path: &Path) {
        self.paused.insert(path.to_path_buf());
        self.trusted.remove(path);
        self.queue.retain(|job| !(job.autosave && job.path == path));
    }

    /// Writes what is queued and waits for the write in flight, blocking: the game
    /// is closing, and the last changes must reach the disk. A write whose task has
    /// not started (the IO pool is busy) is written here instead and its task skips
    /// it; one already running is waited for, so the newest save lands last.
    fn finish_writes(&mut self) {
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
            match run_write(&job, &WriteTicket::default(), may_replace) {
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
    fn queue_write(&mut self, job: WriteJob) {
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
    fn start_next_write(&mut self) {
        if self.in_flight.is_some() {
            return;
        }
        let Some(index) = self
            .queue
            .iter()
            .position(|job| !self.reads.contains_key(&job.path))
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
        let sender = self.sender.clone();
        IoTaskPool::get()
            .spawn(async move {
                let result = run_write(&job, &ticket, may_replace);
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

    fn autosave_job(
        &mut self,
        dialogue: &mut Dialogue,
        settings: &SaveSettings,
    ) -> Option<WriteJob> {
        let path = settings.autosave.clone()?;
        Some(WriteJob {
            path,
            save: self.snapshot(dialogue),
            autosave: true,
            max_bytes: settings.max_file_bytes,
        })
    }
}

pub(crate) fn plugin(app: &mut App, settings: SaveSettings) {
    app.insert_resource(settings)
        .init_resource::<SaveState>()
        .register_type::<SaveGame>()
        .add_message::<SaveMemory>()
        .add_message::<LoadMemory>()
        .add_message::<ResumeAutosave>()
        .add_message::<ImportUnitySave>()
        .add_message::<MemorySaved>()
        .add_message::<MemorySaveFailed>()
        .add_message::<MemoryLoaded>()
        .add_message::<MemoryLoadFailed>();
}

/// The messages that ask for saves, loads and imports.
#[derive(SystemParam)]
pub(crate) struct SaveRequests<'w, 's> {
    saves: MessageReader<'w, 's, SaveMemory>,
    loads: MessageReader<'w, 's, LoadMemory>,
    resumes: MessageReader<'w, 's, ResumeAutosave>,
    imports: MessageReader<'w, 's, ImportUnitySave>,
}

pub(crate) fn take_save_requests(
    mut dialogue: Dialogue,
    mut state: ResMut<SaveState>,
    settings: Res<SaveSettings>,
    mut requests: SaveRequests,
) {
    let max_bytes = settings.max_file_bytes;
    for SaveMemory { path } in requests.saves.read() {
        let save = state.snapshot(&mut dialogue);
        state.queue_write(WriteJob {
            path: path.clone(),
            save,
            autosave: false,
            max_bytes,
        });
    }
    for ResumeAutosave { path } in requests.resumes.read() {
        state.resume(path);
        if settings.autosave.as_ref() == Some(path)
            && state.autosave_may_write(path)
            && let Some(job) = state.autosave_job(&mut dialogue, &settings)
        {
            state.queue_write(job);
        }
    }
    for LoadMemory { path } in requests.loads.read() {
        state.begin_read(path);
        let (path, sender) = (path.clone(), state.sender.clone());
        IoTaskPool::get()
            .spawn(async move {
                let result = load_slot(&path, max_bytes).map(Box::new);
                let _ = sender.send(IoDone::Loaded { path, result });
            })
            .detach();
    }
    for ImportUnitySave { path, npc } in requests.imports.read() {
        state.begin_read(path);
        let (persona, config) = match dialogue.layers().parts(npc) {
            Some(parts) => (parts.persona, parts.config),
            None => (
                PersonaPrompt {
                    name: npc.to_string(),
                    text: "".into(),
                    style: Default::default(),
                },
                dialogue.default_memory().clone(),
            ),
        };
        let (path, npc, sender) = (path.clone(), npc.clone(), state.sender.clone());
        IoTaskPool::get()
            .spawn(async move {
                let result = read_bounded(&path, max_bytes).and_then(|(_, bytes)| {
                    let text = std::str::from_utf8(&bytes).map_err(|e| LoadError::NotText {
                        offset: e.valid_up_to(),
                    })?;
                    import_unity_save(text, persona, config).map(Box::new)
                });
                let _ = sender.send(IoDone::Imported { path, npc, result });
            })
            .detach();
    }
}

/// Loads the autosave slot at startup, if there is one to load. Until its result
/// arrives, autosave waits and no write touches the slot.
pub(crate) fn load_autosave_slot(
    settings: Res<SaveSettings>,
    mut loads: MessageWriter<LoadMemory>,
) {
    // A slot that cannot even be checked is loaded too: its failure pauses autosave.
    let there = |path: &Path| path.try_exists().unwrap_or(true);
    if let Some(path) = &settings.autosave
        && (there(path) || there(&backup_path(path)))
    {
        loads.write(LoadMemory { path: path.clone() });
    }
}

/// After every change, one snapshot per frame goes to the autosave slot. Paused
/// while a load is in flight, so a slot is never overwritten before it is read,
/// and for a slot whose load failed.
pub(crate) fn autosave(
    mut dialogue: Dialogue,
    mut state: ResMut<SaveState>,
    settings: Res<SaveSettings>,
) {
    let Some(path) = &settings.autosave else {
        return;
    };
    if !state.autosave_may_write(path) || !dialogue.layers().has_changes() {
        return;
    }
    if let Some(job) = state.autosave_job(&mut dialogue, &settings) {
        state.queue_write(job);
    }
}

/// The messages save and load outcomes are written as.
#[derive(SystemParam)]
pub(crate) struct SaveOutbox<'w> {
    saved: MessageWriter<'w, MemorySaved>,
    save_failed: MessageWriter<'w, MemorySaveFailed>,
    loaded: MessageWriter<'w, MemoryLoaded>,
    load_failed: MessageWriter<'w, MemoryLoadFailed>,
}

pub(crate) fn finish_io(
    mut dialogue: Dialogue,
    mut state: ResMut<SaveState>,
    mut settings: ResMut<SaveSettings>,
    personas: Res<Assets<Persona>>,
    mut out: SaveOutbox,
) {
    while let Ok(done) = state.receiver.try_recv() {
        match done {
            IoDone::Saved {
                id,
                path,
                npcs,
                autosave,
                result,
            } => {
                // A write the exit flush took over reports nothing.
                if state.in_flight.as_ref().is_none_or(|f| f.id != id) {
                    continue;
                }
                state.in_flight = None;
                saved(&mut state, &mut out, path, npcs, autosave, result);
            }
            IoDone::Loaded { path, result } => {
                state.end_read(&path);
                match result {
                    Ok(recovered) => {
                        let Recovered {
                            read,
                            save,
                            recovered_from,
                        } = *recovered;
                        state.resume(&path);
                        // Snapshots of the memory this load replaces must not land
                        // on the file just read.
                        state
                            .queue
                            .retain(|job| !(job.autosave && job.path == path));
                        let npcs = replace_memory(&mut dialogue, &mut state, save, &personas);
                        if let Some(from) = &recovered_from {
                            tracing::warn!("restored {} from its backup: {from}", read.display());
                        }
                        if settings.autosave.is_some() {
                            settings.autosave = Some(path);
                        }
                        out.loaded.write(MemoryLoaded {
                            path: read,
                            npcs,
                            recovered_from,
                        });
                    }
                    Err(failed) => {
                        let NotRecovered {
                            error,
                            moved_to,
                            backup,
                        } = *failed;
                        let autosave_paused = error != LoadError::NotFound || backup.is_some();
                        if autosave_paused {
                            state.pause(&path);
                        }
                        let failure = MemoryLoadFailed {
                            path,
                            error,
                            moved_to,
                            backup,
                            autosave_paused,
                        };
                        tracing::error!("{failure}");
                        out.load_failed.write(failure);
                    }
                }
            }
            IoDone::Imported { path, npc, result } => {
                state.end_read(&path);
                let memory = result.and_then(|parts| {
                    parts
                        .into_memory()
                        .map_err(|invalid| LoadError::Inconsistent(invalid.to_string()))
                });
                match memory {
                    Ok(memory) => {
                        dialogue.layers().insert(npc.clone(), memory);
                        out.loaded.write(MemoryLoaded {
                            path,
                            npcs: vec![npc],
                            recovered_from: None,
                        });
                    }
                    Err(error) => {
                        out.load_failed.write(MemoryLoadFailed {
                            path,
                            error,
                            moved_to: None,
                            backup: None,
                            autosave_paused: false,
                        });
                    }
                }
            }
        }
    }
    state.start_next_write();
}

/// Reports a finished write and learns from it which files autosave may replace.
fn saved(
    state: &mut SaveState,
    out: &mut SaveOutbox,
    path: PathBuf,
    npcs: usize,
    autosave: bool,
    result: Result<Option<usize>, SaveError>,
) {
    match result {
        Ok(Some(bytes)) => {
            if autosave {
                state.trusted.insert(path.clone());
            } else {
                state.resume(&path);
            }
            out.saved.write(MemorySaved {
                path,
                npcs,
                bytes,
                autosave,
            });
        }
        // A task skips only when the exit flush took its write over; its id no longer
        // matches, so this is not reached.
        Ok(None) => {}
        Err(error) => {
            if error == SaveError::Unread {
                state.pause(&path);
            }
            let failure = MemorySaveFailed { path, error };
            tracing::error!("{failure}");
            out.save_failed.write(failure);
        }
    }
}

/// When the app exits, the last changes are saved and writes in flight finish
/// before it closes, so quitting never loses the final lines. This is the one place
/// the main thread waits on disk, and only on the way out.
pub(crate) fn flush_on_exit(
    mut exits: MessageReader<AppExit>,
    mut dialogue: Dialogue,
    mut state: ResMut<SaveState>,
    settings: Res<SaveSettings>,
) {
    if exits.read().next().is_none() {
        return;
    }
    if let Some(path) = &settings.autosave
        && state.autosave_may_write(path)
        && dialogue.layers().has_changes()
        && let Some(job) = state.autosave_job(&mut dialogue, &settings)
    {
        state.queue_write(job);
    }
    state.finish_writes();
}

/// Swaps every NPC's memory for a save's; returns the NPCs it held.
fn replace_memory(
    dialogue: &mut Dialogue,
    state: &mut SaveState,
    save: SaveGame,
    personas: &Assets<Persona>,
) -> Vec<NpcId> {
    dialogue.cancel_all();
    let layers = dialogue.layers();
    layers.remove_all();
    state.snapshot.clear();
    let mut ids = Vec::with_capacity(save.npcs.len());
    let mut waiting = Vec::new();
    for npc in save.npcs {
        // Checked when the file was read, so this cannot fail.
        if let Ok(memory) = npc.memory.clone().into_memory() {
            layers.insert(npc.id.clone(), memory);
            ids.push(npc.id.clone());
            if !npc.queued.is_empty() {
                waiting.push((npc.id.clone(), npc.queued.clone()));
            }
            state.snapshot.insert(npc.id.clone(), npc);
        }
    }
    // Just loaded, so nothing needs saving yet; a live persona that differs from the
    // saved one marks its NPC changed again below.
    layers.take_changed();
    dialogue.reapply_personas(personas);
    for (npc, lines) in waiting {
        dialogue.requeue(&npc, lines);
    }
    ids
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
        assert_eq!(run_write(&stale, &ticket, true), Ok(None), "the task skips");
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
        assert_eq!(run_write(&pending, &ticket, true), Ok(None));
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
            run_write(&first, &ticket, false),
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
