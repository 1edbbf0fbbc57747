//! The command line: flags, their checks, and the usage line.

use std::path::PathBuf;

use bevy_npc_memory_bench::cli::Flags;
use bevy_npc_memory_bench::split::split;
use bevy_npc_memory_bench::strategies::LAYERED_PARTS as PARTS;
use serde_json::Value;

pub(crate) const USAGE: &str = "usage: memory_bench --data PATH --strategy full|window|summary|layered [--window N] [--threshold N] [--budget TOKENS] [--without recall,neighbours,facts,segments] [--recall-lines compact|quoted] [--dates calendar|off] [--date-headings day|clock] [--expansion on|off|HITS,TERMS,WEIGHT] [--own-name skip|keep] [--recall-json JSON] [--notes observations|summarizer --base-url URL [--model NAME]] [--fold-before-questions] [--split tune|validate | --samples ID,ID] [--dump-prompts DIR] [--json]";

pub(crate) struct Args {
    pub(crate) data: PathBuf,
    pub(crate) strategy: String,
    pub(crate) window: usize,
    pub(crate) threshold: Option<usize>,
    pub(crate) budget: Option<usize>,
    pub(crate) without: Vec<String>,
    /// Conversations to run, by `sample_id`; empty: all.
    pub(crate) samples: Vec<String>,
    /// `--recall-lines compact|quoted`; `None`: the library's default.
    pub(crate) compact_lines: Option<bool>,
    /// `--dates calendar|off`; `None`: the library's default (off).
    pub(crate) dates: Option<bool>,
    /// `--date-headings day`: recalled lines under one "2 May 2022" heading per day.
    pub(crate) day_headings: bool,
    /// `--fold-before-questions`: the lines no summary covers yet are folded
    /// before the questions.
    pub(crate) fold_before_questions: bool,
    /// `--expansion`: hits, terms and weight of query expansion; `None`: the
    /// library's default.
    pub(crate) expansion: Option<(usize, usize, f32)>,
    /// `--own-name skip|keep`; `None`: the library's default (keep).
    pub(crate) skip_own_name: Option<bool>,
    /// `--recall-json`: `RecallConfig` fields to set, as a JSON object.
    pub(crate) recall_json: Option<serde_json::Map<String, Value>>,
    /// `--notes observations`: LoCoMo's observations as summarizer notes.
    pub(crate) notes: bool,
    /// `--notes summarizer`: the server (`--base-url`) and model (`--model`)
    /// that write the summaries, and their notes.
    pub(crate) summarizer: Option<(String, String)>,
    pub(crate) dump: Option<PathBuf>,
    pub(crate) json: bool,
}

pub(crate) fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        data: PathBuf::new(),
        strategy: String::new(),
        window: 20,
        threshold: None,
        budget: None,
        without: Vec::new(),
        samples: Vec::new(),
        compact_lines: None,
        dates: None,
        day_headings: false,
        fold_before_questions: false,
        expansion: None,
        skip_own_name: None,
        recall_json: None,
        notes: false,
        summarizer: None,
        dump: None,
        json: false,
    };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next_flag() {
        match flag.as_str() {
            "--data" => args.data = flags.value(&flag)?.into(),
            "--strategy" => args.strategy = flags.value(&flag)?,
            "--window" => args.window = flags.number(&flag)?,
            "--threshold" => args.threshold = Some(flags.number(&flag)?),
            "--budget" => args.budget = Some(flags.number(&flag)?),
            "--without" => {
                for part in flags.value(&flag)?.split(',').filter(|p| !p.is_empty()) {
                    if !PARTS.contains(&part) {
                        return Err(format!("--without takes {}, got {part:?}", PARTS.join(",")));
                    }
                    args.without.push(part.to_owned());
                }
            }
            "--split" | "--samples" if !args.samples.is_empty() => {
                return Err("give --split or --samples once".into());
            }
            "--split" => {
                args.samples = split(&flags.value(&flag)?)?
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            }
            "--samples" => {
                args.samples = flags
                    .value(&flag)?
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
            }
            "--recall-lines" => {
                args.compact_lines = match flags.value(&flag)?.as_str() {
                    "compact" => Some(true),
                    "quoted" => Some(false),
                    other => {
                        return Err(format!(
                            "--recall-lines takes compact or quoted, got {other:?}"
                        ));
                    }
                }
            }
            "--dates" => {
                args.dates = match flags.value(&flag)?.as_str() {
                    "calendar" => Some(true),
                    "off" => Some(false),
                    other => return Err(format!("--dates takes calendar or off, got {other:?}")),
                }
            }
            "--date-headings" => {
                args.day_headings = match flags.value(&flag)?.as_str() {
                    "day" => true,
                    "clock" => false,
                    other => {
                        return Err(format!("--date-headings takes day or clock, got {other:?}"));
                    }
                }
            }
            "--fold-before-questions" => args.fold_before_questions = true,
            "--expansion" => args.expansion = Some(expansion(&flags.value(&flag)?)?),
            "--own-name" => {
                args.skip_own_name = match flags.value(&flag)?.as_str() {
                    "skip" => Some(true),
                    "keep" => Some(false),
                    other => return Err(format!("--own-name takes skip or keep, got {other:?}")),
                }
            }
            "--recall-json" => {
                let text = flags.value(&flag)?;
                match serde_json::from_str::<Value>(&text) {
                    Ok(Value::Object(fields)) => args.recall_json = Some(fields),
                    _ => return Err(format!("--recall-json takes a JSON object, got {text:?}")),
                }
            }
            "--notes" => match flags.value(&flag)?.as_str() {
                "observations" => args.notes = true,
                "summarizer" => {
                    args.summarizer
                        .get_or_insert((String::new(), "local".into()));
                }
                other => {
                    return Err(format!(
                        "--notes takes observations or summarizer, got {other:?}"
                    ));
                }
            },
            "--base-url" => {
                let url = flags.value(&flag)?;
                args.summarizer
                    .get_or_insert((String::new(), "local".into()))
                    .0 = url;
            }
            "--model" => {
                let model = flags.value(&flag)?;
                args.summarizer
                    .get_or_insert((String::new(), "local".into()))
                    .1 = model;
            }
            "--dump-prompts" => args.dump = Some(flags.value(&flag)?.into()),
            "--json" => args.json = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if args.data.as_os_str().is_empty() {
        return Err("--data is required".into());
    }
    Ok(args)
}

/// `--expansion`'s value: `on` (the measured weights), `off`, or `HITS,TERMS,WEIGHT`.
fn expansion(value: &str) -> Result<(usize, usize, f32), String> {
    let error = || format!("--expansion takes on, off or HITS,TERMS,WEIGHT, got {value:?}");
    match value {
        "on" => Ok(EXPANSION_ON),
        "off" => Ok((0, 0, 0.0)),
        _ => match value.split(',').collect::<Vec<_>>()[..] {
            [hits, terms, weight] => Ok((
                hits.parse().map_err(|_| error())?,
                terms.parse().map_err(|_| error())?,
                weight.parse().map_err(|_| error())?,
            )),
            _ => Err(error()),
        },
    }
}

/// `--expansion on`: the hits, terms and weight chosen on the tune half.
const EXPANSION_ON: (usize, usize, f32) = (8, 10, 0.1);
