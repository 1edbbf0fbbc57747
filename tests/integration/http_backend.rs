//! The OpenAI-compatible backend against a scripted server on 127.0.0.1: faults,
//! retries, streaming, usage, hostile servers, and no credential in any output.

use std::time::{Duration, Instant, SystemTime};

use crate::support::fake_llm::{
    FakeLlm, FakeReply, Flood, completion, http_date, reply_request, stream_events,
};
use crate::support::logs::captured_logs;
use crate::support::{Harness, persona, read_trace, temp_dir};
use bevy_npc_memory::backends::BackendError;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::{
    ApiKey, OpenAiBackend, OpenAiConfig, Progress, ResponseLimits, ResponsePart, RetryPolicy,
};
use bevy_npc_memory::dialogue::NpcMemoryDegraded;
use bevy_npc_memory::dialogue::NpcReplyDelta;
use bevy_npc_memory::dialogue::ReconfigureNpcMemory;
use bevy_npc_memory::memory::Role;
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::schedule::NpcMemoryScheduler;
use bevy_npc_memory::telemetry::LlmUsage;

/// No allocation may come near a flood: a few times the largest limit.
const ALLOCATION_BOUND: usize = 32 << 20;
/// What a client that stopped reading can have let through: its limit plus the
/// loopback socket buffers. A client that reads a flood to the end lets 200 MB through.
const FLOOD_READ_BOUND: u64 = 64 << 20;
/// Errors, log entries and degradations after a flood stay this short.
const TEXT_BOUND: usize = 2_000;

const KEY: &str = "sk-test-0451-DO-NOT-LEAK";

/// Everything the crate logs in this test binary, at every level.
struct Setup {
    h: Harness,
    server: FakeLlm,
    trace: std::path::PathBuf,
    backend: OpenAiBackend,
    /// The runtime the requests run on when the test watches their allocations;
    /// dropped after the app.
    _runtime: Option<tokio::runtime::Runtime>,
}

fn config(server: &FakeLlm) -> OpenAiConfig {
    let mut config = OpenAiConfig::custom("fake", server.base_url(), "fake-model")
        .with_summary_model("fake-summarizer");
    config.retry = RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
    };
    config.read_timeout = Duration::from_millis(300);
    config
}

fn setup(name: &str, configure: impl FnOnce(&mut OpenAiConfig)) -> Setup {
    setup_on(name, configure, None)
}

/// A setup whose requests run on a runtime of the test's own, whose threads report
/// their largest allocation (see `support::alloc`): other tests in this binary
/// allocate large buffers of their own, which must not count.
fn setup_watched(name: &str, configure: impl FnOnce(&mut OpenAiConfig)) -> Setup {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .on_thread_start(crate::support::alloc::watch_this_thread)
        .enable_all()
        .build()
        .unwrap();
    let mut setup = setup_on(name, configure, Some(runtime));
    // A flood is megabytes of tiny events, each parsed and passed on as a piece
    // of the reply: seconds of work in a debug build on a busy machine. These
    // tests bound bytes and allocations, not speed, so they wait longer.
    setup.h.wait_secs = 60;
    setup
}

fn setup_on(
    name: &str,
    configure: impl FnOnce(&mut OpenAiConfig),
    runtime: Option<tokio::runtime::Runtime>,
) -> Setup {
    captured_logs();
    let server = FakeLlm::start();
    let mut config = config(&server);
    configure(&mut config);
    let backend = OpenAiBackend::with_api_key(config, ApiKey::new(KEY)).unwrap();
    // Traces append: a file left by an earlier run with this pid must not add lines.
    let trace = crate::support::temp_dir(&format!("http-trace-{name}")).join("trace.jsonl");
    let mut plugin = NpcMemoryPlugin::default()
        .with_backend(backend.clone())
        .with_trace_file(&trace);
    if let Some(runtime) = &runtime {
        plugin = plugin.with_runtime(runtime.handle().clone());
    }
    let mut h = Harness::new(plugin);
    h.spawn("echo7", persona("ECHO-7"));
    Setup {
        h,
        server,
        trace,
        backend,
        _runtime: runtime,
    }
}

impl Setup {
    /// Says `line` and waits for the reply or the failure. A hostile server that
    /// holds the NPC up fails the test here, after the harness's few seconds.
    fn say_and_wait(&mut self, line: &str) {
        let before = self.h.inbox::<NpcReplied>().len() + self.h.inbox::<NpcReplyFailed>().len();
        self.h.say("echo7", line);
        self.h.run_until("a reply or a failure", |w| {
            w.resource::<crate::support::Inbox<NpcReplied>>().0.len()
                + w.resource::<crate::support::Inbox<NpcReplyFailed>>()
                    .0
                    .len()
                > before
        });
    }

    fn failure(&self) -> ReplyError {
        self.h
            .inbox::<NpcReplyFailed>()
            .last()
            .expect("a failure")
            .error
            .clone()
    }

    fn reply_usage(&self) -> bevy_npc_memory::telemetry::UsageStats {
        let usage = self.h.app.world().resource::<LlmUsage>();
        usage
            .npc(&NpcId::new("echo7"), Purpose::Reply)
            .expect("usage recorded")
            .clone()
    }

    /// After a hostile server: each flood stopped early, nothing large was allocated
    /// or kept, and the NPC answers its next line.
    fn survives_floods(&mut self, floods: usize) {
        let server = self.server.clone();
        wait_for(|| server.flooded().len() == floods, "the floods end");
        for sent in self.server.flooded() {
            assert!(
                sent < FLOOD_READ_BOUND,
                "the client let {sent} bytes of a flood through"
            );
        }
        let largest = crate::support::alloc::largest_watched_allocation();
        assert!(
            largest < ALLOCATION_BOUND,
            "an allocation of {largest} bytes"
        );
        for failure in self.h.inbox::<NpcReplyFailed>() {
            let text = format!("{} {:?}", failure.error, failure.error);
            assert!(text.len() < TEXT_BOUND, "an error of {} bytes", text.len());
        }
        for degraded in self.h.inbox::<NpcMemoryDegraded>() {
            let text = degraded.degradation.to_string();
            assert!(
                text.len() < TEXT_BOUND,
                "a degradation of {} bytes",
                text.len()
            );
        }

        // Whatever the NPC asks next (a reply, or a summary retry), the server is well again.
        self.server.set_fallback(if self.backend.config().stream {
            FakeReply::Stream {
                events: stream_events(&["Still ", "here."], true),
                done: true,
            }
        } else {
            FakeReply::ok(completion("Still here."))
        });
        self.say_and_wait("Are you still there?");
        assert_eq!(
            self.h.replies("echo7").last().map(String::as_str),
            Some("Still here.")
        );
        for (_, text) in self.h.log("echo7") {
            assert!(
                text.len() < TEXT_BOUND,
                "an L2 entry of {} bytes",
                text.len()
            );
        }
    }

    /// The player's line is in L2, and the key is nowhere.
    fn finish(self, line: &str) {
        assert_eq!(
            self.h.log("echo7")[0],
            (Role::User, line.to_owned()),
            "the player's line is kept"
        );
        let errors: Vec<String> = self
            .h
            .inbox::<NpcReplyFailed>()
            .iter()
            .map(|f| format!("{} {:?}", f.error, f.error))
            .collect();
        let backend_debug = format!("{:?}", self.backend);
        let Setup { h, trace, .. } = self;
        drop(h);
        let trace_text = std::fs::read_to_string(&trace).unwrap();
        let logs = String::from_utf8(captured_logs().lock().unwrap().clone()).unwrap();
        for (what, text) in [
            ("errors", errors.join("\n")),
            ("Debug output", backend_debug),
            ("the trace file", trace_text),
            ("the logs", logs),
        ] {
            assert!(
                !text.contains(KEY) && !text.contains("0451-DO-NOT"),
                "the key leaked into {what}"
            );
        }
        std::fs::remove_file(trace).ok();
    }
}

#[test]
fn rate_limited_429_honours_retry_after_then_succeeds() {
    let mut s = setup("429", |_| {});
    s.server
        .push(
            FakeReply::status(429, r#"{"error":{"message":"slow down"}}"#)
                .with_header("Retry-After", "1"),
        )
        .push(FakeReply::Stream {
            events: stream_events(&["Logged."], true),
            done: true,
        });
    let started = Instant::now();
    s.say_and_wait("Hello, I'm Alex.");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited {:?}, not Retry-After",
        started.elapsed()
    );
    assert_eq!(s.h.replies("echo7"), ["Logged."]);
    assert_eq!(s.server.received().len(), 2);
    assert_eq!(s.reply_usage().retries, 1);
    s.finish("Hello, I'm Alex.");
}

/// The client waits out a 429 itself and says so: the scheduler holds every other
/// request until the client's retry is accepted, instead of sending them into the
/// same limit. The client's own wait is short here, and the provider's
/// `Retry-After` long, so the test does not depend on timing.
#[test]
fn a_429_the_client_retries_itself_holds_every_other_request_until_it_is_accepted() {
    let mut s = setup("429-pause", |config| {
        config.retry.max_delay = Duration::from_millis(50);
    });
    s.h.spawn("guard", persona("Guard"));
    s.server
        .push(
            FakeReply::status(429, r#"{"error":{"message":"slow down"}}"#)
                .with_header("Retry-After", "30"),
        )
        .set_fallback(FakeReply::Stream {
            events: stream_events(&["Logged."], true),
            done: true,
        });
    s.h.say("echo7", "Hello?");
    s.h.run_until("the scheduler hears of the 429 the client waits out", |w| {
        let scheduler = w.resource::<NpcMemoryScheduler>();
        scheduler.budget_use().rate_limited_for.is_some()
    });
    s.h.say("guard", "Evening.");
    s.h.wait_for_replies(2);
    let senders: Vec<_> = (s.server.received().iter())
        .map(|r| {
            if r.body.contains("Evening.") {
                "guard"
            } else {
                "echo7"
            }
        })
        .collect();
    assert_eq!(
        senders,
        ["echo7", "echo7", "guard"],
        "the guard's line waited for the retry"
    );
    assert!(s.h.inbox::<NpcReplyFailed>().is_empty(), "nothing failed");
    assert_eq!(s.reply_usage().retries, 1);
    let scheduler = s.h.app.world().resource::<NpcMemoryScheduler>();
    assert_eq!(
        scheduler.budget_use().rate_limited_for,
        None,
        "the accepted retry ended the pause, not the 30 s Retry-After"
    );
}

#[test]
fn a_500_is_retried_and_then_succeeds() {
    let mut s = setup("500", |_| {});
    s.server
        .push(FakeReply::status(500, "upstream exploded"))
        .push(FakeReply::Stream {
            events: stream_events(&["Go ", "left."], true),
            done: true,
        });
    s.say_and_wait("Where now?");
    assert_eq!(s.h.replies("echo7"), ["Go left."]);
    let usage = s.reply_usage();
    assert_eq!((usage.requests, usage.failures, usage.retries), (1, 0, 1));
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_tokens
        ),
        (30, 5, 8)
    );
    let logs = String::from_utf8(captured_logs().lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("retrying"),
        "the log capture works, so its key check means something"
    );
    s.finish("Where now?");
}

#[test]
fn a_silent_server_times_out_after_the_retries() {
    let mut s = setup("timeout", |_| {});
    for _ in 0..3 {
        s.server.push(FakeReply::Hang);
    }
    s.say_and_wait("Are you there?");
    assert!(
        matches!(
            s.failure(),
            ReplyError::Backend(BackendError::Timeout { .. })
        ),
        "{:?}",
        s.failure()
    );
    assert_eq!(s.server.received().len(), 3, "one try and two retries");
    assert_eq!(s.reply_usage().retries, 2);
    assert_eq!(s.h.log("echo7").len(), 1, "no reply was committed");
    s.finish("Are you there?");
}

#[test]
fn malformed_json_is_a_typed_error_and_not_retried() {
    let mut s = setup("malformed", |config| config.stream = false);
    s.server
        .push(FakeReply::ok(r#"{"choices": [ {"message": "#.into()));
    s.say_and_wait("Status?");
    let ReplyError::Backend(BackendError::Malformed { backend, reason }) = s.failure() else {
        panic!("expected a malformed reply, got {:?}", s.failure());
    };
    assert_eq!(backend, "fake");
    assert!(reason.contains("invalid JSON"), "{reason}");
    assert_eq!(s.server.received().len(), 1);
    s.finish("Status?");
}

#[test]
fn a_stream_cut_mid_reply_never_becomes_a_reply() {
    let mut s = setup("cut", |_| {});
    s.server.push(FakeReply::Stream {
        events: stream_events(&["The breaker ", "is in the"], false),
        done: false,
    });
    s.say_and_wait("Where is the breaker?");
    assert_eq!(
        s.failure(),
        ReplyError::Backend(BackendError::Truncated {
            backend: "fake".into(),
            received_chars: 21
        })
    );
    let shown: String =
        s.h.inbox::<NpcReplyDelta>()
            .iter()
            .map(|d| d.delta.as_str())
            .collect();
    assert_eq!(
        shown, "The breaker is in the",
        "the UI saw the partial text as it came"
    );
    assert_eq!(
        s.server.received().len(),
        1,
        "text was shown, so no retry repeats it"
    );
    assert!(s.h.replies("echo7").is_empty());
    assert_eq!(
        s.h.log("echo7").len(),
        1,
        "the partial text is not in memory"
    );
    s.finish("Where is the breaker?");
}

#[test]
fn a_401_fails_at_once_with_a_clear_error() {
    let mut s = setup("401", |_| {});
    s.server.push(FakeReply::status(
        401,
        &format!(r#"{{"error":{{"message":"invalid key {KEY}"}}}}"#),
    ));
    s.say_and_wait("Hello?");
    assert_eq!(
        s.failure(),
        ReplyError::Backend(BackendError::Auth {
            backend: "fake".into()
        })
    );
    assert_eq!(
        s.failure().to_string(),
        "authentication failed for provider fake"
    );
    assert_eq!(s.server.received().len(), 1, "401 is not retried");
    s.finish("Hello?");
}

#[test]
fn a_404_echoing_the_key_is_scrubbed_and_not_retried() {
    let mut s = setup("404", |_| {});
    s.server.push(FakeReply::status(
        404,
        &format!(r#"{{"error":{{"message":"no model for key {KEY}"}}}}"#),
    ));
    s.say_and_wait("Hello?");
    let ReplyError::Backend(BackendError::Http {
        status: 404,
        reason,
        ..
    }) = s.failure()
    else {
        panic!("expected HTTP 404, got {:?}", s.failure());
    };
    assert_eq!(reason, "no model for key <redacted>");
    assert_eq!(s.server.received().len(), 1);
    s.finish("Hello?");
}

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
fn a_missing_key_is_reported_by_variable_name() {
    let error =
        OpenAiBackend::new(OpenAiConfig::deepseek().with_api_key_env("NPC_MEMORY_TEST_UNSET_KEY"))
            .unwrap_err();
    assert_eq!(
        error.to_string(),
        "no API key for provider deepseek: set the environment variable NPC_MEMORY_TEST_UNSET_KEY"
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
    assert!(s.h.inbox::<NpcReplyFailed>().is_empty() && s.h.replies("echo7").is_empty());

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

fn s_received(server: &FakeLlm) -> usize {
    server.received().len()
}

fn wait_for(done: impl Fn() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_huge_retry_after_is_capped_by_max_delay() {
    let mut s = setup("retry-after-huge", |config| {
        config.retry.max_delay = Duration::from_millis(400)
    });
    s.server
        .push(
            FakeReply::status(429, r#"{"error":{"message":"slow down"}}"#)
                .with_header("Retry-After", "1e20"),
        )
        .push(FakeReply::Stream {
            events: stream_events(&["Logged."], true),
            done: true,
        });
    let started = Instant::now();
    s.say_and_wait("Hello?");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(3),
        "waited {waited:?}, not max_delay"
    );
    assert_eq!(s.h.replies("echo7"), ["Logged."]);
    s.server.push(FakeReply::Stream {
        events: stream_events(&["Still here."], true),
        done: true,
    });
    // The scheduler paused every request for the huge Retry-After too (up to its
    // own cap); the client's retry being accepted ends that pause.
    s.say_and_wait("And now?");
    assert_eq!(s.h.replies("echo7"), ["Logged.", "Still here."]);
    s.finish("Hello?");
}

#[test]
fn an_http_date_retry_after_is_honoured() {
    let mut s = setup("retry-after-date", |_| {});
    // The date has whole seconds, so the wait is between one and two seconds.
    let at = http_date(SystemTime::now() + Duration::from_secs(2));
    s.server
        .push(
            FakeReply::status(503, r#"{"error":{"message":"maintenance"}}"#)
                .with_header("Retry-After", &at),
        )
        .push(FakeReply::Stream {
            events: stream_events(&["Back."], true),
            done: true,
        });
    let started = Instant::now();
    s.say_and_wait("Hello?");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "waited {:?}, not until {at}",
        started.elapsed()
    );
    assert_eq!(s.h.replies("echo7"), ["Back."]);
    s.finish("Hello?");
}

#[test]
fn an_http_date_far_ahead_is_capped_by_max_delay() {
    let mut s = setup("retry-after-2100", |config| {
        config.retry.max_delay = Duration::from_millis(400)
    });
    s.server
        .push(
            FakeReply::status(429, r#"{"error":{"message":"come back later"}}"#)
                .with_header("Retry-After", "Fri, 01 Jan 2100 00:00:00 GMT"),
        )
        .push(FakeReply::Stream {
            events: stream_events(&["Back."], true),
            done: true,
        });
    let started = Instant::now();
    s.say_and_wait("Hello?");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(3),
        "waited {waited:?}, not max_delay"
    );
    assert_eq!(s.h.replies("echo7"), ["Back."]);
    s.finish("Hello?");
}

#[test]
fn a_200_mb_error_body_is_cut_short_and_the_npc_answers_next() {
    let mut s = setup_watched("flood-error", |_| {});
    let mut flood = Flood::error_body(500);
    // The key sits in the part that is read, so scrubbing must survive the cut.
    flood.head = format!(r#"{{"error":{{"message":"bad key {KEY} "#);
    for _ in 0..3 {
        s.server.push(FakeReply::Flood(flood.clone()));
    }
    s.say_and_wait("Status?");
    let ReplyError::Backend(BackendError::Http {
        status: 500,
        reason,
        ..
    }) = s.failure()
    else {
        panic!("expected HTTP 500, got {:?}", s.failure());
    };
    assert!(
        reason.contains("bad key <redacted> overflow overflow"),
        "{reason}"
    );
    assert!(
        reason.contains(&format!(
            "over {} bytes",
            ResponseLimits::default().error_body
        )),
        "{reason}"
    );
    assert!(
        reason.chars().count() < 500,
        "{} characters",
        reason.chars().count()
    );
    assert_eq!(s.server.received().len(), 3, "a 500 is still retried");
    s.survives_floods(3);
    s.finish("Status?");
}

#[test]
fn a_200_mb_stream_stops_at_the_stream_limit() {
    let mut s = setup_watched("flood-stream", |_| {});
    s.server.push(FakeReply::Flood(Flood::sse_chunks()));
    s.say_and_wait("Tell me everything.");
    assert_eq!(
        s.failure(),
        ReplyError::Backend(BackendError::ResponseTooLarge {
            backend: "fake".into(),
            what: ResponsePart::Stream,
            limit: ResponseLimits::default().stream_total,
        })
    );
    assert!(
        s.h.streamed().starts_with("lorem ipsum lorem ipsum"),
        "the text showed as it came"
    );
    assert!(s.h.replies("echo7").is_empty());
    assert_eq!(
        s.server.received().len(),
        1,
        "text was shown, so no retry repeats it"
    );
    s.survives_floods(1);
    s.finish("Tell me everything.");
}

#[test]
fn a_200_mb_stream_line_stops_at_the_line_limit() {
    let mut s = setup_watched("flood-line", |_| {});
    s.server.push(FakeReply::Flood(Flood::sse_line()));
    s.say_and_wait("Say something.");
    assert_eq!(
        s.failure(),
        ReplyError::Backend(BackendError::ResponseTooLarge {
            backend: "fake".into(),
            what: ResponsePart::StreamEvent,
            limit: ResponseLimits::default().stream_event,
        })
    );
    assert_eq!(s.h.streamed(), "");
    assert_eq!(
        s.server.received().len(),
        1,
        "the same flood is not asked for again"
    );
    s.survives_floods(1);
    s.finish("Say something.");
}

#[test]
fn a_huge_json_reply_stops_at_the_body_limit() {
    let mut s = setup_watched("flood-json", |config| config.stream = false);
    s.server.push(FakeReply::Flood(Flood::json_body()));
    s.say_and_wait("Hello?");
    assert_eq!(
        s.failure(),
        ReplyError::Backend(BackendError::ResponseTooLarge {
            backend: "fake".into(),
            what: ResponsePart::Body,
            limit: ResponseLimits::default().json_body,
        })
    );
    assert_eq!(s.server.received().len(), 1);
    s.survives_floods(1);
    s.finish("Hello?");
}

#[test]
fn a_summary_flood_leaves_a_short_degradation_and_a_small_save() {
    let mut s = setup_watched("flood-summary", |config| config.stream = false);
    s.h.app.world_mut().write_message(ReconfigureNpcMemory::new(
        NpcId::new("echo7"),
        MemoryConfig {
            summary_threshold: Some(2),
            ..MemoryConfig::with_window(4)
        },
    ));
    // The summary's body declares 200 MB: refused before it is read.
    let flood = FakeReply::Flood(Flood::json_body().with_length());
    s.server
        .push(FakeReply::ok(completion("Noted.")))
        .push(flood.clone())
        .push(flood);
    s.say_and_wait("I'm Alex.");
    assert_eq!(s.h.replies("echo7"), ["Noted."]);
    s.h.wait_for::<NpcMemoryDegraded>(1);
    let text = s.h.inbox::<NpcMemoryDegraded>()[0].degradation.to_string();
    assert!(
        text.contains(&format!(
            "over the limit of {} bytes",
            ResponseLimits::default().json_body
        )),
        "{text}"
    );
    s.survives_floods(2);

    let dir = temp_dir("http-flood-summary");
    let path = dir.join("slot.json");
    s.h.save_to(&path);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 64 * 1024, "a save of {size} bytes");
    std::fs::remove_dir_all(dir).ok();
    s.finish("I'm Alex.");
}

const URL_SECRETS: [&str; 4] = ["alice-USER", "pa55-SECRET", "QKEY-SECRET", "tok-SECRET"];

/// `base_url` with a user, a password and secret query parameters.
fn with_url_credentials(base_url: &str) -> String {
    format!(
        "{}?api_key=QKEY-SECRET&token=tok-SECRET&api-version=2024-06-01",
        base_url.replace("http://", "http://alice-USER:pa55-SECRET@")
    )
}

fn assert_no_url_secrets(what: &str, text: &str) {
    for secret in URL_SECRETS {
        assert!(
            !text.contains(secret),
            "{secret} leaked into {what}: {text}"
        );
    }
}

#[test]
fn credentials_in_the_base_url_are_sent_but_never_shown() {
    let mut s = setup("url-secrets", |config| {
        config.base_url = with_url_credentials(&config.base_url)
    });
    s.server.push(FakeReply::status(
        404,
        r#"{"error":{"message":"no model at /v1/chat/completions?api_key=QKEY-SECRET&token=tok-SECRET for alice-USER:pa55-SECRET"}}"#,
    ));
    s.say_and_wait("Hello?");
    assert_eq!(
        s.server.received()[0].path,
        "/v1/chat/completions?api_key=QKEY-SECRET&token=tok-SECRET&api-version=2024-06-01",
        "the query stays on the endpoint"
    );
    let failure = s.failure();
    assert!(
        matches!(
            failure,
            ReplyError::Backend(BackendError::Http { status: 404, .. })
        ),
        "{failure:?}"
    );
    assert_no_url_secrets("the error", &format!("{failure} {failure:?}"));
    assert!(failure.to_string().contains("no model at"), "{failure}");
    let config = s.backend.config().clone();
    assert_no_url_secrets("the config's Debug", &format!("{config:?}"));
    assert!(format!("{config:?}").contains("127.0.0.1"), "{config:?}");
    assert_no_url_secrets("the backend's Debug", &format!("{:?}", s.backend));
    s.finish("Hello?");
    let logs = String::from_utf8(captured_logs().lock().unwrap().clone()).unwrap();
    assert_no_url_secrets("the logs", &logs);
}

#[test]
fn credentials_in_the_base_url_stay_out_of_connection_errors() {
    captured_logs();
    // A port nobody listens on: the error is reqwest's, which names the URL.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = OpenAiConfig::custom(
        "fake",
        with_url_credentials(&format!("http://127.0.0.1:{port}/v1")),
        "fake-model",
    );
    config.retry = RetryPolicy::none();
    let backend = OpenAiBackend::with_api_key(config, ApiKey::new(KEY)).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let error = runtime
        .block_on(backend.complete(
            reply_request("You are ECHO-7.", "Hello?"),
            Progress::silent(),
        ))
        .unwrap_err();
    let BackendError::Connection { reason, .. } = &error else {
        panic!("expected a connection error, got {error:?}");
    };
    assert!(reason.contains("127.0.0.1"), "{reason}");
    assert_no_url_secrets("the error", &format!("{error} {error:?}"));
    assert_no_url_secrets("the backend's Debug", &format!("{backend:?}"));
}

#[test]
fn huge_values_inside_small_enough_bodies_give_short_errors() {
    let mut s = setup("short-reasons", |config| config.stream = false);
    let long = "ẞ".repeat(20_000);
    // serde's message quotes the value of the wrong type, all of it.
    s.server
        .push(FakeReply::ok(format!(r#"{{"choices": "{long}"}}"#)))
        .push(FakeReply::status(
            400,
            &format!(r#"{{"error":{{"message":"{long}"}}}}"#),
        ));
    for line in ["Hello?", "Hello again?"] {
        s.say_and_wait(line);
        let reason = match s.failure() {
            ReplyError::Backend(
                BackendError::Malformed { reason, .. } | BackendError::Http { reason, .. },
            ) => reason,
            other => panic!("expected a malformed reply or HTTP 400, got {other:?}"),
        };
        assert!(reason.contains("ẞẞẞ"), "{reason}");
        assert!(
            reason.chars().count() <= 350,
            "{} characters",
            reason.chars().count()
        );
    }
    assert_eq!(s.h.inbox::<NpcReplyFailed>().len(), 2);
    s.finish("Hello?");
}
