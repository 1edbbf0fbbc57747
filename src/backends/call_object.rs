//! Actions for models that cannot be sent tools: the actions are described at the
//! end of the system prompt, and the model answers with one call object,
//! `{"name": "open_door", "arguments": {"door": "north"}}`, which the backend holds
//! it to (a grammar in llama.cpp, a JSON schema over HTTP) and reads back here.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde_json::Value;

use crate::memory::{ActionCall, ActionSpec, PromptMessage, Role};

/// The messages with `actions` described after the system prompt (or in one of
/// their own when there is none).
pub(crate) fn with_instructions(
    messages: &[PromptMessage],
    actions: &[&ActionSpec],
    required: bool,
) -> Vec<PromptMessage> {
    let mut text = String::from(
        "You can act in the game. To act, answer with only one JSON object: \
         {\"name\": action name, \"arguments\": {field: value, ...}}.\nActions:",
    );
    for action in actions {
        text.push_str(&format!(
            "\n- {}: {} Arguments: {}",
            action.name,
            action.description,
            arguments_schema(&action.parameters)
        ));
    }
    text.push_str(if required {
        "\nAnswer with one action now."
    } else {
        "\nOtherwise answer in words, as yourself."
    });
    let mut messages = messages.to_vec();
    match messages.first_mut() {
        Some(first) if first.role == Role::System => {
            first.content = format!("{}\n\n{text}", first.content).into();
        }
        _ => messages.insert(0, PromptMessage::new(Role::System, text)),
    }
    messages
}

/// The arguments as a small model reads them best: one `"field": type (what it
/// is)` per property. A schema with anything more than plain typed properties
/// goes whole, without what only costs tokens (the dialect, the type's own name
/// and docs, which the action's description says already).
fn arguments_schema(parameters: &Value) -> String {
    let fields = parameters["properties"].as_object().and_then(|properties| {
        properties
            .iter()
            .map(|(name, property)| {
                let kind = match &property["type"] {
                    Value::String(kind) => kind.clone(),
                    Value::Array(kinds) => kinds
                        .iter()
                        .map(|kind| kind.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()?
                        .join(" or "),
                    _ => return None,
                };
                let about = property["description"]
                    .as_str()
                    .map(|about| format!(" ({})", about.trim_end_matches('.')))
                    .unwrap_or_default();
                Some(format!("{}: {kind}{about}", Value::String(name.clone())))
            })
            .collect::<Option<Vec<_>>>()
    });
    match fields {
        Some(fields) if !fields.is_empty() => fields.join(", "),
        Some(_) => "none".to_owned(),
        None => {
            let mut schema = parameters.clone();
            if let Some(object) = schema.as_object_mut() {
                for keyword in ["$schema", "title", "description"] {
                    object.remove(keyword);
                }
            }
            schema.to_string()
        }
    }
}

/// Whether an answer is a call object rather than words. Only the local model
/// answers either way; structured output over HTTP is always a call.
#[cfg(any(feature = "local-llm", test))]
pub(crate) fn is_call(text: &str) -> bool {
    text.starts_with('{')
}

/// The call in `text`, a call object, with a fresh id `<prefix>-<n>`.
pub(crate) fn parse_call(text: &str, prefix: &str) -> Result<ActionCall, String> {
    #[derive(Deserialize)]
    struct Call {
        name: String,
        arguments: Value,
    }
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let call: Call = serde_json::from_str(text)
        .map_err(|error| format!("the model's action call is not a whole call object: {error}"))?;
    let id = format!("{prefix}-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
    Ok(ActionCall::new(id, call.name, call.arguments.to_string()))
}

/// `open_door(door: string)`, as schemars describes it, for the backends' tests.
#[cfg(test)]
pub(crate) fn door() -> ActionSpec {
    ActionSpec {
        name: "open_door".into(),
        description: "Open a door.".into(),
        parameters: serde_json::json!({"$schema": "x", "title": "OpenDoor", "type": "object",
            "properties": {"door": {"type": "string", "description": "Which door."}},
            "required": ["door"]}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_read_as_fields_unless_the_schema_is_more() {
        let plain =
            json!({"properties": {"a": {"type": ["integer", "null"]}, "b": {"type": "boolean"}}});
        assert_eq!(
            arguments_schema(&plain),
            r#""a": integer or null, "b": boolean"#
        );
        assert_eq!(
            arguments_schema(&json!({"type": "object", "properties": {}})),
            "none"
        );
        let nested = json!({"title": "T", "properties": {"to": {"$ref": "#/$defs/Spot"}}});
        assert_eq!(
            arguments_schema(&nested),
            r##"{"properties":{"to":{"$ref":"#/$defs/Spot"}}}"##
        );
    }

    #[test]
    fn actions_are_described_after_the_system_prompt() {
        let messages = [
            PromptMessage::new(Role::System, "You are Echo-7."),
            PromptMessage::new(Role::User, "Open up!"),
        ];
        let with = with_instructions(&messages, &[&door()], true);
        let system = &with[0].content;
        assert!(
            system.starts_with("You are Echo-7.\n\nYou can act"),
            "{system}"
        );
        assert!(
            system.contains(r#"- open_door: Open a door. Arguments: "door": string (Which door)"#),
            "{system}"
        );
        assert!(!system.contains("OpenDoor"), "{system}");
        assert!(system.ends_with("Answer with one action now."));
        assert_eq!(with[1], messages[1]);
        let alone = with_instructions(&messages[1..], &[&door()], false);
        assert_eq!(alone[0].role, Role::System);
        assert!(alone[0].content.ends_with("as yourself."));
    }

    #[test]
    fn calls_parse_with_fresh_ids() {
        let text = r#"{"name": "open_door", "arguments": {"door": "nörth"}}"#;
        assert!(is_call(text));
        let first = parse_call(text, "local").unwrap();
        assert_eq!(first.name, "open_door");
        assert_eq!(first.arguments, r#"{"door":"nörth"}"#);
        assert!(first.id.starts_with("local-"));
        assert_ne!(parse_call(text, "local").unwrap().id, first.id);
        assert!(parse_call(r#"{"name": "open_door", "argu"#, "local").is_err());
        assert!(!is_call("Hello {there}"));
    }
}
