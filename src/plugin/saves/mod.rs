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

mod messages;
mod restore;
mod snapshot;
mod sources;
mod state;
mod systems;

use bevy::prelude::*;

use crate::plugin::sets::{LoadStep, PersistStep};
use crate::save::SaveGame;

use restore::{finish_loads, keep_snapshot_current, restore_snapshot, take_loads};
use systems::{autosave, finish_io, flush_on_exit, load_autosave_slot, take_save_requests};

pub use messages::{
    ImportUnitySave, LoadMemory, MemoryLoadFailed, MemoryLoaded, MemoryRestoreFailed,
    MemoryRestored, MemorySaveFailed, MemorySaved, ResumeAutosave, SaveMemory, SaveSettings,
};
pub use snapshot::NpcMemorySnapshot;

use state::SaveState;

pub(crate) fn plugin(app: &mut App, settings: SaveSettings) {
    app.insert_resource(settings)
        .init_resource::<SaveState>()
        .init_resource::<NpcMemorySnapshot>()
        .register_type::<NpcMemorySnapshot>()
        .register_type::<SaveGame>()
        .register_type::<SaveSettings>()
        .register_type::<SaveMemory>()
        .register_type::<LoadMemory>()
        .register_type::<ResumeAutosave>()
        .register_type::<ImportUnitySave>()
        .add_message::<SaveMemory>()
        .add_message::<LoadMemory>()
        .add_message::<ResumeAutosave>()
        .add_message::<ImportUnitySave>()
        .add_message::<MemorySaved>()
        .add_message::<MemorySaveFailed>()
        .add_message::<MemoryLoaded>()
        .add_message::<MemoryLoadFailed>()
        .add_message::<MemoryRestored>()
        .add_message::<MemoryRestoreFailed>()
        .add_systems(Startup, load_autosave_slot)
        .add_systems(
            Update,
            (
                (restore_snapshot, take_loads, finish_loads)
                    .chain()
                    .in_set(LoadStep::Swap),
                (take_save_requests, autosave, finish_io)
                    .chain()
                    .in_set(PersistStep::Io),
                keep_snapshot_current.in_set(PersistStep::Snapshot),
            ),
        )
        .add_systems(Last, flush_on_exit);
}
