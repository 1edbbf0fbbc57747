//! What each NPC knows, and must not: replays `npc-knowledge/1` scenarios through
//! the plugin the way a game drives it, and checks every question's prompt for the
//! facts the NPC should (and should not) have.
//!
//! ```sh
//! cargo run --example knowledge_bench -- \
//!     --data ../shared/bench/knowledge/knowledge_dev.json --budget 500,1000,2000 \
//!     [--json] [--dump-prompts DIR]
//! ```
//!
//! The four dev scenarios replay in about 5 s per budget, even in a debug build.
//!
//! Per scenario and budget, one headless app (`MinimalPlugins` + `AssetPlugin`):
//! - one NPC per `npcs` entry, with its persona text and lore groups;
//! - every lore entry sent as `AddLore` with its scope and keys;
//! - the timeline in order, with a game-driven `NpcMemoryClock` set to each item's
//!   time: a player line is a `TalkToNpc` (private when the player asked), answered
//!   by a `ScriptedBackend` with the NPC's own next line; an event is an
//!   `NpcWitnessed`; gossip is `ShareKnowledge::about_entry`, pointing at the entry
//!   of the teller's own log that holds the item; a world change is `UpdateLore`;
//!   a conversation among NPCs (`"kind": "conversation"`, this bench's own
//!   addition to the format) is a `StartConversation` the plugin runs, each
//!   speaker's lines scripted in order, with its bystanders within earshot.
//!   The offline backend writes the summaries.
//!
//! Then, for every question, the prompt the NPC would send if the player said it
//! now, built from a copy of the NPC's memory so that no question is remembered:
//! the same call (`say`, with a `Line` knowing the lore found) and the same lore
//! lookup (`NpcLore::query`) as a real reply. To prove it, the last question of
//! each scenario is then said for real, and the request the plugin sends must
//! equal the probe. Markers, answers
//! and categories never reach the plugin; they are only read by the scoring, which
//! follows the data's `knowledge_check.py`. The replay waits for every summary
//! before the next item, so two runs build the same prompts.
//!
//! `--dump-prompts DIR` writes each prompt to `DIR/<scenario_id>/<question id>.json`
//! (with several budgets, `DIR/budget-<N>/<scenario_id>/…`), which
//! `python3 knowledge_check.py DATA DIR` scores independently.

mod args;
mod data;
mod game;
mod output;
mod scoring;

use std::time::Duration;

use serde_json::{Value, json};

use args::{Args, USAGE, parse_args};
use data::load;
use game::{ReplayStats, run_scenario};
use output::{dump, print_table};
use scoring::{report, score};

/// The only data format this bench reads.
const FORMAT: &str = "npc-knowledge/1";
/// How far (in characters) the teller's name may be from a marker for provenance.
const PROVENANCE_WINDOW: usize = 300;
/// The question categories, in the order the format lists them.
const CATEGORIES: [&str; 18] = [
    "direct",
    "witnessed",
    "unwitnessed",
    "gossip",
    "gossip2",
    "private",
    "not_told",
    "lore_world",
    "lore_group",
    "lore_out_of_scope",
    "lore_private",
    "lore_updated",
    "stale",
    "adversarial",
    "conversation",
    "overheard",
    "conversation_private",
    "not_overheard",
];
/// How long one reply or telling may take before the replay gives up.
const WAIT: Duration = Duration::from_secs(30);
/// How many messages before the player's line the plugin's lore lookup reads too
/// (as `NpcLore` does for every reply), so the probe finds the same lore.
const LORE_RECENT_MESSAGES: usize = 2;

fn run(args: &Args) -> Result<(), String> {
    let scenarios = load(&args.data)?;
    let mut runs = Vec::new();
    for &budget in &args.budgets {
        let mut rows = Vec::new();
        let mut stats = ReplayStats::default();
        for s in &scenarios {
            let (prompts, replay) =
                run_scenario(s, budget).map_err(|e| format!("{}: {e}", s.scenario_id))?;
            if let Some(root) = &args.dump {
                let mut dir = root.clone();
                if args.budgets.len() > 1 {
                    dir.push(format!("budget-{budget}"));
                }
                dir.push(&s.scenario_id);
                std::fs::create_dir_all(&dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                for (id, messages) in &prompts {
                    let path = dir.join(format!("{id}.json"));
                    let text =
                        serde_json::to_string_pretty(&dump(messages)).map_err(|e| e.to_string())?;
                    std::fs::write(&path, text)
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                }
            }
            for q in &s.questions {
                rows.push(score(s, q, &prompts[&q.id]));
            }
            stats.lines += replay.lines;
            stats.events += replay.events;
            stats.tells_sent += replay.tells_sent;
            stats.tells_unheld += replay.tells_unheld;
            stats.tells_about_lore += replay.tells_about_lore;
            stats.tells_empty += replay.tells_empty;
            stats.lore_updates += replay.lore_updates;
            stats.conversation_lines += replay.conversation_lines;
            stats.probes_verified += replay.probes_verified;
            stats.seconds += replay.seconds;
        }
        runs.push((budget, report(&rows), stats));
    }
    if args.json {
        let budgets: Vec<Value> = runs
            .iter()
            .map(|(budget, result, stats)| {
                let mut v = result.clone();
                v["budget"] = json!(budget);
                v["replay"] = json!({
                    "lines": stats.lines,
                    "events": stats.events,
                    "tells_sent": stats.tells_sent,
                    "tells_taught_nothing": stats.tells_empty,
                    "tells_skipped_unheld": stats.tells_unheld,
                    "tells_about_lore": stats.tells_about_lore,
                    "lore_updates": stats.lore_updates,
                    "conversation_lines": stats.conversation_lines,
                    "probes_verified": stats.probes_verified,
                    "seconds": stats.seconds,
                });
                v
            })
            .collect();
        let out = json!({
            "data": args.data.display().to_string(),
            "format": FORMAT,
            "scenarios": scenarios.len(),
            "runs": budgets,
        });
        println!("{out}");
    } else {
        print_table(&args.data, &runs);
    }
    Ok(())
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("knowledge_bench: {error}\n{USAGE}");
            std::process::exit(2);
        }
    };
    if let Err(error) = run(&args) {
        eprintln!("knowledge_bench: {error}");
        std::process::exit(1);
    }
}
