//! The messages a game sends to change lore while it runs. Changes last: saves
//! keep them, and they win over the lore files for the same id.

use bevy::prelude::*;

use crate::memory::LoreEntry;

/// Adds a lore entry, or replaces the one with its id, from the next reply on.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// # use bevy_npc_memory::lore::AddLore;
/// # use bevy_npc_memory::memory::LoreEntry;
/// fn flood(mut lore: MessageWriter<AddLore>) {
///     lore.write(AddLore::new(
///         LoreEntry::new("flood", "The lower level flooded on day 3.")
///             .with_keys(["flood", "lower level"]),
///     ));
/// }
/// ```
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct AddLore {
    /// The entry.
    pub entry: LoreEntry,
}

impl AddLore {
    /// Add `entry`.
    pub fn new(entry: LoreEntry) -> Self {
        Self { entry }
    }
}

/// Gives a lore entry a new text from now on (the world changed); its keys and
/// scope stay. No later prompt carries the old text.
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct UpdateLore {
    /// Which entry.
    pub id: String,
    /// Its new text.
    pub text: String,
}

impl UpdateLore {
    /// Entry `id` now says `text`.
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            text: text.into(),
        }
    }
}

/// Removes a lore entry from now on, also one a lore file holds.
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct RemoveLore {
    /// Which entry.
    pub id: String,
}

impl RemoveLore {
    /// Remove entry `id`.
    pub fn new(id: impl Into<String>) -> Self {
        Self { id: id.into() }
    }
}
