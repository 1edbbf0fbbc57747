//! The `memory_bench` binary's interface on a tiny LoCoMo-shaped fixture with known
//! evidence, so its recall figures can be checked exactly.

use bevy_npc_memory_bench::dump::fresh_dir;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

fn fixture(dir: &Path) -> PathBuf {
    let turns = |session: u32| -> Vec<Value> {
        (1..=5)
            .map(|k| {
                let speaker = if k % 2 == 1 { "Alex" } else { "Echo" };
                let mut turn = json!({"speaker": speaker, "dia_id": format!("D{session}:{k}"), "text": format!("session {session} turn {k}")});
                if k == 3 {
                    turn["blip_caption"] = json!("a photo of a breaker");
                }
                turn
            })
            .collect()
    };
    let data = json!([{
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Alex", "speaker_b": "Echo",
            "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": turns(1),
            "session_2_date_time": "10:00 am on 9 May, 2023", "session_2": turns(2),
            "session_3_date_time": "11:00 am on 10 May, 2023"
        },
        "qa": [
            {"question": "What came first?", "answer": "x", "evidence": ["D1:1"], "category": 4},
            {"question": "What came last?", "answer": "x", "evidence": ["D2:5"], "category": 4},
            {"question": "Both?", "answer": "x", "evidence": ["D02:04; D:1:2"], "category": 1},
            {"question": "Nothing?", "answer": "x", "evidence": [], "category": 3},
            {"question": "Trick?", "adversarial_answer": "x", "evidence": ["D2:5"], "category": 5}
        ]
    }]);
    let path = dir.join("tiny.json");
    std::fs::write(&path, data.to_string()).unwrap();
    path
}

fn run(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_memory_bench"))
        .args(args)
        .output()
        .expect("memory_bench is built by cargo test");
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn report(data: &Path, strategy: &str) -> Value {
    let (ok, stdout, stderr) = run(&[
        "--data",
        data.to_str().unwrap(),
        "--strategy",
        strategy,
        "--window",
        "4",
        "--json",
    ]);
    assert!(ok, "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn recall_on_a_fixture_with_known_evidence_is_exact() {
    let dir = fresh_dir("bench-fixture");
    let data = fixture(&dir);

    let full = report(&data, "full");
    assert_eq!(
        (
            full["conversations"].as_u64(),
            full["questions"].as_u64(),
            full["skipped"].as_u64()
        ),
        (Some(1), Some(4), Some(1))
    );
    assert_eq!(full["evidence_recall"]["overall"], 1.0);
    assert_eq!(full["evidence_recall"]["fully_covered"], 1.0);
    assert_eq!(full["token_ratio_vs_full"], 1.0);

    // Window 4: the system prompt, the last two turns (D2:4, D2:5) and the question.
    let window = report(&data, "window");
    let recall = &window["evidence_recall"];
    assert_eq!(
        recall["by_category"]["4"], 0.5,
        "D1:1 is gone, D2:5 is there"
    );
    assert_eq!(
        recall["by_category"]["1"], 0.5,
        "D2:4 is there, D1:2 is gone"
    );
    assert_eq!(recall["by_category"]["5"], 1.0);
    assert_eq!(
        recall["overall"], 0.5,
        "the mean over categories 1-4: (0 + 1 + 0.5) / 3"
    );
    assert!((recall["fully_covered"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9);
    assert!(
        window["context_tokens"]["mean"].as_f64().unwrap()
            < full["context_tokens"]["mean"].as_f64().unwrap()
    );
    assert!(window["token_ratio_vs_full"].as_f64().unwrap() < 1.0);
    assert_eq!(window["window"], 4);
    assert_eq!(window["threshold"], 2);
    assert!(
        window["summary_requests"].as_u64().unwrap() >= 4,
        "the replay summarizes every 2 messages"
    );

    let summary = report(&data, "summary");
    assert!(summary["evidence_recall"]["overall"].as_f64().unwrap() <= 1.0);
    let (ok, stdout, _) = run(&[
        "--data",
        data.to_str().unwrap(),
        "--strategy",
        "full",
        "--budget",
        "60",
        "--json",
    ]);
    assert!(ok);
    let budgeted: Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        budgeted["context_tokens"]["p95"].as_f64().unwrap() <= 60.0,
        "the budget caps the context"
    );
    assert!(budgeted["evidence_recall"]["overall"].as_f64().unwrap() < 1.0);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_input_names_the_file_and_the_record() {
    let dir = fresh_dir("bench-bad");
    let missing = dir.join("missing.json");
    let (ok, _, stderr) = run(&["--data", missing.to_str().unwrap(), "--strategy", "full"]);
    assert!(!ok && stderr.contains("missing.json"), "{stderr}");

    let malformed = dir.join("malformed.json");
    std::fs::write(&malformed, "[{\"sample_id\": ").unwrap();
    let (ok, _, stderr) = run(&["--data", malformed.to_str().unwrap(), "--strategy", "full"]);
    assert!(
        !ok && stderr.contains("malformed.json") && stderr.contains("invalid JSON"),
        "{stderr}"
    );

    let empty = dir.join("empty.json");
    std::fs::write(&empty, r#"[{"sample_id": "conv-x", "conversation": {"speaker_a": "A", "speaker_b": "B"}, "qa": []}]"#).unwrap();
    let (ok, _, stderr) = run(&["--data", empty.to_str().unwrap(), "--strategy", "full"]);
    assert!(
        !ok && stderr.contains("empty.json")
            && stderr.contains("conv-x")
            && stderr.contains("no sessions"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"));
    std::fs::remove_dir_all(dir).ok();
}

/// One old fact among filler, and a question about it.
fn recall_fixture(dir: &Path) -> PathBuf {
    let mut turns: Vec<Value> = Vec::new();
    for k in 1..=30 {
        let speaker = if k % 2 == 1 { "Alex" } else { "Echo" };
        let text = if k == 3 {
            "My sister Mara keeps the lighthouse on the cliff.".to_owned()
        } else {
            format!("Routine check {k}: pressure nominal, doors sealed.")
        };
        turns.push(json!({"speaker": speaker, "dia_id": format!("D1:{k}"), "text": text}));
    }
    let data = json!([{
        "sample_id": "recall-1",
        "conversation": {
            "speaker_a": "Alex", "speaker_b": "Echo",
            "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": turns
        },
        "qa": [
            {"question": "Who keeps the lighthouse?", "answer": "Mara", "evidence": ["D1:3"], "category": 4}
        ]
    }]);
    let path = dir.join("recall.json");
    std::fs::write(&path, data.to_string()).unwrap();
    path
}

/// The JSON report of a layered run on `data` with this window and budget, and
/// `extra` flags.
fn layered_report(data: &Path, (window, budget): (&str, &str), extra: &[&str]) -> Value {
    let mut args = vec![
        "--data",
        data.to_str().unwrap(),
        "--strategy",
        "layered",
        "--window",
        window,
        "--budget",
        budget,
        "--json",
    ];
    args.extend_from_slice(extra);
    let (ok, stdout, stderr) = run(&args);
    assert!(ok, "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn layered_recalls_an_old_turn_within_its_budget_and_ablations_switch_parts_off() {
    let dir = fresh_dir("bench-layered");
    let data = recall_fixture(&dir);
    let layered = |extra: &[&str]| layered_report(&data, ("6", "400"), extra);
    let all = layered(&[]);
    assert_eq!(all["evidence_recall"]["overall"], 1.0, "{all}");
    assert!(all["context_tokens"]["mean"].as_f64().unwrap() <= 400.0);
    assert!(all["assembly_us"]["p99"].as_f64().unwrap() > 0.0);

    let without = layered(&["--without", "recall"]);
    assert_eq!(without["evidence_recall"]["overall"], 0.0, "{without}");
    assert_eq!(without["without"], json!(["recall"]));

    let (ok, _, stderr) = run(&[
        "--data",
        data.to_str().unwrap(),
        "--strategy",
        "layered",
        "--without",
        "memory",
    ]);
    assert!(!ok && stderr.contains("--without takes"), "{stderr}");
    let (ok, _, stderr) = run(&[
        "--data",
        data.to_str().unwrap(),
        "--strategy",
        "window",
        "--without",
        "recall",
    ]);
    assert!(!ok && stderr.contains("only applies"), "{stderr}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn folding_before_the_questions_leaves_no_line_uncovered_and_says_so() {
    let dir = fresh_dir("bench-fold-before");
    let data = recall_fixture(&dir);
    let layered = |extra: &[&str]| layered_report(&data, ("8", "200"), extra);
    let replayed = layered(&[]);
    let folded = layered(&["--fold-before-questions"]);
    // Folds come four lines at a time (threshold 4), so 1 to 3 lines may be left.
    let left = replayed["uncovered_at_questions"][0].as_u64().unwrap();
    assert!((1..4).contains(&left), "{replayed}");
    assert_eq!(replayed["fold_before_questions"], false);
    assert_eq!(folded["uncovered_at_questions"], json!([0]), "{folded}");
    assert_eq!(folded["fold_before_questions"], true);
    assert_eq!(
        folded["summary_requests"].as_u64().unwrap(),
        replayed["summary_requests"].as_u64().unwrap() + 1
    );
    std::fs::remove_dir_all(dir).ok();
}
