//! Lore in the plugin: `*.lore.ron` assets with hot reload, the [`NpcLore`]
//! resource every NPC reads, and the messages that change lore while the game runs.

mod file;
mod messages;
mod resource;

use bevy::asset::AssetLoadFailedEvent;
use bevy::prelude::*;

pub use file::{LoreFile, LoreFileError, LoreFileLoader};
pub use messages::{AddLore, RemoveLore, UpdateLore};
pub use resource::NpcLore;

use super::persona::PersonaChange;
use super::sets::{IntakeStep, LoadStep, NpcMemorySystems};

pub(crate) fn plugin(app: &mut App, files: Vec<String>) {
    app.init_resource::<NpcLore>()
        .init_asset::<LoreFile>()
        .register_asset_reflect::<LoreFile>()
        .register_asset_loader(LoreFileLoader)
        .add_message::<AddLore>()
        .add_message::<UpdateLore>()
        .add_message::<RemoveLore>()
        .register_type::<AddLore>()
        .register_type::<UpdateLore>()
        .register_type::<RemoveLore>()
        .add_systems(
            Startup,
            move |server: Res<AssetServer>, mut lore: ResMut<NpcLore>| {
                for path in &files {
                    lore.handles.push(server.load(path.clone()));
                }
            },
        )
        .add_systems(
            Update,
            (
                apply_lore_files.in_set(NpcMemorySystems::Personas),
                bind_lore_groups
                    .run_if(on_message::<PersonaChange>)
                    .in_set(LoadStep::Bind),
                // Before lines are taken, so a change and a line in one frame
                // reach that line's reply.
                take_lore_changes.in_set(IntakeStep::Changes),
            ),
        );
}

/// Lore files that loaded, changed or went away update the store.
/// An NPC knows the lore of the groups its persona names.
fn bind_lore_groups(mut lore: ResMut<NpcLore>, mut changes: MessageReader<PersonaChange>) {
    for applied in changes.read().filter_map(PersonaChange::applied) {
        lore.set_groups(&applied.npc, &applied.groups);
    }
}

fn apply_lore_files(
    mut lore: ResMut<NpcLore>,
    mut events: MessageReader<AssetEvent<LoreFile>>,
    mut failures: MessageReader<AssetLoadFailedEvent<LoreFile>>,
    files: Res<Assets<LoreFile>>,
) {
    for failure in failures.read() {
        tracing::error!(
            "lore file {} failed to load: {}",
            failure.path,
            failure.error
        );
    }
    for event in events.read() {
        match event {
            AssetEvent::Added { id } | AssetEvent::Modified { id } => {
                if let Some(file) = files.get(*id) {
                    lore.set_file(*id, file.entries.clone());
                }
            }
            AssetEvent::Removed { id } => lore.remove_file(*id),
            _ => {}
        }
    }
}

/// The game's lore changes, in the order sent.
fn take_lore_changes(
    mut lore: ResMut<NpcLore>,
    mut layers: super::layers::Layers,
    mut adds: MessageReader<AddLore>,
    mut updates: MessageReader<UpdateLore>,
    mut removals: MessageReader<RemoveLore>,
) {
    for AddLore { entry } in adds.read() {
        if let Err(error) = lore.add(entry.clone()) {
            tracing::warn!("lore entry {:?} was not added: {error}", entry.id);
        }
    }
    for UpdateLore { id, text } in updates.read() {
        match lore.update(id, text) {
            Ok(true) => {}
            Ok(false) => tracing::warn!("no lore entry {id:?} to update"),
            Err(error) => tracing::warn!("lore entry {id:?} was not updated: {error}"),
        }
    }
    for RemoveLore { id } in removals.read() {
        if !lore.remove(id) {
            tracing::warn!("no lore entry {id:?} to remove");
        }
    }
    // Lore told as hearsay says what the entry said then; once it says something
    // else, or is gone, no later prompt may carry the old text.
    if lore.take_texts_changed() {
        layers.retract_lore(|id| lore.get(id).map(|entry| entry.text.clone()));
    }
}
