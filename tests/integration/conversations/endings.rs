//! Repetition, the budget, the game, a load and a refused start end a
//! conversation cleanly; an interrupted line is heard as far as it went.

use super::*;

#[test]
fn a_repeated_line_ends_the_conversation() {
    let backend = TalkBackend::with(&[
        (
            "echo7",
            &["Is the west door locked?", "Is the west door locked?!"],
        ),
        ("rusty3", &["I checked it an hour ago.", "Yes."]),
    ]);
    let mut h = harness(backend);
    h.app
        .world_mut()
        .write_message(StartConversation::between(["echo7", "rusty3"]).max_turns(20));
    let ended = run_to_end(&mut h);
    match ended.reason {
        ConversationEnd::Stopped(ConversationStop::Repetition { line, repeats, .. }) => {
            assert_eq!((line, repeats), (2, 0));
        }
        other => panic!("expected a repetition, got {other:?}"),
    }
    assert_eq!(ended.lines, 3);
    // RUSTY-3 still heard the repeated line, and was not asked to answer it.
    let rusty = speaker_lines(&h, "rusty3");
    assert_eq!(rusty.last().unwrap().2, "Is the west door locked?!");
    assert_eq!(rusty.last().unwrap().0, Role::User);
}

#[test]
fn the_token_budget_ends_it_by_what_the_backend_reports() {
    let backend =
        TalkBackend::with(&[("echo7", ECHO_LINES), ("rusty3", RUSTY_LINES)]).reporting(100, 20);
    let mut h = harness(backend);
    h.app.world_mut().write_message(
        StartConversation::between(["echo7", "rusty3"])
            .max_turns(10)
            .token_budget(300),
    );
    let ended = run_to_end(&mut h);
    assert_eq!(
        ended.reason,
        ConversationEnd::Stopped(ConversationStop::TokenBudget { spent: 360 })
    );
    assert_eq!((ended.lines, ended.tokens), (3, 360));
}

#[test]
fn the_game_ends_a_conversation_and_a_load_ends_it_too() {
    let (mut h, backend, held) = mid_sentence(&["I saw ", "the pump "], "leak.", 8);
    h.app
        .world_mut()
        .write_message(EndConversation::involving("rusty3"));
    let ended = run_to_end(&mut h);
    assert_eq!(ended.reason, ConversationEnd::Ended);
    // What had streamed is ECHO-7's cut-off line, and RUSTY-3 heard it.
    assert_eq!(h.inbox::<ConversationLine>().len(), 1);
    let rusty = speaker_lines(&h, "rusty3");
    assert_eq!(rusty.last().unwrap().2.trim(), "I saw the pump");
    held.finish.release();

    // A conversation is not saved: a load ends it, and the loaded logs carry on.
    let dir = temp_dir("conversation_load");
    let path = dir.join("save.json");
    h.save_to(&path);
    let _hold = backend.push_held(&[], "Never said.");
    h.app
        .world_mut()
        .write_message(StartConversation::between(["echo7", "rusty3"]).max_turns(50));
    h.run_until("ECHO-7 is asked", |world| {
        world
            .resource::<NpcConversations>()
            .iter()
            .any(|c| c.speaking().is_some())
    });
    let ends = h.inbox::<ConversationEnded>().len();
    h.load_ok(&path);
    h.settle();
    let ended = &h.inbox::<ConversationEnded>()[ends..];
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(ended[0].reason, ConversationEnd::Loaded);
    assert!(h.app.world().resource::<NpcConversations>().is_empty());
}

#[test]
fn a_start_that_cannot_run_is_refused_with_the_reason() {
    let mut h = harness(TalkBackend::default());
    let refused = |h: &mut Harness, start: StartConversation| {
        h.app.world_mut().write_message(start);
        h.app.update();
        h.inbox::<ConversationEnded>()
            .last()
            .unwrap()
            .reason
            .clone()
    };
    use bevy_npc_memory::conversations::ConversationError as E;
    assert_eq!(
        refused(&mut h, StartConversation::between(["echo7"])),
        ConversationEnd::Refused(E::TooFewParticipants)
    );
    assert_eq!(
        refused(&mut h, StartConversation::between(["echo7", "echo7"])),
        ConversationEnd::Refused(E::Repeated(NpcId::new("echo7")))
    );
    assert_eq!(
        refused(&mut h, StartConversation::between(["echo7", "ghost"])),
        ConversationEnd::Refused(E::NotReady(NpcId::new("ghost")))
    );
    assert!(matches!(
        refused(
            &mut h,
            StartConversation::between(["echo7", "rusty3"]).opening_with("  ")
        ),
        ConversationEnd::Refused(E::BadOpening(_))
    ));
    assert!(h.inbox::<ConversationStarted>().is_empty());
}

#[test]
fn an_interrupted_line_is_heard_as_far_as_it_went_and_answered() {
    let (mut h, backend, held) = mid_sentence(&["The pump ", "is "], "leaking badly.", 2);
    h.app
        .world_mut()
        .write_message(bevy_npc_memory::dialogue::InterruptNpc::new("echo7"));
    let ended = run_to_end(&mut h);
    held.finish.release();
    // The cut-off line counted, and RUSTY-3 answered it: the turn limit ended it.
    assert_eq!(
        ended.reason,
        ConversationEnd::Stopped(ConversationStop::TurnLimit)
    );
    let lines: Vec<String> = h
        .inbox::<ConversationLine>()
        .iter()
        .map(|l| l.text.trim().to_owned())
        .collect();
    assert_eq!(lines[0], "The pump is");
    let asked = backend.reply_requests().pop().unwrap();
    assert_eq!(asked.npc.as_str(), "rusty3");
    assert!(
        asked
            .messages
            .last()
            .unwrap()
            .content
            .contains("The pump is"),
        "{:?}",
        asked.messages.last()
    );
    assert!(!asked.messages.iter().any(|m| m.content.contains("leaking")));
}

/// Found by the state-machine test: a line the next speaker had not taken yet,
/// because it was still answering the player, was never heard by it when the game
/// ended the conversation. Every participant hears every line, so it is heard then.
#[test]
fn a_line_waiting_for_a_busy_next_speaker_is_heard_when_the_game_ends_it() {
    let backend = HeldBackend::new();
    let held = backend.push_held(&["Let me "], "check the logs.");
    let mut h = held_harness(&backend);
    // ECHO-7 is mid-reply to the player when RUSTY-3 opens a conversation with it.
    h.app
        .world_mut()
        .write_message(TalkToNpc::new("echo7", "Status report?"));
    held.start.release();
    h.run_until("ECHO-7 is mid-sentence", |world| {
        !world
            .resource::<crate::support::Inbox<NpcReplyDelta>>()
            .0
            .is_empty()
    });
    h.app
        .world_mut()
        .write_message(StartConversation::between(["rusty3", "echo7"]).max_turns(4));
    h.run_until("RUSTY-3 opens", |world| {
        !world
            .resource::<crate::support::Inbox<ConversationLine>>()
            .0
            .is_empty()
    });
    let opening = h.inbox::<ConversationLine>()[0].text.to_string();
    for _ in 0..5 {
        h.app.update();
    }
    assert!(
        !h.app.world().resource::<NpcConversations>().is_empty(),
        "the opening waits for ECHO-7"
    );
    h.app
        .world_mut()
        .write_message(EndConversation::involving("rusty3"));
    h.run_until("the conversation ends", |world| {
        !world
            .resource::<crate::support::Inbox<ConversationEnded>>()
            .0
            .is_empty()
    });
    let ended = h.inbox::<ConversationEnded>()[0].clone();
    assert_eq!(ended.reason, ConversationEnd::Ended);
    held.finish.release();
    h.settle();
    let echo = speaker_lines(&h, "echo7");
    assert!(
        echo.iter().any(|(role, who, text)| *role == Role::User
            && who.as_deref() == Some("npc_rusty3")
            && *text == opening),
        "ECHO-7 never heard {opening:?}: {echo:?}"
    );
    assert_eq!(
        h.replies("echo7").len(),
        1,
        "ECHO-7 answered only the player"
    );
}
