//! Reading saves: any supported format and version becomes the current one, and is
//! checked before anything is built from it.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::error::{LoadError, malformed};
use super::format::{SAVE_FORMAT_VERSION, SaveGame};
use super::rebase::rebase_sessions;

#[derive(Deserialize)]
struct Header {
    format_version: u32,
}

impl SaveGame {
    /// Reads a save from bytes in any supported format and version, and checks it.
    /// Never panics, whatever the bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
        Self::from_bytes_versioned(bytes).map(|(save, _)| save)
    }

    /// [`SaveGame::from_bytes`], with the format version the bytes were in.
    pub(crate) fn from_bytes_versioned(bytes: &[u8]) -> Result<(Self, u32), LoadError> {
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
        Ok((save, version))
    }

    /// Reads and checks the slot at `path`, refusing files over `max_bytes` unread,
    /// the way the plugin loads it but changing no file: the snapshot with its
    /// autosave journal (see [`journal_path`](super::journal_path)) replayed as far
    /// as it is whole, or, when the snapshot is missing, damaged or not the one its
    /// journal names, the backup (`.bak`) with the journals that continue it.
    /// Returns the snapshot actually read. A file from a newer build, or one that
    /// cannot be read, is an error and the backup is not tried. Blocking: the
    /// plugin calls it on the IO task pool.
    pub fn read_from(path: &Path, max_bytes: u64) -> Result<(PathBuf, Self), LoadError> {
        match super::slot::read_slot(path, max_bytes, false, false) {
            Ok(read) => Ok((read.read, read.save)),
            // With no snapshot at all, why the backup would not do says more.
            Err(failed) => Err(match (failed.error, failed.backup) {
                (LoadError::NotFound, Some(backup)) => backup.error,
                (error, _) => error,
            }),
        }
    }
}

/// The one place where older formats become the current one. When the format
/// changes, bump [`SAVE_FORMAT_VERSION`], keep the old structs in a module here,
/// and convert them in a new arm.
fn migrate(version: u32, text: &str, ron: bool) -> Result<SaveGame, LoadError> {
    match version {
        // Format 2 is format 3 without queued lines, which default to none; format 3
        // is format 4 without the clock, which the rebase sets; format 4 is format 5
        // with every entry a plain conversation line, no private queued line and no
        // lore changes; format 5 is format 6 with every line from the default player,
        // no heard fact and no lore told; format 6 is format 7 without actions; format
        // 7 is format 8 without notes on lines; format 8 is format 9 without hearsay
        // made private at its source.
        2..=SAVE_FORMAT_VERSION => {
            let mut save: SaveGame = if ron {
                ron::from_str(text).map_err(malformed)?
            } else {
                serde_json::from_str(text).map_err(malformed)?
            };
            save.npcs.sort_by(|a, b| a.id.cmp(&b.id));
            if version < 4 {
                rebase_sessions(&mut save);
            }
            save.format_version = SAVE_FORMAT_VERSION;
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
            rebase_sessions(&mut save);
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
