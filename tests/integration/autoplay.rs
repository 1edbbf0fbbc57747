//! The bunker's autoplay script, played headless through the offline backend, reaches
//! the point the scene exists to show: ECHO-7's request carries Alex's name in its
//! summary after the introduction has left the window.

use crate::support::{Harness, persona, read_trace};
use bevy_npc_memory::prelude::*;

#[test]
fn the_autoplay_script_shows_memory_outliving_the_window() {
    let script = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/autoplay/echo7.txt"
    ))
    .unwrap();
    let lines: Vec<&str> = script
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(lines.len(), 3);
    let trace = crate::support::temp_dir("autoplay").join("trace.jsonl");
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_window(4)
            .with_summary_threshold(2)
            .with_trace_file(&trace),
    );
    h.spawn("echo7", persona("ECHO-7"));
    for line in &lines {
        h.say("echo7", line);
        h.settle();
    }
    drop(h);
    let events = read_trace(&trace);
    let last = events
        .iter()
        .rfind(|e| e["event"] == "request" && e["purpose"] == "reply")
        .unwrap();
    let messages = last["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap();
    assert!(
        system.contains("[Previously]: ") && system.contains("Alex"),
        "{system}"
    );
    assert!(
        messages[1..].iter().all(|m| m["content"] != lines[0]),
        "the introduction left the window"
    );
    assert_eq!(messages.last().unwrap()["content"], lines[2]);
}
