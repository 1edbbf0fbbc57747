//! Scoring, as the data's `knowledge_check.py` does it: which markers each prompt
//! holds, whether gossip names its teller, and the figures over many questions.

use bevy_npc_memory::memory::PromptMessage;
use serde_json::{Value, json};

use crate::PROVENANCE_WINDOW;
use crate::data::{Question, Scenario};

/// Casefolded, with every run of whitespace one space, as characters (positions
/// are counted in characters, as the Python scorer counts them). Lower-casing
/// stands in for Python's `casefold`; they differ only on a few letters such as
/// `ß`, which the data's markers and names do not use.
fn norm(text: &str) -> Vec<char> {
    let mut out = Vec::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if !space {
                out.push(' ');
            }
            space = true;
        } else {
            space = false;
            out.extend(c.to_lowercase());
        }
    }
    out
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x303F | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF)
}

/// The scorer's token estimate: one per CJK character, one per four others.
fn est_tokens(text: &str) -> usize {
    let (cjk, other) = text.chars().fold((0usize, 0usize), |(c, o), ch| {
        if is_cjk(ch) { (c + 1, o) } else { (c, o + 1) }
    });
    cjk + other.div_ceil(4)
}

/// Start positions of `needle` in `hay`, overlapping ones included.
fn occurrences(hay: &[char], needle: &[char]) -> Vec<usize> {
    if needle.is_empty() || needle.len() > hay.len() {
        return Vec::new();
    }
    (0..=hay.len() - needle.len())
        .filter(|&at| hay[at..at + needle.len()] == *needle)
        .collect()
}

fn contains(hay: &[char], needle: &[char]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

fn word_char(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// Whether the teller's name stands within the window of a marker in `text`.
fn name_near_marker(text: &[char], name: &[char], markers: &[Vec<char>], english: bool) -> bool {
    let names: Vec<(usize, usize)> = occurrences(text, name)
        .into_iter()
        .filter(|&at| {
            !english
                || (!word_char(at.checked_sub(1).and_then(|i| text.get(i)))
                    && !word_char(text.get(at + name.len())))
        })
        .map(|at| (at, at + name.len()))
        .collect();
    markers.iter().any(|marker| {
        occurrences(text, marker).into_iter().any(|a| {
            let b = a + marker.len();
            names.iter().any(|&(na, ne)| {
                a.saturating_sub(ne).max(na.saturating_sub(b)) <= PROVENANCE_WINDOW
            })
        })
    })
}

/// One question's score.
pub(crate) struct Row {
    scenario: String,
    category: String,
    should_know: bool,
    scoped: bool,
    all: bool,
    any: bool,
    provenance: Option<bool>,
    tokens: usize,
}

/// Whether questions of `category` name who passed the knowledge on (`via`), and
/// so are scored for provenance: gossip told by `via[0]`, and lines `via[0]` said
/// in a conversation among NPCs, heard or overheard.
pub(crate) fn needs_teller(category: &str) -> bool {
    matches!(
        category,
        "gossip" | "gossip2" | "conversation" | "overheard"
    )
}

pub(crate) fn score(s: &Scenario, q: &Question, messages: &[PromptMessage]) -> Row {
    let context: Vec<Vec<char>> = messages[..messages.len().saturating_sub(1)]
        .iter()
        .map(|m| norm(&m.content))
        .collect();
    let markers: Vec<Vec<char>> = q.truth.markers.iter().map(|m| norm(m)).collect();
    let present: Vec<bool> = markers
        .iter()
        .map(|m| context.iter().any(|c| contains(c, m)))
        .collect();
    let all = present.iter().all(|&p| p);
    let any = present.iter().any(|&p| p);
    let provenance = (needs_teller(&q.truth.category) && all).then(|| {
        let teller = &q.truth.via[0];
        let name = s
            .npcs
            .iter()
            .find(|n| &n.id == teller)
            .map_or(teller.as_str(), |n| n.name.as_str());
        let name = norm(name);
        context
            .iter()
            .any(|c| name_near_marker(c, &name, &markers, s.language == "en"))
    });
    Row {
        scenario: s.scenario_id.clone(),
        category: q.truth.category.clone(),
        should_know: q.truth.should_know,
        scoped: !q.truth.evidence.is_empty(),
        all,
        any,
        provenance,
        tokens: messages.iter().map(|m| est_tokens(&m.content)).sum(),
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn bit(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

/// The scorer's figures over some rows.
fn summarize(rows: &[&Row]) -> Value {
    let know: Vec<&&Row> = rows.iter().filter(|r| r.should_know).collect();
    let leak: Vec<&&Row> = rows.iter().filter(|r| !r.should_know && r.scoped).collect();
    let adversarial: Vec<&&Row> = rows.iter().filter(|r| !r.scoped).collect();
    let provenance: Vec<bool> = rows.iter().filter_map(|r| r.provenance).collect();
    json!({
        "questions": rows.len(),
        "should_know": know.len(),
        "should_not_know": leak.len(),
        "adversarial": adversarial.len(),
        "knows_recall": mean(know.iter().map(|r| bit(r.all))),
        "any_recall": mean(know.iter().map(|r| bit(r.any))),
        "leak_rate": mean(leak.iter().map(|r| bit(r.any))),
        "adversarial_hit_rate": mean(adversarial.iter().map(|r| bit(r.any))),
        "provenance": mean(provenance.iter().map(|&p| bit(p))),
        "provenance_n": provenance.len(),
        "mean_prompt_tokens": mean(rows.iter().map(|r| r.tokens as f64)),
    })
}

pub(crate) fn report(rows: &[Row]) -> Value {
    let all: Vec<&Row> = rows.iter().collect();
    let mut out = summarize(&all);
    let mut categories: Vec<&str> = Vec::new();
    let mut scenarios: Vec<&str> = Vec::new();
    for r in rows {
        if !categories.contains(&r.category.as_str()) {
            categories.push(&r.category);
        }
        if !scenarios.contains(&r.scenario.as_str()) {
            scenarios.push(&r.scenario);
        }
    }
    let by = |pick: &dyn Fn(&Row) -> &str, keys: &[&str]| -> serde_json::Map<String, Value> {
        keys.iter()
            .map(|&k| {
                let rows: Vec<&Row> = rows.iter().filter(|r| pick(r) == k).collect();
                (k.to_owned(), summarize(&rows))
            })
            .collect()
    };
    out["by_category"] = Value::Object(by(&|r| &r.category, &categories));
    out["by_scenario"] = Value::Object(by(&|r| &r.scenario, &scenarios));
    out
}
