//! Notes on lines: short phrases the summarizer writes about the lines it folds
//! ("hobby: pottery class"), indexed with the lines they cite so that a question
//! finds a line by words it never said. A note is never sent in a prompt; it
//! only adds terms to its lines, outside their BM25 length (BENCHMARKS.md,
//! "Index-time enrichment", measured this as the best way to use them).
//!
//! Postings take messages in log order only, and a note comes after its lines
//! are indexed, so note terms have hits of their own, read in the same scoring
//! pass. Each hit keeps the line's own count of the term, so the line scores as
//! if the note's words were part of it. How notes enter the index is in
//! `annotate.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::dictionary::TermId;
use crate::memory::message::LogIndex;

/// Longest note kept, in characters; a longer one is dropped, not cut.
pub const MAX_NOTE_CHARS: usize = 160;
/// Most lines one note may cite.
pub const MAX_NOTE_LINES: usize = 8;
/// Most notes taken from one summary; the rest are dropped.
pub const MAX_NOTES_PER_SUMMARY: usize = 24;
/// Most notes one NPC keeps; past it, new notes are dropped.
pub const MAX_NOTES: usize = 100_000;

/// A phrase about some lines of the log, indexed with them for recall and never
/// sent in a prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineNote {
    /// The phrase, trimmed, at most [`MAX_NOTE_CHARS`] characters.
    pub text: Arc<str>,
    /// The log indices of the lines it describes, ascending, at most
    /// [`MAX_NOTE_LINES`].
    pub lines: Vec<LogIndex>,
}

/// Why a note was not taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoteError {
    /// Empty after trimming.
    #[error("the note is empty")]
    Empty,
    /// Over [`MAX_NOTE_CHARS`].
    #[error("the note has {0} characters, over the limit of {MAX_NOTE_CHARS}")]
    TooLong(usize),
    /// It cites no line, or more than [`MAX_NOTE_LINES`].
    #[error("the note cites {0} lines; it must cite 1 to {MAX_NOTE_LINES}")]
    Lines(usize),
    /// It cites a line outside the messages it may describe.
    #[error("the note cites line {0}, outside the messages it may describe")]
    OutOfRange(LogIndex),
}

impl LineNote {
    /// A note on `lines`, checked: the text trimmed and within
    /// [`MAX_NOTE_CHARS`], 1 to [`MAX_NOTE_LINES`] lines (sorted, repeats
    /// dropped), each inside `allowed`.
    pub fn new(
        text: &str,
        lines: impl IntoIterator<Item = LogIndex>,
        allowed: std::ops::Range<LogIndex>,
    ) -> Result<Self, NoteError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(NoteError::Empty);
        }
        let chars = text.chars().count();
        if chars > MAX_NOTE_CHARS {
            return Err(NoteError::TooLong(chars));
        }
        let mut lines: Vec<LogIndex> = lines.into_iter().collect();
        lines.sort_unstable();
        lines.dedup();
        if lines.is_empty() || lines.len() > MAX_NOTE_LINES {
            return Err(NoteError::Lines(lines.len()));
        }
        if let Some(&outside) = lines.iter().find(|i| !allowed.contains(i)) {
            return Err(NoteError::OutOfRange(outside));
        }
        Ok(Self {
            text: text.into(),
            lines,
        })
    }
}

/// One line's share of a term through the notes that cite it.
#[derive(Clone, Copy, Debug)]
pub(super) struct NoteHit {
    pub(super) doc: u32,
    /// Times the term is in the notes on the line.
    pub(super) note_freq: u32,
    /// Times it is in the line itself.
    pub(super) line_freq: u32,
}

/// The notes an index holds, and their hits by term.
#[derive(Clone, Debug, Default)]
pub(super) struct NoteIndex {
    /// Every note, in the order added: what a save keeps.
    pub(super) list: Vec<LineNote>,
    pub(super) hits: HashMap<TermId, Vec<NoteHit>>,
    /// Lines that have a term through notes only, per term: added to the term's
    /// document frequency.
    pub(super) only_in_notes: HashMap<TermId, u32>,
    /// Notes citing lines not indexed yet, by line: indexed when it is.
    pub(super) waiting: HashMap<u32, Vec<u32>>,
    /// Where each (term, line) pair's hit is in `hits`.
    pub(super) hit_of: HashMap<(TermId, u32), u32>,
}

impl NoteIndex {
    pub(super) fn hits(&self, term: TermId) -> &[NoteHit] {
        self.hits.get(&term).map_or(&[], Vec::as_slice)
    }

    pub(super) fn only_in_notes(&self, term: TermId) -> u32 {
        self.only_in_notes.get(&term).copied().unwrap_or(0)
    }

    pub(super) fn memory_bytes(&self) -> usize {
        let notes: usize = self
            .list
            .iter()
            .map(|n| n.text.len() + n.lines.capacity() * size_of::<LogIndex>())
            .sum();
        let hits: usize = self
            .hits
            .values()
            .map(|h| h.capacity() * size_of::<NoteHit>() + 32)
            .sum();
        notes
            + self.list.capacity() * size_of::<LineNote>()
            + hits
            + self.only_in_notes.len() * 16
            + self.hit_of.len() * 16
    }
}
