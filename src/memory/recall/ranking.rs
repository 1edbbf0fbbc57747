//! Ranking: BM25 over the query's terms, mild speaker and recency weights, then
//! the neighbours of the best matches.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;

use super::config::RecallConfig;
use super::index::RecallIndex;
use super::query_terms::MAX_QUERY_TERMS;
use crate::memory::message::{ChatMessage, LogIndex, Role};

use super::query::{QueryTerm, RecallHit, RecallQuery, RecallReason};

/// A direct match: score, message, and which query terms it holds.
struct Match {
    score: f32,
    doc: u32,
    terms: u64,
}

impl RecallIndex {
    /// The old messages most relevant to a query, best first.
    ///
    /// `log` is the NPC's full log, with `log[i].index == i`; it gives speakers,
    /// timestamps and neighbours. Messages in `query.exclude`, the new line itself,
    /// system messages and forgotten messages are never returned. At most
    /// [`RecallConfig::max_messages`] hits come back, neighbours included, ordered
    /// by score and then by index, so equal scores always come out the same way.
    /// Each returned message's
    /// [`access_count`](Self::access_count) goes up by one.
    ///
    /// Returns nothing when recall is disabled or nothing matches.
    pub fn query(
        &mut self,
        query: &RecallQuery<'_>,
        log: &[ChatMessage],
        config: &RecallConfig,
    ) -> Vec<RecallHit> {
        let hits = self.candidates(query, log, config);
        self.count_access(hits.iter().map(|hit| hit.index));
        hits
    }

    /// [`query`](Self::query) without counting access: for a caller that sends
    /// only some of the hits (a prompt under a budget) and counts those itself
    /// with [`count_access`](Self::count_access), so that lines the budget left
    /// out are not kept from forgetting as if they had been recalled.
    pub(crate) fn candidates(
        &mut self,
        query: &RecallQuery<'_>,
        log: &[ChatMessage],
        config: &RecallConfig,
    ) -> Vec<RecallHit> {
        if !config.enabled || config.max_messages == 0 || self.indexed_docs == 0 {
            return Vec::new();
        }
        let mut terms = self.query_terms(query, config);
        if terms.is_empty() {
            return Vec::new();
        }
        self.score_messages(&terms, 0, config);
        let room = MAX_QUERY_TERMS - terms.len();
        let expansion = self.expansion_terms(query, log, config, &terms, room);
        if !expansion.is_empty() {
            let first = terms.len();
            terms.extend(expansion);
            self.score_messages(&terms, first, config);
        }
        self.smooth_by_passage(query, config);
        let matches = self.best_matches(query, log, config);
        let mut hits: Vec<RecallHit> = matches
            .iter()
            .map(|found| RecallHit {
                index: LogIndex::from(found.doc),
                score: found.score,
                reason: RecallReason::Matched {
                    terms: matched_terms(&terms, found.terms),
                },
            })
            .collect();
        if config.neighbours {
            hits = self.with_neighbours(hits, query, log, config);
        }
        hits
    }

    /// Accumulates the BM25 scores of `terms[first..]` and their matched-term bits
    /// (a term's bit is its place in `terms`) into the scratch buffers.
    fn score_messages(&mut self, terms: &[QueryTerm], first: usize, config: &RecallConfig) {
        // Out-of-range parameters fall back to a bound or the default instead of
        // poisoning every score with NaN.
        let k1 = if config.bm25_k1.is_finite() {
            config.bm25_k1.max(0.0)
        } else {
            RecallConfig::default().bm25_k1
        };
        let b = if config.bm25_b.is_nan() {
            RecallConfig::default().bm25_b
        } else {
            config.bm25_b.clamp(0.0, 1.0)
        };
        let average_length = self.total_terms as f32 / self.indexed_docs as f32;
        let note_weight = if config.note_weight.is_finite() && config.note_weight >= 0.0 {
            config.note_weight
        } else {
            1.0
        };
        // BM25's length normalization, k1 · (1 - b + b · length / average), as a + c · length.
        let fixed = k1 * (1.0 - b);
        let per_term = k1 * b / average_length;
        let scratch = &mut self.scratch;
        if scratch.scores.len() < self.docs.len() {
            scratch.scores.resize(self.docs.len(), 0.0);
            scratch.matched.resize(self.docs.len(), 0);
        }
        for (bit, term) in terms.iter().enumerate().skip(first) {
            for (doc, term_freq) in self.postings.postings(term.id) {
                let doc = doc as usize;
                let length = f32::from(self.docs[doc].terms);
                let term_freq = term_freq as f32;
                let saturation = fixed + per_term * length;
                let gain = term.weight * term_freq * (k1 + 1.0) / (term_freq + saturation);
                if scratch.matched[doc] == 0 {
                    scratch.touched.push(doc as u32);
                }
                scratch.matched[doc] |= 1 << bit;
                scratch.scores[doc] += gain;
            }
            // Notes add their count of the term to the line's own, outside its
            // length: the line scores as if the note's words were in it.
            let hits = if note_weight > 0.0 {
                self.notes.hits(term.id)
            } else {
                &[]
            };
            for hit in hits {
                let doc = hit.doc as usize;
                let saturation = fixed + per_term * f32::from(self.docs[doc].terms);
                let gain = |freq: f32| term.weight * freq * (k1 + 1.0) / (freq + saturation);
                let line = hit.line_freq as f32;
                let added = gain(line + note_weight * hit.note_freq as f32) - gain(line);
                if scratch.matched[doc] == 0 {
                    scratch.touched.push(doc as u32);
                }
                scratch.matched[doc] |= 1 << bit;
                scratch.scores[doc] += added;
            }
        }
    }

    /// Adds to each matched message a share of the best score among the messages
    /// within [`RecallConfig::passage_span`] of it. Lines on one topic come in
    /// runs, so a match inside a run of matches is more likely on topic than a
    /// lone one that shares a word by chance. Only messages that matched
    /// themselves are raised: neighbours are added later, at their own weight.
    /// Messages already in the prompt lend nothing: the window is about the
    /// present, and would pull up whatever old line happens to border it.
    fn smooth_by_passage(&mut self, query: &RecallQuery<'_>, config: &RecallConfig) {
        let share = config.passage_weight;
        // Each matched message reads this many scores either side; a bound keeps a
        // misconfigured span from turning a query into a scan of the log.
        let span = config.passage_span.min(16) as usize;
        if !(share.is_finite() && share > 0.0) || span == 0 {
            return;
        }
        let scratch = &mut self.scratch;
        let scores = &scratch.scores;
        scratch.ranked.clear();
        for &doc in &scratch.touched {
            let at = doc as usize;
            let start = at.saturating_sub(span);
            let end = (at + span + 1).min(scores.len());
            let nearby = (start..end)
                .filter(|&other| other != at && !query.excludes(other as LogIndex))
                .map(|other| scores[other])
                .fold(0.0, f32::max);
            scratch
                .ranked
                .push((scores[at] + share.min(1.0) * nearby, doc));
        }
        for &(score, doc) in &scratch.ranked {
            scratch.scores[doc as usize] = score;
        }
    }

    /// The best recallable matches, best first, and the scratch buffers cleared.
    fn best_matches(
        &mut self,
        query: &RecallQuery<'_>,
        log: &[ChatMessage],
        config: &RecallConfig,
    ) -> Vec<Match> {
        let scratch = &mut self.scratch;
        let docs = &self.docs;
        let candidate = |doc: u32| !docs[doc as usize].forgotten && !query.excludes(doc.into());

        // Weighting costs a log lookup and an exponential per message, and a common
        // term can touch most of the log. Messages whose raw score is too far below
        // the best few for any weight to lift them into the top are skipped.
        let floor = weight_spread(config)
            .and_then(|spread| {
                let raw = scratch
                    .touched
                    .iter()
                    .copied()
                    .filter(|&doc| candidate(doc));
                let kth = kth_largest(
                    raw.map(|doc| scratch.scores[doc as usize]),
                    config.max_messages,
                )?;
                // The margin absorbs rounding, so a tie is never pruned.
                Some(kth / spread * 0.999)
            })
            .unwrap_or(0.0);
        let ranked = &mut scratch.ranked;
        ranked.clear();
        for &doc in &scratch.touched {
            let raw = scratch.scores[doc as usize];
            if raw < floor || !candidate(doc) {
                continue;
            }
            if let Some(message) = recallable(doc.into(), query, log) {
                let weight =
                    speaker_weight(message, config) * recency_weight(message, query, config);
                ranked.push((raw * weight, doc));
            }
        }
        let best_first = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        let keep = config.max_messages.min(ranked.len());
        if keep > 0 && keep < ranked.len() {
            ranked.select_nth_unstable_by(keep - 1, best_first);
        }
        ranked.truncate(keep);
        ranked.sort_unstable_by(best_first);
        let matches = scratch
            .ranked
            .iter()
            .map(|&(score, doc)| Match {
                score,
                doc,
                terms: scratch.matched[doc as usize],
            })
            .collect();
        for &doc in &scratch.touched {
            scratch.scores[doc as usize] = 0.0;
            scratch.matched[doc as usize] = 0;
        }
        scratch.touched.clear();
        matches
    }

    /// Counts one more access of each message at `indices`: it was recalled.
    pub(crate) fn count_access(&mut self, indices: impl IntoIterator<Item = LogIndex>) {
        for index in indices {
            if let Ok(doc) = u32::try_from(index) {
                self.ensure_doc(doc);
                let entry = &mut self.docs[doc as usize];
                entry.hits = entry.hits.saturating_add(1);
            }
        }
    }

    /// Adds the messages around each match, each ranked at a fraction of its
    /// match's score, and keeps the best [`RecallConfig::max_messages`]. A
    /// neighbour never outranks its own match, so it is only kept if its match is.
    fn with_neighbours(
        &self,
        matches: Vec<RecallHit>,
        query: &RecallQuery<'_>,
        log: &[ChatMessage],
        config: &RecallConfig,
    ) -> Vec<RecallHit> {
        let share = |weight: f32| if weight >= 0.0 { weight.min(1.0) } else { 0.0 };
        let before = share(config.neighbour_weight);
        let after = share(config.neighbour_after_weight);
        let mut candidates = Vec::with_capacity(matches.len() * 3);
        for found in &matches {
            let around = [
                (found.index.checked_sub(1), before),
                (found.index.checked_add(1), after),
            ];
            for (neighbour, share) in around {
                let Some(neighbour) = neighbour else { continue };
                if share > 0.0
                    && !self.is_forgotten(neighbour)
                    && recallable(neighbour, query, log).is_some()
                {
                    candidates.push(RecallHit {
                        index: neighbour,
                        score: found.score * share,
                        reason: RecallReason::Neighbour { of: found.index },
                    });
                }
            }
        }
        candidates.extend(matches);
        let is_neighbour = |hit: &RecallHit| matches!(hit.reason, RecallReason::Neighbour { .. });
        candidates.sort_by(|a, b| {
            (b.score.total_cmp(&a.score))
                .then(is_neighbour(a).cmp(&is_neighbour(b)))
                .then(a.index.cmp(&b.index))
        });
        let mut taken = HashSet::with_capacity(candidates.len());
        candidates.retain(|hit| taken.insert(hit.index));
        candidates.truncate(config.max_messages);
        candidates
    }
}

/// The message at `index` if recall may return it: in the log, not a system
/// message, not already in the prompt.
pub(super) fn recallable<'log>(
    index: LogIndex,
    query: &RecallQuery<'_>,
    log: &'log [ChatMessage],
) -> Option<&'log ChatMessage> {
    if query.excludes(index) {
        return None;
    }
    let message = log.get(usize::try_from(index).ok()?)?;
    let instructions = message.role == Role::System && message.origin.is_said();
    (message.index == index && !instructions).then_some(message)
}

/// What each telling between the source and this NPC takes off a hearsay entry's
/// score, so that on a tie what the NPC saw or heard itself ranks first.
const HEARSAY_DISCOUNT_PER_HOP: f32 = 0.97;

/// The lowest hearsay weight, however long the chain.
const HEARSAY_FLOOR: f32 = 0.8;

fn speaker_weight(message: &ChatMessage, config: &RecallConfig) -> f32 {
    if let crate::memory::Origin::Heard(hearsay) = &message.origin {
        let hops = hearsay.hops.min(64) as i32;
        return HEARSAY_DISCOUNT_PER_HOP.powi(hops).max(HEARSAY_FLOOR);
    }
    match message.role {
        Role::User => config.player_weight,
        Role::Assistant | Role::System => 1.0,
    }
}

fn recency_weight(message: &ChatMessage, query: &RecallQuery<'_>, config: &RecallConfig) -> f32 {
    let age = query.now - message.timestamp;
    let half_life = config.recency_half_life;
    if !age.is_finite() || half_life.is_nan() || half_life <= 0.0 {
        return 1.0;
    }
    // A timestamp ahead of `now` (a clock reset) counts as brand new, not as a bonus.
    1.0 + config.recency_weight * ((-age.max(0.0) / half_life).exp2() as f32)
}

/// The `k`-th largest of some non-negative scores, if there are at least `k`.
fn kth_largest(scores: impl Iterator<Item = f32>, k: usize) -> Option<f32> {
    if k == 0 {
        return None;
    }
    // Non-negative floats order like their bit patterns, which are `Ord`.
    let mut best = BinaryHeap::new();
    for score in scores {
        let bits = Reverse(score.to_bits());
        if best.len() < k {
            best.push(bits);
        } else if best.peek().is_some_and(|least| bits < *least) {
            best.pop();
            best.push(bits);
        }
    }
    if best.len() < k {
        return None;
    }
    best.peek().map(|least| f32::from_bits(least.0))
}

/// How far apart the speaker and recency weights can put two messages with the
/// same BM25 score: the largest combined weight over the smallest. `None` when
/// the weights are not positive and finite, so nothing can be bounded.
fn weight_spread(config: &RecallConfig) -> Option<f32> {
    let player = config.player_weight;
    let recency = 1.0 + config.recency_weight;
    if !player.is_finite() || !recency.is_finite() {
        return None;
    }
    let highest = player.max(1.0) * recency.max(1.0);
    let lowest = player.min(1.0) * recency.min(1.0) * HEARSAY_FLOOR;
    let spread = highest / lowest;
    (lowest > 0.0 && spread.is_finite()).then_some(spread)
}

fn matched_terms(terms: &[QueryTerm], bits: u64) -> Vec<Arc<str>> {
    terms
        .iter()
        .enumerate()
        .filter(|(bit, _)| bits & (1 << bit) != 0)
        .map(|(_, term)| term.text.clone())
        .collect()
}
