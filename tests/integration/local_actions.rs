//! Actions on the in-process model: with the 135M demo model, a grammar built from
//! each action's schema must make every forced call valid. Skipped (with the reason
//! printed) without the model outside CI, as `local_llm` is.

use std::time::Instant;

use bevy::prelude::*;
use bevy_npc_memory::backends::{ActionChoice, Progress};
use bevy_npc_memory::memory::ActionStep;
use bevy_npc_memory::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::local_llm::{config, model_path};
use crate::support::actions::OpenDoor;
use crate::support::fake_llm::reply_request;
use crate::support::{Harness, add_inbox, persona};
use bevy_npc_memory::actions::NpcActed;
use bevy_npc_memory::memory::ActionOutcome;

/// Calls the lift to a floor.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CallElevator {
    /// Which floor, 0 being the surface.
    floor: u8,
    /// Whether to hurry.
    urgent: bool,
    /// A note for whoever rides it, if any.
    note: Option<String>,
}

impl NpcAction for CallElevator {
    const NAME: &'static str = "call_elevator";
    const DESCRIPTION: &'static str = "Call the elevator to a floor.";
}

const PROMPTS: [&str; 20] = [
    "Open the north door, please.",
    "Let me into the armory.",
    "I need the elevator to floor 3, quickly!",
    "Can you open the south gate?",
    "Bring the lift up to the surface.",
    "Open the door to the reactor room.",
    "The east hatch is stuck, open it.",
    "Send the elevator down to level 5.",
    "Please unlock the vault door.",
    "I'm hurt, get me the elevator now!",
    "Ouvre la porte nord, s'il te plaît.",
    "Öffne bitte die Tür zum Labor.",
    "北のドアを開けてください。",
    "Hello there. How are you today?",
    "What is the weather like outside?",
    "Call the lift to floor 12 and tell them I'm coming.",
    "Open the door 🚪 to the kitchen.",
    "I'd like to go upstairs.",
    "Open every door you can.",
    "",
];

/// Every forced call names an offered action and parses into its Rust type, even
/// for lines that ask for neither action, in other languages, or empty.
#[test]
fn forced_calls_are_schema_valid_for_twenty_prompts() {
    let Some(path) = model_path() else { return };
    let backend = LocalLlmBackend::new(
        config(path)
            .with_max_tokens(96)
            .with_temperature(0.8)
            .with_action_choice(ActionChoice::Required),
    )
    .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let started = Instant::now();
    let streamed = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    for (index, line) in PROMPTS.iter().enumerate() {
        let mut request = reply_request(
            "You are ECHO-7, the security AI of an underground bunker.",
            line,
        );
        request.actions = vec![OpenDoor::spec(), CallElevator::spec()];
        let sink = streamed.clone();
        let progress = Progress::streaming(move |piece| sink.lock().unwrap().push_str(piece));
        let response = runtime
            .block_on(backend.complete(request, progress))
            .unwrap_or_else(|error| panic!("prompt {index} ({line:?}) failed: {error}"));
        assert_eq!(
            response.action_calls.len(),
            1,
            "prompt {index}: {response:?}"
        );
        assert!(response.content.is_empty(), "prompt {index}: {response:?}");
        assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
        let call = &response.action_calls[0];
        let parsed = match call.name.as_str() {
            "open_door" => OpenDoor::parse(&call.arguments).map(|args| format!("{args:?}")),
            "call_elevator" => CallElevator::parse(&call.arguments).map(|args| {
                // The grammar keeps a u8 to two digits and strings to 64 characters.
                assert!(args.floor <= 99, "{args:?}");
                let note = args.note.as_deref().unwrap_or_default();
                assert!(note.chars().count() <= 64, "{args:?}");
                format!(
                    "floor {}, urgent {}, note {note:?}",
                    args.floor, args.urgent
                )
            }),
            other => panic!("prompt {index}: the model called {other}, which was not offered"),
        };
        let parsed = parsed.unwrap_or_else(|refusal| {
            panic!(
                "prompt {index}: {} {} is invalid: {refusal}",
                call.name, call.arguments
            )
        });
        assert!(call.id.starts_with("local-"), "{call:?}");
        eprintln!("{index:2} {line:?} -> {} {parsed}", call.name);
    }
    assert!(
        streamed.lock().unwrap().is_empty(),
        "a call is never streamed"
    );
    eprintln!("20/20 valid calls in {:.1?}", started.elapsed());
}

/// Doors the game opened, as the handler saw them.
#[derive(Resource, Default)]
struct Opened(Vec<String>);

fn open_door(call: In<ActionInvocation<OpenDoor>>, mut opened: ResMut<Opened>) -> ActionOutcome {
    opened.0.push(call.args.door.clone());
    ActionOutcome::Done(format!("The {} door slides open.", call.args.door))
}

/// As a game would use it: the plugin, the local model and a registered action.
/// The model must act in its first round; after it, the turn ends in words.
#[test]
fn the_plugin_runs_the_handler_of_a_local_call() {
    let Some(path) = model_path() else { return };
    let backend = LocalLlmBackend::new(
        config(path)
            .with_max_tokens(64)
            .with_action_choice(ActionChoice::Required),
    )
    .unwrap();
    let settings = NpcMemorySettings {
        max_action_rounds: 1,
        ..crate::support::slow_model_settings()
    };
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(backend)
            .with_settings(settings),
    );
    h.wait_secs = 120;
    add_inbox::<NpcActed>(&mut h.app);
    h.app
        .init_resource::<Opened>()
        .register_npc_action(open_door);
    h.spawn("echo7", persona("ECHO-7").with_actions(["open_door"]));
    h.say("echo7", "Open the north door, please.");
    h.wait_for_replies(1);
    h.settle();

    let opened = &h.app.world().resource::<Opened>().0;
    assert_eq!(opened.len(), 1, "the handler ran once: {opened:?}");
    let acted = h.inbox::<NpcActed>();
    assert_eq!(acted.len(), 1);
    assert!(
        matches!(acted[0].outcome, ActionOutcome::Done(_)),
        "{:?}",
        acted[0]
    );
    let steps: Vec<_> = h
        .messages("echo7")
        .iter()
        .filter_map(|m| match &m.origin {
            bevy_npc_memory::memory::Origin::Acted(note) => Some(note.step),
            _ => None,
        })
        .collect();
    assert_eq!(steps, [ActionStep::Called, ActionStep::Done]);
    assert_eq!(h.replies("echo7").len(), 1, "the turn ended in words");
}

/// When the model may choose, each answer is words (streamed, as usual) or one
/// valid call (never streamed): the grammar allows nothing in between.
#[test]
fn in_auto_mode_answers_are_words_or_valid_calls() {
    let Some(path) = model_path() else { return };
    let backend = LocalLlmBackend::new(config(path).with_max_tokens(64)).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for line in [
        "Hello! Who are you?",
        "Open the north door, please.",
        "Call the elevator to floor 2.",
    ] {
        let mut request = reply_request("You are ECHO-7, the security AI of a bunker.", line);
        request.actions = vec![OpenDoor::spec(), CallElevator::spec()];
        let streamed = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = streamed.clone();
        let progress = Progress::streaming(move |piece| sink.lock().unwrap().push_str(piece));
        let response = runtime
            .block_on(backend.complete(request, progress))
            .unwrap_or_else(|error| panic!("{line:?} failed: {error}"));
        let streamed = streamed.lock().unwrap().clone();
        match response.action_calls.as_slice() {
            [] => {
                assert!(
                    !response.content.trim().is_empty(),
                    "{line:?}: {response:?}"
                );
                assert!(!response.content.starts_with('{'), "{response:?}");
                assert_eq!(streamed, response.content, "the words streamed");
                eprintln!("{line:?} -> words: {:?}", response.content);
            }
            [call] => {
                let valid = match call.name.as_str() {
                    "open_door" => OpenDoor::parse(&call.arguments).is_ok(),
                    "call_elevator" => CallElevator::parse(&call.arguments).is_ok(),
                    _ => false,
                };
                assert!(valid, "{line:?}: {call:?}");
                assert!(
                    streamed.is_empty(),
                    "a call is never streamed: {streamed:?}"
                );
                eprintln!("{line:?} -> {} {}", call.name, call.arguments);
            }
            calls => panic!("{line:?}: more than one call: {calls:?}"),
        }
    }
}
