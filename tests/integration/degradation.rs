//! Failing summaries degrade memory quality, never the reply path.

use crate::support::{Harness, persona, seed_sized};
use bevy_npc_memory::backends::BackendError;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::backends::{ChatRequest, ChatResponse};
use bevy_npc_memory::dialogue::NpcMemoryDegraded;
use bevy_npc_memory::memory::{Degradation, Role};
use bevy_npc_memory::prelude::*;

fn down() -> BackendError {
    BackendError::Connection {
        backend: "scripted".into(),
        reason: "connection refused".into(),
    }
}

#[test]
fn two_summary_failures_degrade_and_replies_go_on() {
    let backend = ScriptedBackend::new();
    backend
        .push_reply("first")
        .push_summary("The player is Alex.")
        .push_reply("second")
        .push_failure(Purpose::Summary, down())
        .push_failure(Purpose::Summary, down())
        .push_reply("third");
    let mut h = Harness::new(seed_sized(backend.clone()));
    h.spawn("echo7", persona("ECHO-7"));

    h.say("echo7", "I'm Alex.");
    h.wait_for_replies(1);
    h.wait_for_summaries(1);
    h.say("echo7", "I'm in storage.");
    h.wait_for_replies(2);
    h.run_until("the summary degrades", |w| {
        !w.resource::<crate::support::Inbox<NpcMemoryDegraded>>()
            .0
            .is_empty()
    });

    let degraded = h.inbox::<NpcMemoryDegraded>();
    assert_eq!(degraded.len(), 1);
    let Degradation::SummaryFailed {
        range,
        attempts,
        reason,
    } = &degraded[0].degradation
    else {
        panic!("expected a failed summary, got {:?}", degraded[0]);
    };
    assert_eq!((range.clone(), *attempts), (2..4, 2));
    assert!(reason.contains("connection refused"), "{reason}");
    assert_eq!(
        backend.requests_for(Purpose::Summary).len(),
        3,
        "one success, one try and one retry"
    );

    // The last good summary stays, and the unsummarized messages stay in the window,
    // even though that makes it bigger than 4.
    assert_eq!(h.summary("echo7"), "The player is Alex.");
    let window = h.window("echo7");
    assert!(
        window[0]
            .content
            .ends_with("[Previously]: The player is Alex.")
    );
    assert_eq!(window.len(), 3);

    // The reply path is unaffected.
    h.say("echo7", "What's my name?");
    h.wait_for_replies(3);
    let last = backend.requests_for(Purpose::Reply).pop().unwrap();
    let texts: Vec<&str> = last.messages.iter().map(|m| m.content.as_ref()).collect();
    assert!(
        texts.contains(&"I'm in storage."),
        "uncovered messages are still sent: {texts:?}"
    );
    assert!(h.inbox::<NpcReplyFailed>().is_empty());
}

#[test]
fn a_dead_summarizer_past_the_hard_cap_reports_every_dropped_message() {
    let backend = ScriptedBackend::new();
    for i in 0..12 {
        backend.push_reply(format!("reply {i}"));
    }
    for _ in 0..20 {
        backend.push_failure(Purpose::Summary, down());
    }
    let mut h = Harness::new(seed_sized(backend));
    h.spawn("echo7", persona("ECHO-7"));
    for i in 0..12 {
        h.say("echo7", &format!("line {i}"));
        h.wait_for_replies(i + 1);
    }
    h.settle();

    let log = h.log("echo7");
    assert_eq!(log.len(), 24, "L2 keeps everything");
    assert_eq!(log.iter().filter(|(r, _)| *r == Role::User).count(), 12);
    let window = h.window("echo7");
    assert_eq!(window.len(), 8, "the window stops at the hard cap (2 × 4)");

    let mut dropped: Vec<u64> = h
        .inbox::<NpcMemoryDegraded>()
        .iter()
        .filter_map(|d| match &d.degradation {
            Degradation::WindowOverflow { dropped } => Some(dropped.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    dropped.sort_unstable();
    assert_eq!(
        dropped,
        (0..17).collect::<Vec<u64>>(),
        "every message out of the window was reported"
    );
    assert!(h.summary("echo7").is_empty());
}

/// A backend with a bug: the first reply panics inside its future, the second in
/// `complete` itself, and every summary panics. Later replies work.
struct PanickyBackend {
    calls: std::sync::atomic::AtomicU32,
}

impl ChatBackend for PanickyBackend {
    fn name(&self) -> &str {
        "panicky"
    }

    fn complete(
        &self,
        request: ChatRequest,
        _progress: bevy_npc_memory::backends::Progress,
    ) -> bevy_npc_memory::backends::BackendFuture {
        if request.purpose() == Purpose::Summary {
            return Box::pin(async { panic!("summaries are broken") });
        }
        let call = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        match call {
            0 => Box::pin(async {
                let seconds = 1e20_f64;
                // The bug the HTTP backend once had: an unchecked Retry-After.
                let _ = std::time::Duration::from_secs_f64(seconds);
                unreachable!()
            }),
            1 => panic!("the reply could not even start"),
            _ => Box::pin(async { Ok(ChatResponse::text("Still here.")) }),
        }
    }
}

#[test]
fn a_panicking_backend_fails_the_request_and_the_npc_keeps_working() {
    let backend = PanickyBackend {
        calls: Default::default(),
    };
    let mut h = Harness::new(seed_sized(backend));
    h.spawn("echo7", persona("ECHO-7"));

    for (attempt, line) in ["first", "second"].into_iter().enumerate() {
        h.say("echo7", line);
        h.wait_for::<NpcReplyFailed>(attempt + 1);
        let failure = &h.inbox::<NpcReplyFailed>()[attempt];
        let ReplyError::Backend(BackendError::Panicked { backend, message }) = &failure.error
        else {
            panic!("expected a caught panic, got {failure:?}");
        };
        assert_eq!(backend, "panicky");
        assert!(!message.is_empty());
        // The line was taken, so it is in the log.
        assert_eq!(failure.unrecorded_line, None);
        assert_eq!(
            h.log("echo7").last().unwrap(),
            &(Role::User, line.to_owned())
        );
    }

    // Two player lines reached the threshold: the summary panics twice and degrades,
    // while the next reply works.
    h.say("echo7", "third");
    h.wait_for_replies(1);
    assert_eq!(h.replies("echo7"), ["Still here."]);
    h.run_until("the panicking summary degrades", |w| {
        !w.resource::<crate::support::Inbox<NpcMemoryDegraded>>()
            .0
            .is_empty()
    });
    let degraded = &h.inbox::<NpcMemoryDegraded>()[0].degradation;
    assert!(
        matches!(degraded, Degradation::SummaryFailed { reason, .. } if reason.contains("summaries are broken")),
        "{degraded:?}"
    );
    h.settle();
}
