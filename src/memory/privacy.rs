//! Who a private line may reach: a prompt addressed to one speaker leaves out the
//! lines another speaker said privately, the NPC's replies to them, and what was
//! made from them (summaries that cover them, pinned facts that cite them).
//!
//! The assembly decides this, not the model: a line a model never reads is one it
//! cannot repeat to the wrong listener in its own words.

use std::borrow::Cow;
use std::ops::Range;

use super::facts::{Fact, PinnedFacts};
use super::log::ChatLog;
use super::message::{ChatMessage, LogIndex, Role};
use super::origin::Origin;
use super::speaker::SpeakerId;

/// Who a prompt speaks to: the speaker of the log's newest line to the NPC, `None`
/// for the game's default player (and for a log with no line yet).
///
/// In company the reply is heard by everyone present: when another NPC's line
/// and a line from someone else came since the NPC last spoke (a conversation
/// among three NPCs, or the player joining one), the prompt is addressed to
/// [`SpeakerId::group`], which no private line belongs to, so every private
/// line is left out. Lines from two players alone are not company: a reply that
/// failed leaves a player's line unanswered before the next one. A private
/// newest line is always addressed to its speaker, who said it for the NPC
/// alone.
pub(crate) fn addressee(log: &ChatLog) -> Option<&SpeakerId> {
    let mut since_npc_spoke = log
        .messages()
        .iter()
        .rev()
        .take_while(|m| !is_npc_line(m))
        .filter(|m| is_line_to_npc(m));
    if let Some(newest) = since_npc_spoke.next() {
        let private = newest.origin == Origin::SaidPrivately;
        let by_npc = |m: &ChatMessage| m.speaker.as_ref().is_some_and(|s| s.as_npc().is_some());
        let mut npc_heard = by_npc(newest);
        let mut others = false;
        for line in since_npc_spoke {
            npc_heard |= by_npc(line);
            others |= line.speaker != newest.speaker;
        }
        if others && npc_heard && !private {
            return Some(SpeakerId::group());
        }
        return newest.speaker.as_ref();
    }
    log.messages()
        .iter()
        .rev()
        .find(|m| is_line_to_npc(m))
        .and_then(|m| m.speaker.as_ref())
}

/// Whether an entry is the NPC's own spoken line.
fn is_npc_line(message: &ChatMessage) -> bool {
    message.role == Role::Assistant
        && matches!(message.origin, Origin::Said | Origin::SaidPrivately)
}

/// The entries of a log that a prompt addressed to one speaker must leave out,
/// in log order, and whether that speaker is another NPC.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Withheld {
    entries: Vec<LogIndex>,
    /// Addressed to another NPC or to NPCs in company: what the NPC heard of
    /// lines made private at their source is left out too, since saying it to
    /// an NPC would pass it on.
    among_npcs: bool,
    /// Whether that leaves out a pinned fact.
    hides_facts: bool,
}

impl Withheld {
    /// The private lines of every speaker but `addressee`, and the NPC's replies
    /// to them; for another NPC, also hearsay made private at its source, in
    /// `log` and among `facts`.
    pub(crate) fn from(log: &ChatLog, addressee: Option<&SpeakerId>, facts: &PinnedFacts) -> Self {
        let among_npcs = addressee.is_some_and(SpeakerId::is_among_npcs);
        let mut withheld = Vec::new();
        // A reply is as private as the line it answers, and belongs to its
        // speaker. A private reply answers the newest private line before it:
        // players' lines enter the log one turn at a time, so only another NPC's
        // line (in a conversation) can come between a private line and its reply.
        let mut speaker_of_line: Option<&SpeakerId> = None;
        for message in log.messages() {
            if is_line_to_npc(message) && message.origin == Origin::SaidPrivately {
                speaker_of_line = message.speaker.as_ref();
            }
            if among_npcs && message.origin.is_private_hearsay() {
                withheld.push(message.index);
                continue;
            }
            if message.origin != Origin::SaidPrivately {
                continue;
            }
            let party = if message.role == Role::User {
                message.speaker.as_ref()
            } else {
                speaker_of_line
            };
            if party != addressee {
                withheld.push(message.index);
            }
        }
        let hides_facts = among_npcs && facts.active().iter().any(|fact| fact.is_private_hearsay());
        Self {
            entries: withheld,
            among_npcs,
            hides_facts,
        }
    }

    /// Whether nothing is withheld: the prompt is built as if privacy did not exist.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty() && !self.hides_facts
    }

    /// Whether the entry at `index` is withheld.
    pub(crate) fn contains(&self, index: LogIndex) -> bool {
        self.entries.binary_search(&index).is_ok()
    }

    /// Whether any withheld entry lies in `range`: a summary of it would pass the
    /// private line on.
    pub(crate) fn any_in(&self, range: &Range<LogIndex>) -> bool {
        let first = self.entries.partition_point(|&i| i < range.start);
        self.entries.get(first).is_some_and(|&i| i < range.end)
    }

    /// Whether any of `evidence` is withheld: a fact citing it says what it said.
    pub(crate) fn any_of(&self, evidence: &[LogIndex]) -> bool {
        evidence.iter().any(|&i| self.contains(i))
    }

    /// Whether a pinned fact is left out: it cites a withheld entry, or it was
    /// heard of lines made private at their source and the prompt speaks to NPCs.
    pub(crate) fn hides_fact(&self, fact: &Fact) -> bool {
        self.any_of(&fact.evidence) || (self.among_npcs && fact.is_private_hearsay())
    }

    /// `messages` without the withheld ones; borrowed when none is.
    pub(crate) fn keep<'a>(&self, messages: &'a [ChatMessage]) -> Cow<'a, [ChatMessage]> {
        if messages.iter().any(|m| self.contains(m.index)) {
            Cow::Owned(
                messages
                    .iter()
                    .filter(|m| !self.contains(m.index))
                    .cloned()
                    .collect(),
            )
        } else {
            Cow::Borrowed(messages)
        }
    }
}

/// The newest line said to the NPC: the one a reply prompt built now answers.
pub(crate) fn newest_line_to_npc(log: &ChatLog) -> Option<&ChatMessage> {
    log.messages().iter().rev().find(|m| is_line_to_npc(m))
}

/// Whether an entry is a line said to the NPC (a player's, a co-op player's or
/// another NPC's), not an event, hearsay or a note.
pub(crate) fn is_line_to_npc(message: &ChatMessage) -> bool {
    message.role == Role::User && matches!(message.origin, Origin::Said | Origin::SaidPrivately)
}

#[cfg(test)]
mod tests;
