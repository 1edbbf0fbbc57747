//! Lore: what NPCs know about their world, kept once for all of them.
//!
//! A [`LoreEntry`] has an id, trigger keys, a text and a [`LoreScope`]: the whole
//! world, a group of NPCs, or one NPC. A [`LoreStore`] holds every entry and finds
//! the ones that match a conversation, with the same terms as recall, checking the
//! scope against the [`LoreReader`] on every lookup. The entries found
//! ([`LoreHit`]) reach a reply prompt as [`SharedKnowledge`], in a quoted section
//! of their own; lore is never copied into an NPC's log, so a changed entry is the
//! only version any later prompt sees.

mod entry;
mod store;

#[cfg(test)]
mod tests;

pub use entry::{
    LoreChanges, LoreEntry, LoreScope, MAX_LORE_ENTRIES, MAX_LORE_ID_CHARS, MAX_LORE_KEY_CHARS,
    MAX_LORE_KEYS, MAX_LORE_TEXT_CHARS,
};
pub use store::{LoreHit, LoreLimits, LoreReader, LoreStore};

/// What the world tells one reply prompt beyond the NPC's own memory: the lore
/// entries found for the player's line. Built by the caller (the plugin queries
/// its [`LoreStore`]) and handed to [`Line::knowing`](crate::memory::Line::knowing).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SharedKnowledge {
    /// Lore for this reply, best first.
    pub lore: Vec<LoreHit>,
}

impl SharedKnowledge {
    /// Knowledge made of these lore entries, best first.
    pub fn lore(lore: Vec<LoreHit>) -> Self {
        Self { lore }
    }

    /// Whether there is nothing to add to the prompt.
    pub fn is_empty(&self) -> bool {
        self.lore.is_empty()
    }
}
