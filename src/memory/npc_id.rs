//! The stable name of one NPC's memory.

use std::fmt;
use std::sync::Arc;

use bevy::reflect::{Reflect, ReflectDeserialize, ReflectSerialize};
use serde::{Deserialize, Serialize};

/// A stable name for one NPC's memory, such as `"echo7"`.
///
/// Memory is keyed by this id, not by an `Entity`, so it outlives entities that are
/// despawned with a level and is found again when the NPC is spawned anew.
///
/// It reflects as an opaque value written as its text, so scenes and reflection-based
/// saves can hold it.
///
/// Ids are at most [`MAX_NPC_ID_CHARS`] characters. A longer id is shortened where
/// it is made (see [`NpcId::new`]), loads and scenes included, so every id the game
/// can make saves and loads.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(opaque)]
#[reflect(Serialize, Deserialize, Debug, PartialEq, Hash, Clone)]
#[serde(transparent)]
pub struct NpcId(Arc<str>);

/// Longest NPC id, in characters: ids name NPCs in code and files.
pub const MAX_NPC_ID_CHARS: usize = 256;

impl NpcId {
    /// An id from any string.
    ///
    /// An id of more than [`MAX_NPC_ID_CHARS`] characters becomes its first 239
    /// characters, `~` and 16 hex digits of a hash of the whole id (64-bit FNV-1a,
    /// the same in every build). The same long id always gives the same short one,
    /// and two long ids that differ anywhere stay apart.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        let id = id.into();
        match shortened(&id) {
            Some(short) => Self(short.into()),
            None => Self(id),
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `id` cut to fit [`MAX_NPC_ID_CHARS`] with a hash of all of it, or `None` if it fits.
fn shortened(id: &str) -> Option<String> {
    const HASH_CHARS: usize = 1 + 16;
    id.char_indices().nth(MAX_NPC_ID_CHARS)?;
    let (end, _) = id.char_indices().nth(MAX_NPC_ID_CHARS - HASH_CHARS)?;
    Some(format!("{}~{:016x}", &id[..end], fnv1a(id.as_bytes())))
}

/// 64-bit FNV-1a: small, and fixed by its definition, so a shortened id names the
/// same NPC in every build and every save.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl<'de> Deserialize<'de> for NpcId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self::new)
    }
}

impl fmt::Debug for NpcId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NpcId({:?})", &*self.0)
    }
}

impl fmt::Display for NpcId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for NpcId {
    fn from(id: &str) -> Self {
        Self::new(id)
    }
}

impl From<String> for NpcId {
    fn from(id: String) -> Self {
        Self::new(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_id_at_the_limit_is_kept_and_a_longer_one_is_shortened_with_its_hash() {
        let fits = "é".repeat(MAX_NPC_ID_CHARS);
        assert_eq!(NpcId::new(fits.as_str()).as_str(), fits);
        let long = "村".repeat(MAX_NPC_ID_CHARS + 1);
        let short = NpcId::new(long.as_str());
        assert_eq!(short.as_str().chars().count(), MAX_NPC_ID_CHARS);
        assert!(
            short
                .as_str()
                .starts_with(&"村".repeat(MAX_NPC_ID_CHARS - 17))
        );
        // Fixed by FNV-1a's definition: a save written by another build names the
        // same NPC.
        assert_eq!(
            NpcId::new("a".repeat(300)).as_str(),
            format!(
                "{}~{:016x}",
                "a".repeat(239),
                fnv1a("a".repeat(300).as_bytes())
            )
        );
        assert_eq!(
            fnv1a(b"a"),
            0xaf63_dc4c_8601_ec8c,
            "the published FNV-1a 64 of \"a\""
        );
    }

    #[test]
    fn a_long_id_read_from_a_file_is_shortened_as_when_made() {
        let long = format!("{}👩‍🚀", "x".repeat(400));
        let read: NpcId = serde_json::from_str(&serde_json::to_string(&long).unwrap()).unwrap();
        assert_eq!(read, NpcId::new(long));
    }

    proptest! {
        #[test]
        fn every_id_fits_and_long_ids_stay_apart(
            base in proptest::string::string_regex(".{0,300}").unwrap(),
            tail in any::<char>(),
            other in any::<char>(),
        ) {
            let id = NpcId::new(base.as_str());
            prop_assert!(id.as_str().chars().count() <= MAX_NPC_ID_CHARS);
            if base.chars().count() <= MAX_NPC_ID_CHARS {
                prop_assert_eq!(id.as_str(), base.as_str());
            }
            let long = format!("{}{base}", "ก".repeat(MAX_NPC_ID_CHARS));
            let (one, two) = (format!("{long}{tail}"), format!("{long}{other}"));
            prop_assert_eq!(NpcId::new(one.as_str()), NpcId::new(one.as_str()));
            prop_assert_eq!(NpcId::new(one.as_str()) == NpcId::new(two.as_str()), tail == other);
        }
    }
}
