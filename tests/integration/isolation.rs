//! Two NPCs talking at once keep separate memories.

use std::time::Duration;

use crate::support::{Harness, persona};
use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::memory::Role;
use bevy_npc_memory::prelude::*;

#[test]
fn two_npcs_talking_at_once_never_share_memory() {
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_window(4)
            .with_summary_threshold(2),
    );
    h.spawn("echo7", persona("ECHO-7"));
    h.spawn("robot", persona("Rusty"));

    for round in 0..4 {
        // Both lines go out in the same frame, so both requests are in flight at once.
        h.say("echo7", &format!("echo line {round}: the code is 0451"));
        h.say("robot", &format!("robot line {round}: oil the valves"));
        h.wait_for_replies(2 * (round + 1));
    }
    h.settle();

    for (npc, own, other) in [
        ("echo7", "echo line", "robot line"),
        ("robot", "robot line", "echo line"),
    ] {
        let log = h.log(npc);
        assert_eq!(log.len(), 8, "{npc}: four exchanges");
        let player_lines: Vec<&str> = log
            .iter()
            .filter(|(r, _)| *r == Role::User)
            .map(|(_, t)| t.as_str())
            .collect();
        assert_eq!(player_lines.len(), 4);
        assert!(
            player_lines.iter().all(|line| line.starts_with(own)),
            "{npc}: {player_lines:?}"
        );
        assert!(
            log.iter().all(|(_, text)| !text.contains(other)),
            "{npc} heard the other NPC's player"
        );
        let summary = h.summary(npc);
        assert!(
            summary.contains(own),
            "{npc} summarized its own talk: {summary}"
        );
        assert!(
            !summary.contains(other),
            "{npc}'s summary leaked: {summary}"
        );
        assert!(h.window(npc).iter().all(|m| !m.content.contains(other)));
    }
    assert!(h.replies("robot").iter().all(|r| r.contains("Rusty")));
    assert!(h.replies("echo7").iter().all(|r| r.contains("ECHO-7")));
}

#[test]
fn a_slow_npc_does_not_hold_up_a_fast_one() {
    let backend = ScriptedBackend::new();
    backend
        .push_reply_after(Duration::from_millis(1000), "slow answer")
        .push_reply("fast answer");
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend));
    h.spawn("slow", persona("Slow"));
    h.spawn("fast", persona("Fast"));
    h.say("slow", "hello");
    h.app.update();
    h.say("fast", "hello");
    h.wait_for_replies(1);
    assert_eq!(h.replies("fast"), ["fast answer"]);
    assert!(
        h.replies("slow").is_empty(),
        "the slow reply is still on its way"
    );
    h.wait_for_replies(2);
    assert_eq!(h.replies("slow"), ["slow answer"]);
}
