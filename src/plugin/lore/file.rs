//! Lore files: `*.lore.ron` assets, each a list of entries.

use std::collections::HashSet;

use bevy::asset::{AssetLoader, LoadContext, io::Reader};

use crate::plugin::data_file::{MAX_LORE_FILE_BYTES, read_file_text};
use bevy::prelude::*;

use crate::memory::limits::MAX_LORE_ENTRIES;
use crate::memory::{LoreEntry, shorten_to_chars};

/// A lore file: a RON list of [`LoreEntry`]s, loaded from `*.lore.ron`.
///
/// ```ron
/// [
///     (id: "bunker_name", keys: ["bunker", "vault"], text: "This bunker is Vault 7."),
///     (id: "door_code", scope: Group("crew"), keys: ["door code"], text: "The code is 4711."),
///     (id: "echo_secret", scope: Npc("echo7"), text: "ECHO-7 sealed the north wing."),
/// ]
/// ```
///
/// Every loaded `LoreFile` feeds [`NpcLore`](super::NpcLore) while its asset lives:
/// load one with [`NpcMemoryPlugin::with_lore`](crate::NpcMemoryPlugin::with_lore),
/// which keeps it loaded, or with the `AssetServer` and keep the handle (dropping
/// the last handle takes its entries out). Editing the file (with Bevy's
/// `file_watcher` feature) or the asset replaces that file's entries.
#[derive(Asset, Reflect, Clone, Debug, Default, PartialEq)]
#[type_path = "bevy_npc_memory"]
#[reflect(Debug, PartialEq, Clone, Default)]
pub struct LoreFile {
    /// The entries, in file order.
    pub entries: Vec<LoreEntry>,
}

impl LoreFile {
    /// A lore file holding `entries`.
    pub fn new(entries: Vec<LoreEntry>) -> Self {
        Self { entries }
    }

    /// Parses and checks a lore file: every entry within its limits, no id twice,
    /// at most [`MAX_LORE_ENTRIES`].
    pub fn from_ron(text: &str) -> Result<Self, LoreFileError> {
        let entries: Vec<LoreEntry> = ron::from_str(text).map_err(|error| {
            LoreFileError::Parse(shorten_to_chars(&error.to_string(), 500).into_owned())
        })?;
        if entries.len() > MAX_LORE_ENTRIES {
            return Err(LoreFileError::Parse(format!(
                "{} entries, over the limit of {MAX_LORE_ENTRIES}",
                entries.len()
            )));
        }
        let mut ids = HashSet::with_capacity(entries.len());
        for entry in &entries {
            entry
                .check()
                .map_err(|invalid| LoreFileError::Parse(invalid.to_string()))?;
            if !ids.insert(entry.id.as_str()) {
                return Err(LoreFileError::Parse(format!(
                    "the id {:?} appears twice",
                    shorten_to_chars(&entry.id, 40)
                )));
            }
        }
        Ok(Self { entries })
    }
}

/// Why a lore file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoreFileError {
    /// The file could not be read.
    #[error("could not read the lore file: {0}")]
    Io(#[from] std::io::Error),
    /// The text is not a valid lore file.
    #[error("invalid lore file: {0}")]
    Parse(String),
}

/// Loads [`LoreFile`] assets from `*.lore.ron` files. A file over 64 MiB is refused
/// unread, as is one that is not UTF-8.
#[derive(Default, TypePath)]
pub struct LoreFileLoader;

impl AssetLoader for LoreFileLoader {
    type Asset = LoreFile;
    type Settings = ();
    type Error = LoreFileError;

    async fn load(
        &self,
        reader: &mut dyn Reader,
        _settings: &(),
        _load_context: &mut LoadContext<'_>,
    ) -> Result<LoreFile, LoreFileError> {
        let text = read_file_text(reader, MAX_LORE_FILE_BYTES, LoreFileError::Parse).await?;
        LoreFile::from_ron(&text)
    }

    fn extensions(&self) -> &[&str] {
        &["lore.ron"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bunker_lore_file_parses() {
        let text = include_str!("../../../assets/lore/bunker.lore.ron");
        let file = LoreFile::from_ron(text).unwrap();
        assert_eq!(file.entries.len(), 5);
    }

    #[test]
    fn duplicate_ids_and_bad_text_are_refused() {
        let twice = r#"[(id: "a", text: "x"), (id: "a", text: "y")]"#;
        assert!(LoreFile::from_ron(twice).is_err());
        assert!(LoreFile::from_ron("[(id: \"a\")]").is_err());
        assert!(LoreFile::from_ron("not ron").is_err());
    }
}
