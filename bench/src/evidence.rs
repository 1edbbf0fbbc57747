//! Which turns a LoCoMo question needs, and how much of them a prompt kept.
//!
//! **The rule** (the same in `scripts/check_recall_dump.py`): an evidence turn is
//! *recalled* when the prompt sends it word for word: as a message of its own (the
//! window) or as a recalled line in the system message. The question itself, the
//! prompt's last message, never counts. Summaries, facts and segments do not count,
//! because whether they hold the answer cannot be checked offline.
//!
//! `memory_bench` applies the rule to log indices (the prompt's
//! `AssembledPrompt::log_indices`, or the messages a simple strategy sends); the
//! checker applies it to the text of the dumped prompts. The two agree whenever a
//! turn's text is unique in its conversation, which holds for every turn of
//! `locomo_dev.json`.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Value, json};

/// An evidence id as the data's README says: trim, drop a stray `:` after `D`,
/// strip leading zeros of the session and turn numbers (`D:01:02` is `D1:2`).
pub fn normalize(id: &str) -> String {
    let id = id.trim().replacen("D:", "D", 1);
    match id.split_once(':') {
        Some((session, turn)) => {
            let strip = |s: &str| s.trim_start_matches('0').to_owned();
            format!(
                "D{}:{}",
                strip(session.trim_start_matches('D')),
                strip(turn)
            )
        }
        None => id,
    }
}

/// A question's evidence ids, each list entry split on `;` and spaces and
/// normalized. Ids that name no turn stay in; the caller drops them.
pub fn evidence(qa: &Value) -> Vec<String> {
    qa.get("evidence")
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .flat_map(|s| s.split([';', ' ']))
                .filter(|s| !s.trim().is_empty())
                .map(normalize)
                .collect()
        })
        .unwrap_or_default()
}

/// What one question's prompt kept of its evidence.
#[derive(Clone, Copy, Debug)]
pub struct Found {
    /// Evidence turns recalled.
    pub found: usize,
    /// Evidence turns the question needs (at least one).
    pub wanted: usize,
}

/// Recall figures over many questions, by category.
#[derive(Debug, Default)]
pub struct RecallTally {
    by_category: BTreeMap<u64, Vec<Found>>,
}

/// Categories 1-4 are scored; 5 (adversarial) is reported on its own.
fn scored(category: u64) -> bool {
    (1..=4).contains(&category)
}

impl RecallTally {
    /// Adds one question of `category`.
    pub fn add(&mut self, category: u64, found: Found) {
        self.by_category.entry(category).or_default().push(found);
    }

    /// The figures as JSON: over categories 1-4 the mean share of evidence
    /// recalled (`overall`), the share of questions with any evidence turn
    /// recalled (`any_evidence`) and with all of them (`fully_covered`); then each
    /// category's mean (`by_category`), and its any/all shares.
    pub fn report(&self) -> Value {
        let all: Vec<Found> = self
            .by_category
            .iter()
            .filter(|(c, _)| scored(**c))
            .flat_map(|(_, f)| f.iter().copied())
            .collect();
        let per = |figure: fn(&[Found]) -> f64| {
            self.by_category
                .iter()
                .map(|(c, f)| (c.to_string(), json!(figure(f))))
                .collect::<serde_json::Map<_, _>>()
        };
        json!({
            "overall": mean_recall(&all),
            "any_evidence": any_share(&all),
            "fully_covered": all_share(&all),
            "by_category": per(mean_recall),
            "any_by_category": per(any_share),
            "fully_covered_by_category": per(all_share),
        })
    }
}

fn share(found: &[Found], hit: impl Fn(&Found) -> bool) -> f64 {
    if found.is_empty() {
        0.0
    } else {
        found.iter().filter(|f| hit(f)).count() as f64 / found.len() as f64
    }
}

fn mean_recall(found: &[Found]) -> f64 {
    if found.is_empty() {
        return 0.0;
    }
    found
        .iter()
        .map(|f| f.found as f64 / f.wanted as f64)
        .sum::<f64>()
        / found.len() as f64
}

fn any_share(found: &[Found]) -> f64 {
    share(found, |f| f.found > 0)
}

fn all_share(found: &[Found]) -> f64 {
    share(found, |f| f.found == f.wanted)
}

/// The evidence turns (by any key, such as a log index) that `present` holds.
pub fn count_found<K: std::hash::Hash + Eq>(wanted: &HashSet<K>, present: &HashSet<K>) -> Found {
    Found {
        found: wanted.iter().filter(|k| present.contains(k)).count(),
        wanted: wanted.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_normalized_as_the_data_readme_says() {
        assert_eq!(normalize("D:11:26"), "D11:26");
        assert_eq!(normalize(" D02:04"), "D2:4");
        let qa = json!({"evidence": ["D8:6; D9:17", "D"]});
        assert_eq!(evidence(&qa), ["D8:6", "D9:17", "D"]);
    }

    #[test]
    fn any_and_all_evidence_sit_next_to_the_mean() {
        let mut tally = RecallTally::default();
        tally.add(
            1,
            Found {
                found: 1,
                wanted: 2,
            },
        );
        tally.add(
            4,
            Found {
                found: 0,
                wanted: 1,
            },
        );
        tally.add(
            4,
            Found {
                found: 1,
                wanted: 1,
            },
        );
        tally.add(
            5,
            Found {
                found: 1,
                wanted: 1,
            },
        );
        let r = tally.report();
        assert!((r["overall"].as_f64().unwrap() - 0.5).abs() < 1e-12);
        assert!((r["any_evidence"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert!((r["fully_covered"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(r["by_category"]["4"], 0.5);
        assert_eq!(r["any_by_category"]["1"], 1.0);
        assert_eq!(r["fully_covered_by_category"]["1"], 0.0);
        assert_eq!(
            r["by_category"]["5"], 1.0,
            "reported, but not in the overall"
        );
    }
}
