//! The offline backend's fact finder: a few plain patterns, enough to exercise the
//! pinned-facts pipeline without a model. It never guesses beyond them.

use std::sync::LazyLock;

use serde_json::{Value, json};

use crate::memory::{CaselessPrefix, FactKey, Role, SpeakerId, SummaryInput};

/// Patterns that introduce the player's name, then those that introduce a goal.
const NAME_CUES: &[&str] = &["my name is ", "call me ", "我叫", "我的名字是"];
const GOAL_CUES: &[&str] = &[
    "my goal is to ",
    "my goal is ",
    "i need to ",
    "i have to ",
    "i want to ",
    "我的目标是",
    "我需要",
    "我要",
];

/// The cues lower-cased once, not at every character of every line searched.
static NAME_MATCHERS: LazyLock<Vec<CaselessPrefix>> = LazyLock::new(|| matchers(NAME_CUES));
static GOAL_MATCHERS: LazyLock<Vec<CaselessPrefix>> = LazyLock::new(|| matchers(GOAL_CUES));

fn matchers(cues: &[&str]) -> Vec<CaselessPrefix> {
    cues.iter().map(|cue| CaselessPrefix::new(cue)).collect()
}

/// The summary JSON object: the digest plus the facts found in the player's lines.
/// A name goes under the key of whoever said it (`player_name`, or
/// `player_name:<id>` for another speaker).
pub(super) fn summary_with_facts(digest: String, input: &SummaryInput) -> String {
    let mut facts: Vec<Value> = Vec::new();
    for message in input.transcript.iter().filter(|m| m.role == Role::User) {
        if let Some(name) = after_cue(&message.content, &NAME_MATCHERS).and_then(first_word) {
            let key = message
                .speaker
                .as_ref()
                .map_or(FactKey::PLAYER_NAME, SpeakerId::fact_key);
            facts.push(json!({"key": key.as_str(), "value": name, "evidence": [message.index]}));
        }
        if let Some(goal) = after_cue(&message.content, &GOAL_MATCHERS).map(first_clause)
            && !goal.is_empty()
        {
            facts.push(json!({"key": "current_goal", "value": goal, "evidence": [message.index]}));
        }
    }
    // A key may be updated once per reply: the latest line that names it wins.
    let mut seen = std::collections::HashSet::new();
    facts.reverse();
    facts.retain(|fact| seen.insert(fact["key"].to_string()));
    facts.reverse();
    json!({"summary": digest, "facts": facts}).to_string()
}

/// The text after the first cue found (the first cue in `cues` order that occurs),
/// matching case-insensitively.
fn after_cue<'a>(text: &'a str, cues: &[CaselessPrefix]) -> Option<&'a str> {
    cues.iter().find_map(|cue| cue.after_first(text))
}

fn first_word(text: &str) -> Option<String> {
    let word: String = text
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '\'')
        .take(40)
        .collect();
    (!word.is_empty()).then_some(word)
}

fn first_clause(text: &str) -> String {
    text.split(['.', '!', '?', '\n', '。', '！', '？', '，', ','])
        .next()
        .unwrap_or("")
        .trim()
        .chars()
        .take(120)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::memory::ChatMessage;

    fn input(lines: &[&str]) -> SummaryInput {
        SummaryInput {
            previous_summary: Arc::from(""),
            transcript: lines
                .iter()
                .enumerate()
                .map(|(i, line)| ChatMessage {
                    role: Role::User,
                    content: Arc::from(*line),
                    index: 10 + i as u64,
                    timestamp: 0.0,
                    origin: Default::default(),
                    speaker: None,
                })
                .collect(),
            player_name: "Player".into(),
            npc_name: "ECHO-7".into(),
            segments: Vec::new(),
            wants_facts: true,
            covered: 10..10 + lines.len() as u64,
        }
    }

    #[test]
    fn finds_names_and_goals_with_their_evidence() {
        let reply = summary_with_facts(
            "digest".into(),
            &input(&[
                "Hi, my name is Alex.",
                "I need to fix the power system, fast.",
            ]),
        );
        let value: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(value["summary"], "digest");
        assert_eq!(value["facts"][0]["key"], "player_name");
        assert_eq!(value["facts"][0]["value"], "Alex");
        assert_eq!(value["facts"][0]["evidence"][0], 10);
        assert_eq!(value["facts"][1]["value"], "fix the power system");
        assert_eq!(value["facts"][1]["evidence"][0], 11);
    }

    #[test]
    fn a_goal_said_twice_is_one_update_the_reader_accepts() {
        let reply = summary_with_facts(
            "digest".into(),
            &input(&["I need to fix the pump.", "I need to find the key."]),
        );
        let value: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(value["facts"].as_array().unwrap().len(), 1);
        assert_eq!(value["facts"][0]["value"], "find the key");
        assert_eq!(value["facts"][0]["evidence"][0], 11);
        crate::memory::parse_summary_reply(&reply, 10..12, &Default::default())
            .expect("the summary a memory asked for is one it accepts");
    }

    #[test]
    fn a_name_goes_under_the_key_of_whoever_said_it() {
        let mut request = input(&["my name is Alex", "my name is Bob"]);
        request.transcript[1].speaker = Some(SpeakerId::new("p2", "Player Two").unwrap());
        let value: Value = serde_json::from_str(&summary_with_facts("d".into(), &request)).unwrap();
        assert_eq!(value["facts"][0]["key"], "player_name");
        assert_eq!(value["facts"][0]["value"], "Alex");
        assert_eq!(value["facts"][1]["key"], "player_name:p2");
        assert_eq!(value["facts"][1]["value"], "Bob");
    }

    #[test]
    fn case_changes_that_shift_byte_offsets_are_safe() {
        // "ẞ" lower-cases to the shorter "ß", "Ⱥ" to the longer "ⱥ": the line's length is
        // unchanged, but every offset in between moves.
        for (line, name) in [("ẞ我叫小明Ⱥ", "小明Ⱥ"), ("İ MY NAME IS Zoë", "Zoë")] {
            let reply = summary_with_facts("d".into(), &input(&[line]));
            let value: Value = serde_json::from_str(&reply).unwrap();
            assert_eq!(value["facts"][0]["value"], name);
        }
    }

    proptest::proptest! {
        #[test]
        fn any_line_is_searched_without_panicking(
            before in "\\PC{0,12}",
            cue in proptest::sample::select(vec!["My Name Is ", "我叫", "I NEED TO ", "call me "]),
            after in "\\PC{0,12}",
        ) {
            let line = format!("{before}{cue}{after}");
            let reply = summary_with_facts("d".into(), &input(&[&line]));
            let value: Value = serde_json::from_str(&reply).unwrap();
            let found = !value["facts"].as_array().unwrap().is_empty();
            let answerable = after.chars().next().is_some_and(char::is_alphanumeric);
            proptest::prop_assert!(found || !answerable, "no fact in {line:?}");
        }
    }

    #[test]
    fn chinese_cues_work_and_plain_talk_gives_no_facts() {
        let reply = summary_with_facts("d".into(), &input(&["你好", "我叫小明，我需要修电源。"]));
        let value: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(value["facts"].as_array().unwrap().len(), 2);
        let quiet = summary_with_facts("d".into(), &input(&["hello there"]));
        let value: Value = serde_json::from_str(&quiet).unwrap();
        assert!(value["facts"].as_array().unwrap().is_empty());
    }
}
