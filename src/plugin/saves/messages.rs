//! The messages a game saves and loads memory with, and their outcomes.

use std::path::PathBuf;

use bevy::prelude::*;

use crate::memory::NpcId;
use crate::save::{JournalReport, LoadError, SaveError, UnusableSave};

/// Save every NPC's memory to a file (`.ron` for RON, anything else JSON). It may
/// replace any file, and lifts an autosave pause on that path once written. The
/// snapshot is taken when asked; if that file is being loaded, the write waits for
/// the load to finish.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// fn save_slot_one(mut save: MessageWriter<SaveMemory>) {
///     save.write(SaveMemory::new("saves/slot1.json"));
/// }
///
/// fn report_saves(mut saved: MessageReader<MemorySaved>, mut failed: MessageReader<MemorySaveFailed>) {
///     for done in saved.read() {
///         info!("saved {} NPCs to {}", done.npcs, done.path.display());
///     }
///     for failure in failed.read() {
///         warn!("could not save to {}: {}", failure.path.display(), failure.error);
///     }
/// }
/// # App::new()
/// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
/// #     .add_systems(Update, (save_slot_one, report_saves));
/// ```
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct SaveMemory {
    /// Where to write.
    pub path: PathBuf,
}

impl SaveMemory {
    /// Save every NPC's memory to `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }
}

/// Replace every NPC's memory with a save's. Requests in flight are cancelled: a
/// line being answered fails with `ReplyError::Cancelled` and lines waiting are
/// handed back, as on a [`ClearNpcMemory`](crate::prelude::ClearNpcMemory). With
/// autosave on, the loaded file becomes the autosave slot.
///
/// If the file is missing or damaged (see [`LoadError::is_damaged`]; a damaged file
/// is moved aside first), its `.bak` is read instead and [`MemoryLoaded`] says so.
/// A file from a newer build, or one that cannot be read (`LoadError::Io`), is left
/// in place. Any failure but a plain [`LoadError::NotFound`] pauses autosave for
/// that path (see [`ResumeAutosave`]).
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct LoadMemory {
    /// What to read.
    pub path: PathBuf,
}

impl LoadMemory {
    /// Load every NPC's memory from `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }
}

/// Lets autosave write `path` again after a failed load (or a refusal to replace a
/// file it never read) paused it, accepting that the memory in use replaces what is
/// there. If `path` is the autosave slot, the memory in use is written at once.
/// A successful [`LoadMemory`] or a [`SaveMemory`] of that path lifts the pause too.
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct ResumeAutosave {
    /// The paused file.
    pub path: PathBuf,
}

impl ResumeAutosave {
    /// Let autosave write `path` again.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }
}

/// Import the original ECHO-7 game's Unity `savegame.json` layout into one NPC's memory.
///
/// The file is read and the memory built off the main thread; once it is in place,
/// [`MemoryLoaded`] names the NPC, or [`MemoryLoadFailed`] says why the file could not
/// be used, and the NPC's memory is unchanged. The imported memory replaces the
/// NPC's as [`ClearNpcMemory`](crate::prelude::ClearNpcMemory) would: the line being
/// answered and the lines waiting for the NPC fail with
/// [`ReplyError::Cancelled`](crate::prelude::ReplyError::Cancelled), the waiting
/// ones with their text in `unrecorded_line`. They were said to the memory replaced.
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct ImportUnitySave {
    /// The Unity save file.
    pub path: PathBuf,
    /// Whose memory it becomes.
    pub npc: NpcId,
}

impl ImportUnitySave {
    /// Import the Unity save at `path` as `npc`'s memory.
    pub fn new(path: impl Into<PathBuf>, npc: impl Into<NpcId>) -> Self {
        Self {
            path: path.into(),
            npc: npc.into(),
        }
    }
}

/// A save was written.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
pub struct MemoryLoaded {
    /// The file actually read: the one asked for, or its `.bak`.
    pub path: PathBuf,
    /// The NPCs whose memory it set.
    pub npcs: Vec<NpcId>,
    /// Set when the backup was read: why the file asked for was not used (missing,
    /// damaged, or not the snapshot its journal was written for, and moved aside).
    pub recovered_from: Option<UnusableSave>,
    /// Set when an autosave journal the load read could not be replayed whole (the
    /// one beside the file read, or, from the backup, the slot's journal that
    /// continues it): what was applied, what stopped it, and where a damaged or
    /// foreign journal was kept. A journal cut short by a crash is reported here
    /// too.
    pub journal: Option<JournalReport>,
}

/// A save could not be loaded. The memory in use is untouched. A damaged file has
/// been moved aside so no autosave overwrites it; a newer build's file or one that
/// could not be read is left in place.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
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
#[derive(Resource, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Resource, Debug, PartialEq, Default, Clone)]
pub struct SaveSettings {
    /// Where autosave writes after every message and summary. `None` turns it off.
    /// A slot that exists when the app starts is loaded first, as the original ECHO-7 game restores
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

/// An [`NpcMemorySnapshot`](super::NpcMemorySnapshot) put in by the game (or its
/// save system) replaced every NPC's memory.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct MemoryRestored {
    /// The NPCs whose memory it set.
    pub npcs: Vec<NpcId>,
}

/// An [`NpcMemorySnapshot`](super::NpcMemorySnapshot) put in by the game could not
/// be read. The memory in use is untouched.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct MemoryRestoreFailed {
    /// What was wrong with it.
    pub error: LoadError,
}

impl std::fmt::Display for MemoryRestoreFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "could not restore NPC memory: {}", self.error)
    }
}
