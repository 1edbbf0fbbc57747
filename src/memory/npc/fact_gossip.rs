//! Facts passed from one NPC to another: the teller's active value of one key, which
//! the listener keeps as hearsay below anything it knows better.

use std::sync::Arc;

use super::super::clock::{Now, stamp};
use super::super::facts::{Fact, FactChange, FactKey, FactSource, HeardFact};
use super::super::origin::{MAX_CHAIN, Origin, Teller};
use super::LayersMut;
use crate::memory::NpcId;

/// A pinned fact an NPC can pass on, ready for the listener's
/// [`LayersMut::hear_fact`].
#[derive(Clone, Debug, PartialEq)]
pub struct ToldFact {
    /// Which fact.
    pub key: FactKey,
    /// The teller's active value.
    pub value: Arc<str>,
    /// Who tells it, and who told the teller.
    pub heard: HeardFact,
}

impl LayersMut<'_> {
    /// What this NPC, called `teller`, can pass on of its fact `key`: its active
    /// value, or `None` when it has none or may not pass it on.
    ///
    /// - A fact the game set, or the summarizer read in its own conversation, is
    ///   first-hand, and goes under the persona's `sharing.said`; one another NPC
    ///   told it goes under `sharing.heard`.
    /// - A fact whose every piece of evidence is a private line (or the reply to
    ///   one) is private: the player said it in confidence. A fact without evidence
    ///   (most game-set ones) is not.
    pub fn tell_fact(&self, key: &FactKey, teller: &Teller) -> Option<ToldFact> {
        let fact = self.context.facts.get(key)?;
        let sharing = &self.context.features.sharing;
        let heard = match &fact.source {
            FactSource::Game | FactSource::Model => {
                if !sharing.said || self.is_private(fact) {
                    return None;
                }
                HeardFact {
                    chain: vec![teller.clone()],
                    hops: 1,
                    private: false,
                }
            }
            FactSource::Heard(heard) => {
                if !sharing.heard || heard.private {
                    return None;
                }
                let mut chain = Vec::with_capacity(heard.chain.len() + 1);
                chain.push(teller.clone());
                chain.extend(heard.chain.iter().take(MAX_CHAIN - 1).cloned());
                HeardFact {
                    chain,
                    hops: heard.hops.saturating_add(1),
                    private: false,
                }
            }
        };
        Some(ToldFact {
            key: key.clone(),
            value: fact.value.clone(),
            heard,
        })
    }

    /// Another NPC told this one a fact ([`tell_fact`](Self::tell_fact)). It
    /// enters the pinned facts by precedence ([`PinnedFacts::hear`](crate::memory::PinnedFacts::hear)):
    /// it never replaces what the game set or the NPC learned first-hand, nor
    /// nearer hearsay, and a value that loses stays in the key's history. The
    /// change time is `now`, never earlier than the log's newest message.
    pub fn hear_fact(&mut self, told: ToldFact, now: impl Into<Now>) -> FactChange {
        let now = stamp(now.into().seconds, self.last_stamp());
        self.context
            .facts
            .hear(told.key, &told.value, told.heard, now)
    }

    /// The active facts [`tell_fact`](Self::tell_fact) keeps to itself because
    /// every line they rest on is private, as key and value.
    pub fn private_facts(&self) -> Vec<(FactKey, Arc<str>)> {
        let facts = self.context.facts.active();
        let private = facts.into_iter().filter(|fact| self.is_private(fact));
        private.map(|f| (f.key.clone(), f.value.clone())).collect()
    }

    /// NPC `source` made private every line the facts in `facts` rest on, after
    /// telling them ([`private_facts`](Self::private_facts)): what this NPC heard
    /// of them stays, but is never told again. Returns how many facts changed.
    pub fn withhold_told_facts(&mut self, source: &NpcId, facts: &[(FactKey, Arc<str>)]) -> usize {
        self.context.facts.withhold_heard(source, facts)
    }

    /// Whether every message a fact cites is private.
    fn is_private(&self, fact: &Fact) -> bool {
        !fact.evidence.is_empty()
            && fact.evidence.iter().all(|&index| {
                self.log
                    .get(index)
                    .is_none_or(|m| m.origin == Origin::SaidPrivately)
            })
    }
}
