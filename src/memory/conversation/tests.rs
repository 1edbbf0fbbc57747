use proptest::prelude::*;

use super::*;

fn rules(max_turns: u32) -> ConversationRules {
    ConversationRules {
        max_turns,
        ..ConversationRules::default()
    }
}

#[test]
fn speakers_take_turns_round_the_circle() {
    let mut turns = TurnTaking::new(3, rules(10));
    assert_eq!(turns.said(0, "The reactor hums again.", 10), Ok(1));
    assert_eq!(turns.said(1, "Bay four flooded overnight.", 10), Ok(2));
    assert_eq!(turns.said(2, "Somebody left the hatch open.", 10), Ok(0));
    assert_eq!(turns.lines(), 3);
    assert_eq!(turns.tokens(), 30);
}

#[test]
fn the_turn_limit_ends_on_the_last_allowed_line() {
    let mut turns = TurnTaking::new(2, rules(2));
    assert_eq!(turns.said(0, "Filters are clogged.", 1), Ok(1));
    assert_eq!(
        turns.said(1, "I swapped the seals yesterday.", 1),
        Err(ConversationStop::TurnLimit)
    );
}

#[test]
fn the_token_budget_ends_on_the_line_that_crosses_it() {
    let mut turns = TurnTaking::new(
        2,
        ConversationRules {
            max_tokens: Some(250),
            ..rules(10)
        },
    );
    assert_eq!(turns.said(0, "Rations are low.", 120), Ok(1));
    assert_eq!(
        turns.said(1, "The greenhouse needs water.", 130),
        Err(ConversationStop::TokenBudget { spent: 250 })
    );
}

#[test]
fn a_line_that_repeats_an_earlier_one_ends_it() {
    let mut turns = TurnTaking::new(2, rules(10));
    turns.said(0, "The west door is locked.", 1).unwrap();
    turns.said(1, "Who has the key card?", 1).unwrap();
    let stop = turns.said(0, "the west doors are LOCKED!", 1).unwrap_err();
    match stop {
        ConversationStop::Repetition {
            line,
            repeats,
            similarity,
        } => {
            assert_eq!((line, repeats), (2, 0));
            assert!(similarity >= 0.99, "{similarity}");
        }
        other => panic!("expected a repetition, got {other:?}"),
    }
}

#[test]
fn lines_that_share_a_few_words_are_not_repetitions() {
    let mut turns = TurnTaking::new(2, rules(10));
    turns.said(0, "The west door is locked.", 1).unwrap();
    assert_eq!(turns.said(1, "The east door is open, though.", 1), Ok(0));
}

#[test]
fn a_threshold_above_one_never_stops_for_repetition() {
    let mut turns = TurnTaking::new(
        2,
        ConversationRules {
            repeat_similarity: 1.5,
            ..rules(10)
        },
    );
    turns.said(0, "Again.", 1).unwrap();
    assert_eq!(turns.said(1, "Again.", 1), Ok(0));
}

#[test]
fn lines_without_terms_compare_by_their_text() {
    assert_eq!(line_similarity("...", " ... "), 1.0);
    assert_eq!(line_similarity("...", "?!"), 0.0);
    assert_eq!(line_similarity("...", "Lights out."), 0.0);
}

#[test]
fn repetition_works_in_any_script() {
    assert!(line_similarity("बंकर का दरवाज़ा बंद है", "बंकर का दरवाज़ा बंद है।") > 0.99);
    assert!(line_similarity("발전기가 고장 났어요", "발전기가 고장 났어요!") > 0.99);
    assert!(line_similarity("ประตูปิดแล้ว", "ไฟดับหมดแล้ว") < 0.8);
}

#[test]
fn the_opening_cue_names_everyone_and_the_topic() {
    let cue = opening_cue(&["RUSTY-3", "Mira"], Some(" the night shift "));
    assert!(cue.contains("RUSTY-3 and Mira"), "{cue}");
    assert!(cue.contains("about: the night shift."), "{cue}");
    let cue = opening_cue(&["RUSTY-3"], Some("  "));
    assert!(cue.contains("You are with RUSTY-3."), "{cue}");
    assert!(!cue.contains("about"), "{cue}");
}

proptest! {
    #[test]
    fn similarity_is_symmetric_and_bounded(a in any::<String>(), b in any::<String>()) {
        let ab = line_similarity(&a, &b);
        prop_assert!((0.0..=1.0).contains(&ab));
        prop_assert_eq!(ab, line_similarity(&b, &a));
        prop_assert_eq!(line_similarity(&a, &a), 1.0);
    }

    #[test]
    fn any_text_can_be_said(lines in proptest::collection::vec(any::<String>(), 1..8)) {
        let mut turns = TurnTaking::new(2, rules(100));
        for (i, line) in lines.iter().enumerate() {
            match turns.said(i % 2, line, 1) {
                Ok(next) => prop_assert_eq!(next, (i + 1) % 2),
                Err(ConversationStop::Repetition { repeats, .. }) => {
                    prop_assert!((repeats as usize) < i);
                    break;
                }
                Err(other) => prop_assert!(false, "unexpected stop {:?}", other),
            }
        }
    }
}
