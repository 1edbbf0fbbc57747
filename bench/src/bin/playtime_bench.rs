//! What NPC memory costs per hour of play: a simulated session, every prompt and
//! completion token counted per hour and per NPC, for each strategy (full history,
//! basic, layered at 1,000 / 2,000 / 4,000 tokens). See `bevy_npc_memory_bench::playtime`.
//!
//! ```text
//! cargo run --release -p bevy_npc_memory_bench --bin playtime_bench -- \
//!     --npcs N --hours H [--lines-per-hour R] [--seed S] [--zipf X] [--data PATH] [--json]
//! ```
//!
//! `--data` defaults to `../shared/bench/locomo/locomo_dev.json` (from the repository root).

use std::path::PathBuf;

use bevy_npc_memory_bench::cli::{Flags, parse_number};
use bevy_npc_memory_bench::playtime::{Settings, Strategy, run};
use serde_json::Value;

const USAGE: &str = "usage: playtime_bench --npcs N --hours H [--lines-per-hour R] [--seed S] [--zipf X] [--conversation MIN-MAX] [--data PATH] [--json]";

struct Args {
    settings: Settings,
    data: PathBuf,
    json: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        settings: Settings::default(),
        data: PathBuf::from("../shared/bench/locomo/locomo_dev.json"),
        json: false,
    };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next_flag() {
        let settings = &mut args.settings;
        match flag.as_str() {
            "--npcs" => settings.npcs = flags.number(&flag)?,
            "--hours" => settings.hours = flags.number(&flag)?,
            "--lines-per-hour" => settings.lines_per_hour = flags.number(&flag)?,
            "--seed" => settings.seed = flags.number(&flag)? as u64,
            "--zipf" => {
                let text = flags.value(&flag)?;
                settings.zipf = text
                    .parse::<f64>()
                    .ok()
                    .filter(|z| z.is_finite() && *z >= 0.0)
                    .ok_or_else(|| format!("--zipf needs a number ≥ 0, got {text:?}"))?;
            }
            "--conversation" => {
                let text = flags.value(&flag)?;
                let (lo, hi) = text
                    .split_once('-')
                    .ok_or_else(|| format!("--conversation needs MIN-MAX, got {text:?}"))?;
                settings.conversation_lines = (parse_number(&flag, lo)?, parse_number(&flag, hi)?);
            }
            "--data" => args.data = flags.value(&flag)?.into(),
            "--json" => args.json = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

fn number(value: &Value) -> String {
    let n = value.as_f64().unwrap_or(0.0).round() as i64;
    let digits = n.abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

fn print_table(r: &Value) {
    let s = &r["settings"];
    let hours = s["hours"].as_u64().unwrap_or(1) as usize;
    println!(
        "{} NPCs, {} hours, {} player lines/hour ({} lines, {} visits), seed {}",
        s["npcs"],
        s["hours"],
        s["lines_per_hour"],
        r["schedule"]["lines"],
        r["schedule"]["visits"],
        s["seed"]
    );
    println!(
        "| strategy | tokens/hour, hour 1 | tokens/hour, hour {hours} | not cached, hour {hours} (5-min TTL) | prompt total | completion total | requests | summary share | cache-prefix share (replies / all) | cached tokens | max reply prompt |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for name in r["order"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap_or("");
        let t = &r["strategies"][name];
        let per_hour = &t["tokens_per_hour"];
        println!(
            "| {name} | {} | {} | {} ({}) | {} | {} | {} | {:.3} | {:.3} / {:.3} | {:.3} | {} |",
            number(&per_hour[0]),
            number(&per_hour[hours - 1]),
            number(&t["uncached_tokens_per_hour"][hours - 1]),
            number(&t["uncached_tokens_per_hour_5min"][hours - 1]),
            number(&t["prompt_tokens"]),
            number(&t["completion_tokens"]),
            number(&t["requests"]),
            t["summary_share"].as_f64().unwrap_or(0.0),
            t["cache_prefix_share"]["replies"].as_f64().unwrap_or(0.0),
            t["cache_prefix_share"]["all"].as_f64().unwrap_or(0.0),
            t["cached_token_share"].as_f64().unwrap_or(0.0),
            number(&t["max_reply_prompt_tokens"]),
        );
    }
    let h = &r["headline"];
    println!(
        "hour {}: full {} tokens/hour, layered@2000 {}: {:.2}× fewer; counting only tokens not cached: {:.2}× (cache kept), {:.2}× (5-min TTL)",
        h["hour"],
        number(&h["full_tokens"]),
        number(&h["layered2000_tokens"]),
        h["full_over_layered2000"].as_f64().unwrap_or(0.0),
        h["uncached_full_over_layered2000"].as_f64().unwrap_or(0.0),
        h["uncached_5min_full_over_layered2000"]
            .as_f64()
            .unwrap_or(0.0),
    );
}

fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("{error}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    match run(&args.settings, &Strategy::all(), &args.data) {
        Ok(report) if args.json => println!("{report}"),
        Ok(report) => print_table(&report),
        Err(error) => {
            eprintln!("playtime_bench: {error}");
            return std::process::ExitCode::from(1);
        }
    }
    std::process::ExitCode::SUCCESS
}
