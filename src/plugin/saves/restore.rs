//! The memory resource a game's own save system reads and writes: kept current
//! after every change, and restored when a new one is put in.

use bevy::prelude::*;

use crate::plugin::dialogue::Dialogue;
use crate::plugin::persona::Persona;

use super::messages::{MemoryRestoreFailed, MemoryRestored};
use super::snapshot::NpcMemorySnapshot;
use super::state::SaveState;
use super::systems::replace_memory;

/// A snapshot the game put in replaces every NPC's memory, before this frame's
/// lines are taken, so none of them is answered from the memory being replaced.
pub(crate) fn restore_snapshot(
    mut snapshot: ResMut<NpcMemorySnapshot>,
    mut dialogue: Dialogue,
    mut state: ResMut<SaveState>,
    personas: Res<Assets<Persona>>,
    mut restored: MessageWriter<MemoryRestored>,
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
            let npcs = replace_memory(&mut dialogue, &mut state, &save, &personas);
            snapshot.bypass_change_detection().set_current(save);
            restored.write(MemoryRestored { npcs });
        }
        Some(Err(error)) => {
            let failure = MemoryRestoreFailed { error };
            tracing::error!("{failure}");
            failed.write(failure);
        }
    }
}

/// After any change (a line, a reply, a summary, a file load), the resource holds
/// the memory in use, and every frame the clock. Nothing is taken apart when
/// nothing changed, and a change takes apart only the NPCs it touched.
pub(crate) fn keep_snapshot_current(
    mut snapshot: ResMut<NpcMemorySnapshot>,
    mut dialogue: Dialogue,
    mut state: ResMut<SaveState>,
) {
    // One put in after this frame's restore ran is restored next frame, not
    // written over.
    if snapshot.is_pending() {
        return;
    }
    let memory = state.memory(&mut dialogue);
    let snapshot = snapshot.bypass_change_detection();
    if !snapshot.holds(&memory) {
        snapshot.set_current(memory);
    }
    snapshot.set_clock(dialogue.clock().seconds());
}
