//! Background summaries wait, then cover everything at once, unless the window
//! or a rising tier needs them first.

use super::*;

#[test]
fn a_background_summary_waits_and_then_covers_everything_in_one_request() {
    let backend = Recording::default();
    let plugin = NpcMemoryPlugin::default()
        .with_backend(backend.clone())
        .with_settings(settings(|s| {
            s.memory.max_context_window = 8;
            s.schedule.background_delay = Duration::from_secs(30);
        }));
    let mut h = simulated(plugin);
    h.spawn("crowd", persona("Crowd").with_tier(MemoryTier::Background));
    for (i, line) in ["One.", "Two.", "Three."].into_iter().enumerate() {
        h.say("crowd", line);
        h.wait_for_replies(i + 1);
        settle(&mut h, &backend);
    }
    assert!(backend.summaries().is_empty(), "the summary is held back");
    assert!(scheduler(&h).deferred(&NpcId::new("crowd")).is_some());
    run_timed(&mut h, &backend, |h| {
        !h.inbox::<NpcSummaryUpdated>().is_empty()
    });
    let summaries = backend.summaries();
    assert_eq!(summaries.len(), 1, "one request for all six messages");
    let text: String = summaries[0]
        .messages
        .iter()
        .map(|m| m.content.to_string())
        .collect();
    for line in ["One.", "Two.", "Three."] {
        assert!(text.contains(line), "{line} missing from {text}");
    }
    let updated = &h.inbox::<NpcSummaryUpdated>()[0];
    assert_eq!(updated.covered, 0..6);
    assert_eq!(scheduler(&h).deferred(&NpcId::new("crowd")), None);
}

/// A Background NPC whose summaries wait an hour, on simulated time that the
/// tests never move that far: whatever sends a summary early is what is tested.
fn background_npc_held_for_an_hour() -> (Harness, Recording) {
    let backend = Recording::default();
    let plugin = NpcMemoryPlugin::default()
        .with_backend(backend.clone())
        .with_settings(settings(|s| {
            s.schedule.background_delay = Duration::from_secs(3600)
        }));
    let mut h = simulated(plugin);
    h.spawn("crowd", persona("Crowd").with_tier(MemoryTier::Background));
    (h, backend)
}

#[test]
fn a_held_back_summary_goes_before_the_window_would_drop_anything() {
    let (mut h, backend) = background_npc_held_for_an_hour();
    // Window 4, hard cap 8: time never moves, yet the summary must go.
    for i in 0..6 {
        h.say("crowd", &format!("Line {i}."));
        h.wait_for_replies(i + 1);
        settle(&mut h, &backend);
    }
    assert!(!backend.summaries().is_empty(), "the full window sent it");
    let dropped = h
        .inbox::<NpcMemoryDegraded>()
        .iter()
        .any(|d| matches!(d.degradation, Degradation::WindowOverflow { .. }));
    assert!(!dropped, "nothing left the prompt unsummarized");
}

/// Under a spent budget, waiting summaries go in order of need, not of arrival:
/// the NPC whose window nears its hard cap is summarized first, so nothing leaves
/// its prompt while summaries of roomy windows wait. Found by
/// `examples/scheduler_bench/`, where first-come order let 5 windows overflow.
#[test]
fn the_summary_of_a_window_near_its_hard_cap_goes_before_older_ones() {
    let backend = Recording::default();
    let plugin = NpcMemoryPlugin::default()
        .with_backend(backend.clone())
        .with_settings(settings(|s| {
            // Six requests a minute, summaries at most three of them.
            s.schedule.requests_per_minute = Some(6);
            s.schedule.reply_reserve = 0.5;
        }));
    let mut h = simulated(plugin);
    // Three quiet NPCs: one line each, in one frame. Their replies spend the
    // summaries' share, so their summaries (due after two messages) wait, oldest
    // first.
    for npc in ["q1", "q2", "q3", "busy"] {
        h.spawn(npc, persona(npc));
    }
    for npc in ["q1", "q2", "q3"] {
        h.say(npc, &format!("Hello from {npc}."));
    }
    settle(&mut h, &backend);
    // The busy NPC's three lines spend the rest of the minute; its window (4,
    // hard cap 8) holds six unsummarized messages: two from the cap.
    for line in 0..3 {
        h.say("busy", &format!("Busy line {line}."));
        settle(&mut h, &backend);
    }
    assert_eq!(h.inbox::<NpcReplied>().len(), 6);
    assert!(backend.summaries().is_empty(), "the budget is spent");

    advance(&mut h, Duration::from_secs(61));
    settle(&mut h, &backend);
    let order: Vec<String> = backend
        .summaries()
        .iter()
        .map(|r| r.npc.to_string())
        .collect();
    assert_eq!(order.first().map(String::as_str), Some("busy"), "{order:?}");
    // It has room again: two more exchanges leave nothing unsummarized.
    for line in 3..5 {
        h.say("busy", &format!("Busy line {line}."));
        settle(&mut h, &backend);
    }
    advance(&mut h, Duration::from_secs(61));
    settle(&mut h, &backend);
    check_invariant_of(&h, &["q1", "q2", "q3", "busy"]);
    let overflowed = h
        .inbox::<NpcMemoryDegraded>()
        .iter()
        .any(|d| matches!(d.degradation, Degradation::WindowOverflow { .. }));
    assert!(!overflowed, "no window reached its hard cap");
}

#[test]
fn a_rising_tier_sends_a_held_back_summary_at_once() {
    let (mut h, backend) = background_npc_held_for_an_hour();
    h.say("crowd", "Hello.");
    h.wait_for_replies(1);
    settle(&mut h, &backend);
    assert!(backend.summaries().is_empty());
    h.app
        .world_mut()
        .write_message(SetMemoryTier::new("crowd", MemoryTier::Nearby));
    h.wait_for_summaries(1);
    assert_eq!(backend.summaries().len(), 1);
}
