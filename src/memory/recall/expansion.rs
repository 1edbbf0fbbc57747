//! Query expansion from the first hits (pseudo-relevance feedback).
//!
//! A multi-hop question names one thing and needs another: "Where did she move
//! from?" finds "since I moved from my home country", and the answer, "my home
//! country, Sweden", shares no word with the question. The best first matches
//! lend their rarest terms to the query at a lower weight, so the second hop is
//! found through the first hit's words, within the same number of messages.

use std::ops::Range;
use std::sync::Arc;

use super::config::RecallConfig;
use super::dictionary::{TermId, term_hash};
use super::index::RecallIndex;
use super::query::{QueryTerm, RecallQuery};
use super::ranking::recallable;
use super::terms::for_each_term;
use crate::memory::message::ChatMessage;

/// Most first matches read for terms. Each is tokenized again, so this bounds
/// the extra work of a query whatever the config says.
const MAX_FEEDBACK_HITS: usize = 8;

/// A term of the first hits that the query lacks.
struct Feedback {
    id: TermId,
    idf: f32,
    /// Summed over the hits holding it, each hit's share of the best hit's score
    /// times the term's idf: a rare term shared by several good hits ranks first.
    gain: f32,
    /// The hit that last counted it, so a word repeated in one line counts once.
    last_hit: usize,
    order: usize,
    text: Range<usize>,
}

impl RecallIndex {
    /// The expansion terms for a query whose first pass has been scored into the
    /// scratch buffers: the most informative terms of its best
    /// [`RecallConfig::expansion_hits`] recallable matches that it does not
    /// already have, at most [`RecallConfig::expansion_terms`] of them, each
    /// weighing [`RecallConfig::expansion_weight`] times its idf.
    ///
    /// Terms in only one message are left out: they could only lift a line
    /// already found. So are the log's common terms
    /// ([`RecallConfig::common_term_share`]): they would match greetings.
    pub(super) fn expansion_terms(
        &mut self,
        query: &RecallQuery<'_>,
        log: &[ChatMessage],
        config: &RecallConfig,
        terms: &[QueryTerm],
        room: usize,
    ) -> Vec<QueryTerm> {
        let hits = config.expansion_hits.min(MAX_FEEDBACK_HITS);
        let wanted = config.expansion_terms.min(room);
        let weight = config.expansion_weight;
        if hits == 0 || wanted == 0 || !(weight.is_finite() && weight > 0.0) {
            return Vec::new();
        }
        let best = self.feedback_hits(query, log, hits);
        let Some(&(top, _)) = best.first() else {
            return Vec::new();
        };
        let documents = self.indexed_docs as f32;
        let common = config.common_term_share;
        let limit = if common.is_finite() && common > 0.0 && common < 1.0 {
            common * documents
        } else {
            documents
        };
        let mut found: Vec<Feedback> = Vec::new();
        let mut texts = String::new();
        for (hit, &(score, doc)) in best.iter().enumerate() {
            let share = if top > 0.0 { score / top } else { 1.0 };
            for_each_term(&log[doc as usize].content, |term| {
                let Some(id) = self.dictionary.get(term_hash(term)) else {
                    return;
                };
                if terms.iter().any(|known| known.id == id) {
                    return;
                }
                if let Some(entry) = found.iter_mut().find(|entry| entry.id == id) {
                    if entry.last_hit != hit {
                        entry.last_hit = hit;
                        entry.gain += share * entry.idf;
                    }
                    return;
                }
                let doc_freq = self.postings.doc_freq(id) as f32;
                if doc_freq < 2.0 || doc_freq > limit {
                    return;
                }
                let idf = (1.0 + (documents - doc_freq + 0.5) / (doc_freq + 0.5)).ln();
                let start = texts.len();
                texts.push_str(term);
                found.push(Feedback {
                    id,
                    idf,
                    gain: share * idf,
                    last_hit: hit,
                    order: found.len(),
                    text: start..texts.len(),
                });
            });
        }
        found.sort_unstable_by(|a, b| b.gain.total_cmp(&a.gain).then(a.order.cmp(&b.order)));
        found.truncate(wanted);
        found
            .into_iter()
            .map(|entry| QueryTerm {
                id: entry.id,
                text: Arc::from(&texts[entry.text]),
                weight: weight * entry.idf,
            })
            .collect()
    }

    /// The best `count` recallable messages by first-pass score, best first.
    fn feedback_hits(
        &mut self,
        query: &RecallQuery<'_>,
        log: &[ChatMessage],
        count: usize,
    ) -> Vec<(f32, u32)> {
        let scratch = &mut self.scratch;
        let docs = &self.docs;
        let ranked = &mut scratch.ranked;
        ranked.clear();
        for &doc in &scratch.touched {
            if !docs[doc as usize].forgotten && recallable(doc.into(), query, log).is_some() {
                ranked.push((scratch.scores[doc as usize], doc));
            }
        }
        let best_first = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        let keep = count.min(ranked.len());
        if keep > 0 && keep < ranked.len() {
            ranked.select_nth_unstable_by(keep - 1, best_first);
        }
        ranked.truncate(keep);
        ranked.sort_unstable_by(best_first);
        ranked.clone()
    }
}
