//! The `terminal_chat` example's interface, driven as a child process the way a
//! newcomer (or a script) uses it.

mod support;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use support::read_trace;

const LINES: &str = "Hello, I'm Alex. I'm here to fix the power system.\nI'm in the storage area now.\nWhat is my name and what am I doing?\n";

fn example(name: &str) -> PathBuf {
    // Integration tests live in target/<profile>/deps; examples one level up.
    let deps = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    deps.parent().unwrap().join("examples").join(name)
}

fn run_chat(args: &[&str], input: &str) -> (String, String) {
    let mut child = Command::new(example("terminal_chat"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the terminal_chat example is built by cargo test");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(output.status.success(), "terminal_chat failed: {stderr}");
    (stdout, stderr)
}

fn temp_trace(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{name}-{}.jsonl", std::process::id()))
}

#[test]
fn offline_echo7_remembers_alex_after_the_introduction_left_the_window() {
    let trace = temp_trace("offline-trace");
    let (stdout, stderr) = run_chat(
        &[
            "--window",
            "4",
            "--threshold",
            "2",
            "--trace",
            trace.to_str().unwrap(),
        ],
        LINES,
    );
    let replies: Vec<&str> = stdout.lines().collect();
    assert_eq!(replies.len(), 3, "one reply per line: {stdout}");
    assert!(replies.iter().all(|r| r.starts_with("ECHO-7: [offline]")));
    assert!(
        replies[2].contains("what I remember: Player: Hello, I'm Alex."),
        "{}",
        replies[2]
    );
    assert_eq!(
        stderr.matches("[Memory] summary of messages").count(),
        3,
        "{stderr}"
    );

    let events = read_trace(&trace);
    let last_reply_request = events
        .iter()
        .rfind(|e| e["event"] == "request" && e["purpose"] == "reply")
        .unwrap();
    let messages = last_reply_request["messages"].as_array().unwrap();
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("[Previously]: Player: Hello, I'm Alex.")
    );
    assert!(
        messages[1..]
            .iter()
            .all(|m| m["content"] != "Hello, I'm Alex. I'm here to fix the power system."),
        "the introduction left the window"
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| e["event"] == "summary_updated")
            .count(),
        3
    );
    std::fs::remove_file(trace).ok();
}

#[test]
fn the_scripted_backend_replays_the_seed() {
    let (stdout, _) = run_chat(
        &["--backend", "scripted", "--window", "4", "--threshold", "2"],
        LINES,
    );
    let replies: Vec<&str> = stdout.lines().collect();
    assert_eq!(replies.len(), 3);
    assert!(replies[0].starts_with("ECHO-7: Logged."));
    assert!(replies[2].starts_with("ECHO-7: You are Alex."));
}

#[test]
fn bad_arguments_fail_with_usage() {
    let output = Command::new(example("terminal_chat"))
        .args(["--window", "four"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("--window needs a number") && stderr.contains("usage: terminal_chat"),
        "{stderr}"
    );
}
