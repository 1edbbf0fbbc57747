//! Saving and loading through the plugin: messages, autosave, and the IO tasks.
//!
//! The main thread only takes a snapshot, which shares every unchanged NPC with
//! the previous one. Encoding and writing run on Bevy's IO task pool.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy::tasks::IoTaskPool;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::conversation::Pipeline;
use super::persona::Persona;
use crate::memory::{MemoryParts, NpcId, PersonaParts};
use crate::save::{LoadError, NpcSave, SaveGame, import_unity_save, move_aside, read_bounded};

/// Save every NPC's memory to a file (`.ron` for RON, anything else JSON).
#[derive(Message, Clone, Debug, PartialEq)]
pub struct SaveMemory {
    /// Where to write.
    pub path: PathBuf,
}

/// Replace every NPC's memory with a save's. Requests in flight are cancelled. With
/// autosave on, the loaded file becomes the autosave slot.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct LoadMemory {
    /// What to read. If it is missing, its `.bak` is read instead.
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

/// A save could not be written. The memory in use is untouched.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct MemorySaveFailed {
    /// Where it should have gone.
    pub path: PathBuf,
    /// Why it failed.
    pub reason: String,
}

/// A save (or a Unity import) was loaded.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct MemoryLoaded {
    /// The file actually read: the one asked for, or its `.bak` if it was missing.
    pub path: PathBuf,
    /// The NPCs whose memory it set.
    pub npcs: Vec<NpcId>,
}

/// A save could not be loaded. The memory in use is untouched, and an unreadable
/// file has been moved aside so no autosave overwrites it.
#[derive(Message, Clone, Debug, PartialEq)]
pub struct MemoryLoadFailed {
    /// The file asked for.
    pub path: PathBuf,
    /// What was wrong.
    pub error: LoadError,
    /// Where the unreadable file now is.
    pub moved_to: Option<PathBuf>,
}

impl std::fmt::Display for MemoryLoadFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "could not load {}: {}", self.path.display(), self.error)?;
        if let Some(moved) = &self.moved_to {
            write!(f, " (moved aside to {})", moved.display())?;
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
    /// save it has not read.
    pub autosave: Option<PathBuf>,
    /// Larger files are refused unread.
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
        path: PathBuf,
        npcs: usize,
        autosave: bool,
        result: Result<usize, String>,
    },
    Loaded {
        path: PathBuf,
        result: Result<(PathBuf, Box<SaveGame>), (LoadError, Option<PathBuf>)>,
    },
    Imported {
        path: PathBuf,
        npc: NpcId,
        result: Result<Box<MemoryParts>, (LoadError, Option<PathBuf>)>,
    },
}

struct WriteJob {
    path: PathBuf,
    save: Arc<SaveGame>,
    autosave: bool,
}

/// Snapshots, queued writes and IO in flight.
#[derive(Resource)]
pub(crate) struct SaveState {
    snapshot: HashMap<NpcId, Arc<NpcSave>>,
    queue: VecDeque<WriteJob>,
    writing: bool,
    reads_in_flight: usize,
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
            writing: false,
            reads_in_flight: 0,
            sender,
            receiver,
        }
    }
}

impl SaveState {
    /// A save of every NPC. Only NPCs changed since the last snapshot are taken
    /// apart again; the rest are shared with it.
    fn snapshot(&mut self, pipeline: &mut Pipeline) -> Arc<SaveGame> {
        let layers = pipeline.layers();
        for npc in layers.take_changed() {
            match layers.parts(&npc) {
                Some(memory) => self
                    .snapshot
                    .insert(npc.clone(), Arc::new(NpcSave { id: npc, memory })),
                None => self.snapshot.remove(&npc),
            };
        }
        Arc::new(SaveGame::new(self.snapshot.values().cloned().collect()))
    }

    /// Waits (at most 10 s) for the write in flight, then writes what is queued,
    /// blocking: the game is closing, and the last changes must reach the disk.
    fn finish_writes(&mut self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.writing && std::time::Instant::now() < deadline {
            match self.receiver.try_recv() {
                Ok(IoDone::Saved { .. }) => self.writing = false,
                Ok(_) => {}
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
            }
        }
        while let Some(WriteJob { path, save, .. }) = self.queue.pop_front() {
            if let Err(reason) = save.write_to(&path) {
                tracing::error!("could not save {} on exit: {reason}", path.display());
            }
        }
    }

    /// Queues a write; a newer save for the same file replaces one still waiting.
    fn queue_write(&mut self, job: WriteJob) {
        self.queue.retain(|waiting| waiting.path != job.path);
        self.queue.push_back(job);
    }
}

pub(crate) fn plugin(app: &mut App, settings: SaveSettings) {
    app.insert_resource(settings)
        .init_resource::<SaveState>()
        .register_type::<SaveGame>()
        .add_message::<SaveMemory>()
        .add_message::<LoadMemory>()
        .add_message::<ImportUnitySave>()
        .add_message::<MemorySaved>()
        .add_message::<MemorySaveFailed>()
        .add_message::<MemoryLoaded>()
        .add_message::<MemoryLoadFailed>();
}

pub(crate) fn take_save_requests(
    mut pipeline: Pipeline,
    mut state: ResMut<SaveState>,
    settings: Res<SaveSettings>,
    mut saves: MessageReader<SaveMemory>,
    mut loads: MessageReader<LoadMemory>,
    mut imports: MessageReader<ImportUnitySave>,
) {
    for SaveMemory { path } in saves.read() {
        let save = state.snapshot(&mut pipeline);
        state.queue_write(WriteJob {
            path: path.clone(),
            save,
            autosave: false,
        });
    }
    let max_bytes = settings.max_file_bytes;
    for LoadMemory { path } in loads.read() {
        state.reads_in_flight += 1;
        let (path, sender) = (path.clone(), state.sender.clone());
        IoTaskPool::get()
            .spawn(async move {
                let result = SaveGame::read_from(&path, max_bytes)
                    .map(|(read, save)| (read, Box::new(save)))
                    .map_err(|error| aside(&path, error));
                let _ = sender.send(IoDone::Loaded { path, result });
            })
            .detach();
    }
    for ImportUnitySave { path, npc } in imports.read() {
        state.reads_in_flight += 1;
        let (persona, config) = match pipeline.layers().parts(npc) {
            Some(parts) => (parts.persona, parts.config),
            None => (
                PersonaParts {
                    name: npc.to_string(),
                    text: "".into(),
                    style: Default::default(),
                },
                pipeline.default_memory().clone(),
            ),
        };
        let (path, npc, sender) = (path.clone(), npc.clone(), state.sender.clone());
        IoTaskPool::get()
            .spawn(async move {
                let result = read_bounded(&path, max_bytes)
                    .and_then(|(_, bytes)| {
                        let text = std::str::from_utf8(&bytes).map_err(|e| LoadError::NotText {
                            offset: e.valid_up_to(),
                        })?;
                        import_unity_save(text, persona, config).map(Box::new)
                    })
                    .map_err(|error| (error, None));
                let _ = sender.send(IoDone::Imported { path, npc, result });
            })
            .detach();
    }
}

/// Loads the autosave slot at startup, if there is one to load.
pub(crate) fn load_autosave_slot(
    settings: Res<SaveSettings>,
    mut loads: MessageWriter<LoadMemory>,
) {
    if let Some(path) = &settings.autosave
        && (path.exists() || crate::save::backup_path(path).exists())
    {
        loads.write(LoadMemory { path: path.clone() });
    }
}

/// A file that exists but cannot be used is moved aside before anyone can write over it.
fn aside(path: &std::path::Path, error: LoadError) -> (LoadError, Option<PathBuf>) {
    let moved = match error {
        LoadError::NotFound | LoadError::Io(_) => None,
        _ => move_aside(path),
    };
    (error, moved)
}

/// After every change, one snapshot per frame goes to the autosave slot. Paused
/// while a load is in flight, so a slot is never overwritten before it is read.
pub(crate) fn autosave(
    mut pipeline: Pipeline,
    mut state: ResMut<SaveState>,
    settings: Res<SaveSettings>,
) {
    let Some(path) = &settings.autosave else {
        return;
    };
    if state.reads_in_flight > 0 || !pipeline.layers().has_changes() {
        return;
    }
    let save = state.snapshot(&mut pipeline);
    state.queue_write(WriteJob {
        path: path.clone(),
        save,
        autosave: true,
    });
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
    mut pipeline: Pipeline,
    mut state: ResMut<SaveState>,
    mut settings: ResMut<SaveSettings>,
    personas: Res<Assets<Persona>>,
    mut out: SaveOutbox,
) {
    let SaveOutbox {
        saved,
        save_failed,
        loaded,
        load_failed,
    } = &mut out;
    while let Ok(done) = state.receiver.try_recv() {
        match done {
            IoDone::Saved {
                path,
                npcs,
                autosave,
                result,
            } => {
                state.writing = false;
                match result {
                    Ok(bytes) => {
                        saved.write(MemorySaved {
                            path,
                            npcs,
                            bytes,
                            autosave,
                        });
                    }
                    Err(reason) => {
                        tracing::error!("could not save {}: {reason}", path.display());
                        save_failed.write(MemorySaveFailed { path, reason });
                    }
                }
            }
            IoDone::Loaded { path, result } => {
                state.reads_in_flight -= 1;
                match result {
                    Ok((read, save)) => {
                        let npcs = replace_memory(&mut pipeline, &mut state, *save, &personas);
                        if settings.autosave.is_some() {
                            settings.autosave = Some(path);
                        }
                        loaded.write(MemoryLoaded { path: read, npcs });
                    }
                    Err((error, moved_to)) => {
                        let failure = MemoryLoadFailed {
                            path,
                            error,
                            moved_to,
                        };
                        tracing::error!("{failure}");
                        load_failed.write(failure);
                    }
                }
            }
            IoDone::Imported { path, npc, result } => {
                state.reads_in_flight -= 1;
                match result.map(|parts| parts.into_memory()) {
                    Ok(Ok(memory)) => {
                        pipeline.layers().insert(npc.clone(), memory);
                        loaded.write(MemoryLoaded {
                            path,
                            npcs: vec![npc],
                        });
                    }
                    Ok(Err(why)) => {
                        load_failed.write(MemoryLoadFailed {
                            path,
                            error: LoadError::Inconsistent(why.to_string()),
                            moved_to: None,
                        });
                    }
                    Err((error, moved_to)) => {
                        load_failed.write(MemoryLoadFailed {
                            path,
                            error,
                            moved_to,
                        });
                    }
                }
            }
        }
    }
    if !state.writing
        && let Some(job) = state.queue.pop_front()
    {
        state.writing = true;
        let sender = state.sender.clone();
        IoTaskPool::get()
            .spawn(async move {
                let WriteJob {
                    path,
                    save,
                    autosave,
                } = job;
                let result = save.write_to(&path);
                let _ = sender.send(IoDone::Saved {
                    path,
                    npcs: save.npcs.len(),
                    autosave,
                    result,
                });
            })
            .detach();
    }
}

/// When the app exits, the last changes are saved and writes in flight finish
/// before it closes, so quitting never loses the final lines. This is the one place
/// the main thread waits on disk, and only on the way out.
pub(crate) fn flush_on_exit(
    mut exits: MessageReader<AppExit>,
    mut pipeline: Pipeline,
    mut state: ResMut<SaveState>,
    settings: Res<SaveSettings>,
) {
    if exits.read().next().is_none() {
        return;
    }
    if let Some(path) = &settings.autosave
        && state.reads_in_flight == 0
        && pipeline.layers().has_changes()
    {
        let save = state.snapshot(&mut pipeline);
        state.queue_write(WriteJob {
            path: path.clone(),
            save,
            autosave: true,
        });
    }
    state.finish_writes();
}

/// Swaps every NPC's memory for a save's; returns the NPCs it held.
fn replace_memory(
    pipeline: &mut Pipeline,
    state: &mut SaveState,
    save: SaveGame,
    personas: &Assets<Persona>,
) -> Vec<NpcId> {
    pipeline.cancel_all();
    let layers = pipeline.layers();
    layers.remove_all();
    state.snapshot.clear();
    let mut ids = Vec::with_capacity(save.npcs.len());
    for npc in save.npcs {
        // Checked when the file was read, so this cannot fail.
        if let Ok(memory) = npc.memory.clone().into_memory() {
            layers.insert(npc.id.clone(), memory);
            ids.push(npc.id.clone());
            state.snapshot.insert(npc.id.clone(), npc);
        }
    }
    // Just loaded, so nothing needs saving yet; a live persona that differs from the
    // saved one marks its NPC changed again below.
    layers.take_changed();
    pipeline.reapply_personas(personas);
    ids
}
