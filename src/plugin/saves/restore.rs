//! The memory resource a game's own save system reads and writes: kept current
//! after every change, and restored when a new one is put in. Loads and restores
//! are built off the main thread and swapped in here when ready.

use std::sync::Arc;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy::tasks::IoTaskPool;

use crate::plugin::rebuild::LoadSource;
use crate::save::{LoadError, load_slot};

use super::messages::{
    LoadMemory, MemoryLoadFailed, MemoryLoaded, MemoryRestoreFailed, MemoryRestored, SaveSettings,
};
use super::snapshot::NpcMemorySnapshot;
use super::sources::SaveSources;
use super::state::{IoDone, SaveState};
use super::systems::replace_memory;

/// A `LoadMemory` starts a load at the start of the frame, before this frame's
/// lines are taken, so they wait for the loaded memory. The file is read on the IO
/// pool; `finish_io` starts building its memory.
pub(crate) fn take_loads(
    mut loads: MessageReader<LoadMemory>,
    mut sources: SaveSources,
    mut state: ResMut<SaveState>,
    settings: Res<SaveSettings>,
) {
    let max_bytes = settings.max_file_bytes;
    // Autosave appends to the journal the load reads, so it keeps what it holds.
    let keep_journal = settings.autosave.is_some();
    for LoadMemory { path } in loads.read() {
        // From now on lines wait for the loaded memory; a newer load wins.
        let generation = sources.loads.begin(Some(path));
        state.loading = true;
        state.begin_read(path);
        // An autosave of the memory being replaced, not yet started, must not land
        // on the file after it is read.
        state.cancel_autosave_to(path);
        let (path, sender) = (path.clone(), state.sender.clone());
        let journals = state.journals.clone();
        IoTaskPool::get()
            .spawn(async move {
                // Snapshot read, journal replayed (or the backup read) here, on
                // the IO pool; the memory is then built on the async compute pool.
                let result = load_slot(&path, max_bytes, &journals, keep_journal).map(Box::new);
                let _ = sender.send(IoDone::Loaded {
                    generation,
                    path,
                    result,
                });
            })
            .detach();
    }
}

/// A snapshot the game put in starts replacing every NPC's memory: the memory is
/// built off the main thread, and from now on lines wait for it, so none of them is
/// answered from the memory being replaced. A newer load or restore wins over it.
pub(crate) fn restore_snapshot(
    mut snapshot: ResMut<NpcMemorySnapshot>,
    mut sources: SaveSources,
    mut state: ResMut<SaveState>,
    mut failed: MessageWriter<MemoryRestoreFailed>,
) {
    // Only a snapshot the game put in has anything to do; the plugin's own writes
    // leave nothing pending, so this costs one comparison on most frames.
    if !snapshot.is_changed() {
        return;
    }
    match snapshot.bypass_change_detection().take_arrival() {
        None => {}
        Some(Ok(save)) => {
            let loads = &mut sources.loads;
            let generation = loads.begin(None);
            loads.taken_snapshot = Some(save.clone());
            loads.build(generation, LoadSource::Snapshot, save);
            state.loading = true;
        }
        Some(Err(error)) => {
            let failure = MemoryRestoreFailed { error };
            tracing::error!("{failure}");
            failed.write(failure);
        }
    }
}

/// The messages a finished (or replaced) load or restore is reported with.
#[derive(SystemParam)]
pub(crate) struct LoadOutbox<'w> {
    loaded: MessageWriter<'w, MemoryLoaded>,
    load_failed: MessageWriter<'w, MemoryLoadFailed>,
    restored: MessageWriter<'w, MemoryRestored>,
    restore_failed: MessageWriter<'w, MemoryRestoreFailed>,
}

/// Swaps in a load's or restore's memory once it is built, before this frame's
/// lines are taken; the lines held meanwhile are handed over to the turn
/// pipeline. Also reports loads a newer one replaced.
pub(crate) fn finish_loads(
    mut sources: SaveSources,
    mut state: ResMut<SaveState>,
    mut settings: ResMut<SaveSettings>,
    mut snapshot: ResMut<NpcMemorySnapshot>,
    mut out: LoadOutbox,
) {
    for source in std::mem::take(&mut sources.loads.superseded) {
        match source {
            LoadSource::File { path, .. } => {
                // Its read recorded what the slot holds; only autosave's slot
                // needs that, and it is a copy of a save nobody uses.
                if settings.autosave.as_ref() != Some(&path) {
                    state.forget_journal(path.clone());
                }
                out.load_failed.write(MemoryLoadFailed {
                    path,
                    error: LoadError::Superseded,
                    moved_to: None,
                    backup: None,
                    autosave_paused: false,
                });
            }
            LoadSource::Snapshot => {
                out.restore_failed.write(MemoryRestoreFailed {
                    error: LoadError::Superseded,
                });
            }
        }
    }
    let Some((pending, built)) = sources.loads.poll() else {
        return;
    };
    // The resource shows the loaded memory from now on (unless the game put another
    // snapshot in meanwhile); the one it held is freed off the main thread.
    let stale = snapshot.arrived().is_none_or(|arrived| {
        Arc::ptr_eq(arrived, &pending.save)
            || sources
                .loads
                .taken_snapshot
                .as_ref()
                .is_some_and(|taken| Arc::ptr_eq(taken, arrived))
    });
    if stale {
        let old = std::mem::take(snapshot.bypass_change_detection());
        bevy::tasks::AsyncComputeTaskPool::get()
            .spawn(async move { drop(old) })
            .detach();
        snapshot
            .bypass_change_detection()
            .set_current(pending.save.clone());
    }
    let npcs = replace_memory(&mut sources, &mut state, &pending.save, built);
    match pending.source {
        LoadSource::File {
            path,
            read,
            recovered_from,
            journal,
        } => {
            state.resume(&path);
            // Snapshots of the memory this load replaces must not land on the file
            // just read.
            state
                .queue
                .retain(|job| !(job.autosave && job.path == path));
            if let Some(from) = &recovered_from {
                tracing::warn!("restored {} from its backup: {from}", read.display());
            }
            if let Some(report) = &journal {
                tracing::warn!("loaded {}, but {report}", read.display());
            }
            if let Some(autosave) = &mut settings.autosave {
                let old = std::mem::replace(autosave, path);
                if old != *autosave {
                    // The old slot's journal holds a copy of the memory this load
                    // replaced; autosave no longer appends to it.
                    state.forget_journal(old);
                }
            }
            out.loaded.write(MemoryLoaded {
                path: read,
                npcs,
                recovered_from,
                journal,
            });
        }
        LoadSource::Snapshot => {
            out.restored.write(MemoryRestored { npcs });
        }
    }
    sources.end_load(pending.generation, true);
    state.loading = sources.loads.is_loading();
}

/// After any change (a line, a reply, a summary, a file load), the resource holds
/// the memory in use, and every frame the clock. Nothing is taken apart when
/// nothing changed, and a change takes apart only the NPCs it touched.
pub(crate) fn keep_snapshot_current(
    mut snapshot: ResMut<NpcMemorySnapshot>,
    mut sources: SaveSources,
    mut state: ResMut<SaveState>,
) {
    // One put in after this frame's restore ran is restored next frame, and one
    // being restored shows what is about to be in use: neither is written over.
    // One a newer load replaced shows the memory in use again.
    if let Some(arrived) = snapshot.arrived() {
        let loads = &mut sources.loads;
        let taken = loads
            .taken_snapshot
            .as_ref()
            .is_some_and(|taken| Arc::ptr_eq(taken, arrived));
        let restoring = loads
            .building
            .as_ref()
            .is_some_and(|building| Arc::ptr_eq(&building.save, arrived));
        if !taken || restoring {
            return;
        }
    }
    let memory = state.memory(&mut sources);
    let snapshot = snapshot.bypass_change_detection();
    if !snapshot.holds(&memory) {
        snapshot.set_current(memory);
    }
    snapshot.set_clock(sources.clock.seconds());
}
