//! One fact, and the record of what a change did to it.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::memory::message::LogIndex;
use crate::memory::npc_id::NpcId;
use crate::memory::origin::{Teller, check_chain, first_told_by};

use super::key::FactKey;

/// Whether a fact still holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactStatus {
    /// It holds, and it is in the prompt.
    Active,
    /// It held once and was replaced or withdrawn.
    Outdated,
    /// It was shown to be false, or the game overruled it.
    Contradicted,
}

/// Who set a fact, which decides whose value wins: the game's word beats what the
/// NPC learned first-hand (the summarizer reading its conversation), which beats
/// hearsay, and hearsay from fewer tellings away beats hearsay from more
/// ([`precedence`](Self::precedence)).
///
/// Saved as `"game"`, `"model"`, or `{"heard": {..}}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactSource {
    /// Game code, e.g. from quest state.
    Game,
    /// The summarizer, from the NPC's own conversation: first-hand.
    Model,
    /// Another NPC told it ([`ShareKnowledge`](crate::knowledge::ShareKnowledge)
    /// with `About::Fact`).
    Heard(Arc<HeardFact>),
}

impl FactSource {
    /// Rank of this source: a lower rank wins. The game is `(0, 0)`, first-hand
    /// `(1, 0)`, hearsay `(2, hops)`.
    pub fn precedence(&self) -> (u8, u32) {
        match self {
            FactSource::Game => (0, 0),
            FactSource::Model => (1, 0),
            FactSource::Heard(heard) => (2, heard.hops),
        }
    }

    /// Whether a value from this source may replace an active value from `other`:
    /// when it ranks as high or higher.
    pub fn outranks_or_equals(&self, other: &FactSource) -> bool {
        self.precedence() <= other.precedence()
    }

    /// The hearsay, if another NPC told it.
    pub fn heard(&self) -> Option<&HeardFact> {
        match self {
            FactSource::Heard(heard) => Some(heard),
            _ => None,
        }
    }
}

/// How an NPC came to know a fact another NPC told it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeardFact {
    /// Who told it, nearest first: the teller, then whoever told the teller, back
    /// to the NPC that knew it first-hand (from its conversation or the game).
    pub chain: Vec<Teller>,
    /// How many tellings lie between that first NPC and this one (1 for a direct
    /// tell). Can exceed the chain's length when old links were dropped.
    pub hops: u32,
    /// Set when the NPC that knew it first-hand made private every line it rested
    /// on, after telling it ([`MarkPrivate`](crate::knowledge::MarkPrivate)): the
    /// listener keeps it, but never passes it on, by telling or in a
    /// conversation among NPCs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub private: bool,
}

impl HeardFact {
    /// The NPC that told it.
    pub fn teller(&self) -> Option<&Teller> {
        self.chain.first()
    }

    /// Whether `npc` is the first NPC of the chain: it told this first-hand.
    pub(crate) fn first_told_by(&self, npc: &NpcId) -> bool {
        first_told_by(&self.chain, npc)
    }

    /// Why this hearsay cannot be loaded, if it cannot.
    pub(crate) fn check(&self) -> Result<(), String> {
        check_chain(&self.chain, self.hops)
    }
}

/// One value of one key, with its status and where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fact {
    /// Which fact.
    pub key: FactKey,
    /// The value, as plain data: never read as an instruction.
    pub value: Arc<str>,
    /// Whether it still holds.
    pub status: FactStatus,
    /// Log indices of the messages that support it, ascending.
    pub evidence: Vec<LogIndex>,
    /// When it got this value or this status, in game seconds.
    pub changed_at: f64,
    /// Who set it.
    pub source: FactSource,
}

impl Fact {
    /// Whether it was heard of lines made private at their source: kept, but
    /// passed on to no other NPC, by telling or in conversation.
    pub(crate) fn is_private_hearsay(&self) -> bool {
        self.source.heard().is_some_and(|heard| heard.private)
    }
}

/// What one update did, for telemetry and the debug panel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FactChange {
    /// Which fact.
    pub key: FactKey,
    /// The active value before, if any.
    pub old: Option<Arc<str>>,
    /// The value the update carried, if any: the new active value, or the value
    /// that was refused.
    pub new: Option<Arc<str>>,
    /// Who asked for it.
    pub source: FactSource,
    /// What happened, and why.
    pub kind: FactChangeKind,
    /// The evidence the update cited.
    pub evidence: Vec<LogIndex>,
}

impl FactChange {
    /// Whether the store changed (refused updates change nothing but history).
    pub fn applied(&self) -> bool {
        self.kind.applied()
    }
}

impl fmt::Display for FactChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let old = self.old.as_deref().unwrap_or("-");
        let new = self.new.as_deref().unwrap_or("-");
        write!(f, "{}: {old:?} -> {new:?} ({})", self.key, self.kind)
    }
}

/// What an update did to a fact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactChangeKind {
    /// A key without an active value got one.
    Added,
    /// The same value again: only its evidence grew.
    Confirmed,
    /// A different value replaced the active one, which is now outdated.
    Replaced,
    /// The model marked the active value outdated; the key has no value now.
    MarkedOutdated,
    /// The model marked the active value contradicted; the key has no value now.
    MarkedContradicted,
    /// The game removed the active value, which is now outdated.
    Removed,
    /// Refused: the game set this key and the model may not change it. A refused
    /// value is kept in history as contradicted.
    OverruledByGame,
    /// Refused: the active value has a better source (first-hand beats hearsay,
    /// fewer hops beat more). The refused value is kept in history as
    /// contradicted, so history keeps every source.
    Outranked,
    /// Refused: there was no active value to mark.
    NothingToMark,
    /// Refused: the store already holds its maximum of active facts.
    StoreFull,
    /// Refused: the model may not update custom keys.
    NotAModelKey,
    /// Refused: the value was empty or too long.
    InvalidValue,
    /// Refused: hearsay that names no NPC that told it.
    NoTeller,
}

impl FactChangeKind {
    /// Whether the store's active facts changed.
    pub fn applied(self) -> bool {
        matches!(
            self,
            FactChangeKind::Added
                | FactChangeKind::Confirmed
                | FactChangeKind::Replaced
                | FactChangeKind::MarkedOutdated
                | FactChangeKind::MarkedContradicted
                | FactChangeKind::Removed
        )
    }
}

impl fmt::Display for FactChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FactChangeKind::Added => "added",
            FactChangeKind::Confirmed => "same value, evidence merged",
            FactChangeKind::Replaced => "replaced, old value outdated",
            FactChangeKind::MarkedOutdated => "marked outdated",
            FactChangeKind::MarkedContradicted => "marked contradicted",
            FactChangeKind::Removed => "removed by the game",
            FactChangeKind::OverruledByGame => "refused: the game set this fact",
            FactChangeKind::Outranked => "refused: the active value has a better source",
            FactChangeKind::NothingToMark => "refused: no active value to mark",
            FactChangeKind::StoreFull => "refused: too many active facts",
            FactChangeKind::NotAModelKey => "refused: the model may not set this key",
            FactChangeKind::InvalidValue => "refused: empty or too long",
            FactChangeKind::NoTeller => "refused: no teller",
        })
    }
}
