//! Notes enter the index: each note's terms become hits on the lines it cites,
//! now or as soon as those lines are indexed.

use std::collections::HashMap;

use super::dictionary::{TermId, term_hash};
use super::index::RecallIndex;
use super::notes::{LineNote, MAX_NOTES, NoteHit, NoteIndex};
use super::terms::for_each_term;
use crate::memory::message::LogIndex;

impl RecallIndex {
    /// Indexes `note` with the lines it cites (those not added yet, as soon as
    /// they are). Returns `false`, keeping nothing, when the index holds
    /// [`MAX_NOTES`] notes already.
    pub fn add_note(&mut self, note: LineNote) -> bool {
        if self.notes.list.len() >= MAX_NOTES {
            return false;
        }
        let position = self.notes.list.len() as u32;
        self.notes.list.push(note);
        self.index_note(position);
        true
    }

    /// Every note, in the order added.
    pub fn notes(&self) -> &[LineNote] {
        &self.notes.list
    }

    /// The notes that cite the line at `index`.
    pub fn notes_on(&self, index: LogIndex) -> impl Iterator<Item = &LineNote> {
        self.notes
            .list
            .iter()
            .filter(move |note| note.lines.binary_search(&index).is_ok())
    }

    /// A term's document frequency: the lines it is in, or in the notes on them.
    pub(super) fn doc_freq(&self, term: TermId) -> u32 {
        self.postings.doc_freq(term) + self.notes.only_in_notes(term)
    }

    /// Replaces the notes with `notes`, as a saved state restores them.
    pub(super) fn restore_notes(&mut self, notes: &[LineNote]) {
        self.notes = NoteIndex::default();
        for note in notes.iter().take(MAX_NOTES) {
            self.add_note(note.clone());
        }
    }

    fn index_note(&mut self, position: u32) {
        let lines = self.notes.list[position as usize].lines.clone();
        for line in lines {
            let Ok(doc) = u32::try_from(line) else {
                continue;
            };
            if line < self.seen {
                self.index_note_on(position, doc);
            } else {
                self.notes.waiting.entry(doc).or_default().push(position);
            }
        }
    }

    /// The notes that waited for the line `doc`, now that it is indexed.
    pub(super) fn index_waiting_notes(&mut self, doc: u32) {
        if self.notes.waiting.is_empty() {
            return;
        }
        if let Some(positions) = self.notes.waiting.remove(&doc) {
            for position in positions {
                self.index_note_on(position, doc);
            }
        }
    }

    /// Adds the terms of note `position` to the line `doc`. A line recall never
    /// returns (an instruction, a line without words) gets none.
    fn index_note_on(&mut self, position: u32, doc: u32) {
        if !self.docs.get(doc as usize).is_some_and(|d| d.indexed) {
            return;
        }
        let mut counts: HashMap<u64, u32> = HashMap::new();
        for_each_term(&self.notes.list[position as usize].text, |term| {
            *counts.entry(term_hash(term)).or_default() += 1;
        });
        for (hash, note_freq) in counts {
            let (term, new) = self.dictionary.get_or_insert(hash);
            if new {
                let opened = self.postings.open_list();
                debug_assert_eq!(opened, term);
            }
            let hits = self.notes.hits.entry(term).or_default();
            // A lookup, not a scan of the term's hits: a save may hold many
            // notes sharing one word.
            let slot = self.notes.hit_of.entry((term, doc));
            if let std::collections::hash_map::Entry::Occupied(at) = slot {
                hits[*at.get() as usize].note_freq += note_freq;
                continue;
            }
            slot.or_insert(hits.len() as u32);
            let line_freq = self
                .postings
                .postings(term)
                .take_while(|&(d, _)| d <= doc)
                .find(|&(d, _)| d == doc)
                .map_or(0, |(_, freq)| freq);
            hits.push(NoteHit {
                doc,
                note_freq,
                line_freq,
            });
            if line_freq == 0 {
                *self.notes.only_in_notes.entry(term).or_default() += 1;
            }
        }
    }
}
