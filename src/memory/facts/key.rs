//! Names of facts: a small, checked slug, so a key can never smuggle text into the prompt.

use std::borrow::Cow;
use std::fmt;

use bevy::reflect::{Reflect, ReflectDeserialize, ReflectSerialize};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::memory::speaker::SpeakerId;

/// Why text is not a valid [`FactKey`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FactKeyError {
    /// The key was empty.
    #[error("the key is empty")]
    Empty,
    /// The key was too long.
    #[error("the key is {len} characters, over the limit of {max}")]
    TooLong {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The key held something other than `a-z`, `0-9`, `_` and `:`.
    #[error("the key holds {0:?}; only a-z, 0-9, '_' and one ':' are allowed")]
    BadCharacter(char),
    /// More than one `:`, or an empty part around it.
    #[error("a key is `name` or `category:subkey`, with both parts non-empty")]
    BadColon,
    /// A single-valued category was given a subkey.
    #[error("`{}` takes no subkey", .0.name())]
    SubkeyNotAllowed(FactCategory),
    /// A multi-valued category was used without a subkey.
    #[error("`{name}` needs a subkey, like `{name}:some_name`", name = .0.name())]
    SubkeyRequired(FactCategory),
}

/// Longest key accepted, in bytes (keys are ASCII, so also in characters).
pub const MAX_KEY_LEN: usize = 48;

/// The name of one fact, such as `player_name` or `promise:fix_radio`.
///
/// A key is lowercase ASCII letters, digits and `_`, with at most one `:` that splits
/// a category from a subkey, and at most 48 characters. The five
/// categories the summarizer may use have a fixed shape: `current_goal` holds one
/// value and takes no subkey; `player_name` is the default player's name, and
/// `player_name:<speaker id>` another speaker's; `constraint`, `preference` and
/// `promise` hold one value per subkey and need one. Any other valid key is
/// [`FactCategory::Custom`], which only the game may set.
///
/// It reflects as an opaque value written as its text.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(opaque)]
#[reflect(Serialize, Deserialize, Debug, PartialEq, Hash, Clone)]
pub struct FactKey(Cow<'static, str>);

impl FactKey {
    /// The player's name.
    pub const PLAYER_NAME: FactKey = FactKey(Cow::Borrowed("player_name"));
    /// What the player is trying to do right now.
    pub const CURRENT_GOAL: FactKey = FactKey(Cow::Borrowed("current_goal"));

    /// A key from text, checked.
    pub fn new(key: &str) -> Result<Self, FactKeyError> {
        check(key)?;
        Ok(Self(Cow::Owned(key.to_owned())))
    }

    /// `constraint:<subkey>`: a hard rule, such as `constraint:no_weapons`.
    pub fn constraint(subkey: &str) -> Result<Self, FactKeyError> {
        Self::in_category(FactCategory::Constraint, subkey)
    }

    /// `preference:<subkey>`: something the player likes or dislikes.
    pub fn preference(subkey: &str) -> Result<Self, FactKeyError> {
        Self::in_category(FactCategory::Preference, subkey)
    }

    /// `promise:<subkey>`: something the player or the NPC promised to do.
    pub fn promise(subkey: &str) -> Result<Self, FactKeyError> {
        Self::in_category(FactCategory::Promise, subkey)
    }

    /// `player_name:<speaker id>`: the name a speaker other than the default
    /// player gave (see [`SpeakerId::fact_key`](crate::memory::SpeakerId::fact_key)),
    /// so co-op players' names never overwrite each other. The id is checked by
    /// [`SpeakerId`](crate::memory::SpeakerId), so the key is always valid.
    pub(crate) fn player_name_of(speaker_id: &str) -> Self {
        let key = format!("{}:{speaker_id}", FactCategory::PlayerName.name());
        debug_assert!(check(&key).is_ok(), "{key}");
        Self(Cow::Owned(key))
    }

    fn in_category(category: FactCategory, subkey: &str) -> Result<Self, FactKeyError> {
        Self::new(&format!("{}:{subkey}", category.name()))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The category, read from the part before the `:`.
    pub fn category(&self) -> FactCategory {
        let head = self.0.split(':').next().unwrap_or_default();
        FactCategory::from_name(head).unwrap_or(FactCategory::Custom)
    }

    /// The part after the `:`, if any.
    pub fn subkey(&self) -> Option<&str> {
        self.0.split_once(':').map(|(_, subkey)| subkey)
    }
}

fn check(key: &str) -> Result<(), FactKeyError> {
    if key.is_empty() {
        return Err(FactKeyError::Empty);
    }
    if key.len() > MAX_KEY_LEN {
        return Err(FactKeyError::TooLong {
            len: key.len(),
            max: MAX_KEY_LEN,
        });
    }
    if let Some(bad) = key
        .chars()
        .find(|&c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == ':'))
    {
        return Err(FactKeyError::BadCharacter(bad));
    }
    let (head, subkey) = match key.split_once(':') {
        Some((head, subkey)) => (head, Some(subkey)),
        None => (key, None),
    };
    if head.is_empty() || subkey.is_some_and(|s| s.is_empty() || s.contains(':')) {
        return Err(FactKeyError::BadColon);
    }
    // A well-known category name must be used in its own shape, or `current_goal:x`
    // would be a second goal. `player_name:x` is the name of speaker `x`, one per
    // speaker, rendered with whose it is.
    match (FactCategory::from_name(head), subkey) {
        (Some(category), Some(_))
            if !category.is_multi_valued() && category != FactCategory::PlayerName =>
        {
            Err(FactKeyError::SubkeyNotAllowed(category))
        }
        (Some(category), None) if category.is_multi_valued() => {
            Err(FactKeyError::SubkeyRequired(category))
        }
        _ => Ok(()),
    }
}

impl fmt::Debug for FactKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FactKey({:?})", self.as_str())
    }
}

impl fmt::Display for FactKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for FactKey {
    type Err = FactKeyError;

    fn from_str(key: &str) -> Result<Self, Self::Err> {
        Self::new(key)
    }
}

impl Serialize for FactKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

// Checked on load too: a hand-edited savegame must not get past the rules either.
impl<'de> Deserialize<'de> for FactKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let key = String::deserialize(deserializer)?;
        check(&key).map_err(serde::de::Error::custom)?;
        Ok(Self(Cow::Owned(key)))
    }
}

/// What kind of fact a key names. The order is the priority in the prompt: when a
/// budget forces facts out, the last ones go first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactCategory {
    /// `player_name`, or `player_name:<speaker id>` for a speaker other than the
    /// default player.
    PlayerName,
    /// `constraint:<subkey>`.
    Constraint,
    /// `current_goal`.
    CurrentGoal,
    /// `promise:<subkey>`.
    Promise,
    /// `preference:<subkey>`.
    Preference,
    /// Any other key. Only the game sets these.
    Custom,
}

impl FactCategory {
    /// The categories the summarizer may update, in priority order.
    pub const MODEL_CATEGORIES: [FactCategory; 5] = [
        FactCategory::PlayerName,
        FactCategory::Constraint,
        FactCategory::CurrentGoal,
        FactCategory::Promise,
        FactCategory::Preference,
    ];

    /// The name used in keys, e.g. `"promise"`; `"custom"` for custom keys.
    pub fn name(self) -> &'static str {
        match self {
            FactCategory::PlayerName => "player_name",
            FactCategory::Constraint => "constraint",
            FactCategory::CurrentGoal => "current_goal",
            FactCategory::Promise => "promise",
            FactCategory::Preference => "preference",
            FactCategory::Custom => "custom",
        }
    }

    /// Whether keys of this category carry a subkey, one value each.
    pub fn is_multi_valued(self) -> bool {
        matches!(
            self,
            FactCategory::Constraint | FactCategory::Promise | FactCategory::Preference
        )
    }

    /// Whether the summarizer may update facts of this category.
    pub fn model_may_update(self) -> bool {
        self != FactCategory::Custom
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::MODEL_CATEGORIES
            .into_iter()
            .find(|category| category.name() == name)
    }
}

impl SpeakerId {
    /// The fact key for the name this speaker gives: `player_name` for the
    /// default player, `player_name:<id>` for anyone else, so co-op players' names
    /// never overwrite each other.
    pub fn fact_key(&self) -> FactKey {
        if self.is_player() {
            FactKey::PLAYER_NAME
        } else {
            FactKey::player_name_of(self.id())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_keys_have_their_category() {
        assert_eq!(FactKey::PLAYER_NAME.category(), FactCategory::PlayerName);
        assert_eq!(FactKey::CURRENT_GOAL.category(), FactCategory::CurrentGoal);
        let promise = FactKey::promise("fix_radio").unwrap();
        assert_eq!(promise.as_str(), "promise:fix_radio");
        assert_eq!(promise.category(), FactCategory::Promise);
        assert_eq!(promise.subkey(), Some("fix_radio"));
        assert_eq!(
            FactKey::constraint("no_weapons").unwrap().category(),
            FactCategory::Constraint
        );
        assert_eq!(
            FactKey::preference("music").unwrap().category(),
            FactCategory::Preference
        );
        assert_eq!(FactKey::new("player_name").unwrap(), FactKey::PLAYER_NAME);
        let bobs = FactKey::new("player_name:p2").unwrap();
        assert_eq!(bobs.category(), FactCategory::PlayerName);
        assert_eq!(bobs.subkey(), Some("p2"));
        assert_eq!(FactKey::player_name_of("p2"), bobs);
    }

    #[test]
    fn other_valid_keys_are_custom() {
        for key in ["quest_stage", "system", "quest:power_room", "door_2"] {
            assert_eq!(FactKey::new(key).unwrap().category(), FactCategory::Custom);
        }
    }

    #[test]
    fn hostile_or_malformed_keys_are_rejected() {
        let cases = [
            ("", FactKeyError::Empty),
            ("System", FactKeyError::BadCharacter('S')),
            ("system: ignore", FactKeyError::BadCharacter(' ')),
            ("a\nsystem", FactKeyError::BadCharacter('\n')),
            ("</facts>", FactKeyError::BadCharacter('<')),
            ("前情提要", FactKeyError::BadCharacter('前')),
            ("a:b:c", FactKeyError::BadColon),
            (":x", FactKeyError::BadColon),
            ("promise:", FactKeyError::BadColon),
            (
                "current_goal:x",
                FactKeyError::SubkeyNotAllowed(FactCategory::CurrentGoal),
            ),
            ("player_name:", FactKeyError::BadColon),
            ("player_name:P2", FactKeyError::BadCharacter('P')),
            (
                "constraint",
                FactKeyError::SubkeyRequired(FactCategory::Constraint),
            ),
        ];
        for (key, error) in cases {
            assert_eq!(FactKey::new(key), Err(error), "{key:?}");
        }
        let long = "a".repeat(MAX_KEY_LEN + 1);
        assert!(matches!(
            FactKey::new(&long),
            Err(FactKeyError::TooLong { .. })
        ));
        assert!(FactKey::new(&"a".repeat(MAX_KEY_LEN)).is_ok());
    }

    #[test]
    fn keys_are_checked_when_loaded() {
        let key: FactKey = serde_json::from_str("\"promise:fix_radio\"").unwrap();
        assert_eq!(
            serde_json::to_string(&key).unwrap(),
            "\"promise:fix_radio\""
        );
        assert!(serde_json::from_str::<FactKey>("\"System: hi\"").is_err());
    }
}
