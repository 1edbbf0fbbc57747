//! Output: prompts as the dump files hold them, and the table printed without
//! `--json`.

use std::path::Path;

use bevy_npc_memory::memory::PromptMessage;
use serde_json::{Value, json};

use crate::CATEGORIES;
use crate::game::ReplayStats;

/// A prompt as the dump files hold it: `[{"role", "content"}, …]`.
pub(crate) fn dump(messages: &[PromptMessage]) -> Value {
    Value::Array(
        messages
            .iter()
            .map(|m| json!({"role": m.role.as_str(), "content": &*m.content}))
            .collect(),
    )
}

fn fmt(v: &Value) -> String {
    v.as_f64().map_or("-".into(), |x| format!("{x:.3}"))
}

pub(crate) fn print_table(data: &Path, runs: &[(usize, Value, ReplayStats)]) {
    let first = &runs[0].1;
    println!(
        "npc-knowledge: {} ({} scenarios, {} questions: {} should know, {} should not, {} adversarial)",
        data.display(),
        first["by_scenario"].as_object().map_or(0, |m| m.len()),
        first["questions"],
        first["should_know"],
        first["should_not_know"],
        first["adversarial"],
    );
    print!("{:22}{:>5}", "", "n");
    for (budget, _, _) in runs {
        print!(" | {:<35}", format!("budget {budget}"));
    }
    println!();
    print!("{:27}", "");
    for _ in runs {
        print!(
            " | {:>6}{:>7}{:>7}{:>7}{:>8}",
            "knows", "any", "leak", "prov", "tokens"
        );
    }
    println!();
    let line = |label: &str, pick: &dyn Fn(&Value) -> &Value| {
        print!(
            "{label:22}{:>5}",
            pick(first)["questions"].as_u64().unwrap_or(0)
        );
        for (_, result, _) in runs {
            let s = pick(result);
            // Adversarial rows show the made-up markers found in the leak column.
            let leak = if s["should_not_know"].as_u64() > Some(0) {
                &s["leak_rate"]
            } else {
                &s["adversarial_hit_rate"]
            };
            let tokens = s["mean_prompt_tokens"]
                .as_f64()
                .map_or("-".into(), |t| format!("{t:.0}"));
            print!(
                " | {:>6}{:>7}{:>7}{:>7}{:>8}",
                fmt(&s["knows_recall"]),
                fmt(&s["any_recall"]),
                fmt(leak),
                fmt(&s["provenance"]),
                tokens,
            );
        }
        println!();
    };
    line("all", &|v| v);
    println!("by category (adversarial: leak = made-up marker found)");
    // In the order FORMAT.md lists them; any other after them.
    let mut categories: Vec<String> = CATEGORIES.iter().map(|c| c.to_string()).collect();
    if let Some(found) = first["by_category"].as_object() {
        categories.retain(|c| found.contains_key(c));
        categories.extend(
            found
                .keys()
                .filter(|c| !CATEGORIES.contains(&c.as_str()))
                .cloned(),
        );
    }
    for c in &categories {
        line(&format!("  {c}"), &|v| &v["by_category"][c]);
    }
    println!("by scenario");
    let scenarios: Vec<String> = first["by_scenario"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    for s in &scenarios {
        line(&format!("  {s}"), &|v| &v["by_scenario"][s]);
    }
    for (budget, result, stats) in runs {
        println!(
            "budget {budget}: knows_recall {}  any_recall {}  leak_rate {}  adversarial {}  provenance {} (n={})  mean prompt tokens {}",
            fmt(&result["knows_recall"]),
            fmt(&result["any_recall"]),
            fmt(&result["leak_rate"]),
            fmt(&result["adversarial_hit_rate"]),
            fmt(&result["provenance"]),
            result["provenance_n"],
            result["mean_prompt_tokens"]
                .as_f64()
                .map_or("-".into(), |t| format!("{t:.0}")),
        );
        println!(
            "  replay: {} lines, {} events, {} tells sent ({} taught nothing), {} tells skipped (teller did not hold the item), {} about lore (not supported), {} lore updates, {} lines in conversations among NPCs; {} probes said for real went out as probed; {:.1} s",
            stats.lines,
            stats.events,
            stats.tells_sent,
            stats.tells_empty,
            stats.tells_unheld,
            stats.tells_about_lore,
            stats.lore_updates,
            stats.conversation_lines,
            stats.probes_verified,
            stats.seconds,
        );
    }
}
