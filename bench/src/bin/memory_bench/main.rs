//! How much of what an NPC needs is still in its prompt after hundreds of turns,
//! and at what token cost: LoCoMo conversations replayed through the real memory
//! core, with the offline backend writing the summaries.
//!
//! ```text
//! cargo run --release -p bevy_npc_memory_bench --bin memory_bench -- --data PATH --strategy full|window|summary|layered
//!     [--window N] [--threshold N] [--budget TOKENS] [--without PARTS]
//!     [--recall-lines compact|quoted] [--dates calendar|off] [--date-headings day|clock]
//!     [--expansion on|off|HITS,TERMS,WEIGHT] [--own-name skip|keep] [--recall-json JSON]
//!     [--notes observations|summarizer --base-url URL [--model NAME]] [--split tune|validate | --samples ID,ID]
//!     [--dump-prompts DIR] [--json]
//! ```
//!
//! `layered` is every feature beyond basic mode (recall with neighbours, pinned facts,
//! segmented summaries, the prompt budget); `--without recall,neighbours,facts,segments`
//! switches parts off for ablations.
//!
//! `--dates calendar` reads the session dates as calendar days for recall
//! (`RecallConfig::calendar`): lines are found by the day they were said and by
//! the days their words name. `--date-headings day` writes recalled lines' headings
//! as "2 May 2022", one per day, instead of the default `day N HH:MM`.
//!
//! `--expansion on` lends recall queries the rarest terms of their first hits
//! (`RecallConfig::expansion_hits`, `expansion_terms`, `expansion_weight`), at the
//! weights measured in BENCHMARKS.md; `HITS,TERMS,WEIGHT` sets all three, for
//! tuning; `off` sets `expansion_hits` to 0. `--own-name skip` drops the NPC's
//! name (`speaker_b`) from recall queries (`RecallConfig::skip_own_name`).
//! `--recall-json '{"cjk_unigram_weight":0.3}'` sets any `RecallConfig` fields by
//! their serde names, after every other flag, for tuning without a rebuild.
//!
//! `speaker_a` is the player and `speaker_b` the NPC. After each whole conversation,
//! every question is the player's next line; the context is the message list the
//! plugin would send for it. Evidence recall counts the question's evidence turns
//! sent word for word in that context, as messages or recalled lines (summary text
//! does not count; the rule is in `bevy_npc_memory_bench::evidence`).
//!
//! `--notes summarizer --base-url URL [--model NAME]` (a build with `--features
//! http`) has a real model behind an OpenAI-compatible server write every
//! summary, with the notes on lines it chooses to write: the path a game takes.
//!
//! `--notes observations` (layered only) gives recall each session's LoCoMo
//! observations as summarizer notes (`LineNote`) on the turns they cite, right
//! after the session's turns, as a summarizer writes notes on lines that exist:
//! "LoCoMo observations (a stand-in for a capable summarizer's notes)". How they
//! are fitted to the core's limits is in `bevy_npc_memory_bench::notes`; the
//! report counts the notes added, dropped, cut and split.
//!
//! `--fold-before-questions` folds every line no summary covers yet before the
//! questions are asked. Those lines are always sent, so how many there are (0 to
//! a threshold's worth, wherever the last fold fell) moves the figures; the
//! report gives the count per conversation either way.
//!
//! `--split` runs one half of the dev file's tuning split (`split.rs`), `--samples`
//! any conversations by id. `--dump-prompts DIR` writes each scored question's
//! prompt to `DIR/<sample_id>/<question index>.json`, for
//! `scripts/check_recall_dump.py` to check the figures from the text alone.

use std::collections::HashSet;
use std::time::Duration;

use bevy_npc_memory::memory::{Calendar, LogIndex, PromptMessage, estimate_prompt_tokens};
use bevy_npc_memory_bench::dump::{safe_name, write_prompt};
use bevy_npc_memory_bench::evidence::{RecallTally, count_found, evidence};
use bevy_npc_memory_bench::locomo::load;
use bevy_npc_memory_bench::notes::{NoteTally, OBSERVATIONS_LABEL};
use bevy_npc_memory_bench::split::select;
use bevy_npc_memory_bench::strategies::memory_config;
use bevy_npc_memory_bench::summarizer::Summarizer;
use serde_json::{Value, json};

mod args;
mod replay;
mod strategies;

use args::{Args, USAGE, parse_args};
use replay::replay;
use strategies::{Full, Layered, Strategy, Summary, WindowOnly, apply_budget};

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

fn percentile(values: &[f64], quantile: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() - 1) as f64 * quantile).round() as usize]
}

fn run(args: &Args) -> Result<Value, String> {
    let strategy: Box<dyn Strategy> = match args.strategy.as_str() {
        "full" => Box::new(Full),
        "window" => Box::new(WindowOnly),
        "summary" => Box::new(Summary),
        "layered" => Box::new(Layered::default()),
        other => {
            return Err(format!(
                "unknown strategy {other:?} (full, window, summary, layered)"
            ));
        }
    };
    if !args.without.is_empty() && args.strategy != "layered" {
        return Err("--without only applies to --strategy layered".into());
    }
    if (args.notes || args.summarizer.is_some()) && args.strategy != "layered" {
        return Err("--notes only applies to --strategy layered".into());
    }
    let summarizer = match &args.summarizer {
        None => Summarizer::offline(),
        Some((url, _)) if url.is_empty() => {
            return Err("--notes summarizer needs --base-url URL".into());
        }
        #[cfg(feature = "http")]
        Some((url, model)) => Summarizer::server(url, model)?,
        #[cfg(not(feature = "http"))]
        Some(_) => {
            return Err("--notes summarizer needs a build with --features http".into());
        }
    };
    let file = &args.data;
    let all_records = load(file)?;
    let records = if args.samples.is_empty() {
        all_records.iter().collect()
    } else {
        select(&all_records, &args.samples)?
    };
    let mut config = memory_config(
        args.window,
        args.threshold,
        args.strategy == "layered",
        args.budget,
        &args.without,
    );
    if let Some(compact) = args.compact_lines {
        config.features.recall.compact_lines = compact;
    }
    if let Some(dates) = args.dates {
        // The session dates are read as Unix seconds (`parse_date`).
        config.features.recall.calendar = dates.then_some(Calendar::UNIX);
    }
    if let Some((hits, terms, weight)) = args.expansion {
        let recall = &mut config.features.recall;
        recall.expansion_hits = hits;
        recall.expansion_terms = terms;
        recall.expansion_weight = weight;
    }
    if let Some(skip) = args.skip_own_name {
        config.features.recall.skip_own_name = skip;
    }
    if let Some(fields) = &args.recall_json {
        let recall = &mut config.features.recall;
        let mut merged = serde_json::to_value(&*recall).map_err(|e| e.to_string())?;
        for (key, value) in fields {
            match merged.get_mut(key) {
                Some(slot) => *slot = value.clone(),
                None => return Err(format!("--recall-json: RecallConfig has no field {key:?}")),
            }
        }
        *recall = serde_json::from_value(merged).map_err(|e| format!("--recall-json: {e}"))?;
    }

    let mut tally = RecallTally::default();
    let (mut skipped, mut questions) = (0usize, 0usize);
    let (mut tokens, mut full_tokens) = (Vec::new(), Vec::new());
    let (mut summary_requests, mut bookkeeping, mut messages) = (0, Duration::ZERO, 0);
    let mut dumped = HashSet::new();
    let mut notes = NoteTally::default();
    let mut summarizer_notes = 0usize;
    // Per conversation: the lines no summary covered when the questions came.
    let mut uncovered = Vec::new();
    for record in &records {
        let replay = replay(
            record,
            &config,
            (args.day_headings, args.notes, args.fold_before_questions),
            &summarizer,
            file,
        )?;
        notes.merge(&replay.notes);
        summarizer_notes += replay.memory.context.recall().notes().len();
        summary_requests += replay.summary_requests;
        uncovered.push(replay.memory.log.next_index() - replay.memory.context.covered_until());
        bookkeeping += replay.bookkeeping;
        messages += replay.messages;
        let sample_id = record
            .get("sample_id")
            .and_then(Value::as_str)
            .unwrap_or("?");
        if args.dump.is_some() && !dumped.insert(safe_name(sample_id)) {
            return Err(format!(
                "two conversations dump to the folder {:?}",
                safe_name(sample_id)
            ));
        }
        for (number, qa) in record
            .get("qa")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let question = qa.get("question").and_then(Value::as_str).unwrap_or("");
            let category = qa.get("category").and_then(Value::as_u64).unwrap_or(0);
            let wanted: HashSet<LogIndex> = evidence(qa)
                .iter()
                .filter_map(|id| replay.dia_ids.get(id).copied())
                .collect();
            if wanted.is_empty() {
                skipped += 1;
                continue;
            }
            questions += 1;
            let (present, context): (HashSet<LogIndex>, Vec<PromptMessage>) = match strategy
                .assembled(&replay, question)
            {
                Some((sent, messages)) => (sent.into_iter().collect(), messages),
                None => {
                    let context = apply_budget(strategy.context(&replay, question), args.budget);
                    (
                        context.iter().filter_map(|(index, _)| *index).collect(),
                        context.into_iter().map(|(_, m)| m).collect(),
                    )
                }
            };
            tally.add(category, count_found(&wanted, &present));
            if let Some(dir) = &args.dump {
                write_prompt(dir, sample_id, number, &context)?;
            }
            tokens.push(estimate_prompt_tokens(&context) as f64);
            let all = Full
                .context(&replay, question)
                .into_iter()
                .map(|(_, m)| m)
                .collect::<Vec<_>>();
            full_tokens.push(estimate_prompt_tokens(&all) as f64);
        }
    }
    let context_mean = mean(&tokens);
    let full_mean = mean(&full_tokens);
    let mut report = json!({
        "strategy": args.strategy,
        "window": config.window(),
        "threshold": config.threshold(),
        "budget": args.budget,
        "conversations": records.len(),
        "questions": questions,
        "skipped": skipped,
        "samples": records.iter().filter_map(|r| r.get("sample_id")).collect::<Vec<_>>(),
        "evidence_recall": tally.report(),
        "context_tokens": { "mean": context_mean, "p50": percentile(&tokens, 0.5), "p95": percentile(&tokens, 0.95) },
        "full_history_tokens_mean": full_mean,
        "token_ratio_vs_full": if full_mean > 0.0 { context_mean / full_mean } else { 0.0 },
        "summary_requests": summary_requests,
        "uncovered_at_questions": uncovered,
        "fold_before_questions": args.fold_before_questions,
        "without": args.without,
        "compact_recall_lines": config.features.recall.compact_lines,
        "recall_calendar": config.features.recall.calendar.is_some(),
        "recall_skip_own_name": config.features.recall.skip_own_name,
        "recall_expansion": [config.features.recall.expansion_hits, config.features.recall.expansion_terms, config.features.recall.expansion_weight],
        "day_headings": args.day_headings,
        "sections": strategy.section_means(),
        "assembly_us": {
            "p50": percentile(&strategy.assembly_micros(), 0.5),
            "p99": percentile(&strategy.assembly_micros(), 0.99),
        },
        "ns_per_message": if messages > 0 { bookkeeping.as_nanos() as f64 / messages as f64 } else { 0.0 },
    });
    // Only with --notes: a run without them reports exactly what it always did.
    if args.notes {
        report["notes"] = notes.to_json();
    }
    if let Some((url, model)) = &args.summarizer {
        report["notes"] = json!({
            "source": format!("summarizer: {model} at {url}"),
            "summaries": summary_requests,
            "added": summarizer_notes,
        });
    }
    Ok(report)
}

fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("{error}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(report) if args.json => println!("{report}"),
        Ok(r) => {
            let recall = &r["evidence_recall"];
            println!(
                "strategy {}  window {}  threshold {}  budget {}",
                r["strategy"], r["window"], r["threshold"], r["budget"]
            );
            println!(
                "conversations {}  questions {}  skipped {}",
                r["conversations"], r["questions"], r["skipped"]
            );
            let figure = |value: &Value| value.as_f64().unwrap_or(0.0);
            println!(
                "evidence recall (cat 1-4) {:.3}  any evidence {:.3}  fully covered {:.3}",
                figure(&recall["overall"]),
                figure(&recall["any_evidence"]),
                figure(&recall["fully_covered"])
            );
            for (category, value) in recall["by_category"].as_object().into_iter().flatten() {
                println!(
                    "  category {category}: {:.3}  any {:.3}  fully {:.3}",
                    figure(value),
                    figure(&recall["any_by_category"][category]),
                    figure(&recall["fully_covered_by_category"][category])
                );
            }
            let t = &r["context_tokens"];
            println!(
                "context tokens mean {:.0}  p50 {:.0}  p95 {:.0}  (full history {:.0}, ratio {:.3})",
                t["mean"].as_f64().unwrap_or(0.0),
                t["p50"].as_f64().unwrap_or(0.0),
                t["p95"].as_f64().unwrap_or(0.0),
                r["full_history_tokens_mean"].as_f64().unwrap_or(0.0),
                r["token_ratio_vs_full"].as_f64().unwrap_or(0.0)
            );
            println!(
                "summary requests {}  core bookkeeping {:.0} ns/message",
                r["summary_requests"],
                r["ns_per_message"].as_f64().unwrap_or(0.0)
            );
            println!(
                "lines no summary covered at the questions, per conversation: {}{}",
                r["uncovered_at_questions"],
                if r["fold_before_questions"] == true {
                    " (--fold-before-questions)"
                } else {
                    ""
                }
            );
            let notes = &r["notes"];
            if notes["summaries"].is_u64() {
                println!(
                    "notes: {}: {} summaries wrote {} notes",
                    notes["source"].as_str().unwrap_or("?"),
                    notes["summaries"],
                    notes["added"]
                );
            } else if !notes.is_null() {
                println!(
                    "notes: {OBSERVATIONS_LABEL}: {} observations, {} notes added on {} lines, \
                     {} dropped, {} cut to {} characters, {} extra from splitting",
                    notes["observations"],
                    notes["added"],
                    notes["lines_noted"],
                    notes["dropped"],
                    notes["cut"],
                    bevy_npc_memory::memory::limits::MAX_NOTE_CHARS,
                    notes["split"]
                );
            }
        }
        Err(error) => {
            eprintln!("memory_bench: {error}");
            return std::process::ExitCode::from(1);
        }
    }
    std::process::ExitCode::SUCCESS
}
