//! The summarizer's reply: a summary and fact updates as one strict JSON object.
//!
//! The reply is checked whole before anything is applied, so a reply is either
//! used entirely or refused with a reason (and then retried once, then degraded,
//! like any malformed summary).

use std::collections::BTreeSet;
use std::ops::Range;
use std::sync::Arc;

use serde::Deserialize;

use crate::memory::message::LogIndex;
use crate::memory::recall::{LineNote, MAX_NOTES_PER_SUMMARY};

use super::config::FactsConfig;
use super::error::FactsError;
use super::key::FactKey;

/// A change the summarizer asks for, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct FactUpdate {
    /// Which fact. Always one of the summarizer's categories.
    pub key: FactKey,
    /// What to do with it.
    pub action: FactAction,
    /// Log indices of the messages that support the update, ascending, inside the
    /// messages the summary covered.
    pub evidence: Vec<LogIndex>,
}

/// What an update does to its fact.
#[derive(Clone, Debug, PartialEq)]
pub enum FactAction {
    /// This is the value now. Trimmed, non-empty, within the length limit.
    Set(Arc<str>),
    /// The active value no longer holds.
    MarkOutdated,
    /// The active value was shown to be false.
    MarkContradicted,
}

/// A checked summarizer reply.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryReply {
    /// The new summary, trimmed and non-empty. Its length is still up to the
    /// summary's own limit.
    pub summary: String,
    /// The fact updates, in the order given; at most one per key.
    pub updates: Vec<FactUpdate>,
    /// The notes on lines that passed their checks, in the order given.
    pub notes: Vec<LineNote>,
    /// Notes dropped: malformed, empty, too long, citing no line, too many lines
    /// or a line outside the summary, or past [`MAX_NOTES_PER_SUMMARY`].
    pub dropped_notes: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReply {
    summary: String,
    // Missing means "nothing changed": refusing it would throw away a good summary
    // over an empty list.
    #[serde(default)]
    facts: Vec<RawUpdate>,
    // Notes only help recall: a bad one is dropped, never the summary with it.
    #[serde(default)]
    notes: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNote {
    text: String,
    lines: Vec<LogIndex>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUpdate {
    key: String,
    value: Option<String>,
    status: Option<RawStatus>,
    #[serde(default)]
    evidence: Vec<LogIndex>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum RawStatus {
    Outdated,
    Contradicted,
}

/// Parses and checks a summarizer reply that carries fact updates.
///
/// Accepts exactly one JSON object, optionally inside one markdown code fence
/// (```` ```json ```` … ```` ``` ````) and surrounding whitespace, and nothing else.
/// Unknown fields, wrong types, keys outside the summarizer's categories, empty or
/// over-long values, values without evidence, evidence outside `covered`, a key
/// updated twice and more than `config.max_updates` updates are all refused.
pub fn parse_summary_reply(
    raw: &str,
    covered: Range<LogIndex>,
    config: &FactsConfig,
) -> Result<SummaryReply, FactsError> {
    let reply: RawReply = serde_json::from_str(unfence(raw))
        .map_err(|error| FactsError::Malformed(error.to_string()))?;
    let summary = reply.summary.trim();
    if summary.is_empty() {
        return Err(FactsError::EmptySummary);
    }
    if reply.facts.len() > config.max_updates {
        return Err(FactsError::TooManyUpdates {
            count: reply.facts.len(),
            max: config.max_updates,
        });
    }
    let mut seen = BTreeSet::new();
    let updates = reply
        .facts
        .into_iter()
        .map(|raw| {
            let update = check_update(raw, &covered, config)?;
            if !seen.insert(update.key.clone()) {
                return Err(FactsError::DuplicateKey {
                    key: update.key.to_string(),
                });
            }
            Ok(update)
        })
        .collect::<Result<_, _>>()?;
    let (notes, dropped_notes) = check_notes(reply.notes, &covered);
    Ok(SummaryReply {
        summary: summary.to_owned(),
        updates,
        notes,
        dropped_notes,
    })
}

/// The notes that pass their checks, and how many did not. Anything but a list
/// counts as one dropped note; `null` (no notes) as none.
fn check_notes(raw: serde_json::Value, covered: &Range<LogIndex>) -> (Vec<LineNote>, usize) {
    let list = match raw {
        serde_json::Value::Null => return (Vec::new(), 0),
        serde_json::Value::Array(list) => list,
        _ => return (Vec::new(), 1),
    };
    let total = list.len();
    let notes: Vec<LineNote> = list
        .into_iter()
        .filter_map(|value| {
            let raw: RawNote = serde_json::from_value(value).ok()?;
            LineNote::new(&raw.text, raw.lines, covered.clone()).ok()
        })
        .take(MAX_NOTES_PER_SUMMARY)
        .collect();
    let dropped = total - notes.len();
    (notes, dropped)
}

/// The reply without one surrounding code fence, if it has exactly that shape.
/// Anything else is returned as is, for the JSON parser to refuse.
fn unfence(raw: &str) -> &str {
    let text = raw.trim();
    let Some(inner) = text
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
    else {
        return text;
    };
    match inner.split_once('\n') {
        Some((tag, body)) if tag.trim().is_empty() || tag.trim().eq_ignore_ascii_case("json") => {
            body
        }
        _ => text,
    }
}

fn check_update(
    raw: RawUpdate,
    covered: &Range<LogIndex>,
    config: &FactsConfig,
) -> Result<FactUpdate, FactsError> {
    let key = FactKey::new(&raw.key).map_err(|reason| FactsError::InvalidKey {
        key: raw.key.clone(),
        reason,
    })?;
    if !key.category().model_may_update() {
        return Err(FactsError::UnknownCategory { key: raw.key });
    }
    let action = match (raw.value, raw.status) {
        (Some(value), None) => FactAction::Set(check_value(&key, &value, config.max_value_chars)?),
        (None, Some(RawStatus::Outdated)) => FactAction::MarkOutdated,
        (None, Some(RawStatus::Contradicted)) => FactAction::MarkContradicted,
        _ => return Err(FactsError::AmbiguousUpdate { key: raw.key }),
    };
    if matches!(action, FactAction::Set(_)) && raw.evidence.is_empty() {
        return Err(FactsError::MissingEvidence { key: raw.key });
    }
    if let Some(&index) = raw.evidence.iter().find(|i| !covered.contains(i)) {
        return Err(FactsError::EvidenceOutOfRange {
            key: raw.key,
            index,
            covered: covered.clone(),
        });
    }
    let mut evidence = raw.evidence;
    evidence.sort_unstable();
    evidence.dedup();
    Ok(FactUpdate {
        key,
        action,
        evidence,
    })
}

/// The value trimmed, if it is non-empty and within the length limit.
pub(super) fn check_value(
    key: &FactKey,
    value: &str,
    max_chars: usize,
) -> Result<Arc<str>, FactsError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(FactsError::EmptyValue {
            key: key.to_string(),
        });
    }
    let chars = value.chars().count();
    if chars > max_chars {
        return Err(FactsError::ValueTooLong {
            key: key.to_string(),
            chars,
            max: max_chars,
        });
    }
    Ok(Arc::from(value))
}
