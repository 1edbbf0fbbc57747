//! The `knowledge_bench` example on a small hand-written scenario: every NPC must
//! recall what it was told, saw, heard second- and third-hand and holds as lore, and
//! nothing it had no way to learn (another NPC's conversation, an event it did not
//! see, a secret, another group's or NPC's lore, a replaced value) may reach its
//! prompt.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/knowledge_small.json")
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(crate::support::example_binary("knowledge_bench"))
        .args(args)
        .output()
        .expect("the knowledge_bench example is built by cargo test")
}

#[test]
fn the_small_scenario_is_recalled_whole_without_a_leak() {
    let dumps = crate::support::temp_dir("knowledge-bench");
    let data = fixture();
    let output = run(&[
        "--data",
        data.to_str().unwrap(),
        "--budget",
        "1000",
        "--json",
        "--dump-prompts",
        dumps.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "knowledge_bench failed: {stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    let run = &report["runs"][0];
    assert_eq!(run["budget"], 1000);
    assert_eq!(run["questions"], 35);
    assert_eq!(run["knows_recall"], 1.0, "{run:#}");
    assert_eq!(run["leak_rate"], 0.0, "{run:#}");
    assert_eq!(run["adversarial_hit_rate"], 0.0, "{run:#}");
    assert_eq!(run["provenance"], 1.0, "{run:#}");
    assert_eq!(
        run["provenance_n"], 13,
        "every gossip question, and every line heard or overheard in a conversation among NPCs, is scored"
    );
    assert_eq!(run["replay"]["tells_sent"], 3, "{run:#}");
    assert_eq!(run["replay"]["tells_taught_nothing"], 0, "{run:#}");
    assert_eq!(run["replay"]["conversation_lines"], 8, "{run:#}");
    assert_eq!(
        run["replay"]["probes_verified"], 2,
        "a real line sends the probed prompt"
    );
    // Facts that travelled only through a conversation among NPCs reached the
    // participants and the bystander, with the speaker named; the part the
    // bystander did not hear, and the player's private line, reached no one.
    let by = &run["by_category"];
    for (category, n) in [("conversation", 6), ("overheard", 4)] {
        assert_eq!(by[category]["questions"], n, "{by:#}");
        assert_eq!(by[category]["knows_recall"], 1.0, "{category}: {by:#}");
        assert_eq!(by[category]["provenance"], 1.0, "{category}: {by:#}");
    }
    for category in ["not_overheard", "conversation_private"] {
        assert_eq!(by[category]["leak_rate"], 0.0, "{category}: {by:#}");
    }

    // The dumps are what the data's own scorer reads: one file per question, the
    // question last, and nothing of the answer key in them.
    let scenario = dumps.join("lighthouse-small");
    let q7: Value =
        serde_json::from_str(&std::fs::read_to_string(scenario.join("Q7.json")).unwrap()).unwrap();
    let messages = q7.as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(
        last["content"],
        "Where will the supply boat land on Friday?"
    );
    let text = serde_json::to_string(&q7).unwrap();
    assert!(
        text.contains("Bram told you") && text.contains("who heard it from Orla"),
        "Wen heard it from Bram, who heard it from Orla: {text}"
    );
    assert_eq!(std::fs::read_dir(&scenario).unwrap().count(), 18);
    let _ = std::fs::remove_dir_all(&dumps);
}

#[test]
fn a_malformed_file_is_refused_with_a_clear_message() {
    let dir = crate::support::temp_dir("knowledge-bench-bad");
    let cases = [
        (
            "wrong-format.json",
            r#"[{"format": "npc-knowledge/2"}]"#,
            "npc-knowledge/1",
        ),
        ("not-json.json", "[{", "not a JSON list"),
        (
            "unknown-npc.json",
            r#"[{"format": "npc-knowledge/1", "scenario_id": "x", "language": "en",
                "player": {"id": "player", "name": "P"}, "groups": [], "npcs": [],
                "lore": [], "timeline": [{"id": "E1", "t": 1, "kind": "event",
                "witnesses": ["ghost"], "text": "Boo.", "importance": 0.5}],
                "questions": []}]"#,
            "unknown NPC \"ghost\"",
        ),
        (
            "escaping-id.json",
            r#"[{"format": "npc-knowledge/1", "scenario_id": "../up", "language": "en",
                "player": {"id": "player", "name": "P"}, "groups": [], "npcs": [],
                "lore": [], "timeline": [], "questions": []}]"#,
            "ASCII slug",
        ),
    ];
    for (name, text, expected) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let output = run(&["--data", path.to_str().unwrap(), "--budget", "500"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains(expected), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
    let output = run(&["--budget", "x"]);
    assert_eq!(output.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}
