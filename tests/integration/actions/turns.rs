//! A call runs the game's handler and the NPC says what came of it, within the
//! rounds a turn allows and the actions its persona lists.

use super::*;

#[test]
fn an_action_runs_its_handler_and_the_npc_says_what_came_of_it() {
    let (h, backend, entity) = opened_door();

    // The handler ran once, with the typed arguments, the NPC and its turn.
    let turn = turn_of(h.inbox::<NpcReplied>());
    let handled = &h.app.world().resource::<Handled>().0;
    assert_eq!(
        *handled,
        [(
            "north".to_owned(),
            NpcId::new("echo7"),
            Some(entity),
            Some(turn)
        )]
    );

    // The game saw the action, the player the follow-up line, in the same turn.
    let acted = h.inbox::<NpcActed>();
    assert_eq!(acted.len(), 1);
    assert_eq!((acted[0].name.as_str(), acted[0].turn), ("open_door", turn));
    assert_eq!(
        acted[0].outcome,
        ActionOutcome::Done("The north door slides open.".into())
    );
    assert_eq!(h.replies("echo7"), ["There, the north door is open."]);
    assert_eq!(h.app.world().resource::<SeenOnEntity>().0, ["open_door"]);

    // The first request offered the action with its schema; the follow-up told
    // the model what came of it.
    let requests = backend.requests_for(Purpose::Reply);
    assert_eq!(requests.len(), 2);
    let offered = &requests[0].actions;
    let names: Vec<&str> = offered.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["call_elevator", "open_door"], "the persona's only");
    assert_eq!(
        offered[1].parameters["properties"]["door"]["type"],
        "string"
    );
    let follow_up = requests[1].messages.last().expect("messages");
    assert_eq!(follow_up.role, Role::System);
    assert!(
        follow_up.content.contains("The north door slides open."),
        "{follow_up:?}"
    );

    // L2: the line, the call, its result, the reply, in order.
    let log = h.messages("echo7");
    assert_eq!(
        steps(&log),
        [None, Some(ActionStep::Called), Some(ActionStep::Done), None]
    );
    assert_eq!(&*log[1].content, r#"{"door": "north"}"#);
    assert_eq!(&*log[2].content, "The north door slides open.");
    assert_eq!(acted[0].index, log[2].index);
    assert_eq!(log[3].role, Role::Assistant);
}

#[test]
fn a_turn_offers_no_actions_once_its_rounds_are_used() {
    let backend = ScriptedBackend::new();
    backend
        .push_calls("", vec![call("c1", "open_door", r#"{"door": "north"}"#)])
        .push_reply("Done.");
    let settings = NpcMemorySettings {
        max_action_rounds: 1,
        ..Default::default()
    };
    let (mut h, _) = harness(&backend, settings);
    h.say("echo7", "Open the north door.");
    h.wait_for_replies(1);
    let requests = backend.requests_for(Purpose::Reply);
    assert_eq!(requests[0].actions.len(), 2);
    assert!(
        requests[1].actions.is_empty(),
        "past its rounds the model must answer in words"
    );
}

#[test]
fn a_persona_lists_its_actions_and_a_star_allows_every_registered_one() {
    let ron = |actions: &str| {
        Persona::from_ron(&format!(
            r#"(name: "Guard", system_prompt: "You guard.", actions: {actions})"#
        ))
    };
    assert_eq!(ron(r#"["open_door"]"#).unwrap().actions, ["open_door"]);
    let error = ron(r#"["open door\nSYSTEM"]"#).unwrap_err().to_string();
    assert!(error.contains("actions:"), "{error}");

    let backend = ScriptedBackend::new();
    backend.push_reply("Halt.").push_reply("Next!");
    let (mut h, _) = harness(&backend, NpcMemorySettings::default());
    h.spawn("guard", ron(r#"["*"]"#).unwrap());
    h.spawn("clerk", persona("Clerk"));
    h.say("guard", "Hi.");
    h.wait_for_replies(1);
    h.say("clerk", "Hi.");
    h.wait_for_replies(2);
    let offered: Vec<Vec<String>> = backend
        .requests_for(Purpose::Reply)
        .iter()
        .map(|r| r.actions.iter().map(|a| a.name.clone()).collect())
        .collect();
    assert_eq!(
        offered,
        [
            vec!["call_elevator", "launch_missiles", "open_door"],
            vec![]
        ],
        "every registered action for \"*\", none without a list"
    );
}
