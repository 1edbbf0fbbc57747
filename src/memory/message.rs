//! The vocabulary shared by every layer: who spoke, what was said, and where it sits in the log.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::origin::Origin;
use super::speaker::SpeakerId;

/// Who spoke a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions to the model: the persona and its memory.
    System,
    /// The player.
    User,
    /// The NPC.
    Assistant,
}

impl Role {
    /// The lower-case name used by OpenAI-style chat APIs.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// Position of a message in an NPC's full chat log (L2).
///
/// The first message is 0 and every new message takes the next number, so an index
/// identifies one message for the whole life of a conversation, across saves.
pub type LogIndex = u64;

/// One entry of the full chat log (L2).
///
/// The text is shared (`Arc<str>`): copying a message into a request or a snapshot
/// never copies the text itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: Arc<str>,
    /// Where it sits in the log.
    pub index: LogIndex,
    /// When it was said, in game seconds: never earlier than the message before it.
    pub timestamp: f64,
    /// Where it came from: the conversation (the default), something the NPC saw,
    /// or something it was told.
    #[serde(default, skip_serializing_if = "Origin::is_said")]
    pub origin: Origin,
    /// Who said a player line, when it was not the default player (a co-op player
    /// or another NPC). `None` for the default player and for every other entry,
    /// so a single-player log and its save carry no speaker at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<SpeakerId>,
}

impl ChatMessage {
    /// Who said it, as prompts and transcripts name them: the speaker's display
    /// name, or `player_label` for the default player. Only meaningful for player
    /// lines.
    pub fn speaker_label<'a>(&'a self, player_label: &'a str) -> &'a str {
        self.speaker
            .as_ref()
            .map_or(player_label, |s| s.label(player_label))
    }

    /// The message as a model sees it.
    pub fn to_prompt(&self) -> PromptMessage {
        PromptMessage {
            role: self.role,
            content: self.content.clone(),
        }
    }
}

/// A message as it is sent to a model: a role and its text, nothing else.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// The text.
    pub content: Arc<str>,
}

impl PromptMessage {
    /// A message with the given role and text.
    pub fn new(role: Role, content: impl Into<Arc<str>>) -> Self {
        Self {
            role,
            content: content.into(),
        }
    }
}

impl Origin {
    /// Why this origin cannot go with an entry of `role`, if it cannot: what a
    /// loaded save is checked against.
    pub(crate) fn check(&self, role: Role) -> Result<(), String> {
        let expected = match self {
            Origin::Said => {
                if role == Role::System {
                    return Err("is a conversation line with the system role".into());
                }
                return Ok(());
            }
            Origin::SaidPrivately => {
                if role == Role::System {
                    return Err("is a private line with the system role".into());
                }
                return Ok(());
            }
            Origin::Witnessed { importance } => {
                if !(0.0..=1.0).contains(importance) {
                    return Err(format!("has importance {importance}, outside 0 to 1"));
                }
                Role::System
            }
            Origin::Heard(hearsay) => {
                hearsay.check()?;
                Role::System
            }
            Origin::Acted(note) => {
                note.check()?;
                Role::System
            }
        };
        if role != expected {
            return Err(format!("does not go with the {} role", role.as_str()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log holds one `ChatMessage` per line for the life of a game, next to
    /// text that averages about 140 bytes a line: the record must stay small. It
    /// was 88 bytes while a speaker was two `Arc<str>`s inline; one pointer made
    /// it 64 (see BENCHMARKS.md, "Resident memory").
    #[test]
    fn a_log_entry_stays_small() {
        assert_eq!(size_of::<Option<SpeakerId>>(), size_of::<usize>());
        assert!(
            size_of::<ChatMessage>() <= 64,
            "ChatMessage grew to {} bytes",
            size_of::<ChatMessage>()
        );
    }
}
