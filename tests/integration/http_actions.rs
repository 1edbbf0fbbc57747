//! Actions over HTTP: the OpenAI-compatible backend offers an NPC's actions as
//! `tools` and reads the model's `tool_calls`, streamed in pieces or whole, against
//! a scripted server on 127.0.0.1.

use bevy::prelude::*;
use bevy_npc_memory::backends::{BackendError, OpenAiBackend, OpenAiConfig, Progress, RetryPolicy};
use bevy_npc_memory::memory::ActionSpec;
use bevy_npc_memory::prelude::*;
use serde_json::json;

use crate::support::actions::OpenDoor;
use crate::support::fake_llm::{FakeLlm, FakeReply, reply_request, stream_events};
use crate::support::{Harness, add_inbox, persona};
use bevy_npc_memory::actions::NpcActed;
use bevy_npc_memory::memory::ActionOutcome;

/// Doors the handler opened, in order.
#[derive(Resource, Default)]
struct Opened(Vec<String>);

fn open_door(call: In<ActionInvocation<OpenDoor>>, mut opened: ResMut<Opened>) -> ActionOutcome {
    opened.0.push(call.args.door.clone());
    ActionOutcome::Done(format!("The {} door is open.", call.args.door))
}

fn backend(server: &FakeLlm, stream: bool) -> OpenAiBackend {
    let mut config = OpenAiConfig::custom("fake", server.base_url(), "fake-model");
    config.stream = stream;
    config.retry = RetryPolicy::none();
    OpenAiBackend::new(config).unwrap()
}

fn harness(server: &FakeLlm) -> Harness {
    harness_with(backend(server, true))
}

/// ECHO-7 with the `open_door` action, answered by `backend`.
fn harness_with(backend: OpenAiBackend) -> Harness {
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend));
    add_inbox::<NpcActed>(&mut h.app);
    h.app
        .init_resource::<Opened>()
        .register_npc_action(open_door);
    h.spawn("echo7", persona("ECHO-7").with_actions(["open_door"]));
    h
}

/// One streamed piece of tool call `index`.
fn call_piece(index: usize, id: Option<&str>, name: Option<&str>, arguments: &str) -> String {
    let mut function = json!({ "arguments": arguments });
    if let Some(name) = name {
        function["name"] = json!(name);
    }
    let mut call = json!({ "index": index, "type": "function", "function": function });
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]})
        .to_string()
}

fn finished_with_calls() -> String {
    json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}).to_string()
}

#[test]
fn streamed_calls_in_pieces_run_their_handlers_and_the_npc_answers() {
    let server = FakeLlm::start();
    server
        .push(FakeReply::Stream {
            events: vec![
                call_piece(0, Some("call_a"), Some("open_door"), ""),
                call_piece(1, Some("call_b"), Some("open_door"), "{\"do"),
                call_piece(0, None, None, "{\"door\": \"no"),
                call_piece(1, None, None, "or\": \"lab\"}"),
                call_piece(0, None, None, "rth\"}"),
                finished_with_calls(),
            ],
            done: true,
        })
        .push(FakeReply::Stream {
            events: stream_events(&["Both doors ", "are open."], true),
            done: true,
        });
    let mut h = harness(&server);
    h.say("echo7", "Open the north door and the lab.");
    h.wait_for_replies(1);

    assert_eq!(h.app.world().resource::<Opened>().0, ["north", "lab"]);
    assert_eq!(h.replies("echo7"), ["Both doors are open."]);
    let acted: Vec<_> = (h.inbox::<NpcActed>().iter())
        .map(|a| (a.call_id.as_str(), a.arguments.as_str()))
        .collect();
    assert_eq!(
        acted,
        [
            ("call_a", "{\"door\": \"north\"}"),
            ("call_b", "{\"door\": \"lab\"}")
        ]
    );

    let received = server.received();
    assert_eq!(received.len(), 2, "the calls, then the follow-up");
    let tools = &received[0].json()["tools"];
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(tools[0]["function"]["name"], "open_door");
    assert_eq!(
        tools[0]["function"]["description"],
        "Open a door of the bunker."
    );
    assert_eq!(
        tools[0]["function"]["parameters"]["properties"]["door"]["type"], "string",
        "the schema comes from the action's type"
    );
    let follow_up = received[1].body.as_str();
    assert!(
        follow_up.contains("The north door is open.")
            && follow_up.contains("The lab door is open."),
        "the follow-up carries the results: {follow_up}"
    );
}

#[test]
fn a_streamed_call_without_a_name_fails_the_reply_and_keeps_the_line() {
    let server = FakeLlm::start();
    server.push(FakeReply::Stream {
        events: vec![
            call_piece(0, Some("call_a"), None, "{}"),
            finished_with_calls(),
        ],
        done: true,
    });
    let mut h = harness(&server);
    h.say("echo7", "Open up.");
    h.run_until("the reply fails", |w| {
        !w.resource::<crate::support::Inbox<NpcReplyFailed>>()
            .0
            .is_empty()
    });
    let failure = &h.inbox::<NpcReplyFailed>()[0].error;
    let ReplyError::Backend(BackendError::Malformed { reason, .. }) = failure else {
        panic!("expected a malformed answer, got {failure:?}");
    };
    assert!(reason.contains("no function name"), "{reason}");
    assert!(
        h.app.world().resource::<Opened>().0.is_empty(),
        "no handler ran"
    );
    assert!(
        h.log("echo7").iter().any(|(_, text)| text == "Open up."),
        "the player's line is in L2"
    );
}

#[test]
fn whole_answers_carry_their_calls_and_requests_without_actions_offer_no_tools() {
    let server = FakeLlm::start();
    let message = json!({
        "role": "assistant",
        "content": "One moment.",
        "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "open_door", "arguments": "{\"door\":\"north\"}"}},
            {"id": "call_2", "type": "function",
             "function": {"name": "open_door", "arguments": "{\"door\":\"south\"}"}}
        ]
    });
    let answer =
        json!({"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]});
    server
        .push(FakeReply::ok(answer.to_string()))
        .push(FakeReply::ok(
            json!({"choices": [{"message": {"content": "Hi."}}]}).to_string(),
        ));
    let backend = backend(&server, false);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut request = reply_request("You are ECHO-7.", "Open both doors.");
    request.actions = vec![ActionSpec {
        name: "open_door".into(),
        description: "Open a door.".into(),
        parameters: json!({"type": "object"}),
    }];
    let response = runtime
        .block_on(backend.complete(request, Progress::silent()))
        .unwrap();
    assert_eq!(response.content, "One moment.");
    let calls: Vec<_> = (response.action_calls.iter())
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_1", "open_door", "{\"door\":\"north\"}"),
            ("call_2", "open_door", "{\"door\":\"south\"}")
        ]
    );

    let plain = reply_request("You are ECHO-7.", "Hello.");
    let response = runtime
        .block_on(backend.complete(plain, Progress::silent()))
        .unwrap();
    assert!(response.action_calls.is_empty());
    let received = server.received();
    assert!(received[0].json().get("tools").is_some());
    assert!(
        received[1].json().get("tools").is_none(),
        "no actions, no tools field: some servers refuse an empty list"
    );
}

/// One request offering `open_door`, sent straight to the backend (no plugin) with
/// the settings `config` changes.
fn ask_to_open_a_door(
    server: &FakeLlm,
    config: &dyn Fn(&mut OpenAiConfig),
) -> Result<bevy_npc_memory::backends::ChatResponse, BackendError> {
    let mut settings = backend(server, true).config().clone();
    config(&mut settings);
    let mut request = reply_request("You are ECHO-7.", "Open the north door.");
    request.actions = vec![OpenDoor::spec()];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(
        OpenAiBackend::new(settings)
            .unwrap()
            .complete(request, Progress::silent()),
    )
}

/// `Required` sends `tool_choice`; `Off` sends no tools; structured actions go as a
/// `response_format` schema and the answer's JSON comes back as the call.
#[test]
fn the_action_choice_and_structured_actions_shape_the_request() {
    use bevy_npc_memory::backends::ActionChoice;

    let server = FakeLlm::start();
    let words = json!({"choices": [{"message": {"content": "Hi."}}]}).to_string();
    let call = r#"{"name": "open_door", "arguments": {"door": "north"}}"#;
    let structured = json!({"choices": [{"message": {"content": call}, "finish_reason": "stop"}]});
    server
        .push(FakeReply::ok(words.clone()))
        .push(FakeReply::ok(words))
        .push(FakeReply::ok(structured.to_string()));
    let ask = |config: &dyn Fn(&mut OpenAiConfig)| ask_to_open_a_door(&server, config).unwrap();
    // Words come whole; the structured request streams in config but not on the wire.
    ask(&|c| {
        c.stream = false;
        c.action_choice = ActionChoice::Required;
    });
    ask(&|c| {
        c.stream = false;
        c.action_choice = ActionChoice::Off;
    });
    let response = ask(&|c| c.structured_actions = true);

    let received: Vec<serde_json::Value> = server.received().iter().map(|r| r.json()).collect();
    assert_eq!(received[0]["tool_choice"], "required");
    assert!(received[0]["tools"].is_array());
    assert!(received[1].get("tools").is_none() && received[1].get("tool_choice").is_none());
    let sent = &received[2];
    assert!(
        sent.get("tools").is_none(),
        "structured actions send no tools"
    );
    assert_eq!(sent["stream"], false, "a call is not streamed");
    let schema = &sent["response_format"]["json_schema"]["schema"]["anyOf"][0];
    assert_eq!(schema["properties"]["name"]["const"], "open_door");
    let system = sent["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("- open_door: Open a door of the bunker."),
        "{system}"
    );

    assert!(response.content.is_empty());
    assert_eq!(response.action_calls.len(), 1);
    assert_eq!(response.action_calls[0].name, "open_door");
    assert!(OpenDoor::parse(&response.action_calls[0].arguments).is_ok());
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
}

/// A structured call the token limit cut off (a small model can run on inside an
/// unbounded string) is reported as the limit, as the local model reports it; cut
/// off under the server's own limit, or broken for another reason, it is malformed.
#[test]
fn a_structured_call_cut_off_by_the_token_limit_says_so() {
    let server = FakeLlm::start();
    let answer = |content: &str, finish: &str| {
        let body = json!({"choices": [{"message": {"content": content}, "finish_reason": finish}]});
        FakeReply::ok(body.to_string())
    };
    let cut = r#"{"name": "open_door", "arguments": {"door": "north_door_1_door_2_door_3"#;
    server
        .push(answer(cut, "length"))
        .push(answer(cut, "length"))
        .push(answer(cut, "stop"));
    let structured = |max_tokens: Option<u32>| {
        ask_to_open_a_door(&server, &|c| {
            c.structured_actions = true;
            c.max_tokens = max_tokens;
        })
        .expect_err("a cut call is no call")
    };

    match structured(Some(96)) {
        BackendError::MaxTokens { max_tokens, .. } => assert_eq!(max_tokens, 96),
        other => panic!("expected the token limit, got {other:?}"),
    }
    match structured(None) {
        BackendError::Malformed { reason, .. } => {
            assert!(
                reason.contains("the server's token limit cut it off"),
                "{reason}"
            )
        }
        other => panic!("expected malformed, got {other:?}"),
    }
    match structured(Some(96)) {
        BackendError::Malformed { reason, .. } => {
            assert!(!reason.contains("token limit"), "{reason}")
        }
        other => panic!("a call that stopped is malformed, got {other:?}"),
    }
}

/// A server that returns tool calls anyway, under `ActionChoice::Off` or for an
/// action the request never offered: the calls are dropped, never run, and the
/// words are the reply.
#[test]
fn calls_of_actions_not_offered_never_come_back() {
    use bevy_npc_memory::backends::ActionChoice;

    let server = FakeLlm::start();
    let calling = |name: &str| {
        let message = json!({
            "role": "assistant",
            "content": "Done.",
            "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": name, "arguments": "{\"door\":\"north\"}"}}]
        });
        json!({"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]})
            .to_string()
    };
    server
        .push(FakeReply::ok(calling("open_door")))
        .push(FakeReply::ok(calling("self_destruct")))
        .push(FakeReply::ok(calling("open_door")));
    let ask = |choice: ActionChoice| {
        ask_to_open_a_door(&server, &|c| {
            c.stream = false;
            c.action_choice = choice;
        })
        .unwrap()
    };
    let off = ask(ActionChoice::Off);
    assert!(off.action_calls.is_empty(), "{:?}", off.action_calls);
    assert_eq!(off.content, "Done.");
    let made_up = ask(ActionChoice::Auto);
    assert!(
        made_up.action_calls.is_empty(),
        "{:?}",
        made_up.action_calls
    );
    let offered = ask(ActionChoice::Auto);
    assert_eq!(
        offered.action_calls.len(),
        1,
        "an offered call still comes back"
    );

    // Through the plugin: a turn under `Off` never runs the handler.
    let server = FakeLlm::start();
    server.push(FakeReply::ok(calling("open_door")));
    let mut settings = backend(&server, false).config().clone();
    settings.action_choice = ActionChoice::Off;
    let mut h = harness_with(OpenAiBackend::new(settings).unwrap());
    h.say("echo7", "Open the north door.");
    h.wait_for_replies(1);
    assert!(h.app.world().resource::<Opened>().0.is_empty());
    assert!(h.inbox::<NpcActed>().is_empty());
    assert_eq!(h.replies("echo7"), ["Done."]);
}
