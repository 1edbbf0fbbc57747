//! The savegame format: versioned, checked, and migrated on load.

use std::path::Path;
use std::sync::Arc;

use bevy::reflect::{Reflect, ReflectDeserialize, ReflectSerialize};
use serde::{Deserialize, Serialize};

use super::error::{LoadError, SaveError};
use crate::memory::limits::MAX_NPC_ID_CHARS;
use crate::memory::{InvalidField, LoreChanges, MemoryParts, NpcId, SpeakerId};

/// The format this build writes. Older formats are migrated on load; newer ones are
/// refused with a clear error.
///
/// - 1: the log, the rolling summary and its history (crate 0.1 before recall).
/// - 2: adds summary segments, pinned facts and recall state.
/// - 3: adds the player lines still queued for each NPC.
/// - 4: adds the memory clock, the game time new messages are stamped with, so time
///   continues after a load instead of restarting at zero. Older saves were stamped
///   by clocks that did restart with every launch; migrating them shifts each later
///   session to continue where the one before it ended, keeping every log in order.
/// - 5: adds where log entries came from (witnessed events, hearsay with its chain
///   of tellers, private player lines), which queued lines are private, and
///   run-time lore changes (entries added, updated or removed while the game ran),
///   which win over the lore files on load. Older saves have none of these.
/// - 6: adds who said each player line and each queued line, when it was not the
///   default player (co-op players, NPC-to-NPC lines); pinned facts another NPC
///   told (source `{"heard": {chain, hops}}`); and lore passed on as hearsay
///   (source `{"lore": {entry, retracted}}`). Older saves have none of these and
///   load unchanged; the number changed so that a build that only knows 5 refuses
///   such a save instead of silently misreading it.
/// - 7: adds log entries for game actions an NPC called and what came of them
///   (origin `{"acted": {name, call, step}}`). Older saves have none and load
///   unchanged; a build that only knows 6 refuses a save that may hold them.
/// - 8: adds the summarizer's notes on lines (`recall.notes`), which recall
///   indexes with the lines they cite. Older saves have none and load unchanged;
///   a build that only knows 7 refuses a save that may hold them.
/// - 9: adds the mark on hearsay of a line made private at its source after it
///   was told (source `{"said": {speaker, private}}`), and on a heard fact whose
///   lines were (`{"heard": {chain, hops, private}}`), which keeps the listener
///   from passing it on. Older saves have none and load unchanged; a build that
///   only knows 8 refuses a save that may hold them, instead of passing such lines on.
pub const SAVE_FORMAT_VERSION: u32 = 9;

/// Every NPC's memory: what a save slot holds. Secrets and backend settings are
/// never part of it.
///
/// It is `Reflect` (as an opaque, serde-backed value), so reflection-based save
/// systems can store it whole.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::save"]
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
    /// The memory clock when the save was taken, in game seconds: where time picks
    /// up after a load. Formats before 4 had none; migration derives it from the
    /// newest message.
    #[serde(default)]
    pub clock: f64,
    /// Lore changed while the game ran. On load these win over the lore files for
    /// the same ids. Formats before 5 had none.
    #[serde(default, skip_serializing_if = "LoreChanges::is_empty")]
    pub lore: LoreChanges,
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
    /// Positions in `queued` of the lines the player asked to keep private, so a
    /// load never makes a secret shareable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub private_queued: Vec<u32>,
    /// Positions in `queued` of the lines said by a speaker other than the default
    /// player, with that speaker. Formats before 6 had none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queued_speakers: Vec<(u32, SpeakerId)>,
}

/// A player line waiting for its NPC, as a save keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitingLine {
    /// What was said.
    pub text: String,
    /// The player asked the NPC to keep it to itself.
    pub private: bool,
    /// Who said it.
    pub speaker: SpeakerId,
}

impl WaitingLine {
    /// A line from the default player, not private.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            private: false,
            speaker: SpeakerId::player(),
        }
    }
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
            private_queued: Vec::new(),
            queued_speakers: Vec::new(),
        }
    }

    /// Sets the waiting lines, each with whether it is private, all from the
    /// default player.
    pub fn with_queued(self, lines: Vec<(String, bool)>) -> Self {
        self.with_waiting(
            lines
                .into_iter()
                .map(|(text, private)| WaitingLine {
                    private,
                    ..WaitingLine::new(text)
                })
                .collect(),
        )
    }

    /// Sets the waiting lines, each with whether it is private and who said it.
    pub fn with_waiting(mut self, lines: Vec<WaitingLine>) -> Self {
        self.private_queued = (0u32..)
            .zip(&lines)
            .filter(|(_, line)| line.private)
            .map(|(position, _)| position)
            .collect();
        self.queued_speakers = (0u32..)
            .zip(&lines)
            .filter(|(_, line)| !line.speaker.is_player())
            .map(|(position, line)| (position, line.speaker.clone()))
            .collect();
        self.queued = lines.into_iter().map(|line| line.text).collect();
        self
    }

    /// The waiting lines, each with whether it is private (who said them is in
    /// [`waiting_lines`](Self::waiting_lines)).
    pub fn queued_lines(&self) -> Vec<(String, bool)> {
        self.waiting_lines()
            .into_iter()
            .map(|line| (line.text, line.private))
            .collect()
    }

    /// The waiting lines, each with whether it is private and who said it.
    pub fn waiting_lines(&self) -> Vec<WaitingLine> {
        (0u32..)
            .zip(&self.queued)
            .map(|(position, text)| WaitingLine {
                text: text.clone(),
                private: self.private_queued.contains(&position),
                speaker: self
                    .queued_speakers
                    .iter()
                    .find(|(p, _)| *p == position)
                    .map_or_else(SpeakerId::player, |(_, speaker)| speaker.clone()),
            })
            .collect()
    }
}

/// The file formats a save can take. The extension decides: `.ron` is RON, anything
/// else JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaveFormat {
    /// JSON, the default (`savegame.json`, as in the original ECHO-7 game).
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

impl SaveGame {
    /// A save of these NPCs, sorted by id, with the clock at their newest message
    /// (set the game's clock with [`with_clock`](Self::with_clock)).
    pub fn new(mut npcs: Vec<Arc<NpcSave>>) -> Self {
        npcs.sort_by(|a, b| a.id.cmp(&b.id));
        let mut save = Self {
            format_version: SAVE_FORMAT_VERSION,
            crate_version: env!("CARGO_PKG_VERSION").to_owned(),
            npcs,
            clock: 0.0,
            lore: LoreChanges::default(),
        };
        save.clock = save.newest_stamp().unwrap_or(0.0);
        save
    }

    /// The same save with the memory clock at `seconds`.
    pub fn with_clock(mut self, seconds: f64) -> Self {
        self.clock = seconds;
        self
    }

    /// The same save with these run-time lore changes.
    pub fn with_lore(mut self, lore: LoreChanges) -> Self {
        self.lore = lore;
        self
    }

    /// The newest message stamp in any NPC's log, if any NPC has a message. Time
    /// after a load starts no earlier than this, so new lines always come after
    /// the saved ones.
    pub fn newest_stamp(&self) -> Option<f64> {
        self.npcs
            .iter()
            .filter_map(|npc| npc.memory.log.last().map(|m| m.timestamp))
            .filter(|t| t.is_finite())
            .reduce(f64::max)
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

    /// Checks every NPC's memory (see [`MemoryParts::validate`]), that no NPC
    /// appears twice, and the lore changes (see [`LoreChanges::validate`]). Reading a save runs it; so does writing one, so the game never
    /// writes a save it could not read back.
    pub fn validate(&self) -> Result<(), LoadError> {
        if !self.clock.is_finite() {
            return Err(LoadError::Inconsistent(
                "the memory clock is not a finite number".into(),
            ));
        }
        self.lore
            .validate()
            .map_err(|invalid| LoadError::Inconsistent(invalid.to_string()))?;
        let mut previous: Option<&NpcId> = None;
        for npc in &self.npcs {
            if previous == Some(&npc.id) {
                return Err(LoadError::Inconsistent(format!(
                    "NPC {} appears twice",
                    npc.id
                )));
            }
            previous = Some(&npc.id);
            validate_npc(npc)?;
        }
        Ok(())
    }
}

/// Checks one NPC's entry as loading does: its id, its memory (see
/// [`MemoryParts::validate`]) and its queued lines.
pub(crate) fn validate_npc(npc: &NpcSave) -> Result<(), LoadError> {
    let chars = npc.id.as_str().chars().count();
    if chars > MAX_NPC_ID_CHARS {
        return Err(LoadError::Inconsistent(format!(
            "an NPC id has {chars} characters, over the limit of {MAX_NPC_ID_CHARS}"
        )));
    }
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
    if let Some(&position) = npc
        .private_queued
        .iter()
        .find(|&&p| p as usize >= npc.queued.len())
    {
        return Err(LoadError::Invalid {
            npc: npc.id.clone(),
            invalid: InvalidField {
                field: "private_queued".into(),
                problem: format!(
                    "points at line {position} of {} queued lines",
                    npc.queued.len()
                ),
            },
        });
    }
    // Each speaker's id and name were checked as they were read.
    if let Some((position, _)) = npc
        .queued_speakers
        .iter()
        .find(|(p, _)| *p as usize >= npc.queued.len())
    {
        return Err(LoadError::Invalid {
            npc: npc.id.clone(),
            invalid: InvalidField {
                field: "queued_speakers".into(),
                problem: format!(
                    "points at line {position} of {} queued lines",
                    npc.queued.len()
                ),
            },
        });
    }
    Ok(())
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

    #[test]
    fn a_clock_that_is_not_a_number_is_refused_both_ways() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let save = SaveGame::new(Vec::new()).with_clock(bad);
            assert!(matches!(save.validate(), Err(LoadError::Inconsistent(_))));
            let path = std::env::temp_dir().join("npc-format-nan-clock.ron");
            assert!(matches!(
                save.write_to(&path, u64::MAX),
                Err(SaveError::WouldNotLoad(_))
            ));
        }
        // RON can spell NaN; the reader refuses it.
        let text = "(format_version: 4, crate_version: \"x\", npcs: [], clock: NaN)";
        assert!(SaveGame::from_bytes(text.as_bytes()).is_err());
        let fine = "(format_version: 4, crate_version: \"x\", npcs: [], clock: 12.5)";
        assert_eq!(SaveGame::from_bytes(fine.as_bytes()).unwrap().clock, 12.5);
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
