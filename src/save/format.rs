//! The savegame format: versioned, checked, and migrated on load.

use std::path::Path;
use std::sync::Arc;

use bevy::reflect::{Reflect, ReflectDeserialize, ReflectSerialize};
use serde::{Deserialize, Serialize};

use crate::memory::{InvalidField, MemoryParts, NpcId, shorten_to_chars};

/// The format this build writes. Older formats are migrated on load; newer ones are
/// refused with a clear error.
///
/// - 1: the log, the rolling summary and its history (crate 0.1 before recall).
/// - 2: adds summary segments, pinned facts and recall state.
/// - 3: adds the player lines still queued for each NPC.
pub const SAVE_FORMAT_VERSION: u32 = 3;

/// Every NPC's memory: what a save slot holds. Secrets and backend settings are
/// never part of it.
///
/// It is `Reflect` (as an opaque, serde-backed value), so reflection-based save
/// systems can store it whole.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reflect)]
#[reflect(opaque)]
#[reflect(Serialize, Deserialize, Debug, PartialEq, Clone)]
#[serde(deny_unknown_fields)]
pub struct SaveGame {
    /// The format version, [`SAVE_FORMAT_VERSION`] when written by this build.
    pub format_version: u32,
    /// The version of the crate that wrote it, for support requests.
    pub crate_version: String,
    /// One entry per NPC, sorted by id. Shared, so that taking a snapshot for an
    /// autosave copies nothing that did not change.
    pub npcs: Vec<Arc<NpcSave>>,
}

/// One NPC's memory in a save.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NpcSave {
    /// Whose memory.
    pub id: NpcId,
    /// The memory.
    pub memory: MemoryParts,
    /// Player lines the NPC had not started to answer when the save was taken,
    /// oldest first. They are not in the log yet; after a load they wait their turn
    /// again, so quitting while an NPC is busy loses nothing the player said.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queued: Vec<String>,
}

/// Most queued player lines one NPC may carry in a save. The plugin queues a few
/// (`NpcMemorySettings::max_queued_lines`); far more is a damaged file.
pub const MAX_SAVED_QUEUED_LINES: usize = 1_000;

impl NpcSave {
    /// One NPC's memory, with no lines waiting.
    pub fn new(id: NpcId, memory: MemoryParts) -> Self {
        Self {
            id,
            memory,
            queued: Vec::new(),
        }
    }
}

/// The file formats a save can take. The extension decides: `.ron` is RON, anything
/// else JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaveFormat {
    /// JSON, the default (`savegame.json`, as in the seed).
    Json,
    /// RON, readable and diffable.
    Ron,
}

impl SaveFormat {
    /// The format for a path, by its extension.
    pub fn for_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("ron") => SaveFormat::Ron,
            _ => SaveFormat::Json,
        }
    }
}

/// Why a save could not be read. Each names what was wrong; the path travels with it
/// in [`MemoryLoadFailed`](crate::MemoryLoadFailed).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
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
}

/// Longest NPC id a save may hold, in characters. Ids name NPCs in code and files;
/// a longer one is a corrupt or hostile file.
pub const MAX_NPC_ID_CHARS: usize = 256;

/// Longest parser message kept in [`LoadError::Malformed`], in characters. Parsers
/// quote the text they choke on, which in a hostile file can be megabytes.
const MAX_PARSE_ERROR_CHARS: usize = 500;

fn malformed(error: impl std::fmt::Display) -> LoadError {
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
            LoadError::NotFound | LoadError::Io(_) | LoadError::UnsupportedVersion { .. } => false,
        }
    }
}

/// Why a save was not written. Whatever file was there is untouched.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
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
    /// The memory breaks a rule loading checks (see [`SaveGame::validate`]), so the
    /// save could never be read back. Nothing was written.
    #[error("the memory would not load again, so it was not written: {0}")]
    WouldNotLoad(LoadError),
}

#[derive(Deserialize)]
struct Header {
    format_version: u32,
}

impl SaveGame {
    /// A save of these NPCs, sorted by id.
    pub fn new(mut npcs: Vec<Arc<NpcSave>>) -> Self {
        npcs.sort_by(|a, b| a.id.cmp(&b.id));
        Self {
            format_version: SAVE_FORMAT_VERSION,
            crate_version: env!("CARGO_PKG_VERSION").to_owned(),
            npcs,
        }
    }

    /// The save as bytes in a format.
    pub fn to_bytes(&self, format: SaveFormat) -> Result<Vec<u8>, String> {
        match format {
            SaveFormat::Json => serde_json::to_vec(self).map_err(|e| e.to_string()),
            SaveFormat::Ron => ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::default())
                .map(String::into_bytes)
                .map_err(|e| e.to_string()),
        }
    }

    /// Reads a save from bytes in any supported format and version, and checks it.
    /// Never panics, whatever the bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
        let text = std::str::from_utf8(bytes).map_err(|e| LoadError::NotText {
            offset: e.valid_up_to(),
        })?;
        let text = text.trim_start_matches('\u{feff}');
        let body = text.trim_start();
        if body.is_empty() {
            return Err(LoadError::Empty);
        }
        let ron = body.starts_with('(');
        let version = if ron {
            ron::from_str::<Header>(text)
                .map(|h| h.format_version)
                .map_err(|e| e.to_string())
        } else {
            serde_json::from_str::<Header>(text)
                .map(|h| h.format_version)
                .map_err(|e| e.to_string())
        }
        .map_err(malformed)?;
        let save = migrate(version, text, ron)?;
        save.validate()?;
        Ok(save)
    }

    /// Writes the save to `path` crash-safely (a temp file of its own, fsync, atomic
    /// rename; the previous file kept as `.bak`), in the format its extension names.
    /// A save over `max_bytes` is refused, as [`SaveGame::read_from`] would refuse
    /// it, and the file there is untouched. Two writes to one path from this process
    /// never interleave. Blocking: the plugin calls it on the IO task pool.
    pub fn write_to(&self, path: &Path, max_bytes: u64) -> Result<usize, SaveError> {
        let bytes = self.encode_within(path, max_bytes)?;
        super::file::with_path_lock(path, || super::file::write_atomic(path, &bytes))
            .map_err(|e| SaveError::Io(e.to_string()))?;
        Ok(bytes.len())
    }

    /// The bytes [`SaveGame::write_to`] writes, or why they must not be written.
    pub(crate) fn encode_within(&self, path: &Path, max_bytes: u64) -> Result<Vec<u8>, SaveError> {
        self.validate().map_err(SaveError::WouldNotLoad)?;
        let bytes = self
            .to_bytes(SaveFormat::for_path(path))
            .map_err(SaveError::Encode)?;
        if bytes.len() as u64 > max_bytes {
            return Err(SaveError::TooLarge {
                bytes: bytes.len() as u64,
                max: max_bytes,
            });
        }
        Ok(bytes)
    }

    /// Reads and checks the save at `path` (or its `.bak` if `path` is missing),
    /// refusing files over `max_bytes` unread. Returns the path actually read.
    /// Blocking: the plugin calls it on the IO task pool.
    pub fn read_from(path: &Path, max_bytes: u64) -> Result<(std::path::PathBuf, Self), LoadError> {
        let (read, bytes) = super::file::read_bounded(path, max_bytes)?;
        Ok((read, Self::from_bytes(&bytes)?))
    }

    /// Checks every NPC's memory (see [`MemoryParts::validate`]) and that no NPC
    /// appears twice. Reading a save runs it; so does writing one, so the game never
    /// writes a save it could not read back.
    pub fn validate(&self) -> Result<(), LoadError> {
        let mut previous: Option<&NpcId> = None;
        for npc in &self.npcs {
            let chars = npc.id.as_str().chars().count();
            if chars > MAX_NPC_ID_CHARS {
                return Err(LoadError::Inconsistent(format!(
                    "an NPC id has {chars} characters, over the limit of {MAX_NPC_ID_CHARS}"
                )));
            }
            if previous == Some(&npc.id) {
                return Err(LoadError::Inconsistent(format!(
                    "NPC {} appears twice",
                    npc.id
                )));
            }
            previous = Some(&npc.id);
            npc.memory
                .validate()
                .map_err(|invalid| LoadError::Invalid {
                    npc: npc.id.clone(),
                    invalid,
                })?;
            if npc.queued.len() > MAX_SAVED_QUEUED_LINES {
                return Err(LoadError::Invalid {
                    npc: npc.id.clone(),
                    invalid: InvalidField {
                        field: "queued".into(),
                        problem: format!(
                            "holds {} lines, over the limit of {MAX_SAVED_QUEUED_LINES}",
                            npc.queued.len()
                        ),
                    },
                });
            }
        }
        Ok(())
    }
}

/// The one place where older formats become the current one. When the format
/// changes, bump [`SAVE_FORMAT_VERSION`], keep the old structs in a module here,
/// and convert them in a new arm.
fn migrate(version: u32, text: &str, ron: bool) -> Result<SaveGame, LoadError> {
    match version {
        // Format 2 is format 3 without queued lines, which default to none.
        2 | SAVE_FORMAT_VERSION => {
            let mut save: SaveGame = if ron {
                ron::from_str(text).map_err(malformed)?
            } else {
                serde_json::from_str(text).map_err(malformed)?
            };
            save.npcs.sort_by(|a, b| a.id.cmp(&b.id));
            Ok(save)
        }
        1 => {
            let old: super::v1::SaveGameV1 = if ron {
                ron::from_str(text).map_err(malformed)?
            } else {
                serde_json::from_str(text).map_err(malformed)?
            };
            let mut save = old.migrate();
            save.npcs.sort_by(|a, b| a.id.cmp(&b.id));
            Ok(save)
        }
        found if found > SAVE_FORMAT_VERSION => Err(LoadError::UnsupportedVersion {
            found,
            newest: SAVE_FORMAT_VERSION,
        }),
        found => Err(LoadError::Malformed(format!(
            "unknown format version {found}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn empty_and_odd_inputs_fail_cleanly() {
        assert_eq!(SaveGame::from_bytes(b""), Err(LoadError::Empty));
        assert_eq!(SaveGame::from_bytes(b"  \n"), Err(LoadError::Empty));
        assert_eq!(
            SaveGame::from_bytes(b"{\"a\xff\"}"),
            Err(LoadError::NotText { offset: 3 })
        );
        assert!(matches!(
            SaveGame::from_bytes(b"{\"format_version\": 1, \"npcs\": ["),
            Err(LoadError::Malformed(_))
        ));
        assert!(matches!(
            SaveGame::from_bytes(b"{\"keys\": []}"),
            Err(LoadError::Malformed(_))
        ));
        assert_eq!(
            SaveGame::from_bytes(b"{\"format_version\": 99}"),
            Err(LoadError::UnsupportedVersion {
                found: 99,
                newest: SAVE_FORMAT_VERSION
            })
        );
    }

    #[test]
    fn both_formats_round_trip() {
        let save = SaveGame::new(Vec::new());
        for format in [SaveFormat::Json, SaveFormat::Ron] {
            let bytes = save.to_bytes(format).unwrap();
            assert_eq!(SaveGame::from_bytes(&bytes).unwrap(), save);
        }
    }

    #[test]
    fn a_save_the_reader_would_refuse_is_not_written() {
        let dir = std::env::temp_dir().join(format!("npc-format-cap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.json");
        let save = SaveGame::new(Vec::new());
        let bytes = save.write_to(&path, u64::MAX).unwrap() as u64;
        let before = std::fs::read(&path).unwrap();
        let mut bigger = save.clone();
        bigger.crate_version.push_str("-and-more");
        assert_eq!(
            bigger.write_to(&path, bytes),
            Err(SaveError::TooLarge {
                bytes: bytes + 9,
                max: bytes
            })
        );
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert!(
            SaveGame::read_from(&path, bytes).is_ok(),
            "what was written loads"
        );
        std::fs::remove_dir_all(dir).ok();
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = SaveGame::from_bytes(&bytes);
        }

        #[test]
        fn arbitrary_json_like_text_never_panics(text in r#"[{}\[\]":,0-9a-z_ ]{0,200}"#) {
            let with_version = format!("{{\"format_version\":1,{text}");
            let _ = SaveGame::from_bytes(with_version.as_bytes());
            let _ = SaveGame::from_bytes(text.as_bytes());
        }
    }
}
