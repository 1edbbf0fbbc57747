//! Hostile servers: huge bodies, streams and values are cut at their limits, and
//! the NPC answers its next line.

use super::*;

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
