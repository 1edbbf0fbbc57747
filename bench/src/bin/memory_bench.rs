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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bevy_npc_memory::memory::{
    Calendar, LogIndex, MemoryConfig, NpcMemory, PromptMessage, Role, estimate_prompt_tokens,
};
use bevy_npc_memory_bench::cli::Flags;
use bevy_npc_memory_bench::dump::{safe_name, write_prompt};
use bevy_npc_memory_bench::evidence::{RecallTally, count_found, evidence, normalize};
use bevy_npc_memory_bench::locomo::{Conversation, load, observations, parse_date, turn_text};
use bevy_npc_memory_bench::notes::{NoteTally, OBSERVATIONS_LABEL, observation_notes};
use bevy_npc_memory_bench::split::{select, split};
use bevy_npc_memory_bench::strategies::{LAYERED_PARTS as PARTS, full_history, memory_config};
use bevy_npc_memory_bench::summarizer::Summarizer;
use serde_json::{Value, json};

const USAGE: &str = "usage: memory_bench --data PATH --strategy full|window|summary|layered [--window N] [--threshold N] [--budget TOKENS] [--without recall,neighbours,facts,segments] [--recall-lines compact|quoted] [--dates calendar|off] [--date-headings day|clock] [--expansion on|off|HITS,TERMS,WEIGHT] [--own-name skip|keep] [--recall-json JSON] [--notes observations|summarizer --base-url URL [--model NAME]] [--fold-before-questions] [--split tune|validate | --samples ID,ID] [--dump-prompts DIR] [--json]";

struct Args {
    data: PathBuf,
    strategy: String,
    window: usize,
    threshold: Option<usize>,
    budget: Option<usize>,
    without: Vec<String>,
    /// Conversations to run, by `sample_id`; empty: all.
    samples: Vec<String>,
    /// `--recall-lines compact|quoted`; `None`: the library's default.
    compact_lines: Option<bool>,
    /// `--dates calendar|off`; `None`: the library's default (off).
    dates: Option<bool>,
    /// `--date-headings day`: recalled lines under one "2 May 2022" heading per day.
    day_headings: bool,
    /// `--fold-before-questions`: the lines no summary covers yet are folded
    /// before the questions.
    fold_before_questions: bool,
    /// `--expansion`: hits, terms and weight of query expansion; `None`: the
    /// library's default.
    expansion: Option<(usize, usize, f32)>,
    /// `--own-name skip|keep`; `None`: the library's default (keep).
    skip_own_name: Option<bool>,
    /// `--recall-json`: `RecallConfig` fields to set, as a JSON object.
    recall_json: Option<serde_json::Map<String, Value>>,
    /// `--notes observations`: LoCoMo's observations as summarizer notes.
    notes: bool,
    /// `--notes summarizer`: the server (`--base-url`) and model (`--model`)
    /// that write the summaries, and their notes.
    summarizer: Option<(String, String)>,
    dump: Option<PathBuf>,
    json: bool,
}

fn parse_args() -> Result<Args, String> {
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

/// How a strategy builds the context for a question. One small type each.
trait Strategy {
    /// The messages sent, each with the log index it came from (None: not a log message).
    fn context(&self, replay: &Replay, question: &str) -> Vec<(Option<LogIndex>, PromptMessage)>;

    /// The log indices whose messages were sent word for word, and the prompt, when
    /// the strategy builds and budgets its prompt itself (recalled messages ride
    /// inside the system message, so they have no message of their own).
    fn assembled(
        &self,
        _replay: &Replay,
        _question: &str,
    ) -> Option<(Vec<LogIndex>, Vec<PromptMessage>)> {
        None
    }

    /// Microseconds each prompt assembly took (recall query included), if measured.
    fn assembly_micros(&self) -> Vec<f64> {
        Vec::new()
    }

    /// Mean tokens and items per prompt section, if the strategy has sections.
    fn section_means(&self) -> Value {
        Value::Null
    }
}

/// Every message: the upper bound, and the cost of sending everything.
struct Full;
/// The system prompt and the last `window - 1` messages, as the original design's L1 alone.
struct WindowOnly;
/// L1 + L3 as the plugin runs them: persona + summary, then the window.
struct Summary;

impl Strategy for Full {
    fn context(&self, replay: &Replay, question: &str) -> Vec<(Option<LogIndex>, PromptMessage)> {
        let log = replay.memory.log.messages().iter().map(|m| Some(m.index));
        let mut context: Vec<_> = std::iter::once(None)
            .chain(log)
            .zip(full_history(&replay.memory))
            .collect();
        context.push((None, PromptMessage::new(Role::User, question)));
        context
    }
}

impl Strategy for WindowOnly {
    fn context(&self, replay: &Replay, question: &str) -> Vec<(Option<LogIndex>, PromptMessage)> {
        let messages = replay.memory.log.messages();
        // The question takes one place in the window, the system prompt another.
        let keep = replay.window.saturating_sub(2).min(messages.len());
        let mut context = vec![(
            None,
            PromptMessage::new(Role::System, replay.memory.context.persona().text.clone()),
        )];
        context.extend(
            messages[messages.len() - keep..]
                .iter()
                .map(|m| (Some(m.index), m.to_prompt())),
        );
        context.push((None, PromptMessage::new(Role::User, question)));
        context
    }
}

impl Strategy for Summary {
    fn context(&self, replay: &Replay, question: &str) -> Vec<(Option<LogIndex>, PromptMessage)> {
        // The exact prompt the plugin would send: record the line on a copy, as the
        // plugin does before a reply request, and read the window back.
        let mut memory = replay.memory.clone();
        let next = memory.log.next_index();
        let mut layers = memory.layers();
        layers.record(Role::User, question, replay.last_timestamp);
        let window = &memory.window;
        let system = bevy_npc_memory::memory::preview_prompt(&memory.log, window, &memory.context)
            .messages
            .swap_remove(0);
        let mut context = vec![(None, system)];
        context.extend(window.messages(&memory.log).iter().map(|m| {
            (
                if m.index == next { None } else { Some(m.index) },
                m.to_prompt(),
            )
        }));
        context
    }
}

/// Every feature beyond basic mode, as the plugin runs them: the assembled, budgeted
/// prompt with recalled messages, pinned facts and summary segments.
#[derive(Default)]
struct Layered {
    micros: std::cell::RefCell<Vec<f64>>,
    /// Per section kind: summed tokens, summed items sent, prompts.
    sections: std::cell::RefCell<BTreeMap<String, (f64, f64, f64)>>,
}

impl Strategy for Layered {
    fn context(&self, replay: &Replay, question: &str) -> Vec<(Option<LogIndex>, PromptMessage)> {
        let (_, messages) = self.assembled(replay, question).unwrap_or_default();
        messages.into_iter().map(|m| (None, m)).collect()
    }

    fn assembled(
        &self,
        replay: &Replay,
        question: &str,
    ) -> Option<(Vec<LogIndex>, Vec<PromptMessage>)> {
        let mut memory = replay.memory.clone();
        let mut layers = memory.layers();
        let asked = layers
            .record(Role::User, question, replay.last_timestamp)
            .index;
        // Best of three, as the recall bench times queries: on a shared machine
        // a single timing's tail is mostly other processes. Assembly reads the
        // memory only, so the three prompts are the same.
        let mut fastest = f64::INFINITY;
        let mut prompt = None;
        for _ in 0..3 {
            let started = Instant::now();
            let assembled = layers.assemble();
            fastest = fastest.min(started.elapsed().as_secs_f64() * 1e6);
            prompt = Some(assembled);
        }
        let prompt = prompt.expect("assembled three times");
        self.micros.borrow_mut().push(fastest);
        let mut sections = self.sections.borrow_mut();
        for section in &prompt.sections {
            let entry = sections.entry(format!("{:?}", section.kind)).or_default();
            entry.0 += section.tokens as f64;
            entry.1 += section.included.len() as f64;
            entry.2 += 1.0;
        }
        let sent = prompt.log_indices().filter(|&i| i != asked).collect();
        Some((sent, prompt.messages.clone()))
    }

    fn assembly_micros(&self) -> Vec<f64> {
        self.micros.borrow().clone()
    }

    fn section_means(&self) -> Value {
        let sections = self.sections.borrow();
        let means = sections
            .iter()
            .map(|(kind, (tokens, items, n))| {
                (
                    kind.clone(),
                    json!({"tokens": tokens / n, "items": items / n}),
                )
            })
            .collect::<serde_json::Map<_, _>>();
        Value::Object(means)
    }
}

/// Drops the oldest log messages until the context fits the budget.
fn apply_budget(
    mut context: Vec<(Option<LogIndex>, PromptMessage)>,
    budget: Option<usize>,
) -> Vec<(Option<LogIndex>, PromptMessage)> {
    let Some(budget) = budget else { return context };
    let tokens = |c: &[(Option<LogIndex>, PromptMessage)]| {
        estimate_prompt_tokens(&c.iter().map(|(_, m)| m.clone()).collect::<Vec<_>>())
    };
    while tokens(&context) > budget {
        match context.iter().position(|(index, _)| index.is_some()) {
            Some(oldest) => {
                context.remove(oldest);
            }
            None => break,
        }
    }
    context
}

/// One conversation replayed into one NPC's memory.
struct Replay {
    memory: NpcMemory,
    window: usize,
    dia_ids: HashMap<String, LogIndex>,
    last_timestamp: f64,
    summary_requests: usize,
    bookkeeping: Duration,
    messages: usize,
    notes: NoteTally,
}

fn replay(
    record: &Value,
    config: &MemoryConfig,
    (day_headings, notes, fold_before_questions): (bool, bool, bool),
    summarizer: &Summarizer,
    file: &Path,
) -> Result<Replay, String> {
    let conversation = Conversation::parse(record, file)?;
    let persona = conversation.persona();
    let mut memory = NpcMemory::new(persona, config);
    if day_headings {
        // The session dates are read as Unix seconds (`parse_date`).
        memory.layers().set_date_format(Calendar::UNIX.day_format());
    }
    let mut dia_ids = HashMap::new();
    let mut tally = NoteTally::default();
    let mut noted_lines = HashSet::new();
    let (mut summary_requests, mut bookkeeping, mut messages, mut last_timestamp) =
        (0, Duration::ZERO, 0, 0.0);
    for (n, turns) in &conversation.sessions {
        let date = conversation
            .fields
            .get(&format!("session_{n}_date_time"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let timestamp = parse_date(date).unwrap_or(f64::from(*n) * 86_400.0);
        last_timestamp = timestamp;
        let first = memory.log.next_index();
        for turn in turns.iter() {
            let text = turn_text(turn);
            let role = if conversation.is_player(turn) {
                Role::User
            } else {
                Role::Assistant
            };
            let started = Instant::now();
            let mut layers = memory.layers();
            let index = layers.record(role, text, timestamp).index;
            summary_requests += layers.summarize_due(|job| summarizer.summarize(job));
            bookkeeping += started.elapsed();
            messages += 1;
            if let Some(id) = turn.get("dia_id").and_then(Value::as_str) {
                dia_ids.insert(normalize(id), index);
            }
        }
        if notes {
            // A summarizer describes the lines it was given: this session's.
            let session = first..memory.log.next_index();
            let built: Vec<_> = observations(record, *n)
                .iter()
                .flat_map(|o| observation_notes(o, &dia_ids, session.clone(), &mut tally))
                .collect();
            // Only the core's work is bookkeeping, not reading the data file.
            let started = Instant::now();
            let mut layers = memory.layers();
            for note in built {
                let lines = note.lines.clone();
                if layers.add_notes([note]) == 1 {
                    tally.added += 1;
                    noted_lines.extend(lines);
                } else {
                    tally.dropped += 1;
                }
            }
            bookkeeping += started.elapsed();
        }
    }
    tally.lines_noted = noted_lines.len();
    if fold_before_questions {
        let mut layers = memory.layers();
        layers.request_summary();
        summary_requests += layers.summarize_due(|job| summarizer.summarize(job));
    }
    Ok(Replay {
        memory,
        window: config.window(),
        dia_ids,
        last_timestamp,
        summary_requests,
        bookkeeping,
        messages,
        notes: tally,
    })
}

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
