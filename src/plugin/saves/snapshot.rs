//! Every NPC's memory as one resource, for games that keep their own save.

use std::sync::Arc;

use bevy::prelude::*;
use bevy::reflect::{ReflectDeserialize, ReflectSerialize};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::memory::NpcId;
use crate::save::{LoadError, SaveFormat, SaveGame};

/// Every NPC's memory as one resource, for the game's own save system.
///
/// The plugin keeps it current: after its systems run each frame
/// ([`NpcMemorySystems::Persist`](crate::NpcMemorySystems::Persist)), it holds a
/// [`SaveGame`] of the memory in use. Taking it copies nothing that did not change.
/// Put a new value in (a save system loading the resource, or the game setting it)
/// and the plugin restores it at the start of its next run, as [`LoadMemory`] would
/// a file: requests in flight are cancelled, live personas are applied again, and
/// NPCs spawned later find their memory. [`MemoryRestored`] or
/// [`MemoryRestoreFailed`] tells the game how it went.
///
/// It reflects as an opaque value whose serde form is the versioned save as JSON
/// text, so any reflection-based save (moonshine-save, bevy_save, a scene) can hold
/// it in any format, and a snapshot from an older build is migrated when it is read.
/// A snapshot that cannot be read does not fail the game's load: the memory in use
/// stays, and [`MemoryRestoreFailed`] says why.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// # use bevy_npc_memory::saves::NpcMemorySnapshot;
/// // Store it with the game's own data...
/// fn write_slot(memory: Res<NpcMemorySnapshot>) {
///     let json = serde_json::to_string(&*memory).unwrap();
///     // ...write `json` with the rest of the slot...
/// #   let _ = json;
/// }
///
/// // ...and give it back to restore every NPC's memory.
/// fn read_slot(world: &mut World, json: &str) {
///     *world.resource_mut::<NpcMemorySnapshot>() = serde_json::from_str(json).unwrap();
/// }
/// # App::new()
/// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
/// #     .add_systems(Update, write_slot);
/// ```
///
/// [`LoadMemory`]: super::LoadMemory
/// [`MemoryRestored`]: super::MemoryRestored
/// [`MemoryRestoreFailed`]: super::MemoryRestoreFailed
#[derive(Resource, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(opaque)]
#[reflect(Resource, Serialize, Deserialize, Debug, PartialEq, Clone, Default)]
pub struct NpcMemorySnapshot {
    state: SnapshotState,
    /// The memory clock, kept current every frame apart from the memory, which is
    /// only taken again after a change.
    clock: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
enum SnapshotState {
    /// The memory in use, as the plugin last took it.
    Current(Arc<SaveGame>),
    /// Put in from outside; the plugin restores it next.
    Arrived(Arc<SaveGame>),
    /// Put in from outside but unreadable: the memory in use stays. The text is
    /// kept, so that a save taken before the plugin has reported it loses nothing.
    Unreadable {
        /// Why it could not be read.
        error: LoadError,
        /// What was read, unchanged.
        text: Arc<str>,
        /// Whether the game has been told.
        reported: bool,
    },
}

impl Default for NpcMemorySnapshot {
    fn default() -> Self {
        Self {
            state: SnapshotState::Current(Arc::new(SaveGame::new(Vec::new()))),
            clock: None,
        }
    }
}

impl NpcMemorySnapshot {
    /// A snapshot that restores `save` once the plugin sees it.
    pub fn restore(save: SaveGame) -> Self {
        Self {
            state: SnapshotState::Arrived(Arc::new(save)),
            clock: None,
        }
    }

    /// Reads a snapshot from the bytes of a save file in any supported format and
    /// version; an unreadable one restores nothing and is reported.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        match SaveGame::from_bytes(bytes) {
            Ok(save) => Self::restore(save),
            Err(error) => Self {
                state: SnapshotState::Unreadable {
                    error,
                    text: String::from_utf8_lossy(bytes).into(),
                    reported: false,
                },
                clock: None,
            },
        }
    }

    /// The memory this snapshot holds, with the clock as of this frame, or why it
    /// could not be read. Copies one pointer per NPC.
    pub fn save(&self) -> Result<SaveGame, &LoadError> {
        match &self.state {
            SnapshotState::Current(save) | SnapshotState::Arrived(save) => {
                let save = save.as_ref().clone();
                Ok(match self.clock {
                    Some(clock) => save.with_clock(clock),
                    None => save,
                })
            }
            SnapshotState::Unreadable { error, .. } => Err(error),
        }
    }

    /// The NPCs whose memory it holds.
    pub fn npcs(&self) -> impl Iterator<Item = &NpcId> {
        let save = match &self.state {
            SnapshotState::Current(save) | SnapshotState::Arrived(save) => Some(save),
            SnapshotState::Unreadable { .. } => None,
        };
        save.into_iter().flat_map(|s| s.npcs.iter().map(|n| &n.id))
    }

    /// Whether it still waits to be restored.
    pub fn is_pending(&self) -> bool {
        matches!(self.state, SnapshotState::Arrived(_))
    }

    /// The snapshot put in from outside, while it waits to be restored.
    pub(super) fn arrived(&self) -> Option<&Arc<SaveGame>> {
        match &self.state {
            SnapshotState::Arrived(save) => Some(save),
            _ => None,
        }
    }

    pub(super) fn holds(&self, save: &Arc<SaveGame>) -> bool {
        matches!(&self.state, SnapshotState::Current(current) if Arc::ptr_eq(current, save))
    }

    pub(super) fn set_current(&mut self, save: Arc<SaveGame>) {
        self.state = SnapshotState::Current(save);
        self.clock = None;
    }

    pub(super) fn set_clock(&mut self, seconds: f64) {
        self.clock = Some(seconds);
    }

    /// What the plugin must do with a snapshot put in from outside: restore it, or
    /// report once that it could not.
    pub(super) fn take_arrival(&mut self) -> Option<Result<Arc<SaveGame>, LoadError>> {
        match &mut self.state {
            SnapshotState::Current(_) => None,
            SnapshotState::Arrived(save) => Some(Ok(save.clone())),
            SnapshotState::Unreadable { reported: true, .. } => None,
            SnapshotState::Unreadable {
                error, reported, ..
            } => {
                *reported = true;
                Some(Err(error.clone()))
            }
        }
    }
}

impl Serialize for NpcMemorySnapshot {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let SnapshotState::Unreadable { text, .. } = &self.state {
            return serializer.serialize_str(text);
        }
        let save = self.save().map_err(serde::ser::Error::custom)?;
        let bytes = save
            .to_bytes(SaveFormat::Json)
            .map_err(serde::ser::Error::custom)?;
        // JSON from serde_json is UTF-8.
        let text = String::from_utf8(bytes).map_err(serde::ser::Error::custom)?;
        serializer.serialize_str(&text)
    }
}

impl<'de> Deserialize<'de> for NpcMemorySnapshot {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // A string, so that non-self-describing formats carry it too; its content is
        // checked and migrated by the save reader, whose errors are reported to the
        // game instead of failing the whole load.
        let text = String::deserialize(deserializer)?;
        Ok(Self::from_bytes(text.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{MemoryConfig, MemoryParts, NpcMemory, PersonaPrompt};
    use crate::save::NpcSave;

    fn one_npc_save() -> SaveGame {
        let persona = PersonaPrompt {
            name: "Guard".into(),
            text: "You guard.".into(),
            style: Default::default(),
        };
        let mut memory = NpcMemory::new(persona, &MemoryConfig::default());
        memory
            .layers()
            .record(crate::memory::Role::User, "hello", 1.0);
        let parts = MemoryParts::of(&memory.log, &memory.window, &memory.context);
        SaveGame::new(vec![Arc::new(NpcSave::new("guard".into(), parts))])
    }

    #[test]
    fn round_trips_through_json_and_ron_as_text() {
        let snapshot = NpcMemorySnapshot::restore(one_npc_save());
        let json = serde_json::to_string(&snapshot).unwrap();
        assert!(json.starts_with('"'), "a string: {json}");
        let back: NpcMemorySnapshot = serde_json::from_str(&json).unwrap();
        assert_eq!(back.save().unwrap(), snapshot.save().unwrap());
        let ron_text = ron::to_string(&snapshot).unwrap();
        let back: NpcMemorySnapshot = ron::from_str(&ron_text).unwrap();
        assert_eq!(back.npcs().collect::<Vec<_>>(), [&NpcId::from("guard")]);
        assert!(back.is_pending());
    }

    #[test]
    fn an_unreadable_snapshot_loads_reports_once_and_writes_back_unchanged() {
        let mut snapshot: NpcMemorySnapshot =
            serde_json::from_str(r#""{\"format_version\": 99}""#).unwrap();
        assert_eq!(
            snapshot.save(),
            Err(&LoadError::UnsupportedVersion {
                found: 99,
                newest: crate::save::SAVE_FORMAT_VERSION
            })
        );
        assert!(matches!(snapshot.take_arrival(), Some(Err(_))));
        assert_eq!(snapshot.take_arrival(), None, "reported once");
        assert_eq!(
            serde_json::to_string(&snapshot).unwrap(),
            r#""{\"format_version\": 99}""#
        );
    }
}
