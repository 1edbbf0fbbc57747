use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::*;
use crate::memory::NpcAction;

/// Opens one of the bunker's doors.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct OpenDoor {
    /// Which door.
    door: String,
    /// Seconds to keep it open.
    seconds: Option<u8>,
}

impl NpcAction for OpenDoor {
    const NAME: &'static str = "open_door";
    const DESCRIPTION: &'static str = "Open a door.";
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
enum Mood {
    Calm,
    Angry,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Spot {
    x: i32,
    y: f64,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Patrol {
    route: Vec<Spot>,
    mood: Mood,
    armed: bool,
    guard: Option<Spot>,
    nonzero: std::num::NonZeroU32,
}

impl NpcAction for Patrol {
    const NAME: &'static str = "patrol";
    const DESCRIPTION: &'static str = "Walk a route.";
}

fn spec(name: &str, parameters: Value) -> ActionSpec {
    ActionSpec {
        name: name.into(),
        description: String::new(),
        parameters,
    }
}

#[test]
fn a_plain_struct_becomes_one_fixed_call() {
    let grammar = CallGrammar::new(&[OpenDoor::spec()]);
    assert_eq!(grammar.offered, ["open_door"]);
    assert!(grammar.refused.is_empty());
    let rules = &grammar.rules;
    assert!(
        rules.starts_with(r#"call ::= "{\"name\": \"open_door\", \"arguments\": " "#),
        "{rules}"
    );
    assert!(rules.contains(r#""{\"door\": ""#), "{rules}");
    assert!(rules.contains(r#"", \"seconds\": ""#), "{rules}");
    // u8 keeps below its maximum by writing at most two digits.
    assert!(rules.contains(r#"("0" | [1-9] [0-9]{0,1})"#), "{rules}");
    assert!(rules.contains(r#""null""#), "{rules}");
}

#[test]
fn nested_types_enums_arrays_and_refs_convert() {
    let grammar = CallGrammar::new(&[Patrol::spec(), OpenDoor::spec()]);
    assert!(grammar.refused.is_empty(), "{:?}", grammar.refused);
    assert_eq!(grammar.offered, ["patrol", "open_door"]);
    let rules = &grammar.rules;
    assert!(rules.contains(r#"("\"Calm\"" | "\"Angry\"")"#), "{rules}");
    assert!(rules.contains(r#"("true" | "false")"#), "{rules}");
    assert!(rules.contains(r#"{0,7}"#), "arrays are capped: {rules}");
    // NonZeroU32 starts at 1: no "0" alternative, no sign.
    assert!(rules.contains(r#"([1-9] [0-9]{0,8})"#), "{rules}");
    // i32 may be negative.
    assert!(rules.contains(r#""-" [1-9] [0-9]{0,8}"#), "{rules}");
    assert_eq!(rules.matches("call ::=").count(), 1);
    assert!(rules.contains(r#"\"patrol\""#) && rules.contains(r#"\"open_door\""#));
}

#[test]
fn string_lengths_are_kept_and_capped() {
    let schema = json!({"type": "object", "properties": {
        "letter": {"type": "string", "minLength": 1, "maxLength": 1},
        "speech": {"type": "string"},
    }, "required": ["letter", "speech"]});
    let rules = CallGrammar::new(&[spec("say", schema)]).rules;
    assert!(rules.contains("char{1,1}"), "{rules}");
    assert!(
        rules.contains(&format!("char{{0,{MAX_STRING_CHARS}}}")),
        "{rules}"
    );
}

#[test]
fn unsupported_schemas_are_refused_with_a_reason() {
    let cases = [
        (
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}}),
            "pattern",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string", "format": "uuid"}}}),
            "format",
        ),
        (
            json!({"type": "object", "properties": {"a": true}}),
            "any value",
        ),
        (
            json!({"type": "object", "properties": {"a": {}}}),
            "no type",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}, "uniqueItems": true}}}),
            "uniqueItems",
        ),
        (json!({"type": "object", "required": ["ghost"]}), "ghost"),
        (json!({"type": "integer", "minimum": 5}), "bounds"),
        (
            json!({"$ref": "#/$defs/Node", "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}}),
            "recursive",
        ),
        (json!({"$ref": "#/$defs/Missing"}), "not in $defs"),
        (json!({"type": "object", "allOf": []}), "allOf"),
    ];
    for (schema, why) in cases {
        let grammar = CallGrammar::new(&[spec("bad", schema.clone()), OpenDoor::spec()]);
        assert_eq!(grammar.offered, ["open_door"], "{schema}");
        let (name, reason) = &grammar.refused[0];
        assert_eq!(name, "bad");
        assert!(reason.contains(why), "{schema}: {reason}");
        // The refused action leaves no trace.
        assert!(!grammar.rules.contains("bad"), "{}", grammar.rules);
    }
}

#[test]
fn nothing_offered_means_no_grammar() {
    let grammar = CallGrammar::new(&[spec("bad", json!({"type": "string", "pattern": "x"}))]);
    assert!(grammar.offered.is_empty());
    assert!(grammar.rules.is_empty());
}

#[test]
fn literals_escape_what_gbnf_would_read() {
    assert_eq!(literal(r#"{"a\b"}"#), r#""{\"a\\b\"}""#);
    assert_eq!(literal("é\n\u{1}"), "\"é\\n\\x01\"");
}

#[test]
fn odd_keys_and_empty_objects() {
    let schema = json!({"type": "object", "properties": {"qu\"o té": {"type": "boolean"}}});
    let rules = CallGrammar::new(&[spec("odd", schema)]).rules;
    assert!(rules.contains(r#""{\"qu\\\"o té\": ""#), "{rules}");
    let rules = CallGrammar::new(&[spec("wave", json!({"type": "object"}))]).rules;
    assert!(rules.contains(r#"\"arguments\": " "{}" "}""#), "{rules}");
}

/// llama.cpp itself parses what the converter writes, for every construct above.
#[test]
fn llama_cpp_accepts_the_grammars() {
    use std::collections::HashSet;

    use llama_cpp_2::sampling::LlamaSampler;

    use crate::backends::ActionChoice;
    use crate::backends::local::actions::plan;
    use crate::memory::{PromptMessage, Role};

    let Some(model) = crate::backends::local::test_vocabulary() else {
        return;
    };
    let odd = spec(
        "odd \"one\"",
        json!({"type": "object", "properties": {
            "qu\"o té\n": {"type": "string", "maxLength": 0},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
            "none": {"type": "array", "items": {"type": "boolean"}, "maxItems": 0},
            "ratio": {"type": "number", "minimum": 0},
            "kind": {"enum": ["a", 1, null, true]},
            "fixed": {"const": "x"},
            "tiny": {"type": "integer", "minimum": -3, "maximum": 7},
        }}),
    );
    // The check means something: a broken grammar is refused, not ignored.
    assert!(LlamaSampler::grammar(&model, "root ::= nowhere", "root").is_err());
    assert!(LlamaSampler::grammar(&model, "root ::= [^\\x00", "root").is_err());
    let actions = [Patrol::spec(), OpenDoor::spec(), odd];
    let messages = [PromptMessage::new(Role::User, "Hi")];
    for choice in [ActionChoice::Auto, ActionChoice::Required] {
        let plan = plan(&messages, &actions, choice, &mut HashSet::new(), "t").expect("a plan");
        assert!(
            LlamaSampler::grammar(&model, &plan.grammar, "root").is_ok(),
            "llama.cpp refused:\n{}",
            plan.grammar
        );
    }
}
