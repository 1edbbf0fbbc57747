//! Every line lands in every participant's log with its speaker, is recalled and
//! passed on as theirs, and the player overhears and joins.

use super::*;

#[test]
fn both_logs_hold_every_line_with_its_speaker_and_a_bystander_witnesses_it() {
    let backend = TalkBackend::with(&[("echo7", ECHO_LINES), ("rusty3", RUSTY_LINES)]);
    let mut h = harness(backend.clone());
    h.app.world_mut().write_message(
        StartConversation::between(["echo7", "rusty3"])
            .about("what each of you saw on your shift")
            .max_turns(4)
            .within_earshot(["mira"]),
    );
    let ended = run_to_end(&mut h);
    assert_eq!(
        ended.reason,
        ConversationEnd::Stopped(ConversationStop::TurnLimit)
    );
    assert_eq!(ended.lines, 4);

    let said: Vec<(String, String)> = h
        .inbox::<ConversationLine>()
        .iter()
        .map(|l| (l.speaker.to_string(), l.text.to_string()))
        .collect();
    let expected = [
        ("echo7", ECHO_LINES[0]),
        ("rusty3", RUSTY_LINES[0]),
        ("echo7", ECHO_LINES[1]),
        ("rusty3", RUSTY_LINES[1]),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    assert_eq!(said, expected);

    // ECHO-7 was cued by the scene, then said its lines; RUSTY-3's came in as
    // lines from RUSTY-3.
    let echo = speaker_lines(&h, "echo7");
    assert_eq!(echo[0].1.as_deref(), Some("scene"));
    assert!(echo[0].2.contains("RUSTY-3"), "{:?}", echo[0]);
    assert!(echo[0].2.contains("what each of you saw"), "{:?}", echo[0]);
    let rest: Vec<_> = echo[1..].to_vec();
    let rusty_id = Some("npc_rusty3".to_owned());
    assert_eq!(
        rest,
        vec![
            (Role::Assistant, None, ECHO_LINES[0].to_owned()),
            (Role::User, rusty_id.clone(), RUSTY_LINES[0].to_owned()),
            (Role::Assistant, None, ECHO_LINES[1].to_owned()),
            (Role::User, rusty_id, RUSTY_LINES[1].to_owned()),
        ]
    );
    let echo_id = Some("npc_echo7".to_owned());
    assert_eq!(
        speaker_lines(&h, "rusty3"),
        vec![
            (Role::User, echo_id.clone(), ECHO_LINES[0].to_owned()),
            (Role::Assistant, None, RUSTY_LINES[0].to_owned()),
            (Role::User, echo_id, ECHO_LINES[1].to_owned()),
            (Role::Assistant, None, RUSTY_LINES[1].to_owned()),
        ]
    );

    // Mira, within earshot, witnessed every line; nobody else did.
    let mira = h.messages("mira");
    let witnessed: Vec<&str> = mira
        .iter()
        .filter(|m| matches!(m.origin, Origin::Witnessed { .. }))
        .map(|m| &*m.content)
        .collect();
    assert_eq!(witnessed.len(), 4, "{witnessed:?}");
    assert!(
        witnessed[1].starts_with("RUSTY-3 said to ECHO-7: "),
        "{witnessed:?}"
    );
    assert!(witnessed[1].ends_with(RUSTY_LINES[0]));
    assert!(
        h.messages("echo7")
            .iter()
            .all(|m| !matches!(m.origin, Origin::Witnessed { .. }))
    );
    // Cato was not within earshot: nothing of it reached him.
    assert!(h.messages("cato").is_empty(), "{:?}", h.messages("cato"));
    assert!(h.app.world().resource::<NpcConversations>().is_empty());
}

#[test]
fn what_an_npc_heard_in_a_conversation_is_recalled_and_passed_on_as_said_by_its_speaker() {
    let backend = TalkBackend::with(&[("echo7", ECHO_LINES), ("rusty3", RUSTY_LINES)]);
    let mut h = harness(backend);
    add_inbox::<KnowledgeShared>(&mut h.app);
    h.app.world_mut().write_message(
        StartConversation::between(["rusty3", "echo7"])
            .opening_with(RUSTY_LINES[0])
            .max_turns(2),
    );
    run_to_end(&mut h);
    // ECHO-7 heard it first-hand from RUSTY-3 and tells Mira.
    h.app.world_mut().write_message(ShareKnowledge::about_query(
        "echo7",
        "mira",
        "water reactor stairs",
        1,
    ));
    h.run_until("the telling", |world| {
        !world
            .resource::<crate::support::Inbox<KnowledgeShared>>()
            .0
            .is_empty()
    });
    let heard: Vec<_> = h
        .messages("mira")
        .into_iter()
        .filter_map(|m| match &m.origin {
            Origin::Heard(hearsay) => Some((m.content.to_string(), hearsay.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert_eq!(heard[0].0, RUSTY_LINES[0]);
    let source = format!("{:?}", heard[0].1.source);
    assert!(source.contains("RUSTY-3"), "{source}");
    assert_eq!(heard[0].1.teller().unwrap().name, "ECHO-7");
}

#[test]
fn the_player_overhears_by_messages_and_entity_events() {
    let backend = TalkBackend::with(&[("echo7", ECHO_LINES), ("rusty3", RUSTY_LINES)]);
    let (mut h, echo, rusty) = harness_with_entities(backend);
    #[derive(Resource, Default)]
    struct Overheard(Vec<(Entity, String)>);
    h.app.init_resource::<Overheard>();
    h.app
        .add_observer(|replied: On<Replied>, mut heard: ResMut<Overheard>| {
            heard.0.push((replied.entity, replied.text.to_string()));
        });
    h.app.world_mut().trigger(
        Converse::between([echo, rusty])
            .about("the night")
            .with_rules(bevy_npc_memory::memory::ConversationRules {
                max_turns: 3,
                ..Default::default()
            }),
    );
    run_to_end(&mut h);
    let heard = &h.app.world().resource::<Overheard>().0;
    assert_eq!(
        heard,
        &vec![
            (echo, ECHO_LINES[0].to_owned()),
            (rusty, RUSTY_LINES[0].to_owned()),
            (echo, ECHO_LINES[1].to_owned()),
        ]
    );
    // The deltas of each line add up to it, as for a reply to the player.
    let deltas: String = h
        .inbox::<NpcReplyDelta>()
        .iter()
        .filter(|d| d.npc.as_str() == "rusty3")
        .map(|d| d.delta.as_str())
        .collect();
    assert_eq!(deltas, RUSTY_LINES[0]);
    assert_eq!(h.inbox::<ConversationStarted>().len(), 1);
}

#[test]
fn the_player_joins_by_talking_to_a_participant() {
    let backend = TalkBackend::with(&[
        ("echo7", ECHO_LINES),
        (
            "rusty3",
            &[
                RUSTY_LINES[0],
                "Alex, we were talking about the night shift.",
                RUSTY_LINES[1],
            ],
        ),
    ]);
    let mut h = harness(backend.clone());
    h.app
        .world_mut()
        .write_message(StartConversation::between(["echo7", "rusty3"]).max_turns(5));
    // As soon as ECHO-7 opened, the player speaks to RUSTY-3.
    h.run_until("ECHO-7 opens", |world| {
        !world
            .resource::<crate::support::Inbox<ConversationLine>>()
            .0
            .is_empty()
    });
    let alex = SpeakerId::new("alex", "Alex").unwrap();
    h.app.world_mut().write_message(
        TalkToNpc::new("rusty3", "What are you two talking about?").from_speaker(alex),
    );
    let ended = run_to_end(&mut h);
    assert_eq!(ended.lines, 5);
    // ECHO-7 heard the player's line and RUSTY-3's answer to it.
    let echo = speaker_lines(&h, "echo7");
    assert!(
        echo.iter()
            .any(|(_, who, text)| who.as_deref() == Some("alex") && text.contains("talking about")),
        "{echo:?}"
    );
    assert!(
        echo.iter()
            .any(|(_, who, text)| who.as_deref() == Some("npc_rusty3")
                && text.contains("we were talking about the night shift")),
        "{echo:?}"
    );
    let lines: Vec<String> = h
        .inbox::<ConversationLine>()
        .iter()
        .map(|l| l.text.to_string())
        .collect();
    assert!(lines.iter().any(|l| l.contains("night shift")), "{lines:?}");
}
