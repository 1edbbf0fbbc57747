//! The save systems: requests in, IO tasks out, outcomes back.

use std::path::{Path, PathBuf};

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy::tasks::IoTaskPool;

use std::sync::Arc;

use crate::memory::{NpcId, PersonaPrompt};
use crate::plugin::rebuild::{Built, Handover, LoadSource};
use crate::save::{
    LoadError, NotRecovered, Recovered, SaveError, SaveGame, backup_path, import_unity_save,
    read_bounded,
};

use super::messages::{
    ImportUnitySave, LoadMemory, MemoryLoadFailed, MemoryLoaded, MemorySaveFailed, MemorySaved,
    ResumeAutosave, SaveMemory, SaveSettings,
};
use super::sources::SaveSources;
use super::state::{IoDone, SaveState, WriteJob};

/// The messages that ask for saves and imports (loads: `take_loads`).
#[derive(SystemParam)]
pub(crate) struct SaveRequests<'w, 's> {
    saves: MessageReader<'w, 's, SaveMemory>,
    resumes: MessageReader<'w, 's, ResumeAutosave>,
    imports: MessageReader<'w, 's, ImportUnitySave>,
}

pub(crate) fn take_save_requests(
    mut sources: SaveSources,
    mut state: ResMut<SaveState>,
    settings: Res<SaveSettings>,
    mut requests: SaveRequests,
) {
    let max_bytes = settings.max_file_bytes;
    for SaveMemory { path } in requests.saves.read() {
        let save = state.snapshot(&mut sources);
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
            && let Some(job) = state.autosave_job(&mut sources, &settings)
        {
            state.queue_write(job);
        }
    }
    for ImportUnitySave { path, npc } in requests.imports.read() {
        state.begin_read(path);
        let (persona, config) = match sources.layers.parts(npc) {
            Some(parts) => (parts.persona, parts.config),
            None => (
                PersonaPrompt {
                    name: npc.to_string(),
                    text: "".into(),
                    style: Default::default(),
                },
                sources.default_memory().clone(),
            ),
        };
        let (path, npc, sender) = (path.clone(), npc.clone(), state.sender.clone());
        IoTaskPool::get()
            .spawn(async move {
                let result = read_bounded(&path, max_bytes).and_then(|(_, bytes)| {
                    let text = std::str::from_utf8(&bytes).map_err(|e| LoadError::NotText {
                        offset: e.valid_up_to(),
                    })?;
                    // Built here, recall index and all, not on the main thread.
                    import_unity_save(text, persona, config).and_then(|parts| {
                        parts
                            .into_memory()
                            .map(Box::new)
                            .map_err(|invalid| LoadError::Inconsistent(invalid.to_string()))
                    })
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
    mut sources: SaveSources,
    mut state: ResMut<SaveState>,
    settings: Res<SaveSettings>,
) {
    let Some(path) = &settings.autosave else {
        return;
    };
    state.refresh(&mut sources);
    if !state.autosave_may_write(path) || !state.autosave_due {
        return;
    }
    if let Some(job) = state.autosave_job(&mut sources, &settings) {
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
    mut sources: SaveSources,
    mut state: ResMut<SaveState>,
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
            IoDone::Loaded {
                generation,
                path,
                result,
            } => {
                state.end_read(&path);
                // A newer load was asked for meanwhile: it wins, this one is dropped.
                if !sources.loads.is_newest(generation) {
                    sources.loads.replaced(LoadSource::File {
                        read: path.clone(),
                        path,
                        recovered_from: None,
                        journal: None,
                    });
                    continue;
                }
                match result {
                    Ok(recovered) => {
                        let Recovered {
                            read,
                            save,
                            recovered_from,
                            // Recorded by `load_slot` under the path lock.
                            journal: _,
                            journal_report,
                        } = *recovered;
                        // Every NPC's memory is built off the main thread;
                        // `finish_loads` swaps it in when it is ready.
                        let source = LoadSource::File {
                            path,
                            read,
                            recovered_from,
                            journal: journal_report,
                        };
                        sources.loads.build(generation, source, Arc::new(save));
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
                        // The memory in use stays, and answers the lines held.
                        sources.end_load(generation, false);
                    }
                }
            }
            IoDone::Imported { path, npc, result } => {
                state.end_read(&path);
                match result {
                    Ok(memory) => {
                        sources.layers.insert(npc.clone(), *memory);
                        sources.loads.imported(npc.clone());
                        out.loaded.write(MemoryLoaded {
                            path,
                            npcs: vec![npc],
                            recovered_from: None,
                            journal: None,
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
    state.loading = sources.loads.is_loading();
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
        // A task skips when the exit flush took its write over (its id no longer
        // matches, so this is not reached) or a load of its file cancelled it.
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
    mut sources: SaveSources,
    mut state: ResMut<SaveState>,
    settings: Res<SaveSettings>,
) {
    if exits.read().next().is_none() {
        return;
    }
    state.refresh(&mut sources);
    if let Some(path) = &settings.autosave
        && state.autosave_may_write(path)
        && state.autosave_due
        && let Some(job) = state.autosave_job(&mut sources, &settings)
    {
        state.queue_write(job);
    }
    state.finish_writes();
}

/// Swaps every NPC's memory for a save's, `built` from it off the main thread;
/// returns the NPCs it held. The memory replaced is dropped off the main thread too.
/// What this means for turns (requests, waiting lines, personas) is handed over.
pub(super) fn replace_memory(
    sources: &mut SaveSources,
    state: &mut SaveState,
    save: &SaveGame,
    built: Built,
) -> Vec<NpcId> {
    let Built {
        memories,
        told_lore,
    } = built;
    // Time continues from the save: new lines come after every saved one. A clock
    // the game drives keeps the game's time; each log's own order is still kept,
    // since the core never stamps a line before the newest one in its log.
    let newest = save.newest_stamp();
    sources.clock.restore(save.clock, newest);
    let replaced = (sources.layers.take_all(), state.replaced_by(save));
    bevy::tasks::AsyncComputeTaskPool::get()
        .spawn(async move { drop(replaced) })
        .detach();
    // The saved lore changes win over the files, as the player left the world.
    sources.lore.restore(&save.lore);
    state.lore_revision = sources.lore.revision();
    let layers = &mut sources.layers;
    let mut ids = Vec::with_capacity(memories.len());
    for (npc, memory) in memories {
        layers.insert(npc.clone(), memory);
        ids.push(npc);
    }
    let waiting: Vec<_> = save
        .npcs
        .iter()
        .filter(|npc| !npc.queued.is_empty() && layers.contains(&npc.id))
        .map(|npc| (npc.id.clone(), npc.waiting_lines()))
        .collect();
    sources
        .loads
        .hand_over(Handover::Replaced { told_lore, waiting });
    ids
}
