//! The debug panel's numbers, computed headless, match the plugin's state.

mod support;

use bevy_npc_memory::prelude::*;
use bevy_npc_memory::{NpcMemoryReport, Role};
use support::{Harness, persona, seed_sized};

fn report(h: &Harness, npc: &str) -> NpcMemoryReport {
    let world = h.app.world();
    NpcMemoryReport::build(
        &NpcId::new(npc),
        world.resource::<ChatLogs>(),
        world.resource::<RollingWindows>(),
        world.resource::<ContextMemoryManager>(),
        world.resource::<Conversations>(),
        world.resource::<LlmUsage>(),
    )
    .expect("the NPC has memory")
}

#[test]
fn the_report_matches_the_plugin_after_a_scripted_conversation() {
    let backend = ScriptedBackend::new();
    backend
        .push_reply("Logged.")
        .push_summary("The player is Alex.")
        .push_reply("Go left.")
        .push_failure(Purpose::Summary, BackendError::Other("down".into()))
        .push_failure(Purpose::Summary, BackendError::Other("down".into()))
        .push_reply("You are Alex.");
    let mut h = Harness::new(seed_sized(backend));
    h.spawn("echo7", persona("ECHO-7"));
    for line in ["I'm Alex.", "I'm in storage.", "Who am I?"] {
        h.say("echo7", line);
        h.settle();
    }

    let report = report(&h, "echo7");
    // L1: exactly the window the next request would send, system prompt first.
    let window = h.window("echo7");
    assert_eq!(report.window.len(), window.len());
    for (row, sent) in report.window.iter().zip(&window) {
        assert_eq!(
            (row.role, row.text.as_str()),
            (sent.role, sent.content.as_ref())
        );
    }
    assert_eq!(report.window[0].role, Role::System);
    assert_eq!(report.window_limits, (4, 8));
    // Messages 2.. are uncovered (the second summary failed) and marked so.
    let marked: Vec<u64> = report
        .window
        .iter()
        .filter(|r| r.unsummarized)
        .filter_map(|r| r.index)
        .collect();
    assert_eq!(marked, [2, 3, 4, 5]);
    assert!(report.window_tokens > 0);
    // L2, L3, the count against the threshold, degradations and usage.
    assert_eq!(report.log.len(), 6);
    assert_eq!(report.summary, "The player is Alex.");
    assert_eq!(report.history.len(), 1);
    assert_eq!(report.history[0].covered, 0..2);
    assert_eq!((report.pending, report.threshold), (4, 2));
    // 2..4 failed twice; a threshold later 2..6 was tried and failed twice too (the
    // script has no more summaries).
    assert_eq!(report.degradations.len(), 2);
    assert!(report.degradations[0].contains("summary of messages 2..4 failed after 2 attempts"));
    assert!(report.degradations[1].contains("summary of messages 2..6 failed after 2 attempts"));
    assert!(!report.reply_in_flight && !report.summary_in_flight && report.queued_lines.is_empty());
    let replies = report.reply_usage.as_ref().unwrap();
    assert_eq!((replies.requests, replies.failures), (3, 0));
    let summaries = report.summary_usage.as_ref().unwrap();
    assert_eq!((summaries.requests, summaries.failures), (5, 4));
    // Search over L2.
    let hits: Vec<&str> = report
        .search_log("alex")
        .iter()
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(hits, ["I'm Alex.", "You are Alex."]);
    assert_eq!(report.search_log("").len(), 6);
}

#[test]
fn the_report_shows_requests_in_flight_and_the_queue() {
    let backend = ScriptedBackend::new();
    backend.push(Purpose::Reply, bevy_npc_memory::ScriptStep::Hang);
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend));
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "first");
    h.say("echo7", "second");
    h.app.update();
    let report = report(&h, "echo7");
    assert!(report.reply_in_flight);
    assert_eq!(report.queued_lines, ["second"]);
}
