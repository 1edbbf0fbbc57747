//! `memory_bench --dump-prompts` and `scripts/check_recall_dump.py` agree: on a
//! small hand-written LoCoMo-format fixture (two conversations, photo captions,
//! flawed evidence ids, hostile and Chinese text), the checker reproduces every
//! recall figure of the bench from the dumped prompts' text alone.

use bevy_npc_memory_bench::dump::fresh_dir;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mini_locomo.json")
}

/// A fresh, empty folder for one run.
fn output(command: &mut Command) -> String {
    let output = command.output().expect("the command starts");
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The bench's report (JSON and text) with prompts dumped into `dump`.
fn bench(args: &[&str], dump: &Path) -> (Value, String) {
    let run = |json: bool| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_memory_bench"));
        command
            .args(["--data", fixture().to_str().unwrap()])
            .args(args)
            .args(["--dump-prompts", dump.to_str().unwrap()]);
        if json {
            command.arg("--json");
        }
        output(&mut command)
    };
    (serde_json::from_str(&run(true)).unwrap(), run(false))
}

/// The checker's report (JSON and text) on the dump.
fn checker(dump: &Path) -> (Value, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/check_recall_dump.py");
    let run = |json: bool| {
        let mut command = Command::new("python3");
        command.arg(&script).arg(fixture()).arg(dump);
        if json {
            command.arg("--json");
        }
        output(&mut command)
    };
    (serde_json::from_str(&run(true)).unwrap(), run(false))
}

/// The recall lines both reports print.
fn recall_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with("evidence recall") || l.starts_with("  category"))
        .collect()
}

/// Runs both and asserts they agree; returns the checker's JSON.
fn agree(name: &str, args: &[&str]) -> Value {
    let dump = fresh_dir(&format!("dump-{name}"));
    let (bench_json, bench_text) = bench(args, &dump);
    let (check_json, check_text) = checker(&dump);
    for key in ["questions", "skipped"] {
        assert_eq!(bench_json[key], check_json[key], "{name}: {key}");
    }
    let (ours, theirs) = (
        &bench_json["evidence_recall"],
        &check_json["evidence_recall"],
    );
    let keys = ours.as_object().unwrap().keys();
    assert_eq!(keys.len(), theirs.as_object().unwrap().len(), "{name}");
    for key in keys {
        let (a, b) = (&ours[key], &theirs[key]);
        let pairs: Vec<(&Value, &Value)> = match a.as_object() {
            Some(map) => {
                assert_eq!(map.len(), b.as_object().unwrap().len(), "{name}: {key}");
                map.iter().map(|(c, v)| (v, &b[c])).collect()
            }
            None => vec![(a, b)],
        };
        for (x, y) in pairs {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (x - y).abs() < 1e-12,
                "{name}: {key}: bench {x}, checker {y}"
            );
        }
    }
    assert_eq!(
        recall_lines(&bench_text),
        recall_lines(&check_text),
        "{name}"
    );
    assert!(!recall_lines(&bench_text).is_empty());
    std::fs::remove_dir_all(dump).ok();
    check_json
}

#[test]
fn the_dump_checker_reproduces_the_bench_figures() {
    // A tight budget: some evidence comes from the window, some from recalled
    // lines (quoted in the system message), some is left out.
    let layered = agree(
        "layered",
        &["--strategy", "layered", "--window", "6", "--budget", "180"],
    );
    let overall = layered["evidence_recall"]["overall"].as_f64().unwrap();
    assert!(overall > 0.0 && overall < 1.0, "{layered}");
    assert!(layered["window"].as_u64().unwrap() > 0, "{layered}");
    assert!(layered["recalled"].as_u64().unwrap() > 0, "{layered}");
    assert_eq!(layered["ambiguous"], 0);
    assert_eq!(layered["questions"], 15);
    assert_eq!(
        layered["skipped"], 2,
        "empty evidence, and ids naming no turn"
    );

    // Compact recalled lines (`P: "…"`, `Y: "…"`) are read by the same rule.
    let compact = agree(
        "compact",
        &[
            "--strategy",
            "layered",
            "--window",
            "6",
            "--budget",
            "180",
            "--recall-lines",
            "compact",
        ],
    );
    assert!(compact["recalled"].as_u64().unwrap() > 0, "{compact}");
    let full = agree("full", &["--strategy", "full"]);
    assert_eq!(full["evidence_recall"]["overall"], 1.0);
    agree("window", &["--strategy", "window", "--window", "6"]);
    agree(
        "one-sample",
        &[
            "--strategy",
            "layered",
            "--budget",
            "400",
            "--samples",
            "mini-2",
        ],
    );
}

#[test]
fn a_split_or_samples_run_only_the_named_conversations() {
    let dump = fresh_dir("dump-samples");
    let (report, _) = bench(&["--strategy", "full", "--samples", "mini-2"], &dump);
    assert_eq!(report["conversations"], 1);
    assert_eq!(report["samples"], serde_json::json!(["mini-2"]));
    assert_eq!(report["questions"], 6);
    assert!(dump.join("mini-2/0.json").is_file());
    assert!(!dump.join("mini-1").exists());
    let prompt: Value =
        serde_json::from_str(&std::fs::read_to_string(dump.join("mini-2/0.json")).unwrap())
            .unwrap();
    let last = prompt.as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"], "What instrument did Wei start learning?");

    let fails = |args: &[&str], says: &str| {
        let failed = Command::new(env!("CARGO_BIN_EXE_memory_bench"))
            .args(["--data", fixture().to_str().unwrap(), "--strategy", "full"])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&failed.stderr);
        assert!(
            !failed.status.success() && stderr.contains(says),
            "{stderr}"
        );
    };
    fails(&["--samples", "mini-9"], "mini-9");
    // The dev split names LoCoMo's conversations, which the fixture lacks.
    fails(&["--split", "validate"], "conv-42");
    fails(&["--split", "train"], "tune or validate");
    fails(&["--split", "tune", "--samples", "mini-1"], "once");
    std::fs::remove_dir_all(dump).ok();
}
