//! The `footprint` binary on synthetic text: its parts add up to its total, and the
//! log's records stay within what a 64-byte `ChatMessage` with an eighth of spare
//! room costs.

use std::process::Command;

use serde_json::Value;

#[test]
fn the_parts_add_up_and_the_log_records_stay_small() {
    let output = Command::new(env!("CARGO_BIN_EXE_footprint"))
        .args(["--npcs", "2", "--messages", "600", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        let per = &row["per_npc_per_1000_messages"];
        let get = |key: &str| per[key].as_f64().unwrap();
        assert!(get("text") > 0.0, "{row}");
        // Parts measured by dropping them explain the total to within a few bytes
        // per message (the NPC structs' vector and the like).
        assert!(get("unaccounted").abs() < 0.02 * get("total"), "{row}");
        // 600 messages: 64 bytes each, plus the spare room of a buffer that grows
        // by an eighth (at least 64 entries at a time).
        assert!(get("log_records") <= 1000.0 * 64.0 * 1.25, "{row}");
    }
    assert_eq!(rows[0]["config"], "layered");
    assert!(
        rows[0]["per_npc_per_1000_messages"]["recall_index"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(rows[1]["per_npc_per_1000_messages"]["recall_index"], 0.0);
}
