//! The query's terms: the line's words and dates, the conversation's words when the
//! line says little, each weighed by how rare it is in the log; at most
//! [`MAX_QUERY_TERMS`] of them.

use std::ops::Range;
use std::sync::Arc;

use super::config::RecallConfig;
use super::dates;
use super::dictionary::{TermId, term_hash};
use super::index::RecallIndex;
use super::query::{QueryTerm, RecallQuery};
use super::terms::{for_each_cjk_unigram, for_each_term, function_chars};

/// Query terms beyond this many are dropped, least informative first. It bounds
/// the work of a pasted wall of text and lets a `u64` record which terms matched.
pub(super) const MAX_QUERY_TERMS: usize = 64;

/// A query term before it is looked up: its hash, weight, place in the query, and
/// where its text sits in [`Candidates::texts`].
struct Candidate {
    hash: u64,
    weight: f32,
    order: usize,
    text: Range<usize>,
}

/// The query's terms as they are collected, their texts in one string.
#[derive(Default)]
struct Candidates {
    list: Vec<Candidate>,
    texts: String,
}

impl Candidates {
    fn push(&mut self, term: &str, weight: f32) {
        let start = self.texts.len();
        self.texts.push_str(term);
        self.list.push(Candidate {
            hash: term_hash(term),
            weight,
            order: self.list.len(),
            text: start..self.texts.len(),
        });
    }
}

impl RecallIndex {
    /// The query's distinct terms that the index knows, each at the highest weight
    /// it has in the query, at most [`MAX_QUERY_TERMS`] of them.
    pub(super) fn query_terms(
        &self,
        query: &RecallQuery<'_>,
        config: &RecallConfig,
    ) -> Vec<QueryTerm> {
        let own = own_name_terms(query, config);
        let mut candidates = Candidates::default();
        let push = |candidates: &mut Candidates, term: &str, weight: f32| {
            if !own.contains(&term_hash(term)) {
                candidates.push(term, weight);
            }
        };
        for_each_term(query.line, |term| {
            push(&mut candidates, term, function_factor(term, config))
        });
        let unigram_weight = config.cjk_unigram_weight;
        if unigram_weight.is_finite() && unigram_weight > 0.0 {
            for_each_cjk_unigram(query.line, |term| {
                push(&mut candidates, term, unigram_weight)
            });
        }
        if distinct_terms(query.line) < config.context_below_terms {
            let context_start = query.context.len().saturating_sub(config.context_messages);
            for line in &query.context[context_start..] {
                for_each_term(line, |term| {
                    let weight = config.context_weight * function_factor(term, config);
                    push(&mut candidates, term, weight)
                });
            }
        }
        self.date_terms(query, config, &mut candidates);
        let Candidates {
            list: mut candidates,
            texts,
        } = candidates;

        candidates.sort_unstable_by(|a, b| {
            (a.hash.cmp(&b.hash))
                .then(b.weight.total_cmp(&a.weight))
                .then(a.order.cmp(&b.order))
        });
        candidates.dedup_by_key(|candidate| candidate.hash);

        let documents = self.indexed_docs as f32;
        let mut found: Vec<(Candidate, TermId, f32)> = candidates
            .into_iter()
            .filter(|candidate| candidate.weight > 0.0)
            .filter_map(|candidate| {
                let id = self.dictionary.get(candidate.hash)?;
                let doc_freq = self.doc_freq(id) as f32;
                // Lucene's BM25 idf: never negative, even for terms in most messages.
                let idf = (1.0 + (documents - doc_freq + 0.5) / (doc_freq + 0.5)).ln();
                let weight = candidate.weight * idf;
                Some((candidate, id, weight))
            })
            .collect();
        // A term in a large share of the log (in chat, typically the other
        // speaker's name, used in every greeting) behaves like a stopword of this
        // log: it matches greetings, not facts. It is weighed down so that it only
        // ranks messages that match nothing rarer, which still fill the budget
        // better than nothing. A query with nothing rarer keeps its full weights.
        let common = config.common_term_share;
        if common.is_finite() && common > 0.0 && common < 1.0 {
            let limit = common * documents;
            let rare = |entry: &(Candidate, TermId, f32)| (self.doc_freq(entry.1) as f32) <= limit;
            if found.iter().any(rare) {
                let factor = config.common_term_weight.clamp(0.0, 1.0);
                for entry in &mut found {
                    if !rare(entry) {
                        entry.2 *= factor;
                    }
                }
                found.retain(|entry| entry.2 > 0.0);
            }
        }
        if found.len() > MAX_QUERY_TERMS {
            found.sort_unstable_by(|a, b| b.2.total_cmp(&a.2).then(a.0.order.cmp(&b.0.order)));
            found.truncate(MAX_QUERY_TERMS);
        }
        found.sort_unstable_by_key(|(candidate, ..)| candidate.order);
        found
            .into_iter()
            .map(|(candidate, id, weight)| QueryTerm {
                id,
                text: Arc::from(&texts[candidate.text]),
                weight,
            })
            .collect()
    }

    /// The date terms of the query's line, when the index reads dates: the dates it
    /// names, resolved against the query's time (or the newest message's), and
    /// the "has a date" term when it names one or asks "when".
    fn date_terms(
        &self,
        query: &RecallQuery<'_>,
        config: &RecallConfig,
        candidates: &mut Candidates,
    ) {
        let Some(calendar) = self.calendar else {
            return;
        };
        let now = if query.now.is_finite() {
            query.now
        } else {
            self.newest_stamp
        };
        let Some(today) = calendar.day(now) else {
            return;
        };
        let mut buffer = String::new();
        let named = dates::for_each_date_term(query.line, today, &mut buffer, |term| {
            if term != dates::DATED_TERM {
                candidates.push(term, config.date_weight);
            }
        });
        if named || dates::asks_when(query.line) {
            candidates.push(dates::DATED_TERM, config.when_weight);
        }
    }
}

/// The hashes of the NPC's own name's terms, when the config skips them and the
/// line has other terms; else none. An NPC never says its own name, so in a
/// question the name only matches the lines that address it ("Thanks, Mel!"),
/// short lines BM25 ranks high and that rarely hold a fact.
fn own_name_terms(query: &RecallQuery<'_>, config: &RecallConfig) -> Vec<u64> {
    let mut own = Vec::new();
    if !config.skip_own_name {
        return own;
    }
    for_each_term(query.own_name, |term| own.push(term_hash(term)));
    // A Chinese name's single characters would otherwise still match the lines
    // that address the NPC.
    for_each_cjk_unigram(query.own_name, |term| own.push(term_hash(term)));
    let mut others = false;
    for_each_term(query.line, |term| others |= !own.contains(&term_hash(term)));
    if !others {
        own.clear();
    }
    own
}

/// The weight factor of a query term: [`RecallConfig::cjk_function_pair_weight`]
/// for a term of Chinese function characters only, else 1 (every English term).
fn function_factor(term: &str, config: &RecallConfig) -> f32 {
    let (function, all) = function_chars(term);
    if function < all || all == 0 {
        return 1.0;
    }
    let factor = config.cjk_function_pair_weight;
    // A negative or NaN factor would score a match below no match at all.
    if factor >= 0.0 { factor.min(1.0) } else { 0.0 }
}

/// How many distinct terms a line has (stopwords are not terms).
fn distinct_terms(line: &str) -> usize {
    let mut hashes = Vec::new();
    for_each_term(line, |term| hashes.push(term_hash(term)));
    hashes.sort_unstable();
    hashes.dedup();
    hashes.len()
}
