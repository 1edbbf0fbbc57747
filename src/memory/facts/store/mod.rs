//! The store of pinned facts: one active value per key, updated field by field, with
//! a short history of what each key used to say.

mod save;

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use crate::memory::message::LogIndex;

use super::config::FactLimits;
use super::error::FactsError;
use super::fact::{Fact, FactChange, FactChangeKind, FactSource, FactStatus, HeardFact};
use super::key::FactKey;
use super::update::{FactAction, FactUpdate, check_value};
use crate::memory::origin::bound_chain;

pub(crate) use save::check_saved_fact;

/// Most evidence indices kept per fact, the newest kept. A fact confirmed in every
/// summary would otherwise grow without end.
pub const MAX_EVIDENCE: usize = 32;

#[derive(Clone, Debug, Default, PartialEq)]
struct Slot {
    active: Option<Fact>,
    /// Outdated and contradicted values, oldest first.
    history: Vec<Fact>,
}

/// One NPC's working memory: facts that are never summarized away and always go
/// into the prompt.
///
/// Each key has at most one active value. A new value never appends text: it
/// replaces the active one, which moves to the key's history as outdated. The game's
/// word wins: while a game-set value is active, the model cannot replace or retire
/// it.
///
/// Saved as `{"limits": {..}, "facts": [..]}`: every [`Fact`], history and active
/// alike, grouped by key, oldest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PinnedFacts {
    limits: FactLimits,
    slots: BTreeMap<FactKey, Slot>,
}

impl PinnedFacts {
    /// An empty store with these limits.
    pub fn new(limits: FactLimits) -> Self {
        Self {
            limits,
            slots: BTreeMap::new(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> FactLimits {
        self.limits
    }

    /// Applies new limits. History is trimmed at once; active facts are all kept,
    /// even over a lowered `max_facts`, because pinned facts are never dropped
    /// silently.
    pub fn set_limits(&mut self, limits: FactLimits) {
        self.limits = limits;
        for slot in self.slots.values_mut() {
            trim_history(&mut slot.history, limits.history_per_key);
        }
    }

    /// Active facts.
    pub fn len(&self) -> usize {
        self.slots.values().filter(|s| s.active.is_some()).count()
    }

    /// Whether no fact is active.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The active value of a key.
    pub fn get(&self, key: &FactKey) -> Option<&Fact> {
        self.slots.get(key)?.active.as_ref()
    }

    /// Every active fact, in prompt order: by category priority, then by key.
    pub fn active(&self) -> Vec<&Fact> {
        let mut facts: Vec<&Fact> = self
            .slots
            .values()
            .filter_map(|s| s.active.as_ref())
            .collect();
        facts.sort_by_key(|fact| fact.key.category());
        facts
    }

    /// The outdated and contradicted values of a key, oldest first.
    pub fn history(&self, key: &FactKey) -> &[Fact] {
        self.slots.get(key).map_or(&[], |slot| &slot.history)
    }

    /// Every key with an active value or a history, in key order.
    pub fn keys(&self) -> impl Iterator<Item = &FactKey> {
        self.slots.keys()
    }

    /// Whether any fact, active or in history, cites this message as evidence.
    /// Such messages are worth keeping: the debug panel shows them.
    pub fn is_evidence(&self, index: LogIndex) -> bool {
        self.all_facts()
            .any(|fact| fact.evidence.binary_search(&index).is_ok())
    }

    /// Whether any fact, active or in history, cites a message in `range`.
    pub fn has_evidence_in(&self, range: Range<LogIndex>) -> bool {
        self.all_facts()
            .any(|fact| fact.evidence.iter().any(|index| range.contains(index)))
    }

    pub(crate) fn all_facts(&self) -> impl Iterator<Item = &Fact> {
        self.slots
            .values()
            .flat_map(|slot| slot.history.iter().chain(&slot.active))
    }

    /// Every fact's change time, history and active alike, to rewrite in place
    /// (save migration moves old session times onto one clock).
    pub(crate) fn change_times_mut(&mut self) -> impl Iterator<Item = &mut f64> {
        self.slots.values_mut().flat_map(|slot| {
            slot.history
                .iter_mut()
                .chain(&mut slot.active)
                .map(|fact| &mut fact.changed_at)
        })
    }

    /// Marks private the active facts in `facts` (key and value) that this NPC
    /// heard from a chain starting at `source`: they stay, but are never told
    /// again. Returns how many changed.
    pub(crate) fn withhold_heard(
        &mut self,
        source: &crate::memory::NpcId,
        facts: &[(FactKey, Arc<str>)],
    ) -> usize {
        let mut changed = 0;
        for (key, value) in facts {
            let Some(fact) = self.slots.get_mut(key).and_then(|s| s.active.as_mut()) else {
                continue;
            };
            let FactSource::Heard(heard) = &fact.source else {
                continue;
            };
            if heard.private || !heard.first_told_by(source) || !same_value(&fact.value, value) {
                continue;
            }
            let mut private = (**heard).clone();
            private.private = true;
            fact.source = FactSource::Heard(Arc::new(private));
            changed += 1;
        }
        changed
    }

    /// Forgets every fact and all history.
    pub fn clear(&mut self) {
        self.slots.clear();
    }

    /// Sets a value from game code (e.g. quest state). Any key is allowed. The active
    /// value, if different, becomes outdated; the same value (ignoring case and
    /// surrounding space) takes the game's spelling and becomes game-owned.
    pub fn set_by_game(
        &mut self,
        key: FactKey,
        value: impl AsRef<str>,
        now: f64,
        evidence: Vec<LogIndex>,
    ) -> Result<FactChange, FactsError> {
        let value = check_value(&key, value.as_ref(), self.limits.max_value_chars)?;
        let evidence = normalized(&evidence);
        if self.get(&key).is_none() && self.len() >= self.limits.max_facts {
            return Err(FactsError::TooManyFacts {
                max: self.limits.max_facts,
            });
        }
        let history_cap = self.limits.history_per_key;
        let slot = self.slots.entry(key.clone()).or_default();
        let old = slot.active.as_ref().map(|fact| fact.value.clone());
        let kind = match &mut slot.active {
            Some(active) if same_value(&active.value, &value) => {
                active.value = value.clone();
                active.source = FactSource::Game;
                merge_evidence(&mut active.evidence, &evidence);
                FactChangeKind::Confirmed
            }
            Some(_) => {
                retire(slot, FactStatus::Outdated, now, history_cap);
                slot.active = Some(new_fact(&key, &value, &evidence, now, FactSource::Game));
                FactChangeKind::Replaced
            }
            None => {
                slot.active = Some(new_fact(&key, &value, &evidence, now, FactSource::Game));
                FactChangeKind::Added
            }
        };
        Ok(FactChange {
            key,
            old,
            new: Some(value),
            source: FactSource::Game,
            kind,
            evidence,
        })
    }

    /// Removes a value from game code. It stays in history as outdated. `None` when
    /// the key had no active value.
    pub fn remove_by_game(&mut self, key: &FactKey, now: f64) -> Option<FactChange> {
        let history_cap = self.limits.history_per_key;
        let slot = self.slots.get_mut(key)?;
        let old = retire(slot, FactStatus::Outdated, now, history_cap)?;
        Some(FactChange {
            key: key.clone(),
            old: Some(old),
            new: None,
            source: FactSource::Game,
            kind: FactChangeKind::Removed,
            evidence: Vec::new(),
        })
    }

    /// Applies the summarizer's updates in order and reports what each one did.
    /// Refused updates are reported too; they never change an active value.
    pub fn apply_model_updates(&mut self, updates: &[FactUpdate], now: f64) -> Vec<FactChange> {
        updates
            .iter()
            .map(|update| self.apply_model_update(update, now))
            .collect()
    }

    fn apply_model_update(&mut self, update: &FactUpdate, now: f64) -> FactChange {
        // Updates built by code skip the parser, so key and value are checked here too.
        let action = match &update.action {
            FactAction::Set(value) => check_value(&update.key, value, self.limits.max_value_chars)
                .map(FactAction::Set)
                .ok(),
            mark => Some(mark.clone()),
        };
        let kind = match &action {
            _ if !update.key.category().model_may_update() => FactChangeKind::NotAModelKey,
            None => FactChangeKind::InvalidValue,
            Some(action) => self.decide(&update.key, action, &FactSource::Model),
        };
        let old = self.get(&update.key).map(|fact| fact.value.clone());
        if let Some(action) = &action {
            self.perform(
                kind,
                &update.key,
                action,
                &update.evidence,
                now,
                &FactSource::Model,
            );
        }
        FactChange {
            key: update.key.clone(),
            old,
            new: match action {
                Some(FactAction::Set(value)) => Some(value),
                _ => None,
            },
            source: FactSource::Model,
            kind,
            evidence: update.evidence.clone(),
        }
    }

    /// Another NPC told this one that `key` is `value` ([`HeardFact`]). It goes by
    /// precedence: it becomes the active value when the key has none, or when the
    /// active one has a source no better than this hearsay (hearsay from as many
    /// hops or more); otherwise it is refused as
    /// [`Outranked`](FactChangeKind::Outranked) (or
    /// [`OverruledByGame`](FactChangeKind::OverruledByGame)) and kept in history.
    /// The same value again takes the better of the two sources. Any key may be
    /// heard, custom ones too: the teller's game may have set it. Chains longer,
    /// and names longer, than a save holds are cut to fit as they enter, so what
    /// is heard always saves; hearsay that names no teller is refused as
    /// [`NoTeller`](FactChangeKind::NoTeller).
    pub fn hear(&mut self, key: FactKey, value: &str, heard: HeardFact, now: f64) -> FactChange {
        let mut heard = heard;
        let has_teller = bound_chain(&mut heard.chain, &mut heard.hops);
        let source = FactSource::Heard(Arc::new(heard));
        let value = check_value(&key, value, self.limits.max_value_chars).ok();
        let action = value.clone().filter(|_| has_teller).map(FactAction::Set);
        let kind = match &action {
            None if !has_teller => FactChangeKind::NoTeller,
            None => FactChangeKind::InvalidValue,
            Some(action) => self.decide(&key, action, &source),
        };
        let old = self.get(&key).map(|fact| fact.value.clone());
        if let Some(action) = &action {
            self.perform(kind, &key, action, &[], now, &source);
        }
        FactChange {
            key,
            old,
            new: value,
            source,
            kind,
            evidence: Vec::new(),
        }
    }

    /// What a model update or a piece of hearsay would do to the store as it is.
    fn decide(&self, key: &FactKey, action: &FactAction, source: &FactSource) -> FactChangeKind {
        let active = self.get(key);
        match (action, active) {
            (FactAction::Set(value), Some(active)) if same_value(&active.value, value) => {
                FactChangeKind::Confirmed
            }
            (_, Some(active)) if active.source == FactSource::Game => {
                FactChangeKind::OverruledByGame
            }
            (_, Some(active)) if !source.outranks_or_equals(&active.source) => {
                FactChangeKind::Outranked
            }
            (FactAction::Set(_), Some(_)) => FactChangeKind::Replaced,
            (FactAction::Set(_), None) if self.len() >= self.limits.max_facts => {
                FactChangeKind::StoreFull
            }
            (FactAction::Set(_), None) => FactChangeKind::Added,
            (_, None) => FactChangeKind::NothingToMark,
            (FactAction::MarkContradicted, Some(_)) => FactChangeKind::MarkedContradicted,
            (FactAction::MarkOutdated, Some(_)) => FactChangeKind::MarkedOutdated,
        }
    }

    fn perform(
        &mut self,
        kind: FactChangeKind,
        key: &FactKey,
        action: &FactAction,
        evidence: &[LogIndex],
        now: f64,
        source: &FactSource,
    ) {
        let history_cap = self.limits.history_per_key;
        let value = match action {
            FactAction::Set(value) => Some(value),
            _ => None,
        };
        let model_fact = |status| Fact {
            status,
            ..new_fact(key, value.expect("a set"), evidence, now, source.clone())
        };
        match kind {
            FactChangeKind::Confirmed => {
                let active = self.active_mut(key);
                merge_evidence(&mut active.evidence, evidence);
                // Heard again from nearer, or learned first-hand: the better source
                // is the one that counts from now on.
                if source.precedence() < active.source.precedence() {
                    active.source = source.clone();
                }
            }
            FactChangeKind::OverruledByGame | FactChangeKind::Outranked if value.is_some() => {
                let refused = model_fact(FactStatus::Contradicted);
                record_refused(self.slot(key), refused, history_cap);
            }
            FactChangeKind::Replaced | FactChangeKind::Added => {
                let slot = self.slot(key);
                retire(slot, FactStatus::Outdated, now, history_cap);
                slot.active = Some(model_fact(FactStatus::Active));
            }
            FactChangeKind::MarkedOutdated => {
                retire(self.slot(key), FactStatus::Outdated, now, history_cap);
            }
            FactChangeKind::MarkedContradicted => {
                retire(self.slot(key), FactStatus::Contradicted, now, history_cap);
            }
            _ => {}
        }
    }

    fn slot(&mut self, key: &FactKey) -> &mut Slot {
        self.slots.entry(key.clone()).or_default()
    }

    fn active_mut(&mut self, key: &FactKey) -> &mut Fact {
        self.slot(key)
            .active
            .as_mut()
            .expect("decided on an active fact")
    }
}

fn new_fact(
    key: &FactKey,
    value: &Arc<str>,
    evidence: &[LogIndex],
    now: f64,
    source: FactSource,
) -> Fact {
    Fact {
        key: key.clone(),
        value: value.clone(),
        status: FactStatus::Active,
        evidence: normalized(evidence),
        changed_at: now,
        source,
    }
}

/// Moves the active value to history with `status`, and returns it.
fn retire(slot: &mut Slot, status: FactStatus, now: f64, history_cap: usize) -> Option<Arc<str>> {
    let mut fact = slot.active.take()?;
    fact.status = status;
    fact.changed_at = now;
    let value = fact.value.clone();
    slot.history.push(fact);
    trim_history(&mut slot.history, history_cap);
    Some(value)
}

/// Keeps a refused value in history, so the debug panel shows the model
/// disagreeing with the game, or hearsay that lost to a better source. A source
/// repeating the same claim only grows its evidence instead of filling the history.
fn record_refused(slot: &mut Slot, refused: Fact, history_cap: usize) {
    if let Some(last) = slot.history.last_mut().filter(|last| {
        last.source == refused.source
            && last.status == FactStatus::Contradicted
            && same_value(&last.value, &refused.value)
    }) {
        merge_evidence(&mut last.evidence, &refused.evidence);
        last.changed_at = refused.changed_at;
        return;
    }
    slot.history.push(refused);
    trim_history(&mut slot.history, history_cap);
}

fn trim_history(history: &mut Vec<Fact>, cap: usize) {
    let excess = history.len().saturating_sub(cap);
    history.drain(..excess);
}

/// Whether two values say the same, ignoring case and surrounding space.
fn same_value(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

fn merge_evidence(evidence: &mut Vec<LogIndex>, more: &[LogIndex]) {
    evidence.extend_from_slice(more);
    *evidence = normalized(evidence);
}

/// Ascending, without repeats, the newest [`MAX_EVIDENCE`] kept.
fn normalized(evidence: &[LogIndex]) -> Vec<LogIndex> {
    let mut evidence = evidence.to_vec();
    evidence.sort_unstable();
    evidence.dedup();
    let excess = evidence.len().saturating_sub(MAX_EVIDENCE);
    evidence.drain(..excess);
    evidence
}
