//! The `terminal_chat` example's interface, driven as a child process the way a
//! newcomer (or a script) uses it.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::support::read_trace;

const LINES: &str = "Hello, I'm Alex. I'm here to fix the power system.\nI'm in the storage area now.\nWhat is my name and what am I doing?\n";

fn run_chat(args: &[&str], input: &str) -> (String, String) {
    let mut child = Command::new(crate::support::example_binary("terminal_chat"))
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
    let output = Command::new(crate::support::example_binary("terminal_chat"))
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

#[test]
fn a_second_run_with_the_same_save_remembers_the_first() {
    let dir = crate::support::temp_dir("restart");
    let save = dir.join("savegame.json");
    let trace = dir.join("second.jsonl");
    let save_arg = save.to_str().unwrap();
    run_chat(
        &["--window", "4", "--threshold", "2", "--save", save_arg],
        "Hello, I'm Alex. I'm here to fix the power system.\nI'm in the storage area now.\n",
    );
    let (_, stderr) = run_chat(
        &[
            "--window",
            "4",
            "--threshold",
            "2",
            "--save",
            save_arg,
            "--trace",
            trace.to_str().unwrap(),
        ],
        "What is my name?\n",
    );
    assert!(stderr.contains("[Memory] loaded"), "{stderr}");
    let events = read_trace(&trace);
    let first = events.iter().find(|e| e["event"] == "request").unwrap();
    let messages = first["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap();
    assert!(
        system.ends_with("[Previously]: Player: Hello, I'm Alex. I'm here to fix the power system. | I'm in the storage area now."),
        "the first run's summary: {system}"
    );
    let texts: Vec<&str> = messages[1..]
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts[0], "I'm in the storage area now.",
        "the first run's L2 tail"
    );
    assert_eq!(texts.last().unwrap(), &"What is my name?");
    std::fs::remove_dir_all(dir).ok();
}

/// 100 SIGKILLs while the game autosaves continuously: appending to the journal,
/// compacting it into a new snapshot, or loading at startup. After every kill the
/// slot (or its backup) loads, no file was ever found damaged, and nothing that
/// loaded after one kill is missing after the next.
#[test]
fn killing_the_game_mid_save_always_leaves_a_loadable_save() {
    use bevy_npc_memory::saves::{SaveGame, backup_path, journal_path};
    let dir = crate::support::temp_dir("sigkill");
    let save = dir.join("savegame.json");
    let journal = journal_path(&save);
    let stamp = |path: &std::path::Path| {
        std::fs::metadata(path)
            .ok()
            .map(|m| (m.len(), m.modified().ok()))
    };
    let (mut lines_before, mut with_journal, mut snapshots) = (0, 0, 0);
    let mut last_snapshot = None;
    for round in 0..100u64 {
        let before = (stamp(&save), stamp(&journal));
        let mut child = Command::new(crate::support::example_binary("terminal_chat"))
            .args(["--window", "6", "--save", save.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let feeder = std::thread::spawn(move || {
            for i in 0..2000 {
                if writeln!(
                    stdin,
                    "round {round} line {i}: a fairly long line to make the save grow"
                )
                .is_err()
                {
                    break;
                }
            }
        });
        // Kill once the game has written in this round, so it has loaded the slot
        // and autosave is running (a machine under load may take a while to
        // start), then at a different moment of the writes each round.
        let started = std::time::Instant::now();
        while (stamp(&save), stamp(&journal)) == before
            && started.elapsed() < std::time::Duration::from_secs(60)
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        std::thread::sleep(std::time::Duration::from_millis((round * 7) % 45));
        child.kill().unwrap(); // SIGKILL: no chance to flush anything
        child.wait().unwrap();
        feeder.join().unwrap();

        with_journal += usize::from(journal.exists());
        let snapshot = stamp(&save);
        snapshots += usize::from(snapshot != last_snapshot);
        last_snapshot = snapshot;
        let loaded = SaveGame::read_from(&save, u64::MAX)
            .or_else(|_| SaveGame::read_from(&backup_path(&save), u64::MAX))
            .unwrap_or_else(|e| panic!("round {round}: neither the save nor its backup loads: {e}"))
            .1;
        assert!(
            !loaded.npcs.is_empty(),
            "round {round}: the save holds the conversation"
        );
        let lines: usize = loaded.npcs.iter().map(|n| n.memory.log.len()).sum();
        assert!(
            lines >= lines_before,
            "round {round}: {lines} lines load, {lines_before} did after the last kill"
        );
        lines_before = lines;
        let leftovers = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
            .count();
        assert_eq!(leftovers, 0, "round {round}: no save was ever unreadable");
    }
    assert!(
        with_journal > 0 && snapshots > 1,
        "the kills hit journal appends ({with_journal} rounds) and compactions ({snapshots} snapshots)"
    );
    std::fs::remove_dir_all(dir).ok();
}
