//! Actions as structured output, for servers whose chat template cannot show
//! tools: the actions go in the system prompt (see `call_object`) and a
//! `response_format` JSON schema of one call object holds the model to it.

use serde_json::{Map, Value, json};

use crate::memory::{ActionCall, ActionSpec};

/// The `response_format` of a call of one of `actions`. Each action's own `$defs`
/// move to the root, where its `$ref`s point once it is nested in the call.
pub(crate) fn response_format(actions: &[ActionSpec]) -> Value {
    let mut defs = Map::new();
    let calls: Vec<Value> = actions
        .iter()
        .map(|action| {
            let mut arguments = action.parameters.clone();
            if let Some(object) = arguments.as_object_mut() {
                object.remove("$schema");
                if let Some(Value::Object(own)) = object.remove("$defs") {
                    // schemars names definitions after their types, so two actions'
                    // definitions of one name are the same type.
                    defs.extend(own);
                }
            }
            json!({
                "type": "object",
                "properties": {"name": {"const": action.name}, "arguments": arguments},
                "required": ["name", "arguments"],
                "additionalProperties": false,
            })
        })
        .collect();
    let mut schema = json!({ "anyOf": calls });
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    json!({
        "type": "json_schema",
        "json_schema": {"name": "action_call", "strict": true, "schema": schema},
    })
}

/// The call in a structured answer. Some servers fence JSON in a Markdown block.
pub(crate) fn read_call(content: &str) -> Result<ActionCall, String> {
    let text = content.trim();
    let text = text
        .strip_prefix("```json")
        .and_then(|rest| rest.strip_suffix("```"))
        .map_or(text, str::trim);
    crate::backends::call_object::parse_call(text, "call")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_action_is_one_alternative_with_its_defs_at_the_root() {
        let spec = ActionSpec {
            name: "patrol".into(),
            description: "Walk.".into(),
            parameters: json!({"$schema": "x", "type": "object",
                "properties": {"to": {"$ref": "#/$defs/Spot"}},
                "$defs": {"Spot": {"type": "integer"}}}),
        };
        let format = response_format(&[spec]);
        let schema = &format["json_schema"]["schema"];
        assert_eq!(format["type"], "json_schema");
        assert_eq!(schema["$defs"]["Spot"]["type"], "integer");
        let call = &schema["anyOf"][0];
        assert_eq!(call["properties"]["name"]["const"], "patrol");
        assert!(call["properties"]["arguments"].get("$defs").is_none());
        assert!(call["properties"]["arguments"].get("$schema").is_none());
    }

    #[test]
    fn fenced_or_bare_calls_are_read() {
        let bare = read_call(r#" {"name": "open_door", "arguments": {"door": "north"}} "#).unwrap();
        assert_eq!(bare.arguments, r#"{"door":"north"}"#);
        let fenced = read_call("```json\n{\"name\": \"x\", \"arguments\": {}}\n```").unwrap();
        assert_eq!(fenced.name, "x");
        assert!(read_call("Sure! I'll open it.").is_err());
    }
}
