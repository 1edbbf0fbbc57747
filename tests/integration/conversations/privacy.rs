//! Private lines, and lines made private after they were told, never reach a
//! prompt for another NPC.

use super::*;

#[test]
fn a_private_player_line_never_reaches_a_prompt_for_the_other_npc() {
    let secret = "The storage key is under the reactor stairs";
    let backend = TalkBackend::with(&[
        (
            "echo7",
            &[
                "Understood, I will keep it to myself.",
                "Good news about the lift.",
                ECHO_LINES[0],
                ECHO_LINES[1],
                ECHO_LINES[2],
            ],
        ),
        ("rusty3", RUSTY_LINES),
    ]);
    let mut h = harness(backend.clone());
    h.app
        .world_mut()
        .write_message(TalkToNpc::new("echo7", secret).privately());
    h.app
        .world_mut()
        .write_message(TalkToNpc::new("echo7", "Also, the lift is fixed."));
    h.wait_for_replies(2);
    h.settle();
    // The topic matches the secret word for word.
    h.app.world_mut().write_message(
        StartConversation::between(["echo7", "rusty3"])
            .about("the storage key under the reactor stairs")
            .max_turns(5),
    );
    run_to_end(&mut h);
    let echo_requests = backend.replies_to("echo7");
    // Two answers to the player, then three conversation turns.
    assert_eq!(echo_requests.len(), 5);
    for request in &echo_requests[2..] {
        let text = prompt_text(request);
        assert!(!text.contains("storage key is under"), "{text}");
        assert!(!text.contains("keep it to myself"), "{text}");
        // What the player said openly may be told.
        assert!(text.contains("the lift is fixed"), "{text}");
    }
    // Nothing of it reached RUSTY-3's log or prompts either.
    for request in backend.replies_to("rusty3") {
        let text = prompt_text(&request);
        assert!(!text.contains("storage key is under"), "{text}");
    }
    // The player still gets it back.
    h.say("echo7", "What did I tell you about the key?");
    h.wait_for_replies(h.inbox::<NpcReplied>().len() + 1);
    let last = backend.replies_to("echo7").pop().unwrap();
    let text = prompt_text(&last);
    assert!(text.contains("storage key is under"), "{text}");
}

/// The opening line the game gives a conversation answers no one: said right after
/// the player told the NPC a secret, it is still said in the open, so the NPC's own
/// conversation prompts hold it (and never the secret).
#[test]
fn an_opening_line_after_a_private_exchange_stays_in_the_npcs_own_prompts() {
    let secret = "The storage key is under the reactor stairs";
    let opening = "Shall we check the pumps on level two?";
    let backend = TalkBackend::with(&[
        (
            "echo7",
            &[
                "Understood, I will keep it to myself.",
                ECHO_LINES[0],
                ECHO_LINES[1],
            ],
        ),
        ("rusty3", RUSTY_LINES),
    ]);
    let mut h = harness(backend.clone());
    h.app
        .world_mut()
        .write_message(TalkToNpc::new("echo7", secret).privately());
    h.wait_for_replies(1);
    h.settle();
    h.app.world_mut().write_message(
        StartConversation::between(["echo7", "rusty3"])
            .opening_with(opening)
            .max_turns(4),
    );
    run_to_end(&mut h);
    let echo_requests = backend.replies_to("echo7");
    assert!(echo_requests.len() > 1, "ECHO-7 spoke in the conversation");
    for request in &echo_requests[1..] {
        let text = prompt_text(request);
        assert!(text.contains(opening), "ECHO-7 forgot its opening: {text}");
        assert!(!text.contains("storage key is under"), "{text}");
    }
}

/// A line told to another NPC and then made private at its source stays with
/// the NPC that heard it, for the players it talks to, but never reaches a
/// conversation among NPCs, where saying it would pass it on.
#[test]
fn a_line_made_private_after_it_was_told_stays_out_of_conversations() {
    let secret = "The storage key is under the reactor stairs";
    let backend = TalkBackend::with(&[
        ("echo7", &["Noted."]),
        ("rusty3", RUSTY_LINES),
        ("mira", &["I will keep watch.", "The lights again?"]),
    ]);
    let mut h = harness(backend.clone());
    add_inbox::<KnowledgeShared>(&mut h.app);
    h.say("echo7", secret);
    h.wait_for_replies(1);
    h.app
        .world_mut()
        .write_message(ShareKnowledge::about_entry("echo7", "rusty3", 0));
    h.run_until("the telling", |world| {
        !world
            .resource::<crate::support::Inbox<KnowledgeShared>>()
            .0
            .is_empty()
    });
    h.app
        .world_mut()
        .write_message(MarkPrivate::new("echo7", 0));
    h.settle();
    // RUSTY-3 still knows it when the player asks.
    h.say("rusty3", "What do you know about the storage key?");
    h.wait_for_replies(2);
    let asked = backend.replies_to("rusty3").pop().unwrap();
    let text = prompt_text(&asked);
    assert!(text.contains("storage key is under"), "{text}");
    let before = backend.replies_to("rusty3").len();
    h.app.world_mut().write_message(
        StartConversation::between(["rusty3", "mira"])
            .about("the storage key under the reactor stairs")
            .max_turns(4),
    );
    run_to_end(&mut h);
    let conversation: Vec<ChatRequest> = backend
        .replies_to("rusty3")
        .into_iter()
        .skip(before)
        .chain(backend.replies_to("mira"))
        .collect();
    assert!(conversation.len() >= 4, "{}", conversation.len());
    for request in &conversation {
        let text = prompt_text(request);
        assert!(!text.contains("storage key is under"), "{text}");
    }
}
