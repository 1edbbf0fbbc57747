//! Game actions an NPC can take, as tool calls: what the game offers
//! ([`ActionSpec`]), what a model asks for ([`ActionCall`]), what the game answers
//! ([`ActionOutcome`]), and how both are remembered ([`ActionNote`]).
//!
//! Engine-agnostic: the Bevy plugin registers handlers and runs the turn, but the
//! types, their validation and their place in the log live here.

use std::fmt;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::text::shorten_to_chars;

/// Longest action name, in characters. Names are identifiers a model repeats
/// back, so anything longer is a mistake or an attack.
pub const MAX_ACTION_NAME_CHARS: usize = 64;

/// Longest call id kept, in characters.
pub const MAX_CALL_ID_CHARS: usize = 128;

/// Longest arguments text accepted from a model, in characters. Longer arguments
/// are refused without being parsed, so a runaway model cannot fill the log.
pub const MAX_ARGUMENTS_CHARS: usize = 4_000;

/// A game action an NPC may take, such as opening a door. The type is the action's
/// arguments: the JSON Schema offered to the model and the check of what the model
/// sends back both come from it, so they cannot disagree.
///
/// ```
/// use bevy_npc_memory::memory::NpcAction;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// /// Opens one of the bunker's doors.
/// #[derive(Deserialize, JsonSchema)]
/// struct OpenDoor {
///     /// Which door: "north" or "south".
///     door: String,
/// }
///
/// impl NpcAction for OpenDoor {
///     const NAME: &'static str = "open_door";
///     const DESCRIPTION: &'static str = "Open a door of the bunker.";
/// }
/// ```
pub trait NpcAction: DeserializeOwned + JsonSchema + Send + Sync + 'static {
    /// The name the model calls it by and personas list it under, e.g.
    /// `"open_door"`: ASCII letters, digits, `_` and `-`, at most
    /// [`MAX_ACTION_NAME_CHARS`].
    const NAME: &'static str;
    /// What the action does, for the model.
    const DESCRIPTION: &'static str;

    /// The action as offered to a model.
    fn spec() -> ActionSpec {
        ActionSpec {
            name: Self::NAME.to_owned(),
            description: Self::DESCRIPTION.to_owned(),
            parameters: schemars::schema_for!(Self).to_value(),
        }
    }

    /// The arguments a model sent, checked against the type; the error is the
    /// refusal the model is shown.
    fn parse(arguments: &str) -> Result<Self, String> {
        parse_arguments(arguments)
    }
}

/// Parses a model's arguments into `A`, with a refusal text the model can act on.
pub(crate) fn parse_arguments<A: DeserializeOwned>(arguments: &str) -> Result<A, String> {
    serde_json::from_str(arguments_json(arguments)?)
        .map_err(|error| format!("the arguments do not fit: {error}"))
}

/// The JSON text to read: empty arguments count as `{}`, which models send for
/// actions without fields, and overlong ones are refused before any parsing.
fn arguments_json(arguments: &str) -> Result<&str, String> {
    if arguments.chars().count() > MAX_ARGUMENTS_CHARS {
        return Err(format!(
            "the arguments are longer than {MAX_ARGUMENTS_CHARS} characters"
        ));
    }
    Ok(if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    })
}

/// Most schema violations one refusal names; the model fixes these first.
const MAX_SCHEMA_ERRORS: usize = 3;

/// Longest text of one schema violation in a refusal, in characters. Its pointer
/// and message can carry what the model wrote (property names), so they are cut.
const MAX_SCHEMA_ERROR_CHARS: usize = 200;

/// An action's JSON Schema, compiled once when the action is registered, that
/// holds a model's arguments to what the model was offered. serde checks only the
/// shape of the type; limits a game writes with `schemars` attributes (`range`,
/// `length`, `regex`) reach the model only through the schema, so without this
/// check a model could break them and the handler would still run.
pub(crate) struct ArgumentSchema(jsonschema::Validator);

impl ArgumentSchema {
    /// Compiles `parameters`, an [`ActionSpec::parameters`]. The error says why
    /// it cannot be compiled, such as a `pattern` that is not a regular expression.
    pub(crate) fn compile(parameters: &serde_json::Value) -> Result<Self, String> {
        jsonschema::validator_for(parameters)
            .map(Self)
            .map_err(|error| error.to_string())
    }

    /// Whether `arguments` (JSON text, as a model wrote them) fit the schema; the
    /// error is the refusal the model is shown, naming where and which limit
    /// failed. Values are masked and each violation is cut short, so a refusal
    /// repeats little of what the model wrote.
    pub(crate) fn check(&self, arguments: &str) -> Result<(), String> {
        let value: serde_json::Value = serde_json::from_str(arguments_json(arguments)?)
            .map_err(|error| format!("the arguments do not fit: {error}"))?;
        let mut named = Vec::new();
        let mut more = 0usize;
        for error in self.0.iter_errors(&value) {
            if named.len() == MAX_SCHEMA_ERRORS {
                more += 1;
                continue;
            }
            let mut text = error.masked().to_string();
            let path = error.instance_path().as_str();
            if !path.is_empty() {
                text.push_str(&format!(" (at {path})"));
            }
            named.push(shorten_to_chars(&text, MAX_SCHEMA_ERROR_CHARS).into_owned());
        }
        if named.is_empty() {
            return Ok(());
        }
        let mut refusal = format!("the arguments do not fit the schema: {}", named.join("; "));
        if more > 0 {
            refusal.push_str(&format!("; and {more} more"));
        }
        Err(refusal)
    }
}

/// Whether `name` can name an action: what [`NpcAction::NAME`] must be.
pub fn is_action_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_ACTION_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// One action as a request offers it to a model: OpenAI-style function tools carry
/// exactly these three fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionSpec {
    /// The name to call it by.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: serde_json::Value,
}

/// An action a model asked for in its answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionCall {
    /// The backend's id for the call (OpenAI's `tool_call_id`), or one the
    /// backend made up; it pairs the call with its result.
    pub id: String,
    /// The action's name, as the model wrote it: not yet checked.
    pub name: String,
    /// The arguments as JSON text, as the model wrote them: not yet checked.
    pub arguments: String,
}

impl ActionCall {
    /// A call of `name` with `arguments` (JSON text).
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// What came of an action: the game's answer, or the plugin's when the call never
/// reached the game. The text goes back to the model and into memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionOutcome {
    /// The action happened; the text says what the NPC saw come of it.
    Done(String),
    /// The action was not taken, and why: not allowed, bad arguments, or vetoed.
    Refused(String),
    /// The action was tried and did not work, and why.
    Failed(String),
}

impl ActionOutcome {
    /// The text, whatever the outcome.
    pub fn text(&self) -> &str {
        match self {
            ActionOutcome::Done(text)
            | ActionOutcome::Refused(text)
            | ActionOutcome::Failed(text) => text,
        }
    }

    /// The step a log entry records for this outcome.
    pub fn step(&self) -> ActionStep {
        match self {
            ActionOutcome::Done(_) => ActionStep::Done,
            ActionOutcome::Refused(_) => ActionStep::Refused,
            ActionOutcome::Failed(_) => ActionStep::Failed,
        }
    }
}

impl fmt::Display for ActionOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (word, text) = match self {
            ActionOutcome::Done(text) => ("done", text),
            ActionOutcome::Refused(text) => ("refused", text),
            ActionOutcome::Failed(text) => ("failed", text),
        };
        write!(f, "{word}: {text}")
    }
}

/// A handler's answer: the outcome now, or later, when the action takes time (a
/// door that takes seconds to open). A later answer comes with the plugin's
/// `AnswerNpcAction` message; one that does not come in time is
/// [`ActionOutcome::Failed`] with "timed out".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActionReply {
    /// The outcome, now.
    Now(ActionOutcome),
    /// The game will answer later.
    Later,
}

impl From<ActionOutcome> for ActionReply {
    fn from(outcome: ActionOutcome) -> Self {
        ActionReply::Now(outcome)
    }
}

/// Which half of an action a log entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStep {
    /// The NPC called the action; the entry's text is the arguments.
    Called,
    /// It was done; the entry's text is the result.
    Done,
    /// It was refused; the entry's text is why.
    Refused,
    /// It failed; the entry's text is why.
    Failed,
}

/// What an action entry of the log is about, besides its text
/// ([`Origin::Acted`](super::Origin::Acted)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionNote {
    /// The action's name, as the model called it (it may be unknown).
    pub name: String,
    /// The call's id, which pairs a call with its result.
    pub call: String,
    /// Which half this entry records.
    pub step: ActionStep,
}

impl ActionNote {
    /// Why this note cannot be loaded, if it cannot.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.name.chars().count() > MAX_ACTION_NAME_CHARS {
            return Err(format!(
                "names an action in more than {MAX_ACTION_NAME_CHARS} characters"
            ));
        }
        if self.call.chars().count() > MAX_CALL_ID_CHARS {
            return Err(format!(
                "has a call id of more than {MAX_CALL_ID_CHARS} characters"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct OpenDoor {
        door: String,
    }

    impl NpcAction for OpenDoor {
        const NAME: &'static str = "open_door";
        const DESCRIPTION: &'static str = "Open a door.";
    }

    #[test]
    fn the_schema_and_the_check_come_from_one_type() {
        let spec = OpenDoor::spec();
        assert_eq!(spec.name, "open_door");
        assert_eq!(spec.parameters["properties"]["door"]["type"], "string");
        assert_eq!(
            OpenDoor::parse(r#"{"door": "north"}"#),
            Ok(OpenDoor {
                door: "north".into()
            })
        );
        let refusal = OpenDoor::parse(r#"{"door": 3}"#).unwrap_err();
        assert!(refusal.starts_with("the arguments do not fit"), "{refusal}");
        assert!(OpenDoor::parse("{}").is_err());
    }

    #[test]
    fn overlong_arguments_are_refused_unparsed() {
        let long = format!(r#"{{"door": "{}"}}"#, "é".repeat(MAX_ARGUMENTS_CHARS));
        assert!(OpenDoor::parse(&long).unwrap_err().contains("longer than"));
    }

    /// Limits only the schema carries: serde reads `{"door": 99}` as a fine `u8`.
    #[derive(Debug, Deserialize, JsonSchema)]
    struct SealDoor {
        #[schemars(range(max = 3))]
        door: u8,
        #[schemars(length(max = 8), regex(pattern = "^[a-z]+$"))]
        code: String,
    }

    impl NpcAction for SealDoor {
        const NAME: &'static str = "seal_door";
        const DESCRIPTION: &'static str = "Seal a door.";
    }

    #[test]
    fn the_schema_holds_limits_serde_does_not_see() {
        let schema = ArgumentSchema::compile(&SealDoor::spec().parameters).unwrap();
        let breaking = r#"{"door": 99, "code": "abc"}"#;
        let typed = SealDoor::parse(breaking).expect("serde alone lets it through");
        assert_eq!((typed.door, typed.code.as_str()), (99, "abc"));
        let refusal = schema.check(breaking).unwrap_err();
        assert_eq!(
            refusal,
            "the arguments do not fit the schema: value is greater than the maximum of 3 (at /door)"
        );
        assert_eq!(schema.check(r#"{"door": 2, "code": "abc"}"#), Ok(()));

        // Every broken limit is named, values masked, the text bounded.
        let long = "É".repeat(MAX_ARGUMENTS_CHARS - 40);
        let refusal = schema
            .check(&format!(r#"{{"door": 4, "code": "{long}"}}"#))
            .unwrap_err();
        assert!(
            refusal.contains("/door") && refusal.contains("/code"),
            "{refusal}"
        );
        assert!(!refusal.contains("ÉÉ"), "{refusal}");
        assert!(
            refusal.chars().count() < 4 * MAX_SCHEMA_ERROR_CHARS,
            "{refusal}"
        );
    }

    #[test]
    fn empty_arguments_are_an_empty_object_and_a_bad_schema_does_not_compile() {
        let none = ArgumentSchema::compile(&json_schema_of_nothing()).unwrap();
        assert_eq!(none.check(" "), Ok(()));
        let door = ArgumentSchema::compile(&SealDoor::spec().parameters).unwrap();
        assert!(door.check("").unwrap_err().contains("required"));
        // A key the model made up, in the pointer, is cut at a character boundary.
        let map = serde_json::json!({"type": "object", "additionalProperties": {"maximum": 3}});
        let map = ArgumentSchema::compile(&map).unwrap();
        let refusal = map
            .check(&format!(r#"{{"{}": 9}}"#, "É".repeat(500)))
            .unwrap_err();
        let said = refusal.strip_prefix("the arguments do not fit the schema: ");
        assert_eq!(
            said.map(|s| s.chars().count()),
            Some(MAX_SCHEMA_ERROR_CHARS),
            "{refusal}"
        );
        assert!(refusal.ends_with("ÉÉ…"), "{refusal}");
        let bad = serde_json::json!({"type": "string", "pattern": "("});
        assert!(ArgumentSchema::compile(&bad).is_err());
    }

    fn json_schema_of_nothing() -> serde_json::Value {
        #[derive(Deserialize, JsonSchema)]
        struct Nothing {}
        schemars::schema_for!(Nothing).to_value()
    }

    #[test]
    fn names_are_plain_identifiers() {
        assert!(is_action_name("open_door"));
        assert!(!is_action_name("open door"));
        assert!(!is_action_name(""));
    }
}
