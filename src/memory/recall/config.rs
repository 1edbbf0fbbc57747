//! The knobs of recall. BM25 does the ranking; everything else only nudges it.

use bevy::reflect::{Reflect, std_traits::ReflectDefault};
use serde::{Deserialize, Serialize};

use crate::memory::calendar::Calendar;

/// How old messages are recalled from the full log (L2).
///
/// Off by default: basic mode sends only the window and the summary, and that stays
/// the default behaviour. The weights are multipliers on the BM25 score and kept
/// mild, so they only reorder messages that match about equally well.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(default)]
pub struct RecallConfig {
    /// Whether to recall at all. When `false`, queries return nothing.
    pub enabled: bool,
    /// Most messages returned per query, neighbours included. 0 recalls nothing.
    pub max_messages: usize,
    /// Whether to add the message just before and just after each match, so a
    /// recalled answer comes with its question and a statement with its reply.
    pub neighbours: bool,
    /// The score of the message just before a match, as a fraction of the
    /// match's score, in `0.0..=1.0` (see also
    /// [`neighbour_after_weight`](Self::neighbour_after_weight)). It
    /// decides whether a neighbour of a strong match beats a weak match for the
    /// last places; a neighbour never ranks above its own match.
    pub neighbour_weight: f32,
    /// How many of the most recent messages (before the new line) join the query.
    /// The caller passes them in [`RecallQuery::context`](super::RecallQuery::context);
    /// only the last this many are used.
    pub context_messages: usize,
    /// Recent messages join the query only when the new line has fewer distinct
    /// terms than this. A short follow-up ("and her?") needs them; a full question
    /// does not, and the talk before it would mostly pull in noise (on LoCoMo,
    /// always adding 4 recent messages cost 5 points of evidence recall).
    pub context_below_terms: usize,
    /// Weight of terms that appear only in those recent messages, relative to the
    /// new line's terms (1.0). Lower, because the new line says what the player is
    /// asking about; the context only disambiguates it.
    pub context_weight: f32,
    /// Multiplier for the player's own messages. Slightly above 1, because the
    /// player's statements are the facts an NPC is expected to remember.
    pub player_weight: f32,
    /// Largest boost for recent messages: a message said just now scores up to
    /// `1.0 + recency_weight` times its BM25 score, decaying with age.
    pub recency_weight: f32,
    /// Age, in game seconds, at which the recency boost has halved.
    pub recency_half_life: f64,
    /// BM25 term-frequency saturation. Higher lets repeated words count more.
    pub bm25_k1: f32,
    /// BM25 length normalization, `0.0..=1.0`. 0 ignores message length; 1 fully
    /// favours short messages.
    pub bm25_b: f32,
    /// A neighbour's score for the message just after a match; the one before
    /// takes [`neighbour_weight`](Self::neighbour_weight). Higher, because a
    /// message is more often answered by the next line than answering the last.
    pub neighbour_after_weight: f32,
    /// Query terms found in more than this share of the indexed messages, such as
    /// the names people greet each other with, count as this log's stopwords and
    /// weigh [`common_term_weight`](Self::common_term_weight) times as much,
    /// unless no query term is rarer. 1.0 or more treats every term alike.
    pub common_term_share: f32,
    /// The weight factor, in `0.0..=1.0`, of such common terms. 0 drops them.
    pub common_term_weight: f32,
    /// Share, in `0.0..=1.0`, of the best score within
    /// [`passage_span`](Self::passage_span) messages that a match adds to its own:
    /// a match among other matches is more likely on topic. 0 turns it off.
    pub passage_weight: f32,
    /// How many messages either side of a match count as its passage, at most 16.
    pub passage_span: u64,
    /// How much a word of a summarizer's note on a line counts, against a word of
    /// the line itself (1). Out-of-range values count as 1.
    pub note_weight: f32,
    /// Whether recalled lines are written compactly in the prompt: `P: "…"` for
    /// the player and `Y: "…"` for the NPC itself, the two tags explained once in
    /// the block's heading, instead of `- "Player": "…"` on every line. The text
    /// stays a quoted literal either way, and other speakers keep their quoted
    /// names. It saves two to three tokens a line, which a budget spends on more
    /// recalled lines.
    pub compact_lines: bool,
    /// How game seconds read as calendar dates, when the game's clock is a
    /// calendar. Then each message is also indexed by the day it was said and by
    /// the days its words name ("yesterday", "last week", 昨天, "1 May"),
    /// resolved against that day, and a question naming a date or asking "when"
    /// finds them. `None` (the default): timestamps are only ages.
    pub calendar: Option<Calendar>,
    /// Weight, relative to the line's words (1.0), of the dates a question names
    /// ("on 1 May, 2022", "last week"). Lower than a word's: a date narrows the
    /// search to a few sessions, the words find the line in them. Only with a
    /// [`calendar`](Self::calendar).
    pub date_weight: f32,
    /// Weight of the "has a date" term a question asking "when" (or naming a
    /// date) adds: it favours lines that say when something happened. Only with
    /// a [`calendar`](Self::calendar); 0 turns it off.
    pub when_weight: f32,
    /// How many of the best first matches lend terms to a second pass of the
    /// query (pseudo-relevance feedback), at most 8. A multi-hop question finds
    /// the first hop by its words and the second only through the first's
    /// ("moved from my home country" → "my home country, Sweden"). 0 turns it off.
    pub expansion_hits: usize,
    /// Most terms those matches lend: their most informative ones that the query
    /// lacks, found in at least two messages and not among the log's common terms.
    pub expansion_terms: usize,
    /// Weight of a lent term, relative to the line's words (1.0). Lower: the
    /// question says what is asked, the first hits only guess at the next hop.
    pub expansion_weight: f32,
    /// Whether the NPC's own name ([`RecallQuery::own_name`](super::RecallQuery::own_name),
    /// the persona's name) leaves a query that has other terms. The NPC never
    /// says its own name, so the name only matches lines that address it
    /// ("Thanks, Mel!"): short, ranked high, rarely a fact.
    pub skip_own_name: bool,
    /// Weight, relative to the line's words (1.0), of the single characters of
    /// a question's Chinese, Japanese or Korean runs, on top of their
    /// overlapping bigrams. A bigram needs both characters in order; a question
    /// often shares only one with the line it is after ("药箱" asked as "药品").
    /// Function characters ("的", "了", "我") are never matched alone. Lower than
    /// a word's weight: one character says less than two. 0 turns it off.
    /// The index holds these characters either way; they do not count in a
    /// message's BM25 length, so at 0 the ranking is the bigrams' alone.
    pub cjk_unigram_weight: f32,
    /// Weight factor, in `0.0..=1.0`, of a query's CJK term made only of Chinese
    /// function characters ("是哪", "了吗", a lone "吗"; particles, pronouns,
    /// question words): grammar that matches lines on any topic, as English
    /// stopwords would. 0 (the default) drops such terms; 1.0 weighs them like
    /// any term. A bigram with one function character ("住的") keeps its full
    /// weight: weighing those down lost evidence on the tuning play-through.
    pub cjk_function_pair_weight: f32,
}

impl Default for RecallConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            max_messages: 8,
            neighbours: true,
            neighbour_weight: 0.5,
            context_messages: 4,
            context_below_terms: 3,
            context_weight: 0.3,
            player_weight: 1.1,
            recency_weight: 0.1,
            recency_half_life: 3600.0,
            bm25_k1: 1.2,
            bm25_b: 0.75,
            neighbour_after_weight: 0.8,
            common_term_share: 0.2,
            common_term_weight: 0.2,
            passage_weight: 0.25,
            note_weight: 1.0,
            passage_span: 2,
            compact_lines: false,
            calendar: None,
            date_weight: 0.5,
            when_weight: 1.0,
            expansion_hits: 0,
            expansion_terms: 10,
            expansion_weight: 0.1,
            skip_own_name: false,
            cjk_unigram_weight: 0.7,
            cjk_function_pair_weight: 0.0,
        }
    }
}

impl RecallConfig {
    /// The default config with recall switched on.
    pub fn enabled() -> Self {
        Self {
            enabled: true,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_fields_take_defaults() {
        let config: RecallConfig =
            serde_json::from_str(r#"{ "enabled": true, "max_messages": 3 }"#).unwrap();
        assert!(config.enabled);
        assert_eq!(config.max_messages, 3);
        assert_eq!(config.bm25_k1, RecallConfig::default().bm25_k1);
    }

    #[test]
    fn off_by_default() {
        assert!(!RecallConfig::default().enabled);
        assert!(RecallConfig::enabled().enabled);
    }
}
