//! The `playtime_bench` binary on a small LoCoMo-shaped fixture: the JSON shape the
//! issue asks for, and what the strategies' costs do as the hours go by.

use bevy_npc_memory_bench::dump::fresh_dir;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// Two conversations of 160 alternating turns, 6 to 30 words each.
fn fixture(dir: &Path) -> PathBuf {
    const WORDS: [&str; 24] = [
        "the",
        "generator",
        "north",
        "tunnel",
        "sister",
        "lighthouse",
        "my",
        "door",
        "pressure",
        "is",
        "sealed",
        "yesterday",
        "we",
        "found",
        "a",
        "map",
        "under",
        "old",
        "crates",
        "and",
        "radio",
        "static",
        "again",
        "tonight",
    ];
    let conversation = |id: usize, a: &str, b: &str| {
        let turns: Vec<Value> = (1..=160)
            .map(|k| {
                let length = 6 + (k * 7 + id * 5) % 25;
                let text: Vec<&str> = (0..length)
                    .map(|w| WORDS[(k * 13 + w * 7 + id) % WORDS.len()])
                    .collect();
                let speaker = if k % 2 == 1 { a } else { b };
                json!({"speaker": speaker, "dia_id": format!("D1:{k}"), "text": format!("{}.", text.join(" "))})
            })
            .collect();
        json!({
            "sample_id": format!("tiny-{id}"),
            "conversation": {
                "speaker_a": a, "speaker_b": b,
                "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": turns,
            },
            "qa": []
        })
    };
    let data = json!([
        conversation(1, "Alex", "Echo"),
        conversation(2, "Mara", "Rusty")
    ]);
    let path = dir.join("tiny.json");
    std::fs::write(&path, data.to_string()).unwrap();
    path
}

fn run(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_playtime_bench"))
        .args(args)
        .output()
        .expect("playtime_bench is built by cargo test");
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn per_hour(report: &Value, strategy: &str, field: &str) -> Vec<f64> {
    report["strategies"][strategy][field]
        .as_array()
        .unwrap_or_else(|| panic!("{strategy}.{field} is a list"))
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

#[test]
fn full_history_grows_by_the_hour_while_layered_stays_within_its_budget() {
    let dir = fresh_dir("playtime");
    let data = fixture(&dir);
    let args = [
        "--data",
        data.to_str().unwrap(),
        "--npcs",
        "3",
        "--hours",
        "3",
        "--lines-per-hour",
        "30",
        "--json",
    ];
    let (ok, stdout, stderr) = run(&args);
    assert!(ok, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();

    // The shape the issue asks for: one object per strategy, one entry per hour.
    let strategies = report["strategies"].as_object().unwrap();
    let names: Vec<&str> = strategies.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "basic",
            "full",
            "layered@1000",
            "layered@2000",
            "layered@4000"
        ]
    );
    for name in &names {
        let hours = per_hour(&report, name, "tokens_per_hour");
        assert_eq!(hours.len(), 3, "{name}");
        assert!(hours.iter().all(|&t| t > 0.0), "{name}: {hours:?}");
        let requests = &report["strategies"][name]["requests"];
        assert!(
            requests.as_u64().unwrap() >= 90,
            "{name}: one reply per line"
        );
        let reply = &report["strategies"][name]["by_kind"]["reply"];
        assert_eq!(reply["requests"], 90, "{name}: 3 hours × 30 lines");
    }
    assert_eq!(report["schedule"]["lines"], 90);
    let lines: u64 = report["schedule"]["lines_per_npc"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(lines, 90);

    // Full history: every hour costs more than the one before, and nothing is summarized.
    let full = per_hour(&report, "full", "tokens_per_hour");
    assert!(full[0] < full[1] && full[1] < full[2], "{full:?}");
    let full_report = &report["strategies"]["full"];
    assert_eq!(full_report["by_kind"].as_object().unwrap().len(), 1);
    assert_eq!(full_report["summary_share"], 0.0);
    // Each full-history prompt starts with the previous one: almost all of it is cacheable.
    assert!(
        full_report["cache_prefix_share"]["replies"]
            .as_f64()
            .unwrap()
            > 0.8
    );

    // Layered: no reply prompt over its budget plus the follow-ups' growth (half
    // the budget by default), and hour 3 costs about what hour 2 did (bounded),
    // while full history kept growing. Follow-ups make most of each reply prompt
    // a prefix the last one sent.
    for budget in [1000, 2000, 4000] {
        let name = format!("layered@{budget}");
        let strategy = &report["strategies"][&name];
        let max = strategy["max_reply_prompt_tokens"].as_u64().unwrap();
        assert!(
            max <= budget * 3 / 2,
            "{name}: a reply prompt of {max} tokens"
        );
        let cached = strategy["cached_reply_token_share"].as_f64().unwrap();
        assert!(cached > 0.6, "{name}: {cached}");
    }
    let layered = per_hour(&report, "layered@1000", "tokens_per_hour");
    assert!(layered[2] < full[2], "{layered:?} vs {full:?}");
    assert!(
        layered[2] - layered[1] < (full[2] - full[1]) / 2.0,
        "layered {layered:?} grows far slower than full {full:?}"
    );
    let layered = &report["strategies"]["layered@1000"];
    assert!(
        layered["by_kind"]["summary_facts"]["requests"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(layered["summary_share"].as_f64().unwrap() > 0.0);
    let basic = &report["strategies"]["basic"];
    assert!(basic["by_kind"]["summary"]["requests"].as_u64().unwrap() > 0);

    assert_eq!(report["headline"]["hour"], 3);
    let ratio = report["headline"]["full_over_layered2000"]
        .as_f64()
        .unwrap();
    let expected = full[2] / per_hour(&report, "layered@2000", "tokens_per_hour")[2];
    assert!((ratio - expected).abs() < 1e-9);

    // The same seed gives the same session.
    let (_, again, _) = run(&args);
    assert_eq!(again, stdout);

    // Without follow-ups every prompt keeps to its budget, and caches reuse less.
    let mut fresh_args = args.to_vec();
    fresh_args.extend(["--follow-ups", "0,0.1,300"]);
    let (ok, fresh, stderr) = run(&fresh_args);
    assert!(ok, "{stderr}");
    let fresh: Value = serde_json::from_str(&fresh).unwrap();
    for budget in [1000, 2000, 4000] {
        let name = format!("layered@{budget}");
        let max = fresh["strategies"][&name]["max_reply_prompt_tokens"]
            .as_u64()
            .unwrap();
        assert!(max <= budget, "{name}: a reply prompt of {max} tokens");
        let share = |r: &Value| {
            r["strategies"][&name]["cached_reply_token_share"]
                .as_f64()
                .unwrap()
        };
        // At 4,000 tokens these short logs are sent whole either way.
        assert!(share(&fresh) <= share(&report), "{name}");
        if budget < 4000 {
            assert!(share(&fresh) < share(&report), "{name}");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_arguments_are_refused_with_the_reason() {
    let dir = fresh_dir("playtime-bad");
    let missing = dir.join("missing.json");
    let (ok, _, stderr) = run(&["--data", missing.to_str().unwrap(), "--npcs", "2"]);
    assert!(!ok && stderr.contains("missing.json"), "{stderr}");
    let data = fixture(&dir);
    let (ok, _, stderr) = run(&["--data", data.to_str().unwrap(), "--npcs", "0"]);
    assert!(!ok && stderr.contains("at least 1"), "{stderr}");
    let (ok, _, stderr) = run(&["--follow-ups", "0.5,-1,300"]);
    assert!(!ok && stderr.contains("--follow-ups needs"), "{stderr}");
    let (ok, _, stderr) = run(&["--hours", "many"]);
    assert!(
        !ok && stderr.contains("--hours needs a whole number"),
        "{stderr}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// The sweep prints the cost ratio at every hour, not only the sampled ones, and
/// lists exactly the hours where layered@2000 bills more than full history, as
/// the JSON of the same sweep computes them.
#[test]
fn the_sweep_lists_every_hour_where_layered_costs_more() {
    let dir = fresh_dir("playtime-sweep");
    let data = fixture(&dir);
    let args = [
        "--data",
        data.to_str().unwrap(),
        "--lines-per-hour",
        "30",
        "--sweep",
    ];
    let (ok, text, stderr) = run(&args);
    assert!(ok, "{stderr}");
    let (ok, json, stderr) = run(&[&args[..], &["--json"]].concat());
    assert!(ok, "{stderr}");
    let sweep: Value = serde_json::from_str(&json).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|line| !line.contains("hours where layered@2000 costs more"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .collect();
    let reports = sweep["sweep"].as_array().unwrap();
    assert_eq!(rows.len(), reports.len(), "one row per NPC count:\n{text}");
    for (row, report) in rows.iter().zip(reports) {
        let billed = |strategy: &str| {
            report["strategies"][strategy]["miss_equivalent_tokens_per_hour"]["session"]["ideal"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect::<Vec<f64>>()
        };
        let ratios: Vec<f64> = billed("full")
            .iter()
            .zip(billed("layered@2000"))
            .map(|(full, layered)| full / layered)
            .collect();
        assert_eq!(ratios.len(), 10, "at least 10 hours");
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells[0], report["settings"]["npcs"].to_string());
        for (cell, ratio) in cells[1..=10].iter().zip(&ratios) {
            assert_eq!(*cell, format!("{ratio:.2}"), "{row}");
        }
        let worse: Vec<String> = (1..=10)
            .filter(|&h| (ratios[h - 1] * 100.0).round() < 100.0)
            .map(|h| h.to_string())
            .collect();
        let expected = if worse.is_empty() {
            "none".to_owned()
        } else {
            worse.join(", ")
        };
        assert_eq!(cells[11], expected, "{row}");
    }
}
