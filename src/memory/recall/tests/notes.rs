//! Notes on lines: a line is found by its notes' words, which never change its
//! length, and notes survive a restore in any order of log and state.

use proptest::prelude::*;

use super::*;
use crate::memory::recall::{LineNote, MAX_NOTE_CHARS, NoteError};

fn note(text: &str, lines: &[LogIndex]) -> LineNote {
    LineNote::new(text, lines.iter().copied(), 0..LogIndex::MAX).unwrap()
}

fn found(index: &mut RecallIndex, log: &[ChatMessage], question: &str) -> Vec<LogIndex> {
    index
        .query(&RecallQuery::new(question), log, &RecallConfig::enabled())
        .iter()
        .map(|hit| hit.index)
        .collect()
}

/// A log whose line 5 says "I signed up for a pottery class" and never the word
/// a question about hobbies would use.
fn log() -> Vec<ChatMessage> {
    let mut lines: Vec<&str> = FILLER.to_vec();
    lines.insert(5, "I signed up for a pottery class on Tuesdays.");
    lines.extend(FILLER);
    conversation(&lines)
}

#[test]
fn a_line_is_found_by_the_words_of_its_notes() {
    let log = log();
    let mut index = RecallIndex::from_log(&log);
    assert!(!found(&mut index, &log, "What hobbies do you have?").contains(&5));
    assert!(index.add_note(note("hobbies: pottery, crafts", &[5])));
    let hits = found(&mut index, &log, "What hobbies do you have?");
    assert_eq!(hits.first(), Some(&5), "{hits:?}");
    // Only recall reads notes: the log is unchanged.
    assert_eq!(
        &*log[5].content,
        "I signed up for a pottery class on Tuesdays."
    );
}

#[test]
fn a_note_adds_to_the_lines_own_terms_without_lengthening_it() {
    let log = log();
    let mut plain = RecallIndex::from_log(&log);
    let mut noted = RecallIndex::from_log(&log);
    noted.add_note(note("pottery pottery, ceramics", &[5]));
    let config = RecallConfig::enabled();
    let score = |index: &mut RecallIndex, q: &str| {
        index
            .query(&RecallQuery::new(q), &log, &config)
            .iter()
            .find(|hit| hit.index == 5)
            .map(|hit| hit.score)
    };
    // "pottery" is in the line and twice in the note: it counts more.
    let (before, after) = (score(&mut plain, "pottery"), score(&mut noted, "pottery"));
    assert!(after.unwrap() > before.unwrap(), "{before:?} {after:?}");
    // A word only the line has scores the same: the note did not lengthen it.
    let (before, after) = (score(&mut plain, "tuesdays"), score(&mut noted, "tuesdays"));
    assert_eq!(before, after);
}

#[test]
fn a_note_on_lines_not_indexed_yet_waits_for_them() {
    let log = log();
    let mut index = RecallIndex::new();
    for message in &log[..3] {
        index.add(message);
    }
    index.add_note(note("hobbies: pottery", &[5]));
    for message in &log[3..] {
        index.add(message);
    }
    let hits = found(&mut index, &log, "Any hobbies?");
    assert_eq!(hits.first(), Some(&5), "{hits:?}");
}

#[test]
fn notes_survive_a_saved_state_restored_before_or_after_the_log() {
    let log = log();
    let mut index = RecallIndex::from_log(&log);
    index.add_note(note("hobbies: pottery", &[5]));
    let state = index.state();
    assert_eq!(state.notes.len(), 1);

    let mut after = RecallIndex::from_log(&log);
    after.restore_state(&state);
    let mut before = RecallIndex::new();
    before.restore_state(&state);
    for message in &log {
        before.add(message);
    }
    // Before any query, which counts access.
    assert_eq!(after, index);
    for restored in [&mut after, &mut before] {
        assert_eq!(restored.notes(), index.notes());
        let hits = found(restored, &log, "Any hobbies?");
        assert_eq!(hits.first(), Some(&5), "{hits:?}");
    }
}

#[test]
fn a_note_is_checked_when_made() {
    assert_eq!(LineNote::new("  ", [1], 0..9), Err(NoteError::Empty));
    assert_eq!(LineNote::new("x", [], 0..9), Err(NoteError::Lines(0)));
    assert_eq!(LineNote::new("x", [9], 0..9), Err(NoteError::OutOfRange(9)));
    let long = "é".repeat(MAX_NOTE_CHARS + 1);
    assert_eq!(
        LineNote::new(&long, [1], 0..9),
        Err(NoteError::TooLong(MAX_NOTE_CHARS + 1))
    );
    let made = LineNote::new(" pottery ", [3, 1, 3], 0..9).unwrap();
    assert_eq!(
        (&*made.text, made.lines.as_slice()),
        ("pottery", &[1, 3][..])
    );
}

proptest! {
    #[test]
    fn any_note_text_indexes_and_queries(text in any::<String>(), question in any::<String>()) {
        let log = log();
        let mut index = RecallIndex::from_log(&log);
        if let Ok(made) = LineNote::new(&text, [5, 7], 0..log.len() as LogIndex) {
            prop_assert!(index.add_note(made));
        }
        let _ = index.query(&RecallQuery::new(&question), &log, &RecallConfig::enabled());
    }
}

#[test]
fn the_note_weight_scales_what_a_note_adds() {
    let log = log();
    let mut index = RecallIndex::from_log(&log);
    index.add_note(note("hobbies: pottery", &[5]));
    let score = |index: &mut RecallIndex, weight: f32| {
        let config = RecallConfig {
            note_weight: weight,
            ..RecallConfig::enabled()
        };
        index
            .query(&RecallQuery::new("Any hobbies?"), &log, &config)
            .iter()
            .find(|hit| hit.index == 5)
            .map(|hit| hit.score)
    };
    assert_eq!(
        score(&mut index, 0.0),
        None,
        "a weight of 0 leaves notes out"
    );
    let (one, two) = (
        score(&mut index, 1.0).unwrap(),
        score(&mut index, 2.0).unwrap(),
    );
    assert!(two > one, "{one} {two}");
}
