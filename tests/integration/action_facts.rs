//! Pinned facts from action results: a handler that keeps a promise pins it with
//! `SetPinnedFact`, and the NPC knows it in the very next request, the follow-up of
//! the same turn, and after a save and load.

use bevy::prelude::*;
use bevy_npc_memory::PersonaFeatures;
use bevy_npc_memory::memory::ActionCall;
use bevy_npc_memory::prelude::*;

use crate::support::actions::OpenDoor;
use crate::support::{Harness, persona, temp_dir};
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::memory::ActionOutcome;

const KEPT: &str = "kept: the north door was opened";

/// The game's handler: opens the door and marks the promise to open it kept.
fn open_door(
    call: In<ActionInvocation<OpenDoor>>,
    mut facts: MessageWriter<SetPinnedFact>,
) -> ActionOutcome {
    let key = FactKey::promise(&format!("open_{}", call.args.door)).expect("a plain key");
    facts.write(SetPinnedFact::new(call.npc.clone(), key, KEPT));
    ActionOutcome::Done(format!("The {} door slides open.", call.args.door))
}

fn harness(backend: &ScriptedBackend) -> Harness {
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend.clone()));
    h.app.register_npc_action(open_door);
    let features = PersonaFeatures {
        pinned_facts: Some(true),
        ..Default::default()
    };
    let echo = persona("ECHO-7")
        .with_actions(["open_door"])
        .with_features(features);
    h.spawn("echo7", echo);
    h
}

fn system_prompt(request: &bevy_npc_memory::backends::ChatRequest) -> String {
    request.messages[0].content.to_string()
}

#[test]
fn a_fact_a_handler_pins_is_in_the_turns_follow_up_and_survives_a_save() {
    let backend = ScriptedBackend::new();
    backend
        .push_calls(
            "",
            vec![ActionCall::new("c1", "open_door", r#"{"door": "north"}"#)],
        )
        .push_reply("As promised, the north door is open.");
    let mut h = harness(&backend);
    h.say("echo7", "You promised to open the north door.");
    h.wait_for_replies(1);

    let requests = backend.requests_for(Purpose::Reply);
    assert_eq!(requests.len(), 2);
    assert!(!system_prompt(&requests[0]).contains(KEPT));
    let follow_up = system_prompt(&requests[1]);
    assert!(
        follow_up.contains("promise:open_north") && follow_up.contains(KEPT),
        "the follow-up of the same turn knows the promise is kept: {follow_up}"
    );

    // The game's word, in the NPC's memory.
    h.settle();
    let contexts = h.app.world().resource::<ContextMemoryManager>();
    let facts = contexts.get(&NpcId::new("echo7")).expect("memory").facts();
    let key = FactKey::promise("open_north").unwrap();
    assert_eq!(facts.get(&key).map(|f| &*f.value), Some(KEPT));

    let path = temp_dir("action-facts").join("slot.json");
    h.save_to(&path);
    let fresh_backend = ScriptedBackend::new();
    fresh_backend.push_reply("Yes, it is open.");
    let mut fresh = harness(&fresh_backend);
    fresh.load_ok(&path);
    fresh.say("echo7", "Is the north door open?");
    fresh.wait_for_replies(1);
    let after_load = system_prompt(&fresh_backend.requests_for(Purpose::Reply)[0]);
    assert!(after_load.contains(KEPT), "{after_load}");
}
