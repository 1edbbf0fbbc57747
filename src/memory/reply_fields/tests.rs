//! Reply fields: the tag at the start of a reply, whole and streamed.

use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::memory::PromptLanguage;

fn set() -> ReplyFieldSet {
    ReplyFieldSet::new([
        ("mood", vec!["calm", "alarmed", "angry"]),
        ("anim", vec!["wave", "nod"]),
    ])
}

fn split(reply: &str) -> (Vec<(String, String)>, String) {
    let (fields, words) = set().split(reply);
    let fields = fields
        .iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    (fields, words.to_owned())
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Streams `reply` in `pieces`-sized chunks (in characters) and joins what shows.
fn streamed(reply: &str, cuts: &[usize]) -> String {
    let mut stream = ReplyTagStream::new(Arc::new(set()));
    let mut shown = String::new();
    let mut from = 0;
    for &cut in cuts.iter().chain([&reply.len()]) {
        if cut >= from && reply.is_char_boundary(cut) {
            shown.push_str(&stream.push(&reply[from..cut]));
            from = cut;
        }
    }
    shown.push_str(&stream.finish());
    shown
}

#[test]
fn a_leading_tag_sets_its_fields_and_leaves_only_the_words() {
    assert_eq!(
        split("[mood: alarmed] Who goes there?"),
        (pairs(&[("mood", "alarmed")]), "Who goes there?".into())
    );
    // Several fields, any case, '=' and spacing; values come back as declared.
    assert_eq!(
        split("  [Mood=ANGRY; anim : wave]\nBack off."),
        (
            pairs(&[("anim", "wave"), ("mood", "angry")]),
            "Back off.".into()
        )
    );
}

#[test]
fn unknown_values_and_fields_are_dropped_but_the_words_arrive() {
    assert_eq!(
        split("[mood: smug, hat: red] Hello."),
        (vec![], "Hello.".into())
    );
    assert_eq!(
        split("[mood: smug, anim: nod] Hi."),
        (pairs(&[("anim", "nod")]), "Hi.".into())
    );
    assert_eq!(
        split("[mood: calm]"),
        (pairs(&[("mood", "calm")]), "".into())
    );
}

#[test]
fn brackets_that_are_no_tag_stay_text() {
    for reply in [
        "Hello. [mood: angry] is what you want?",
        "[sighs] Fine.",
        "[Note: the door is locked] Sorry.",
        "[mood: angry",
        "[mood:\nangry] no",
        "",
        "   ",
    ] {
        assert_eq!(split(reply), (vec![], reply.to_owned()), "{reply:?}");
    }
    let long = format!("[mood: {}] x", "a".repeat(300));
    assert_eq!(split(&long), (vec![], long.clone()));
}

#[test]
fn an_npc_without_fields_never_parses() {
    let none = ReplyFieldSet::default();
    let (fields, words) = none.split("[mood: calm] Hi.");
    assert!(fields.is_empty());
    assert_eq!(words, "[mood: calm] Hi.");
    assert_eq!(none.instruction(PromptLanguage::English), None);
}

#[test]
fn the_instruction_lists_every_field_and_value() {
    let english = set().instruction(PromptLanguage::English).unwrap();
    assert!(english.contains("[anim: wave, mood: calm]"), "{english}");
    assert!(
        english.contains("anim: wave, nod; mood: calm, alarmed, angry"),
        "{english}"
    );
    let chinese = set().instruction(PromptLanguage::Chinese).unwrap();
    assert!(chinese.contains("mood: calm、alarmed、angry"), "{chinese}");
}

#[test]
fn bad_declarations_are_left_out() {
    let set = ReplyFieldSet::new([
        ("mood", vec!["calm"]),
        ("bad name", vec!["x"]),
        ("empty", vec![]),
        ("inject", vec!["a]b"]),
    ]);
    let instruction = set.instruction(PromptLanguage::English).unwrap();
    for left_out in ["bad name", "empty", "inject", "a]b"] {
        assert!(!instruction.contains(left_out), "{instruction}");
    }
    assert_eq!(set.split("[bad name: x] y").1, "[bad name: x] y");
}

#[test]
fn a_streamed_tag_is_held_back_and_never_shown() {
    let reply = "[mood: alarmed] Who goes there?";
    let mut stream = ReplyTagStream::new(Arc::new(set()));
    assert_eq!(stream.push("[mood: "), "");
    assert_eq!(stream.push("alarmed] "), "");
    assert_eq!(stream.push("Who "), "Who ");
    assert_eq!(stream.push("goes there?"), "goes there?");
    assert_eq!(stream.finish(), "");
    // Every cut gives the same words.
    for cut in 0..=reply.len() {
        assert_eq!(streamed(reply, &[cut]), "Who goes there?", "cut at {cut}");
    }
}

#[test]
fn a_reply_without_a_tag_streams_unchanged_and_at_once() {
    let mut stream = ReplyTagStream::new(Arc::new(set()));
    assert_eq!(stream.push("Hello"), "Hello");
    assert_eq!(stream.push(" [mood: angry]"), " [mood: angry]");
    // A bracket that turns out not to be a tag is passed on whole.
    let mut stream = ReplyTagStream::new(Arc::new(set()));
    assert_eq!(stream.push("[sigh"), "");
    assert_eq!(stream.push("s] Fine."), "[sighs] Fine.");
    // A reply sent again after a rate limit starts over.
    let mut stream = ReplyTagStream::new(Arc::new(set()));
    assert_eq!(stream.push("[mood: cal"), "");
    stream.restart();
    assert_eq!(stream.push("[mood: calm] Hi"), "Hi");
    // One never closed is passed on when the reply ends.
    let mut stream = ReplyTagStream::new(Arc::new(set()));
    assert_eq!(stream.push("[mood"), "");
    assert_eq!(stream.finish(), "[mood");
}

#[test]
fn whitespace_streamed_for_long_is_looked_at_once_and_the_tag_still_parses() {
    // A server streaming whitespace one byte at a time: each piece used to trim
    // everything held again, so this many pieces took minutes.
    let mut stream = ReplyTagStream::new(Arc::new(set()));
    for piece in [" ", "\n", "\t", "\u{3000}"].iter().cycle().take(300_000) {
        assert_eq!(stream.push(piece), "");
    }
    assert_eq!(stream.push("[mood: calm]"), "");
    assert_eq!(stream.push("  Fine."), "Fine.");
    // Whitespace before words that are no tag is kept, as it was streamed.
    let mut stream = ReplyTagStream::new(Arc::new(set()));
    assert_eq!(stream.push(" "), "");
    assert_eq!(stream.push("\n"), "");
    assert_eq!(stream.push("Hi"), " \nHi");
}

fn reply_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        // Near-tags, so the interesting paths are taken often.
        (
            "[ \t\n]{0,2}",
            prop::sample::select(vec![
                "[",
                "[mood",
                "[mood:",
                "[MOOD = ",
                "[anim: nod, mood: "
            ]),
            prop::sample::select(vec!["calm", "ängry", "", "alarmed; anim=wave", "\n", "]"]),
            prop::sample::select(vec!["]", "", "] ", "]\n\n", "x]"]),
            any::<String>(),
        )
            .prop_map(|(a, b, c, d, e)| format!("{a}{b}{c}{d}{e}")),
    ]
}

proptest! {
    #[test]
    fn parsing_never_panics_and_keeps_text_without_a_tag(reply in reply_text()) {
        let (fields, words) = set().split(&reply);
        // The words are a tail of the reply: never cut inside a character.
        prop_assert!(reply.ends_with(words));
        prop_assert!(reply.is_char_boundary(reply.len() - words.len()));
        if !reply.trim_start().starts_with('[') {
            prop_assert_eq!(words, reply.as_str());
            prop_assert!(fields.is_empty());
        }
        if words.len() == reply.len() {
            prop_assert!(fields.is_empty());
        }
    }

    #[test]
    fn streamed_pieces_add_up_to_the_words(
        reply in reply_text(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(reply.len() + 1)).collect();
        cuts.sort_unstable();
        let (_, words) = set().split(&reply);
        prop_assert_eq!(streamed(&reply, &cuts), words);
    }
}
