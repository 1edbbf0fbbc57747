//! Why a save could not be read or written.

use crate::memory::{InvalidField, NpcId, shorten_to_chars};

/// Why a save could not be read. Each names what was wrong; the path travels with it
/// in [`MemoryLoadFailed`](crate::prelude::MemoryLoadFailed).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// There is no such file (and no backup).
    #[error("the file does not exist")]
    NotFound,
    /// The file could not be read, or is not a regular file (a folder, a device).
    /// The plugin leaves it in place.
    #[error("the file could not be read: {0}")]
    Io(String),
    /// The file is larger than the plugin accepts.
    #[error("the file has {bytes} bytes, over the limit of {max}")]
    TooLarge {
        /// Its size.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// The file is empty.
    #[error("the file is empty")]
    Empty,
    /// The file is not UTF-8 text.
    #[error("the file is not UTF-8 text (bad byte at offset {offset})")]
    NotText {
        /// Where the first bad byte is.
        offset: usize,
    },
    /// The text is not a savegame: truncated, invalid, or another schema.
    #[error("the file is not a valid savegame: {0}")]
    Malformed(String),
    /// A newer build wrote it.
    #[error("the save has format version {found}, but this build reads up to {newest}")]
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
        /// The newest version this build reads.
        newest: u32,
    },
    /// The save parses but describes a memory that cannot exist.
    #[error("the save is inconsistent: {0}")]
    Inconsistent(String),
    /// A value in one NPC's memory is out of its range or points outside that
    /// NPC's log.
    #[error("the save's memory of NPC {npc} has an invalid {}: {}", .invalid.field, .invalid.problem)]
    Invalid {
        /// Whose memory.
        npc: NpcId,
        /// Which field, and what is wrong with it.
        invalid: InvalidField,
    },
    /// A newer load or restore was asked for before this one was in place; the
    /// newest wins, and this one's memory was not used.
    #[error("a newer load replaced this one before it was in place")]
    Superseded,
}

/// Longest parser message kept in [`LoadError::Malformed`], in characters. Parsers
/// quote the text they choke on, which in a hostile file can be megabytes.
const MAX_PARSE_ERROR_CHARS: usize = 500;

pub(super) fn malformed(error: impl std::fmt::Display) -> LoadError {
    LoadError::Malformed(shorten_to_chars(&error.to_string(), MAX_PARSE_ERROR_CHARS).into_owned())
}

impl LoadError {
    /// Whether the file itself is unusable: too large, empty, not text, malformed or
    /// inconsistent. The plugin moves such a file aside and tries its backup.
    /// `NotFound` is not (nothing is there), nor is `Io` (the file may be fine, the
    /// disk or a permission is not), nor `UnsupportedVersion` (a good file from a
    /// newer build): those files are left in place.
    pub fn is_damaged(&self) -> bool {
        match self {
            LoadError::TooLarge { .. }
            | LoadError::Empty
            | LoadError::NotText { .. }
            | LoadError::Malformed(_)
            | LoadError::Inconsistent(_)
            | LoadError::Invalid { .. } => true,
            LoadError::NotFound
            | LoadError::Io(_)
            | LoadError::UnsupportedVersion { .. }
            | LoadError::Superseded => false,
        }
    }
}

/// Why a save was not written. Whatever file was there is untouched.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SaveError {
    /// The memory could not be encoded.
    #[error("the save could not be encoded: {0}")]
    Encode(String),
    /// The save is larger than loading accepts (`SaveSettings::max_file_bytes`), so
    /// it could never be read back.
    #[error("the save would have {bytes} bytes, over the limit of {max} that loading accepts")]
    TooLarge {
        /// Its size.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// Autosave found a file (or its backup) there that this game has not read, and
    /// would have replaced it. Autosave to that path pauses until the game loads
    /// it, saves there with `SaveMemory`, or sends `ResumeAutosave`.
    #[error(
        "autosave will not replace a file this game has not read; load it, save there with SaveMemory, or send ResumeAutosave"
    )]
    Unread,
    /// The file system refused.
    #[error("the file could not be written: {0}")]
    Io(String),
    /// The memory breaks a rule loading checks (see [`SaveGame::validate`](crate::saves::SaveGame::validate)), so the
    /// save could never be read back. Nothing was written.
    #[error("the memory would not load again, so it was not written: {0}")]
    WouldNotLoad(LoadError),
}
