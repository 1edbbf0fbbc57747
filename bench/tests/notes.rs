//! `memory_bench --notes observations` on a tiny LoCoMo-shaped fixture: an
//! observation's words let recall find a line that shares none with the question,
//! and what cannot be a note as written is counted, not lost silently.

use bevy_npc_memory_bench::dump::fresh_dir;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// One old line among filler, a question that shares no word with it, and
/// observations: one naming what the line is about, one citing no turn, one
/// citing ten turns, and one over the length limit (in letters that take two
/// bytes, so a cut at a byte offset would split one).
fn fixture(dir: &Path) -> PathBuf {
    let mut turns: Vec<Value> = Vec::new();
    for k in 1..=30 {
        let speaker = if k % 2 == 1 { "Alex" } else { "Echo" };
        let text = if k == 3 {
            "I signed up for a class on Tuesdays.".to_owned()
        } else {
            format!("Routine check {k}: pressure nominal, doors sealed.")
        };
        turns.push(json!({"speaker": speaker, "dia_id": format!("D1:{k}"), "text": text}));
    }
    let ten: Vec<String> = (0..10).map(|i| format!("D1:{}", 5 + 2 * i)).collect();
    let long = "Écho vérifié ".repeat(15);
    let data = json!([{
        "sample_id": "notes-1",
        "conversation": {
            "speaker_a": "Alex", "speaker_b": "Echo",
            "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": turns
        },
        "observation": {
            "session_1_observation": {
                "Alex": [
                    ["Alex took up pottery as a hobby.", "D1:3"],
                    ["Nobody said this.", "D9:9"],
                    ["Checks ran all day.", ten]
                ],
                "Echo": [[long, "D1:4"]]
            }
        },
        "qa": [
            {"question": "Which hobby involving pottery?", "answer": "pottery", "evidence": ["D1:3"], "category": 4}
        ]
    }]);
    let path = dir.join("notes.json");
    std::fs::write(&path, data.to_string()).unwrap();
    path
}

fn run(data: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "--data",
        data.to_str().unwrap(),
        "--strategy",
        "layered",
        "--window",
        "6",
        "--budget",
        "400",
        "--json",
    ];
    args.extend_from_slice(extra);
    let output = Command::new(env!("CARGO_BIN_EXE_memory_bench"))
        .args(&args)
        .output()
        .expect("memory_bench is built by cargo test");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn observations_as_notes_find_a_line_by_words_it_never_said() {
    let dir = fresh_dir("bench-notes");
    let data = fixture(&dir);

    let without = run(&data, &[]);
    assert_eq!(without["evidence_recall"]["overall"], 0.0, "{without}");
    assert!(without.get("notes").is_none(), "{without}");

    let with = run(&data, &["--notes", "observations"]);
    assert_eq!(with["evidence_recall"]["overall"], 1.0, "{with}");
    let notes = &with["notes"];
    assert!(
        notes["source"]
            .as_str()
            .unwrap()
            .contains("a stand-in for a capable summarizer's notes"),
        "{notes}"
    );
    // Four observations: the ten-turn one makes two notes, the one citing no
    // turn makes none, the long one is cut.
    assert_eq!(notes["observations"], 4, "{notes}");
    assert_eq!(notes["added"], 4, "{notes}");
    assert_eq!(notes["dropped"], 1, "{notes}");
    assert_eq!(notes["split"], 1, "{notes}");
    assert_eq!(notes["cut"], 1, "{notes}");
    assert_eq!(notes["lines_noted"], 12, "{notes}");

    let output = Command::new(env!("CARGO_BIN_EXE_memory_bench"))
        .args([
            "--data",
            data.to_str().unwrap(),
            "--strategy",
            "window",
            "--notes",
            "observations",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("only applies"),
        "{stderr}"
    );
    std::fs::remove_dir_all(dir).ok();
}
