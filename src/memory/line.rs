//! A line said to an NPC, built from its words: who says it, whether it is
//! private, and what the world adds to its reply prompt.

use std::sync::Arc;

use super::lore::SharedKnowledge;
use super::speaker::SpeakerId;

/// A line for [`LayersMut::say`](crate::memory::LayersMut::say). Plain text is a
/// line from the player; the builder methods say more:
///
/// ```
/// use bevy_npc_memory::memory::{Line, SharedKnowledge, SpeakerId};
///
/// let bob = SpeakerId::new("bob", "Bob").unwrap();
/// let line = Line::new("Keep it quiet: the key is under the mat.")
///     .by(&bob)
///     .privately()
///     .knowing(SharedKnowledge::default());
/// assert!(line.is_private());
/// assert_eq!(line.speaker(), &bob);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub(crate) text: Arc<str>,
    pub(crate) speaker: SpeakerId,
    pub(crate) private: bool,
    pub(crate) knowledge: SharedKnowledge,
}

impl Line {
    /// The player says `text`, for anyone to hear, with nothing added.
    pub fn new(text: impl Into<Arc<str>>) -> Self {
        Self {
            text: text.into(),
            speaker: SpeakerId::player(),
            private: false,
            knowledge: SharedKnowledge::default(),
        }
    }

    /// Said by `speaker`: a co-op player or another NPC ([`SpeakerId::npc`]). The
    /// log keeps the speaker, prompts label the line with its name, and a name it
    /// gives is its own fact ([`SpeakerId::fact_key`]). From
    /// [`SpeakerId::player`] nothing changes.
    pub fn by(mut self, speaker: &SpeakerId) -> Self {
        self.speaker = speaker.clone();
        self
    }

    /// The speaker asked the NPC to keep it to itself: it is answered like any
    /// other line, but never passed on to another NPC.
    pub fn privately(mut self) -> Self {
        self.private = true;
        self
    }

    /// What the world adds to this one reply prompt: the lore found for the line,
    /// in a quoted section of its own. It is not recorded anywhere in memory; the
    /// next line brings its own. With nothing in it the prompt is unchanged.
    pub fn knowing(mut self, knowledge: SharedKnowledge) -> Self {
        self.knowledge = knowledge;
        self
    }

    /// The words.
    pub fn text(&self) -> &Arc<str> {
        &self.text
    }

    /// Who says it.
    pub fn speaker(&self) -> &SpeakerId {
        &self.speaker
    }

    /// Whether it must never be passed on.
    pub fn is_private(&self) -> bool {
        self.private
    }
}

impl From<&str> for Line {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl From<&String> for Line {
    fn from(text: &String) -> Self {
        Self::new(text.as_str())
    }
}

impl From<String> for Line {
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

impl From<Arc<str>> for Line {
    fn from(text: Arc<str>) -> Self {
        Self::new(text)
    }
}

impl From<Box<str>> for Line {
    fn from(text: Box<str>) -> Self {
        Self::new(text)
    }
}
