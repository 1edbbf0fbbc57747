//! Actions the game answers later, or never, and the follow-up that answers
//! whoever called them.

use super::*;

fn elevator_calls(h: &Harness) -> Vec<(String, u32)> {
    h.app.world().resource::<Elevator>().0.clone()
}

#[test]
fn a_game_can_answer_an_action_later_and_the_npc_waits_for_it() {
    let backend = ScriptedBackend::new();
    backend
        .push_calls("", vec![call("lift-1", "call_elevator", r#"{"floor": 3}"#)])
        .push_reply("The lift is here.")
        .push_reply("Yes?");
    let (mut h, entity) = harness(&backend, NpcMemorySettings::default());
    h.say("echo7", "Get me the lift.");
    h.run_until("the game is asked", |world| {
        !world.resource::<Elevator>().0.is_empty()
    });
    // While the lift comes the NPC thinks, a new line waits, and nothing is sent.
    h.say("echo7", "Hello?");
    for _ in 0..5 {
        h.app.update();
    }
    assert_eq!(backend.requests_for(Purpose::Reply).len(), 1);
    assert!(!h.app.world().resource::<NpcRequests>().is_idle());
    let state = h.app.world().get::<NpcState>(entity).unwrap();
    assert!(matches!(state, NpcState::Thinking { .. }), "{state:?}");
    assert_eq!(elevator_calls(&h), [("lift-1".to_owned(), 3)]);

    h.app.world_mut().write_message(AnswerNpcAction::new(
        "echo7",
        "lift-1",
        ActionOutcome::Done("The lift arrives at floor 3.".into()),
    ));
    h.wait_for_replies(2);
    assert_eq!(h.replies("echo7"), ["The lift is here.", "Yes?"]);
    let log = h.log("echo7");
    assert_eq!(log[2].1, "The lift arrives at floor 3.");
    assert_eq!(log[4], (Role::User, "Hello?".to_owned()));
}

#[test]
fn an_action_the_game_never_answers_fails_as_timed_out() {
    let backend = ScriptedBackend::new();
    backend
        .push_calls("", vec![call("lift-1", "call_elevator", r#"{"floor": 1}"#)])
        .push_reply("The lift seems stuck.");
    let settings = NpcMemorySettings {
        action_timeout: std::time::Duration::from_millis(50),
        ..Default::default()
    };
    let (mut h, _) = harness(&backend, settings);
    h.say("echo7", "Get me the lift.");
    h.wait_for_replies(1);
    let acted = h.inbox::<NpcActed>();
    assert_eq!(acted[0].outcome, ActionOutcome::Failed("timed out".into()));
    let follow_up = &backend.requests_for(Purpose::Reply)[1];
    let last = follow_up.messages.last().unwrap();
    assert!(
        last.content.contains("failed") && last.content.contains("timed out"),
        "{last:?}"
    );
    // A late answer changes nothing.
    h.app.world_mut().write_message(AnswerNpcAction::new(
        "echo7",
        "lift-1",
        ActionOutcome::Done("It came after all.".into()),
    ));
    h.settle();
    assert_eq!(h.inbox::<NpcActed>().len(), 1);
}

/// An action's follow-up answers whoever called it, even when the window has
/// dropped their line: in a window of two the call and its result fill it. A
/// co-op player's private line stays out of the other player's follow-up, summary
/// and all, and its summary reaches the player who said it.
#[test]
fn an_actions_follow_up_answers_whoever_called_it_when_the_window_holds_only_the_action() {
    let backend = ScriptedBackend::new();
    for _ in 0..40 {
        backend.push_summary("Bob's override code is 4471.");
    }
    for door in ["north", "south", "east"] {
        let arguments = format!(r#"{{"door": "{door}"}}"#);
        backend
            .push_calls("", vec![call(door, "open_door", &arguments)])
            .push_reply(format!("The {door} door is open."));
    }
    let persona = persona("ECHO-7").with_window(2).with_actions(["open_door"]);
    let (mut h, _) = harness_for(&backend, NpcMemorySettings::default(), persona);
    let bob = SpeakerId::new("bob", "Bob").unwrap();
    let lines = [
        TalkToNpc::new("echo7", "The code is 4471. Open the north door.")
            .from_speaker(bob.clone())
            .privately(),
        TalkToNpc::new("echo7", "Open the south door."),
        TalkToNpc::new("echo7", "Open the east door.").from_speaker(bob),
    ];
    for (said, line) in lines.into_iter().enumerate() {
        h.app.world_mut().write_message(line);
        h.wait_for_replies(said + 1);
        h.settle();
    }

    let follow_ups: Vec<ChatRequest> = backend
        .requests_for(Purpose::Reply)
        .into_iter()
        .filter(|r| !r.messages.iter().any(|m| m.role == Role::User))
        .collect();
    assert_eq!(follow_ups.len(), 3, "every follow-up without its line");
    let holds_code =
        |request: &ChatRequest| request.messages.iter().any(|m| m.content.contains("4471"));
    assert!(
        !holds_code(&follow_ups[1]),
        "the other player's follow-up: {:#?}",
        follow_ups[1].messages
    );
    assert!(
        holds_code(&follow_ups[2]),
        "Bob's own follow-up keeps his summary: {:#?}",
        follow_ups[2].messages
    );
}

/// A clear while the NPC waits for the game to answer its action ends that turn
/// as cancelled: the NPC is free again, and a late answer changes nothing.
#[test]
fn clearing_an_npc_that_waits_for_its_action_ends_the_turn_as_cancelled() {
    let backend = ScriptedBackend::new();
    backend
        .push_calls("", vec![call("lift-1", "call_elevator", r#"{"floor": 2}"#)])
        .push_reply("Fresh start.");
    let (mut h, entity) = harness(&backend, NpcMemorySettings::default());
    h.say("echo7", "Get me the lift.");
    h.run_until("the game is asked", |world| {
        !world.resource::<Elevator>().0.is_empty()
    });
    h.app
        .world_mut()
        .write_message(ClearNpcMemory::new(NpcId::new("echo7")));
    h.settle();
    let turn = h.inbox::<bevy_npc_memory::dialogue::NpcReplyStarted>()[0].turn;
    let ended = h.failures();
    assert_eq!(ended, [(ReplyError::Cancelled, Some(turn), None)]);
    assert_eq!(h.app.world().get::<NpcState>(entity), Some(&NpcState::Idle));

    h.app.world_mut().write_message(AnswerNpcAction::new(
        "echo7",
        "lift-1",
        ActionOutcome::Done("The lift arrives.".into()),
    ));
    h.say("echo7", "Hello?");
    h.wait_for_replies(1);
    assert_eq!(h.replies("echo7"), ["Fresh start."]);
    assert_eq!(h.log("echo7").len(), 2, "{:?}", h.log("echo7"));
}
