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

use crate::save::SaveGame;

pub use messages::{
    ImportUnitySave, LoadMemory, MemoryLoadFailed, MemoryLoaded, MemoryRestoreFailed,
    MemoryRestored, MemorySaveFailed, MemorySaved, ResumeAutosave, SaveMemory, SaveSettings,
};
pub(crate) use restore::{finish_loads, keep_snapshot_current, restore_snapshot, take_loads};
pub use snapshot::NpcMemorySnapshot;
pub(crate) use systems::{
    autosave, finish_io, flush_on_exit, load_autosave_slot, take_save_requests,
};

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
        .add_message::<MemoryRestoreFailed>();
}
