//! The knobs of recall. BM25 does the ranking; everything else only nudges it.

use serde::{Deserialize, Serialize};

/// How old messages are recalled from the full log (L2).
///
/// Off by default: the seed sends only the window and the summary, and that stays
/// the default behaviour. The weights are multipliers on the BM25 score and kept
/// mild, so they only reorder messages that match about equally well.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecallConfig {
    /// Whether to recall at all. When `false`, queries return nothing.
    pub enabled: bool,
    /// Most messages returned per query, neighbours included. 0 recalls nothing.
    pub max_messages: usize,
    /// Whether to add the message just before and just after each match, so a
    /// recalled answer comes with its question and a statement with its reply.
    pub neighbours: bool,
    /// A neighbour's score as a fraction of its match's score, in `0.0..=1.0`. It
    /// decides whether a neighbour of a strong match beats a weak match for the
    /// last places; a neighbour never ranks above its own match.
    pub neighbour_weight: f32,
    /// How many of the most recent messages (before the new line) join the query.
    /// The caller passes them in [`RecallQuery::context`](super::RecallQuery::context);
    /// only the last this many are used.
    pub context_messages: usize,
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
}

impl Default for RecallConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            max_messages: 8,
            neighbours: true,
            neighbour_weight: 0.5,
            context_messages: 4,
            context_weight: 0.3,
            player_weight: 1.1,
            recency_weight: 0.1,
            recency_half_life: 3600.0,
            bm25_k1: 1.2,
            bm25_b: 0.75,
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
