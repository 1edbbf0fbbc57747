//! Every request, response, summary update and degradation reaches the trace file.

use crate::support::{Harness, persona, read_trace, seed_sized};
use bevy_npc_memory::backends::BackendError;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::ScriptedBackend;

#[test]
fn the_trace_file_records_the_whole_pipeline_as_json_lines() {
    let dir = std::env::temp_dir().join(format!("npc-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.jsonl");
    let backend = ScriptedBackend::new();
    backend
        .push_reply("Logged.")
        .push_summary("The player is Alex.")
        .push_reply("Go left.")
        .push_failure(Purpose::Summary, BackendError::Other("boom".into()))
        .push_failure(Purpose::Summary, BackendError::Other("boom".into()));
    let mut h = Harness::new(seed_sized(backend).with_trace_file(&path));
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "I'm Alex.");
    h.wait_for_replies(1);
    h.wait_for_summaries(1);
    h.say("echo7", "Where now?");
    h.wait_for_replies(2);
    h.settle();
    drop(h); // closing the app flushes the file

    let events = read_trace(&path);
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap(),
                e["purpose"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("request", "reply"),
            ("response", "reply"),
            ("request", "summary"),
            ("response", "summary"),
            ("summary_updated", "-"),
            ("request", "reply"),
            ("response", "reply"),
            ("request", "summary"),
            ("response", "summary"),
            ("request", "summary"),
            ("response", "summary"),
            ("degraded", "-"),
        ]
    );
    assert_eq!(events[0]["npc"], "echo7");
    assert_eq!(events[0]["messages"][1]["content"], "I'm Alex.");
    assert!(events[0]["estimated_tokens"].as_u64().unwrap() > 0);
    assert!(events[1]["latency_ms"].as_f64().is_some());
    assert_eq!(events[4]["new"], "The player is Alex.");
    assert_eq!(
        (
            events[4]["covered_from"].as_u64(),
            events[4]["covered_to"].as_u64()
        ),
        (Some(0), Some(2))
    );
    assert_eq!(events[8]["error"], "boom");
    assert_eq!(events[11]["degradation"]["kind"], "summary_failed");
    assert!(events[11]["reason"].as_str().unwrap().contains("boom"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_second_run_appends_to_the_trace_and_the_cap_rotates_it() {
    let dir = crate::support::temp_dir("trace-append");
    let path = dir.join("trace.jsonl");
    let run = |line: &str, limit: Option<u64>| {
        let backend = ScriptedBackend::new();
        backend.push_reply("Logged.");
        let mut plugin = seed_sized(backend).with_trace_file(&path);
        if let Some(limit) = limit {
            plugin = plugin.with_trace_file_limit(limit);
        }
        let mut h = Harness::new(plugin);
        h.spawn("echo7", persona("ECHO-7"));
        h.say("echo7", line);
        h.wait_for_replies(1);
        h.settle();
    };
    let said = |events: &[serde_json::Value]| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["event"] == "request" && e["purpose"] == "reply")
            .map(|e| {
                let messages = e["messages"].as_array().unwrap();
                messages.last().unwrap()["content"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };

    run("I'm Alex.", None);
    run("Where now?", None);
    assert_eq!(
        said(&read_trace(&path)),
        ["I'm Alex.", "Where now?"],
        "the first run's lines are kept"
    );
    let rotated = dir.join("trace.jsonl.1");
    assert!(!rotated.exists(), "far below the default cap");

    // With a cap smaller than one run's lines, the third run rotates the file; the
    // newest lines are all in the two files, each line whole.
    let before = std::fs::metadata(&path).unwrap().len();
    run("Third line.", Some(before));
    let mut events = read_trace(&rotated);
    events.extend(read_trace(&path));
    let said = said(&events);
    assert_eq!(said.last().map(String::as_str), Some("Third line."));
    let sizes = [&path, &rotated].map(|p| std::fs::metadata(p).unwrap().len());
    assert!(
        sizes.iter().all(|&size| size <= before),
        "{sizes:?} > {before}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
