//! The debug panel's numbers, computed headless, match the plugin's state.

use crate::support::{Harness, persona, seed_sized};
use bevy_npc_memory::backends::BackendError;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::debug::NpcMemoryReport;
use bevy_npc_memory::memory::{FactStatus, Role, SectionKind};
use bevy_npc_memory::prelude::*;

fn report(h: &Harness, npc: &str) -> NpcMemoryReport {
    h.report(npc)
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
    backend.push(Purpose::Reply, bevy_npc_memory::backends::ScriptStep::Hang);
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend));
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "first");
    h.say("echo7", "second");
    h.app.update();
    let report = report(&h, "echo7");
    assert!(report.reply_in_flight);
    assert_eq!(report.queued_lines, ["second"]);
}

#[test]
fn the_report_shows_facts_segments_and_what_was_recalled_and_why() {
    let mut h = crate::support::layered_scene();
    h.app.world_mut().write_message(SetPinnedFact::new(
        NpcId::new("echo7"),
        FactKey::CURRENT_GOAL,
        "restart the reactor",
    ));
    h.app.update();

    let report = report(&h, "echo7");
    assert!(
        report.config.features.recall.enabled,
        "the panel edits start from these"
    );
    assert_eq!(report.config.features.budget.max_tokens, Some(1500));
    let active: Vec<(&str, &str)> = report
        .facts
        .iter()
        .filter(|f| f.status == FactStatus::Active)
        .map(|f| (f.key.as_str(), f.value.as_str()))
        .collect();
    assert!(active.contains(&("player_name", "Alex")), "{active:?}");
    assert!(active.contains(&("current_goal", "restart the reactor")));
    let outdated = report
        .facts
        .iter()
        .find(|f| f.value == "fix the power system")
        .expect("the model's goal stays in the history");
    assert_eq!(outdated.status, FactStatus::Outdated);
    assert_eq!(outdated.evidence, vec![2]);

    assert!(!report.segments.is_empty());
    assert_eq!(report.segments[0].covered.start, 0);

    let (tokens, budget) = report.prompt_tokens.expect("the last prompt was assembled");
    assert_eq!(budget, Some(1500));
    assert!(tokens <= 1500);
    let kinds: Vec<_> = report.prompt_sections.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            SectionKind::Persona,
            SectionKind::PinnedFacts,
            SectionKind::Summaries,
            SectionKind::Window,
            SectionKind::Recalled
        ]
    );
    let hatch = report
        .recalled
        .iter()
        .find(|r| r.index == 4)
        .expect("the hatch line was recalled for the question");
    assert_eq!(hatch.text, "The red hatch leads to the reactor.");
    assert!(hatch.why.contains("hatch"), "{}", hatch.why);
}
