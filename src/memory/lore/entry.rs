//! One piece of lore, who may know it, and the limits every entry is held to.

use std::sync::Arc;

use bevy::reflect::{Reflect, ReflectDeserialize, ReflectSerialize};
use serde::{Deserialize, Serialize};

use crate::memory::invalid_field::InvalidField;
use crate::memory::npc_id::NpcId;

/// Longest lore id, in characters.
pub const MAX_LORE_ID_CHARS: usize = 128;
/// Longest lore text, in characters. Lore is quoted into prompts whole, so a longer
/// text would crowd out everything else.
pub const MAX_LORE_TEXT_CHARS: usize = 4_000;
/// Most trigger keys one entry may have.
pub const MAX_LORE_KEYS: usize = 32;
/// Longest trigger key, and longest group name or NPC id in a scope, in characters.
pub const MAX_LORE_KEY_CHARS: usize = 128;
/// Most lore entries one store holds, and one save carries. Far more is a damaged
/// or hostile file, not a game.
pub const MAX_LORE_ENTRIES: usize = 10_000;

/// Who may know a lore entry. Checked every time lore is looked up, so an NPC
/// outside the scope never gets the entry, whatever it is asked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LoreScope {
    /// Every NPC.
    #[default]
    World,
    /// NPCs whose persona names this group (`groups: ["crew"]`).
    Group(String),
    /// One NPC.
    Npc(NpcId),
}

impl LoreScope {
    /// Known to the members of `group`.
    pub fn group(group: impl Into<String>) -> Self {
        Self::Group(group.into())
    }

    /// Known to one NPC.
    pub fn npc(npc: impl Into<NpcId>) -> Self {
        Self::Npc(npc.into())
    }
}

/// One piece of lore: what it says, the words that bring it up, and who knows it.
///
/// It reflects as an opaque value written as its RON/serde form, so lore can be
/// built by reflection (a console, Bevy's remote protocol) and shown by inspectors.
///
/// In a `*.lore.ron` file (`scope` defaults to `World`, `keys` to none):
///
/// ```ron
/// (id: "bunker_name", keys: ["bunker", "Vault 7"], text: "The bunker is Vault 7."),
/// (id: "crew_code", scope: Group("crew"), keys: ["door code"], text: "The code is 4711."),
/// (id: "echo_secret", scope: Npc("echo7"), text: "ECHO-7 sealed the north wing."),
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(opaque)]
#[reflect(Serialize, Deserialize, Debug, PartialEq, Clone)]
#[serde(deny_unknown_fields)]
pub struct LoreEntry {
    /// Names the entry, so it can be updated or removed. Unique within a store.
    pub id: String,
    /// Who knows it.
    #[serde(default)]
    pub scope: LoreScope,
    /// Words or phrases that bring it up. They count more than words of the text,
    /// and also match as a case-insensitive part of the player's line, which
    /// finds multi-word keys and Chinese keys of any length.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// What the NPC knows. Quoted into prompts as data.
    pub text: Arc<str>,
}

impl LoreEntry {
    /// World lore with no keys: it comes up when its text matches.
    pub fn new(id: impl Into<String>, text: impl Into<Arc<str>>) -> Self {
        Self {
            id: id.into(),
            scope: LoreScope::World,
            keys: Vec::new(),
            text: text.into(),
        }
    }

    /// The same entry known only within `scope`.
    pub fn with_scope(mut self, scope: LoreScope) -> Self {
        self.scope = scope;
        self
    }

    /// The same entry brought up by these keys as well.
    pub fn with_keys<K: Into<String>>(mut self, keys: impl IntoIterator<Item = K>) -> Self {
        self.keys = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Checks the entry against the limits above: a non-empty id, a text, keys and
    /// a scope of bounded size. Files, saves and run-time changes all pass here.
    pub fn check(&self) -> Result<(), InvalidField> {
        let field = |name: &str| format!("lore[{}].{name}", shorten(&self.id));
        if self.id.trim().is_empty() {
            return Err(invalid("lore.id".into(), "is empty"));
        }
        too_long(field("id"), &self.id, MAX_LORE_ID_CHARS)?;
        too_long(field("text"), &self.text, MAX_LORE_TEXT_CHARS)?;
        if self.keys.len() > MAX_LORE_KEYS {
            return Err(invalid(
                field("keys"),
                &format!(
                    "has {} keys, over the limit of {MAX_LORE_KEYS}",
                    self.keys.len()
                ),
            ));
        }
        for key in &self.keys {
            too_long(field("keys"), key, MAX_LORE_KEY_CHARS)?;
        }
        match &self.scope {
            LoreScope::World => Ok(()),
            LoreScope::Group(group) => too_long(field("scope"), group, MAX_LORE_KEY_CHARS),
            LoreScope::Npc(npc) => too_long(field("scope"), npc.as_str(), MAX_LORE_KEY_CHARS),
        }
    }
}

/// Lore changed while the game ran (added, updated or removed), which a save keeps:
/// loading it puts the world back as the player left it, over whatever the lore
/// files say for the same ids.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoreChanges {
    /// Entries added or updated at run time, whole, sorted by id.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<LoreEntry>,
    /// Ids removed at run time, sorted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
}

impl LoreChanges {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.removed.is_empty()
    }

    /// Checks sizes and ids: at most [`MAX_LORE_ENTRIES`] in all, every entry within
    /// [`LoreEntry::check`], no id twice.
    pub fn validate(&self) -> Result<(), InvalidField> {
        let count = self.entries.len().saturating_add(self.removed.len());
        if count > MAX_LORE_ENTRIES {
            return Err(invalid(
                "lore".into(),
                &format!("holds {count} changes, over the limit of {MAX_LORE_ENTRIES}"),
            ));
        }
        let mut ids = std::collections::HashSet::with_capacity(count);
        for entry in &self.entries {
            entry.check()?;
            if !ids.insert(entry.id.as_str()) {
                return Err(invalid(
                    format!("lore[{}]", shorten(&entry.id)),
                    "appears twice",
                ));
            }
        }
        for id in &self.removed {
            too_long("lore.removed".into(), id, MAX_LORE_ID_CHARS)?;
            if !ids.insert(id.as_str()) {
                return Err(invalid(
                    format!("lore.removed[{}]", shorten(id)),
                    "appears twice",
                ));
            }
        }
        Ok(())
    }
}

fn too_long(field: String, text: &str, max: usize) -> Result<(), InvalidField> {
    // Counting stops past the limit: a hostile megabyte is not walked to the end.
    let chars = text.chars().take(max + 1).count();
    if chars > max {
        return Err(invalid(
            field,
            &format!("is over the limit of {max} characters"),
        ));
    }
    Ok(())
}

fn invalid(field: String, problem: &str) -> InvalidField {
    InvalidField {
        field,
        problem: problem.to_owned(),
    }
}

/// An id as it may appear in an error message: short, whatever its length.
fn shorten(id: &str) -> std::borrow::Cow<'_, str> {
    crate::memory::shorten_to_chars(id, 40)
}
