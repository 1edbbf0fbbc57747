//! Requests as a game sees them: streamed replies, plain summaries, reasoning kept
//! out, at most four at once, and cancelled when their NPC is cleared.

use super::*;

#[test]
fn replies_stream_summaries_do_not_and_reasoning_stays_out() {
    let mut s = setup("stream", |_| {});
    s.h.app.world_mut().write_message(ReconfigureNpcMemory::new(
        NpcId::new("echo7"),
        MemoryConfig {
            summary_threshold: Some(2),
            ..MemoryConfig::with_window(4)
        },
    ));
    let mut events = vec![
        serde_json::json!({"choices": [{"delta": {"reasoning_content": "The user is Alex, so"}}]})
            .to_string(),
    ];
    events.extend(stream_events(
        &[
            "<think>plan the",
            " route</think>",
            "Head to the ",
            "switch room.",
        ],
        true,
    ));
    s.server
        .push(FakeReply::Stream { events, done: true })
        .push(FakeReply::ok(completion(
            "<think>short</think>The player is Alex.",
        )));
    s.say_and_wait("I'm Alex. Where do I go?");
    s.h.wait_for_summaries(1);

    let reply = &s.h.replies("echo7")[0];
    assert_eq!(reply, "Head to the switch room.");
    let shown: String =
        s.h.inbox::<NpcReplyDelta>()
            .iter()
            .map(|d| d.delta.as_str())
            .collect();
    assert_eq!(&shown, reply, "the streamed pieces add up to the reply");
    assert_eq!(s.h.summary("echo7"), "The player is Alex.");

    let received = s.server.received();
    let reply_request = received[0].json();
    assert_eq!(received[0].path, "/v1/chat/completions");
    assert_eq!(
        received[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(reply_request["stream"], true);
    assert_eq!(reply_request["stream_options"]["include_usage"], true);
    assert_eq!(reply_request["model"], "fake-model");
    assert_eq!(
        reply_request["messages"][1]["content"],
        "I'm Alex. Where do I go?"
    );
    let summary_request = received[1].json();
    assert_eq!(summary_request["stream"], false);
    assert_eq!(summary_request["model"], "fake-summarizer");
    assert_eq!(
        (
            summary_request["max_tokens"].as_u64(),
            reply_request["max_tokens"].as_u64()
        ),
        (Some(256), Some(512))
    );
    assert!(
        summary_request["temperature"].as_f64().unwrap()
            < reply_request["temperature"].as_f64().unwrap()
    );
    assert_eq!(summary_request["messages"].as_array().unwrap().len(), 2);

    let usage = s.h.app.world().resource::<LlmUsage>();
    let summary_usage = usage.npc(&NpcId::new("echo7"), Purpose::Summary).unwrap();
    assert_eq!(
        (summary_usage.prompt_tokens, summary_usage.cached_tokens),
        (42, 16)
    );
    assert!(summary_usage.latency_p50().is_some());
    let events = read_trace(&s.trace);
    let response = events.iter().find(|e| e["event"] == "response").unwrap();
    assert_eq!(response["usage"]["prompt_tokens"], 30);
    assert_eq!(response["retries"], 0);
    s.finish("I'm Alex. Where do I go?");
}

#[test]
fn at_most_four_requests_run_at_once() {
    captured_logs();
    let server = FakeLlm::start();
    server.set_fallback(FakeReply::After(
        Duration::from_millis(150),
        Box::new(FakeReply::ok(completion("ok"))),
    ));
    let mut config = config(&server);
    config.stream = false;
    let backend = OpenAiBackend::with_api_key(config, ApiKey::new(KEY)).unwrap();
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend));
    for i in 0..8 {
        h.spawn(&format!("npc{i}"), persona(&format!("NPC {i}")));
        h.say(&format!("npc{i}"), "hello");
    }
    h.wait_for_replies(8);
    assert_eq!(
        server.max_concurrent(),
        4,
        "the default cap queues the rest"
    );
}

#[test]
fn clearing_memory_or_closing_the_game_cancels_requests_in_flight() {
    let mut s = setup("cancel", |config| {
        config.read_timeout = Duration::from_secs(30)
    });
    s.server.push(FakeReply::Hang).push(FakeReply::Hang);
    s.h.say("echo7", "Hello?");
    s.h.run_until("the request reaches the server", |_| {
        s_received(&s.server) == 1
    });
    s.h.app
        .world_mut()
        .write_message(ClearNpcMemory::new(NpcId::new("echo7")));
    s.h.settle();
    let server = s.server.clone();
    wait_for(
        || server.disconnects() == 1,
        "the cleared request's connection closes",
    );
    // The turn ends as cancelled; its line was said to the memory cleared, so
    // it is not handed back.
    let ended: Vec<_> =
        s.h.inbox::<NpcReplyFailed>()
            .iter()
            .map(|f| (f.error.clone(), f.turn.is_some(), f.unrecorded_line.clone()))
            .collect();
    assert_eq!(ended, [(ReplyError::Cancelled, true, None)]);
    assert!(s.h.replies("echo7").is_empty());

    s.h.say("echo7", "Still there?");
    s.h.run_until("the second request reaches the server", |_| {
        s_received(&s.server) == 2
    });
    let started = Instant::now();
    drop(s.h);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "closing the app does not wait for the server"
    );
    wait_for(
        || server.disconnects() == 2,
        "closing the app closes the connection",
    );
}
