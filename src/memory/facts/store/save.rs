//! The saved shape of a store: its limits and a flat list of facts, checked on load.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::super::config::FactLimits;
use super::super::error::FactsError;
use super::super::fact::{Fact, FactStatus};
use super::PinnedFacts;

#[derive(Serialize)]
struct SavedRef<'a> {
    limits: FactLimits,
    facts: Vec<&'a Fact>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Saved {
    #[serde(default)]
    limits: FactLimits,
    facts: Vec<Fact>,
}

impl Serialize for PinnedFacts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let facts = self.all_facts().collect();
        SavedRef {
            limits: self.limits,
            facts,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for PinnedFacts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let saved = Saved::deserialize(deserializer)?;
        PinnedFacts::from_saved(saved).map_err(serde::de::Error::custom)
    }
}

impl PinnedFacts {
    fn from_saved(saved: Saved) -> Result<Self, FactsError> {
        let mut store = PinnedFacts::new(saved.limits);
        for fact in saved.facts {
            let key = &fact.key;
            check_saved_fact(&fact).map_err(FactsError::InvalidSave)?;
            let slot = store.slots.entry(key.clone()).or_default();
            if fact.status != FactStatus::Active {
                slot.history.push(fact);
            } else if slot.active.is_some() {
                return Err(FactsError::InvalidSave(format!(
                    "fact {key} is active twice"
                )));
            } else {
                slot.active = Some(fact);
            }
        }
        Ok(store)
    }
}

/// Why `fact` cannot be in a save, if it cannot. The one rule for both sides:
/// loading refuses what it refuses, and the writer (`MemoryParts::validate`) never
/// writes such a fact, so no save is written that would not load.
pub(crate) fn check_saved_fact(fact: &Fact) -> Result<(), String> {
    let key = &fact.key;
    if fact.value.trim().is_empty() {
        return Err(format!("fact {key} has no value"));
    }
    if !fact.changed_at.is_finite() {
        return Err(format!("fact {key} has no valid time"));
    }
    if let Some(heard) = fact.source.heard() {
        heard
            .check()
            .map_err(|problem| format!("fact {key} was heard, but {problem}"))?;
    }
    Ok(())
}
