//! Actions on the in-process model. llama.cpp's plain chat templates cannot show
//! tools, so the actions are offered as call objects (see `call_object`), and a
//! grammar made from their schemas holds the model to schema-valid arguments.

use std::collections::HashSet;

use super::grammar::CallGrammar;
use super::template::Prompt;
use crate::backends::ActionChoice;
use crate::backends::call_object::with_instructions;
use crate::memory::{ActionSpec, PromptMessage};

/// How one request may act.
pub(crate) struct ActionPlan {
    /// GBNF whose root is a call, or (when the model may choose) a call or words.
    pub(crate) grammar: String,
    /// The request's messages with the actions described in the system prompt.
    pub(crate) prompt: Prompt,
    /// Whether the answer must be a call.
    pub(crate) required: bool,
}

/// The plan for `messages` offering `actions`, or `None` when nothing can be
/// offered: no actions, [`ActionChoice::Off`], or no schema the grammar supports.
/// Actions whose schema is not supported are left out, with a warning the first
/// time each is seen (`warned` remembers).
pub(crate) fn plan(
    messages: &[PromptMessage],
    actions: &[ActionSpec],
    choice: ActionChoice,
    warned: &mut HashSet<String>,
    backend: &str,
) -> Option<ActionPlan> {
    if actions.is_empty() || choice == ActionChoice::Off {
        return None;
    }
    let calls = CallGrammar::new(actions);
    for (name, reason) in &calls.refused {
        if warned.insert(name.clone()) {
            tracing::warn!(
                target: crate::trace::TELEMETRY_TARGET,
                backend, action = %name,
                "the local model cannot be offered this action, its schema is not supported: {reason}"
            );
        }
    }
    if calls.offered.is_empty() {
        return None;
    }
    let required = choice == ActionChoice::Required;
    let root = if required {
        "root ::= call\n"
    } else {
        // Words may not start with `{` or blank space, so the first character
        // tells a call from words, and words can stream as soon as they start.
        "root ::= call | text\ntext ::= [^{ \\t\\r\\n] [^\\x00]*\n"
    };
    let offered: Vec<&ActionSpec> = actions
        .iter()
        .filter(|action| calls.offered.contains(&action.name))
        .collect();
    Some(ActionPlan {
        grammar: format!("{root}{}", calls.rules),
        prompt: Prompt::plain(&with_instructions(messages, &offered, required)),
        required,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Role;
    use serde_json::json;

    use crate::backends::call_object::door;

    #[test]
    fn a_required_plan_describes_the_actions_and_forces_a_call() {
        let messages = [
            PromptMessage::new(Role::System, "You are Echo-7."),
            PromptMessage::new(Role::User, "Open up!"),
        ];
        let plan = plan(
            &messages,
            &[door()],
            ActionChoice::Required,
            &mut HashSet::new(),
            "t",
        )
        .expect("offered");
        assert!(plan.required);
        assert!(plan.grammar.starts_with("root ::= call\n"));
        assert!(
            plan.prompt.messages[0]
                .content
                .contains("- open_door: Open a door.")
        );
        assert_eq!(plan.prompt.messages[1], messages[1]);
    }

    #[test]
    fn no_plan_without_actions_or_when_off() {
        let messages = [PromptMessage::new(Role::User, "Hi")];
        let mut warned = HashSet::new();
        assert!(plan(&messages, &[], ActionChoice::Auto, &mut warned, "t").is_none());
        assert!(plan(&messages, &[door()], ActionChoice::Off, &mut warned, "t").is_none());
        let auto = plan(&messages, &[door()], ActionChoice::Auto, &mut warned, "t").unwrap();
        assert!(auto.grammar.contains("root ::= call | text"));
        assert_eq!(auto.prompt.messages[0].role, Role::System);
        let mut bad = door();
        bad.parameters = json!({"type": "string", "pattern": "x"});
        assert!(plan(&messages, &[bad], ActionChoice::Auto, &mut warned, "t").is_none());
        assert!(warned.contains("open_door"));
    }
}
