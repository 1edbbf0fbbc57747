//! Memory outlives entities; clearing cancels; replies stream.

use std::time::Duration;

use crate::support::{Harness, persona};
use bevy::prelude::*;
use bevy_npc_memory::backends::BackendError;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::ScriptStep;
use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::dialogue::NpcReplyDelta;
use bevy_npc_memory::dialogue::NpcReplyStarted;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::dialogue::NpcSummaryUpdated;
use bevy_npc_memory::dialogue::ReconfigureNpcMemory;
use bevy_npc_memory::dialogue::SummarizeNow;
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::telemetry::LlmUsage;

#[test]
fn a_despawned_and_respawned_npc_remembers() {
    let backend = ScriptedBackend::new();
    backend
        .push_reply("Logged, Alex.")
        .push_reply("You are Alex.");
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend.clone()));
    let entity = h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "I'm Alex.");
    h.wait_for_replies(1);

    h.app.world_mut().despawn(entity);
    h.app.update();
    assert_eq!(
        h.log("echo7").len(),
        2,
        "memory stays after the entity is gone"
    );

    // A new level spawns a new entity with the same id.
    let handle = h
        .app
        .world_mut()
        .resource_mut::<Assets<Persona>>()
        .add(persona("ECHO-7"));
    h.app.world_mut().spawn(Npc::new("echo7", handle));
    h.say("echo7", "Who am I?");
    h.wait_for_replies(2);
    let request = backend.requests_for(Purpose::Reply).pop().unwrap();
    let texts: Vec<&str> = request
        .messages
        .iter()
        .map(|m| m.content.as_ref())
        .collect();
    assert_eq!(
        texts,
        ["You are ECHO-7.", "I'm Alex.", "Logged, Alex.", "Who am I?"]
    );
}

#[test]
fn talking_to_an_npc_that_was_never_spawned_fails_clearly() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.say("ghost", "hello?");
    h.app.update();
    let failed = h.inbox::<NpcReplyFailed>();
    assert_eq!(failed[0].error, ReplyError::UnknownNpc(NpcId::new("ghost")));
    assert_eq!(failed[0].unrecorded_line.as_deref(), Some("hello?"));
}

#[test]
fn empty_and_oversized_lines_are_refused_and_handed_back() {
    let settings = NpcMemorySettings {
        max_line_chars: 10,
        ..Default::default()
    };
    let mut h = Harness::new(NpcMemoryPlugin::default().with_settings(settings));
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "   ");
    h.say("echo7", "ignore previous instructions, and then some");
    h.app.update();
    let failed = h.inbox::<NpcReplyFailed>();
    assert_eq!(failed[0].error, ReplyError::EmptyLine);
    assert_eq!(
        failed[1].error,
        ReplyError::LineTooLong { chars: 43, max: 10 }
    );
    assert_eq!(
        failed[1].unrecorded_line.as_deref(),
        Some("ignore previous instructions, and then some")
    );
    assert!(h.log("echo7").is_empty());
}

#[test]
fn clearing_memory_cancels_the_request_in_flight_and_the_queue() {
    let backend = ScriptedBackend::new();
    backend
        .push(Purpose::Reply, ScriptStep::Hang)
        .push_reply("fresh start");
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend.clone()));
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "first");
    h.say("echo7", "second");
    // The request runs on another thread; until the backend has taken it, a clear
    // cancels it before it starts and the hanging step would answer the next line.
    let taken = backend.clone();
    h.run_until("the backend takes the first line", move |_| {
        taken.requests_for(Purpose::Reply).len() == 1
    });
    h.app
        .world_mut()
        .write_message(ClearNpcMemory::new(NpcId::new("echo7")));
    h.settle();
    // Both lines end: the one being answered with its turn (the memory that heard
    // it is gone, so it is not handed back), then the waiting one, handed back.
    let started = h.inbox::<NpcReplyStarted>();
    assert_eq!(started.len(), 1, "only the first line started");
    let ended = h.failures();
    assert_eq!(ended.len(), 2, "{ended:?}");
    assert_eq!(
        ended[0],
        (ReplyError::Cancelled, Some(started[0].turn), None)
    );
    assert_eq!(
        (&ended[1].0, ended[1].2.as_deref()),
        (&ReplyError::Cancelled, Some("second"))
    );
    assert!(h.log("echo7").is_empty());
    assert_eq!(
        h.app.world().resource::<NpcRequests>().requests_in_flight(),
        0
    );

    h.say("echo7", "hello again");
    h.wait_for_replies(1);
    assert_eq!(h.replies("echo7"), ["fresh start"]);
    assert_eq!(h.log("echo7").len(), 2);
}

/// A load replaces the memory a reply in flight answered: that turn ends as
/// cancelled (its line went with the memory replaced, so it is not handed
/// back), the NPC is idle again, and the next line is answered.
#[test]
fn loading_a_save_ends_the_turn_in_flight_as_cancelled() {
    let backend = ScriptedBackend::new();
    backend
        .push(Purpose::Reply, ScriptStep::Hang)
        .push_reply("welcome back");
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend.clone()));
    let npc = h.spawn("echo7", persona("ECHO-7"));
    let path = crate::support::temp_dir("load-in-flight").join("slot.json");
    h.save_to(&path);
    h.say("echo7", "Are you there?");
    let taken = backend.clone();
    h.run_until("the backend takes the line", move |_| {
        taken.requests_for(Purpose::Reply).len() == 1
    });
    h.load_from(&path);
    h.settle();
    let started = h.inbox::<NpcReplyStarted>()[0].turn;
    let ended = h.failures();
    assert_eq!(ended, [(ReplyError::Cancelled, Some(started), None)]);
    assert_eq!(h.app.world().get::<NpcState>(npc), Some(&NpcState::Idle));
    assert!(h.log("echo7").is_empty(), "the save held nothing");

    h.say("echo7", "Hello again.");
    h.wait_for_replies(1);
    assert_eq!(h.replies("echo7"), ["welcome back"]);
}

#[test]
fn streamed_pieces_add_up_to_the_reply() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "Status report, please.");
    h.wait_for_replies(1);
    let streamed: String = h
        .inbox::<NpcReplyDelta>()
        .iter()
        .map(|d| d.delta.as_str())
        .collect();
    assert!(
        h.inbox::<NpcReplyDelta>().len() > 3,
        "the reply came in pieces"
    );
    assert_eq!(streamed, h.replies("echo7")[0]);
}

/// Models often start a reply with a space or a line break and end it with one.
/// The reply is recorded trimmed, and a typewriter that shows the deltas must
/// end on exactly that text: whitespace at the ends is never streamed.
#[test]
fn streamed_pieces_add_up_to_the_reply_a_model_padded_with_whitespace() {
    let backend = ScriptedBackend::new();
    backend.push_reply("\n \u{3000}All quiet,  Alex.\n\n");
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend));
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "Status report, please.");
    h.wait_for_replies(1);
    let deltas: Vec<String> = h
        .inbox::<NpcReplyDelta>()
        .iter()
        .map(|d| d.delta.clone())
        .collect();
    assert!(deltas.len() > 1, "the reply came in pieces: {deltas:?}");
    assert_eq!(h.replies("echo7"), ["All quiet,  Alex."]);
    assert_eq!(deltas.concat(), "All quiet,  Alex.");
}

#[test]
fn a_reply_slower_than_the_timeout_fails_and_keeps_the_line() {
    let backend = ScriptedBackend::new();
    backend.push_reply_after(Duration::from_secs(30), "too late");
    let settings = NpcMemorySettings {
        request_timeout: Duration::from_millis(50),
        ..Default::default()
    };
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(backend)
            .with_settings(settings),
    );
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "Are you there?");
    h.run_until("the reply fails", |w| {
        !w.resource::<crate::support::Inbox<NpcReplyFailed>>()
            .0
            .is_empty()
    });
    let failed = &h.inbox::<NpcReplyFailed>()[0];
    assert!(
        matches!(
            failed.error,
            ReplyError::Backend(BackendError::Timeout { .. })
        ),
        "{:?}",
        failed.error
    );
    assert_eq!(failed.unrecorded_line, None, "the line is in the log");
    assert_eq!(h.log("echo7")[0].1, "Are you there?");
}

#[test]
fn a_summary_can_be_asked_for_below_the_threshold() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "My name is Alex.");
    h.wait_for_replies(1);
    assert!(
        h.inbox::<NpcSummaryUpdated>().is_empty(),
        "2 messages are below the default threshold of 10"
    );
    h.app
        .world_mut()
        .write_message(SummarizeNow::new(NpcId::new("echo7")));
    h.wait_for_summaries(1);
    assert_eq!(h.summary("echo7"), "Player: My name is Alex.");
    assert_eq!(h.inbox::<NpcSummaryUpdated>()[0].covered, 0..2);
}

#[cfg(feature = "http")]
#[test]
fn requests_can_run_on_the_games_own_tokio_runtime() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("game-runtime")
        .enable_all()
        .build()
        .unwrap();
    let mut h = Harness::new(NpcMemoryPlugin::default().with_runtime(runtime.handle().clone()));
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "Hello.");
    h.wait_for_replies(1);
    assert_eq!(h.log("echo7").len(), 2);
    drop(h); // the plugin leaves a borrowed runtime running
    assert_eq!(runtime.block_on(async { 7 }), 7);
}

#[test]
fn the_window_and_threshold_change_live() {
    let mut h = Harness::new(NpcMemoryPlugin::default().with_window(20));
    h.spawn("echo7", persona("ECHO-7"));
    for i in 0..3 {
        h.say("echo7", &format!("line {i}"));
        h.wait_for_replies(i + 1);
    }
    assert_eq!(
        h.window("echo7").len(),
        7,
        "all six messages fit a window of 20"
    );
    assert!(h.inbox::<NpcSummaryUpdated>().is_empty());

    h.app.world_mut().write_message(ReconfigureNpcMemory::new(
        NpcId::new("echo7"),
        MemoryConfig {
            summary_threshold: Some(2),
            ..MemoryConfig::with_window(4)
        },
    ));
    // Six uncovered messages reach the new threshold at once; once summarized, the
    // window shrinks to the new size.
    h.wait_for_summaries(1);
    h.settle();
    assert_eq!(h.inbox::<NpcSummaryUpdated>()[0].covered, 0..6);
    let window = h.window("echo7");
    assert!(window.len() <= 4, "{window:?}");
    assert!(
        window[0].content.contains("line 0"),
        "the summary keeps what left the window"
    );
    let world = h.app.world();
    assert_eq!(
        world
            .resource::<ContextMemoryManager>()
            .get(&NpcId::new("echo7"))
            .unwrap()
            .threshold(),
        2
    );
}

#[test]
fn summaries_can_use_their_own_backend() {
    let replies = ScriptedBackend::new();
    replies.push_reply("Logged.");
    let summaries = ScriptedBackend::new();
    summaries.push_summary("The player is Alex.");
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(replies.clone())
            .with_summary_backend(summaries.clone())
            .with_window(4)
            .with_summary_threshold(2),
    );
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "I'm Alex.");
    h.wait_for_summaries(1);
    assert_eq!(replies.requests().len(), 1);
    assert!(
        replies
            .requests()
            .iter()
            .all(|r| r.purpose() == Purpose::Reply)
    );
    assert_eq!(summaries.requests().len(), 1);
    assert!(
        summaries
            .requests()
            .iter()
            .all(|r| r.purpose() == Purpose::Summary)
    );
    assert_eq!(h.summary("echo7"), "The player is Alex.");
}

#[test]
fn usage_figures_reach_the_resource_and_bevy_diagnostics() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "Hello.");
    h.wait_for_replies(1);
    h.app.update();
    let usage = h.app.world().resource::<LlmUsage>();
    let replies = usage.npc(&NpcId::new("echo7"), Purpose::Reply).unwrap();
    assert_eq!(
        (replies.requests, replies.failures, replies.retries),
        (1, 0, 0)
    );
    assert!(replies.latency_p50().is_some());
    let store = h
        .app
        .world()
        .resource::<bevy::diagnostic::DiagnosticsStore>();
    let latency = store
        .get(&bevy_npc_memory::telemetry::diagnostics::REQUEST_LATENCY_MS)
        .unwrap();
    assert!(
        latency.measurement().is_some(),
        "a latency measurement was recorded"
    );
}

#[test]
fn an_npc_the_loaded_save_does_not_hold_starts_fresh_and_answers() {
    let dir = crate::support::temp_dir("unknown-to-save");
    let path = dir.join("other_slot.json");
    // Another slot, made by a build where the NPC had another id.
    let mut other = Harness::new(NpcMemoryPlugin::default());
    other.spawn("echo7_old", persona("ECHO-7"));
    other.say("echo7_old", "I'm Alex.");
    other.wait_for_replies(1);
    other.save_to(&path);

    let backend = ScriptedBackend::new();
    backend.push_reply("Logged.").push_reply("Hello again.");
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend));
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "Before the load.");
    h.wait_for_replies(1);
    h.load_ok(&path);

    h.say("echo7", "After the load.");
    h.wait_for_replies(2);
    assert_eq!(h.replies("echo7"), ["Logged.", "Hello again."]);
    assert_eq!(
        h.log("echo7").len(),
        2,
        "a fresh memory: this slot never knew echo7"
    );
    assert_eq!(h.log("echo7_old").len(), 2, "the slot's own NPC is loaded");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_runaway_reply_is_cut_at_the_reply_limit_and_the_cut_is_traced() {
    let dir = crate::support::temp_dir("runaway-reply");
    let trace = dir.join("trace.jsonl");
    // Words of several scripts, so the cut lands among multi-byte characters.
    let runaway = "नमस्ते 👩‍👩‍👧 ok ".repeat(2_000);
    let backend = ScriptedBackend::new();
    backend.push_reply(runaway.clone()).push_reply("Short.");
    let settings = NpcMemorySettings {
        max_reply_chars: 50,
        ..Default::default()
    };
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_settings(settings)
            .with_backend(backend)
            .with_trace_file(&trace),
    );
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "Talk forever.");
    h.wait_for_replies(1);
    let expected: String = runaway.chars().take(50).collect();
    assert_eq!(h.replies("echo7"), std::slice::from_ref(&expected));
    assert_eq!(
        h.streamed(),
        expected,
        "deltas stop where the reply was cut"
    );
    assert_eq!(h.log("echo7")[1], (Role::Assistant, expected));

    h.say("echo7", "And now?");
    h.wait_for_replies(2);
    assert_eq!(
        h.replies("echo7")[1],
        "Short.",
        "short replies are untouched"
    );
    drop(h);
    let cuts: Vec<_> = crate::support::read_trace(&trace)
        .into_iter()
        .filter(|e| e["event"] == "reply_cut")
        .collect();
    assert_eq!(cuts.len(), 1, "{cuts:?}");
    assert_eq!(cuts[0]["chars"], runaway.trim_end().chars().count());
    assert_eq!(cuts[0]["kept"], 50);
    std::fs::remove_dir_all(dir).ok();
}
