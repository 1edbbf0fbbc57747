//! Chinese recall keeps up with English on the validation play-through
//! (`bench/data/playthrough_b.*.json`, the same conversation in both languages,
//! with the same evidence): within 5 points of evidence recall at 1,000 and
//! 2,000 tokens. BENCHMARKS.md, "Chinese: parity on game play-throughs", has the
//! figures and how the knobs were chosen on play-through A.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name)
}

/// Evidence recall (categories 1-4) of `layered`, window 20, session dates on.
fn recall(file: &str, budget: &str, extra: &[&str]) -> f64 {
    let path = data(file);
    let output = Command::new(env!("CARGO_BIN_EXE_memory_bench"))
        .args(["--data", path.to_str().unwrap(), "--strategy", "layered"])
        .args(["--window", "20", "--budget", budget, "--dates", "calendar"])
        .args(extra)
        .arg("--json")
        .output()
        .expect("memory_bench is built by cargo test");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    // A question whose evidence ids resolve to no turn would be skipped.
    assert_eq!(report["questions"], 41, "every question is scored");
    assert_eq!(report["skipped"], 0);
    report["evidence_recall"]["overall"].as_f64().unwrap()
}

#[test]
fn chinese_recall_is_within_five_points_of_english_on_the_validation_play_through() {
    for budget in ["1000", "2000"] {
        let english = recall("playthrough_b.en.json", budget, &[]);
        let chinese = recall("playthrough_b.zh.json", budget, &[]);
        assert!(
            chinese >= english - 0.05,
            "at {budget} tokens: Chinese {chinese:.3}, English {english:.3}"
        );
    }
}

#[test]
fn without_unigrams_and_function_character_stopping_chinese_falls_behind() {
    // The knobs as they were before: bigrams only, grammar bigrams kept. The
    // gap this test shows is the one the knobs close.
    let before = [
        "--recall-json",
        r#"{"cjk_unigram_weight":0,"cjk_function_pair_weight":1}"#,
    ];
    let english = recall("playthrough_b.en.json", "1000", &before);
    let chinese = recall("playthrough_b.zh.json", "1000", &before);
    assert!(
        chinese < english - 0.05,
        "Chinese {chinese:.3}, English {english:.3}"
    );
    // English has no CJK terms: the knobs cannot move it.
    assert_eq!(english, recall("playthrough_b.en.json", "1000", &[]));
}
