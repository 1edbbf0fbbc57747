//! Conversations among NPCs, run by the plugin and driven as a game drives them:
//! one message starts it, the NPCs take turns, every line lands in every
//! participant's log with its speaker, bystanders witness it, the player
//! overhears and joins, private lines never reach a prompt for another NPC,
//! and the turn limit, the budget, repetition, the game's end and a load all
//! end it cleanly.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bevy::prelude::*;
use bevy_npc_memory::backends::{
    BackendFuture, ChatBackend, ChatRequest, ChatResponse, Progress, Purpose, TokenUsage,
    stream_words,
};
use bevy_npc_memory::conversations::{
    ConversationEnd, ConversationEnded, ConversationLine, ConversationStarted, Converse,
    EndConversation, NpcConversations, StartConversation,
};
use bevy_npc_memory::dialogue::{NpcReplyDelta, Replied};
use bevy_npc_memory::knowledge::{KnowledgeShared, MarkPrivate, ShareKnowledge};
use bevy_npc_memory::memory::{ConversationStop, Origin, SpeakerId};
use bevy_npc_memory::prelude::*;

use crate::support::held::HeldBackend;
use crate::support::{Harness, add_inbox, persona, temp_dir};

/// Answers each NPC from its own script, in order; records every request.
#[derive(Clone, Default)]
struct TalkBackend {
    scripts: Arc<Mutex<HashMap<String, VecDeque<String>>>>,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
    usage: Option<TokenUsage>,
}

impl TalkBackend {
    fn with(scripts: &[(&str, &[&str])]) -> Self {
        let backend = Self::default();
        for (npc, lines) in scripts {
            backend.scripts.lock().unwrap().insert(
                (*npc).to_owned(),
                lines.iter().map(|l| (*l).to_owned()).collect(),
            );
        }
        backend
    }

    fn reporting(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.usage = Some(TokenUsage {
            prompt_tokens,
            completion_tokens,
            cached_tokens: None,
        });
        self
    }

    fn replies_to(&self, npc: &str) -> Vec<ChatRequest> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.npc.as_str() == npc)
            .cloned()
            .collect()
    }
}

impl ChatBackend for TalkBackend {
    fn name(&self) -> &str {
        "talk"
    }

    fn complete(&self, request: ChatRequest, progress: Progress) -> BackendFuture {
        if request.purpose() == Purpose::Summary {
            return Box::pin(async { Ok(ChatResponse::text("A summary.")) });
        }
        let next = self
            .scripts
            .lock()
            .unwrap()
            .get_mut(request.npc.as_str())
            .and_then(VecDeque::pop_front);
        let text = next.unwrap_or_else(|| format!("{} has nothing more to add.", request.npc));
        self.requests.lock().unwrap().push(request);
        let usage = self.usage;
        Box::pin(async move {
            stream_words(&text, &progress);
            let mut response = ChatResponse::text(text);
            response.usage = usage;
            Ok(response)
        })
    }
}

const ECHO_LINES: &[&str] = &[
    "The coolant pump in bay four rattled all night.",
    "I logged a pressure drop near the east airlock.",
    "Alex asked me to watch the generator readings.",
];
const RUSTY_LINES: &[&str] = &[
    "I saw water pooling under the reactor stairs.",
    "The storage crates were moved before dawn.",
    "Somebody left the greenhouse lights burning.",
];

fn harness(backend: TalkBackend) -> Harness {
    harness_with_entities(backend).0
}

/// The harness, and the entities of ECHO-7 and RUSTY-3.
fn harness_with_entities(backend: TalkBackend) -> (Harness, Entity, Entity) {
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend));
    add_inbox::<ConversationStarted>(&mut h.app);
    add_inbox::<ConversationLine>(&mut h.app);
    add_inbox::<ConversationEnded>(&mut h.app);
    let echo = h.spawn("echo7", persona("ECHO-7"));
    let rusty = h.spawn("rusty3", persona("RUSTY-3"));
    h.spawn("mira", persona("Mira"));
    h.spawn("cato", persona("Cato"));
    (h, echo, rusty)
}

fn run_to_end(h: &mut Harness) -> ConversationEnded {
    let before = h.inbox::<ConversationEnded>().len();
    h.run_until("the conversation ends", |world| {
        world
            .resource::<crate::support::Inbox<ConversationEnded>>()
            .0
            .len()
            > before
    });
    h.settle();
    h.inbox::<ConversationEnded>().last().unwrap().clone()
}

fn speaker_lines(h: &Harness, npc: &str) -> Vec<(Role, Option<String>, String)> {
    h.messages(npc)
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| {
            (
                m.role,
                m.speaker.as_ref().map(|s| s.id().to_owned()),
                m.content.to_string(),
            )
        })
        .collect()
}

/// Everything a request sends, as one text.
fn prompt_text(request: &ChatRequest) -> String {
    request
        .messages
        .iter()
        .map(|m| m.content.as_ref())
        .collect()
}

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

/// ECHO-7 opens a conversation of `turns` lines with RUSTY-3 and is held after
/// streaming `pieces`; the reply ends with `rest` once `finish` is released.
fn mid_sentence(
    pieces: &[&str],
    rest: &str,
    turns: u32,
) -> (Harness, HeldBackend, crate::support::held::Held) {
    let backend = HeldBackend::new();
    let held = backend.push_held(pieces, rest);
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend.clone()));
    add_inbox::<ConversationLine>(&mut h.app);
    add_inbox::<ConversationEnded>(&mut h.app);
    h.spawn("echo7", persona("ECHO-7"));
    h.spawn("rusty3", persona("RUSTY-3"));
    h.app
        .world_mut()
        .write_message(StartConversation::between(["echo7", "rusty3"]).max_turns(turns));
    held.start.release();
    h.run_until("ECHO-7 is mid-sentence", |world| {
        world
            .resource::<crate::support::Inbox<NpcReplyDelta>>()
            .0
            .len()
            >= 2
    });
    (h, backend, held)
}
