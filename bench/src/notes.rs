//! `memory_bench --notes observations`: LoCoMo's own observations given to recall
//! as summarizer notes ([`LineNote`]), to measure what notes on lines buy before a
//! model writes them. The observations are per-session facts a large model wrote
//! when the dataset was made, each citing its turns: a stand-in for a capable
//! summarizer, and an optimistic one (BENCHMARKS.md, "Index-time enrichment").
//!
//! What the core would refuse is made to fit rather than lost, and counted:
//! - a text over [`MAX_NOTE_CHARS`] loses whole words at its end (a single word
//!   longer than the limit is cut at a character boundary);
//! - an observation citing more than [`MAX_NOTE_LINES`] turns becomes several
//!   notes with the same text, each on up to [`MAX_NOTE_LINES`] of them in log
//!   order, so that every cited line gets its words as a summarizer's note would;
//! - ids naming no replayed turn are left out; an observation left with none is
//!   dropped, and so is one citing a turn outside `allowed` (`memory_bench`
//!   passes the session's own lines, the ones a summarizer would have been
//!   given; in `locomo_dev.json` every observation cites its own session).

use std::collections::HashMap;
use std::ops::Range;

use bevy_npc_memory::memory::LineNote;
use bevy_npc_memory::memory::LogIndex;
use bevy_npc_memory::memory::limits::{MAX_NOTE_CHARS, MAX_NOTE_LINES};
use serde_json::{Value, json};

use crate::evidence::normalize;
use crate::locomo::Observation;

/// How every report names the notes: they are the dataset's, not a summarizer's.
pub const OBSERVATIONS_LABEL: &str =
    "LoCoMo observations (a stand-in for a capable summarizer's notes)";

/// What became of the observations of the replayed sessions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NoteTally {
    /// Observations read.
    pub observations: usize,
    /// Notes recall took.
    pub added: usize,
    /// Observations that gave no note (no replayed turn cited, empty text, or
    /// refused by `LineNote::new`), and notes `add_notes` refused.
    pub dropped: usize,
    /// Texts shortened to [`MAX_NOTE_CHARS`].
    pub cut: usize,
    /// Notes beyond the first of an observation citing more than
    /// [`MAX_NOTE_LINES`] turns.
    pub split: usize,
    /// Distinct lines cited by the notes added.
    pub lines_noted: usize,
}

impl NoteTally {
    /// The tally as the bench's JSON reports it, under its label.
    pub fn to_json(&self) -> Value {
        json!({
            "source": OBSERVATIONS_LABEL,
            "observations": self.observations,
            "added": self.added,
            "dropped": self.dropped,
            "cut": self.cut,
            "split": self.split,
            "lines_noted": self.lines_noted,
        })
    }

    /// Adds another conversation's tally.
    pub fn merge(&mut self, other: &NoteTally) {
        self.observations += other.observations;
        self.added += other.added;
        self.dropped += other.dropped;
        self.cut += other.cut;
        self.split += other.split;
        self.lines_noted += other.lines_noted;
    }
}

/// `text` trimmed and within [`MAX_NOTE_CHARS`] characters, and whether it was
/// shortened. Whole words go from the end, since half a word indexes as a term
/// no question holds.
pub fn fit_note_text(text: &str) -> (&str, bool) {
    let text = text.trim();
    let Some((limit, _)) = text.char_indices().nth(MAX_NOTE_CHARS) else {
        return (text, false);
    };
    let head = &text[..limit];
    let next_is_space = text[limit..].starts_with(char::is_whitespace);
    let cut = if next_is_space {
        head
    } else {
        match head.rfind(char::is_whitespace) {
            Some(space) => &head[..space],
            None => head,
        }
    };
    (cut.trim_end(), true)
}

/// The notes one observation gives: its text on the replayed turns it cites
/// (`dia_ids` maps a normalized id to its log index), each note within
/// `allowed`. Counts what it drops, cuts and splits in `tally`; the caller
/// counts what recall takes.
pub fn observation_notes(
    observation: &Observation<'_>,
    dia_ids: &HashMap<String, LogIndex>,
    allowed: Range<LogIndex>,
    tally: &mut NoteTally,
) -> Vec<LineNote> {
    tally.observations += 1;
    let (text, cut) = fit_note_text(observation.text);
    let mut lines: Vec<LogIndex> = observation
        .dia_ids
        .iter()
        .filter_map(|id| dia_ids.get(&normalize(id)).copied())
        .collect();
    lines.sort_unstable();
    lines.dedup();
    let notes: Vec<LineNote> = lines
        .chunks(MAX_NOTE_LINES)
        .filter_map(|chunk| LineNote::new(text, chunk.iter().copied(), allowed.clone()).ok())
        .collect();
    if notes.is_empty() {
        tally.dropped += 1;
    } else {
        tally.cut += usize::from(cut);
        tally.split += notes.len() - 1;
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_loses_whole_words_at_a_char_boundary() {
        let short = "  Caroline joined a pottery class.  ";
        assert_eq!(
            fit_note_text(short),
            ("Caroline joined a pottery class.", false)
        );
        // Multi-byte letters: a byte offset of 160 would fall inside one.
        let long = "Zoë's café ".repeat(20);
        let (cut, was_cut) = fit_note_text(&long);
        assert!(was_cut);
        assert!(cut.chars().count() <= MAX_NOTE_CHARS);
        assert!(long.starts_with(cut));
        assert!(cut.ends_with("Zoë's"), "{cut:?}");
        // Exactly at the limit, followed by a space: nothing dropped.
        let exact = format!("{} tail", "a".repeat(MAX_NOTE_CHARS));
        assert_eq!(fit_note_text(&exact).0.chars().count(), MAX_NOTE_CHARS);
        // One word over the limit cannot lose a word: it is cut.
        let word = "é".repeat(MAX_NOTE_CHARS + 5);
        assert_eq!(fit_note_text(&word).0.chars().count(), MAX_NOTE_CHARS);
    }

    #[test]
    fn an_observation_cites_replayed_turns_in_runs_of_the_limit() {
        let dia_ids: HashMap<String, LogIndex> = (1..=20)
            .map(|k| (format!("D1:{k}"), k as LogIndex))
            .collect();
        let mut tally = NoteTally::default();
        let ids: Vec<String> = (1..=10).map(|k| format!("D1:{k}")).collect();
        let many = Observation {
            text: "Mara keeps the lighthouse.",
            dia_ids: ids.iter().map(String::as_str).collect(),
        };
        let notes = observation_notes(&many, &dia_ids, 0..21, &mut tally);
        assert_eq!(notes.len(), 2);
        assert_eq!(notes[0].lines.len(), MAX_NOTE_LINES);
        assert_eq!(notes[1].lines, vec![9, 10]);
        let unknown = Observation {
            text: "Nobody said this.",
            dia_ids: vec!["D9:1"],
        };
        assert!(observation_notes(&unknown, &dia_ids, 0..21, &mut tally).is_empty());
        // A stray zero and colon, as the data's ids sometimes have.
        let odd = Observation {
            text: "An odd id.",
            dia_ids: vec!["D:01:03"],
        };
        assert_eq!(
            observation_notes(&odd, &dia_ids, 0..21, &mut tally)[0].lines,
            vec![3]
        );
        assert_eq!(
            (tally.observations, tally.dropped, tally.split, tally.cut),
            (3, 1, 1, 0)
        );
    }
}
