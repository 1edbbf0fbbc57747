//! L2: the full chat log. Append-only; nothing is ever removed.

use std::ops::Range;
use std::sync::Arc;

use super::message::{ChatMessage, LogIndex, Role};
use super::origin::Origin;
use super::speaker::SpeakerId;

/// Every message an NPC has exchanged with the player, in order (L2).
///
/// The log drives UI history and savegames. It is append-only: the window (L1) and
/// the summaries (L3) only ever point into it. A message's [`LogIndex`] is its
/// position here.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatLog {
    messages: Vec<ChatMessage>,
    /// Every speaker other than the default player with a line here, first seen
    /// first, each with the name of its newest line. Kept on append so prompts can
    /// tell whether to label lines, and whose a name fact is, without a scan.
    speakers: Vec<SpeakerId>,
}

impl ChatLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends an entry and returns its index. Only the layers append (see
    /// `LayersMut`), so that the window and the summaries always account for every
    /// entry.
    pub(crate) fn append_from(
        &mut self,
        role: Role,
        content: impl Into<Arc<str>>,
        timestamp: f64,
        origin: Origin,
        speaker: Option<SpeakerId>,
    ) -> LogIndex {
        let index = self.next_index();
        // The default player is never stored: a single-player log saves no speaker.
        let speaker = speaker.filter(|s| !s.is_player());
        if let Some(speaker) = &speaker {
            match self.speakers.iter_mut().find(|s| s.id() == speaker.id()) {
                Some(known) => known.clone_from(speaker),
                None => self.speakers.push(speaker.clone()),
            }
        }
        // The log only grows: by an eighth, not doubling, so at most about an
        // eighth of it is spare room (doubling left up to half of it).
        super::recall::reserve_gently(&mut self.messages, 1);
        self.messages.push(ChatMessage {
            role,
            content: content.into(),
            index,
            timestamp,
            origin,
            speaker,
        });
        index
    }

    /// A conversation line, for tests that build logs by hand.
    #[cfg(test)]
    pub(crate) fn append(
        &mut self,
        role: Role,
        content: impl Into<Arc<str>>,
        timestamp: f64,
    ) -> LogIndex {
        self.append_from(role, content, timestamp, Origin::Said, None)
    }

    /// Changes where an entry came from (a player line made private afterwards).
    /// The text and time never change. Returns whether the entry exists.
    pub(crate) fn set_origin(&mut self, index: LogIndex, origin: Origin) -> bool {
        match usize::try_from(index)
            .ok()
            .and_then(|i| self.messages.get_mut(i))
        {
            Some(message) => {
                message.origin = origin;
                true
            }
            None => false,
        }
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether nothing has been said yet.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The index the next message will get.
    pub fn next_index(&self) -> LogIndex {
        self.messages.len() as LogIndex
    }

    /// Every message, oldest first.
    pub fn messages(&self) -> &[ChatMessage] {
        &self.messages
    }

    /// Every speaker other than the default player who has a line in the log,
    /// first seen first, each with the display name of its newest line. Empty for
    /// a single-player conversation.
    pub fn speakers(&self) -> &[SpeakerId] {
        &self.speakers
    }

    /// One message by index.
    pub fn get(&self, index: LogIndex) -> Option<&ChatMessage> {
        self.messages.get(usize::try_from(index).ok()?)
    }

    /// The messages in a range of indices, clamped to what exists.
    pub fn range(&self, range: Range<LogIndex>) -> &[ChatMessage] {
        let end = clamp_index(range.end, self.messages.len());
        let start = clamp_index(range.start, end);
        &self.messages[start..end]
    }

    /// The messages from `start` to the end.
    pub fn tail_from(&self, start: LogIndex) -> &[ChatMessage] {
        self.range(start..self.next_index())
    }
}

fn clamp_index(index: LogIndex, len: usize) -> usize {
    usize::try_from(index).map_or(len, |i| i.min(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_positions() {
        let mut log = ChatLog::new();
        assert_eq!(log.append(Role::User, "hi", 1.0), 0);
        assert_eq!(log.append(Role::Assistant, "hello", 2.0), 1);
        assert_eq!(log.len(), 2);
        assert_eq!(log.get(1).unwrap().content.as_ref(), "hello");
        assert_eq!(log.get(1).unwrap().timestamp, 2.0);
        assert!(log.get(2).is_none());
    }

    #[test]
    fn ranges_are_clamped() {
        let mut log = ChatLog::new();
        for i in 0..3 {
            log.append(Role::User, i.to_string(), 0.0);
        }
        assert_eq!(log.range(1..10).len(), 2);
        assert_eq!(log.range(5..10).len(), 0);
        assert_eq!(log.tail_from(2)[0].content.as_ref(), "2");
    }
}
