//! Faults a server makes: rate limits, errors, timeouts, bad JSON and cut
//! streams, each retried or failed as it should be.

use super::*;

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
