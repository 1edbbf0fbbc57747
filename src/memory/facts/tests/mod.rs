//! Tests of the facts module: the update rules, the strict reply parser, and the
//! prompt section under hostile values.

mod parse;
mod render;
mod sources;
mod store;

use super::*;
use crate::memory::persona::PromptLanguage;

fn key(text: &str) -> FactKey {
    FactKey::new(text).unwrap()
}

fn set(key_text: &str, value: &str, evidence: &[u64]) -> FactUpdate {
    FactUpdate {
        key: key(key_text),
        action: FactAction::Set(value.into()),
        evidence: evidence.to_vec(),
    }
}

fn mark(key_text: &str, action: FactAction) -> FactUpdate {
    FactUpdate {
        key: key(key_text),
        action,
        evidence: Vec::new(),
    }
}
