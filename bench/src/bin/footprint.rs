//! Resident memory of the memory core: heap bytes per NPC per 1,000 messages, split
//! into the text itself, the log's per-message records, the recall index, the
//! window and the rest (summaries, segments, facts, the last prompt).
//!
//! ```text
//! cargo run --release -p bevy_npc_memory_bench --bin footprint -- \
//!     [--data PATH] [--npcs 100] [--messages 10000] [--window 20] [--budget 2000] [--json]
//! ```
//!
//! Each NPC hears `--messages` lines, LoCoMo turns (`--data`, every conversation's
//! turns in order, cycled, each NPC from its own starting turn) or synthetic English
//! without it. They go through the public core as a replay does (`record`, then every
//! summary due with the offline backend), and each NPC's last player line through
//! `say`, so the prompt assembly (and the recall query's buffers) exist as in a game.
//! Two configurations: `layered` (recall, neighbours, facts, segments, the budget)
//! and `basic` (window and rolling summary).
//!
//! A counting global allocator tracks the bytes live (as requested, not the
//! allocator's own rounding). After the build, each NPC is taken apart and every
//! part's drop is measured: the context memory first (its recall index read from
//! [`RecallIndex::memory_bytes`](bevy_npc_memory::memory::RecallIndex::memory_bytes),
//! the rest is summaries, segments, facts and the last prompt; the old summaries
//! that only the summary history holds are counted apart), then the log. The
//! text is the sum of the messages' lengths in bytes; its allocations' headers (an
//! `Arc<str>`'s two counts) and the log's `ChatMessage` records are the log overhead.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

use bevy_npc_memory::backends::OfflineBackend;
use bevy_npc_memory::memory::{ChatMessage, NpcMemory, PersonaPrompt, Role, SummaryStyle};
use bevy_npc_memory_bench::cli::Flags;
use bevy_npc_memory_bench::locomo::{Conversation, load, turn_text};
use bevy_npc_memory_bench::strategies::memory_config;
use serde_json::{Value, json};

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call goes to the system allocator unchanged; the count is one atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

const USAGE: &str = "usage: footprint [--data PATH] [--npcs N] [--messages N] [--window N] [--budget TOKENS] [--json]";

struct Args {
    data: Option<PathBuf>,
    npcs: usize,
    messages: usize,
    window: usize,
    budget: usize,
    json: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        data: None,
        npcs: 100,
        messages: 10_000,
        window: 20,
        budget: 2000,
        json: false,
    };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next_flag() {
        match flag.as_str() {
            "--data" => args.data = Some(flags.value(&flag)?.into()),
            "--npcs" => args.npcs = flags.number(&flag)?.max(1),
            "--messages" => args.messages = flags.number(&flag)?.max(2),
            "--window" => args.window = flags.number(&flag)?,
            "--budget" => args.budget = flags.number(&flag)?,
            "--json" => args.json = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

/// Every turn of every conversation, in order: whether the player says it, and its text.
fn locomo_turns(path: &Path) -> Result<Vec<(bool, String)>, String> {
    let records = load(path)?;
    let mut turns = Vec::new();
    for record in &records {
        let conversation = Conversation::parse(record, path)?;
        for turn in conversation.turns() {
            turns.push((conversation.is_player(turn), turn_text(turn)));
        }
    }
    if turns.is_empty() {
        return Err(format!("{}: no turns", path.display()));
    }
    Ok(turns)
}

/// Chat-like English without the data: sentences of 6-30 words from a small
/// vocabulary with a skewed draw, alternating speakers. Deterministic.
fn synthetic_turns() -> Vec<(bool, String)> {
    const WORDS: [&str; 64] = [
        "I",
        "you",
        "the",
        "a",
        "to",
        "and",
        "it",
        "was",
        "that",
        "my",
        "is",
        "of",
        "in",
        "we",
        "have",
        "for",
        "so",
        "this",
        "with",
        "really",
        "just",
        "me",
        "be",
        "on",
        "about",
        "what",
        "like",
        "love",
        "time",
        "family",
        "kids",
        "painting",
        "friends",
        "camping",
        "weekend",
        "school",
        "job",
        "support",
        "group",
        "trip",
        "music",
        "book",
        "dog",
        "garden",
        "beach",
        "summer",
        "art",
        "class",
        "mom",
        "sister",
        "concert",
        "photo",
        "hike",
        "lake",
        "cake",
        "birthday",
        "team",
        "game",
        "race",
        "shelter",
        "volunteer",
        "pottery",
        "guitar",
        "city",
    ];
    let mut seed: u64 = 15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    (0..4000)
        .map(|i| {
            let words = 6 + (next() % 25) as usize;
            let mut line = String::new();
            for w in 0..words {
                // Squaring a uniform draw favours the first (function) words.
                let u = (next() % 1000) as f64 / 1000.0;
                let word = WORDS[((u * u) * WORDS.len() as f64) as usize];
                if w > 0 {
                    line.push(' ');
                }
                line.push_str(word);
            }
            line.push('.');
            (i % 2 == 0, line)
        })
        .collect()
}

/// Bytes one configuration holds, summed over every NPC.
#[derive(Default)]
struct Parts {
    text: usize,
    text_headers: isize,
    messages: usize,
    log_records: isize,
    recall: usize,
    /// Part of `rest`: old summaries only the summary history still holds.
    history: usize,
    rest: isize,
    /// The `NpcMemory` structs themselves (the window lives inline there).
    structs: isize,
    total: isize,
    seconds: f64,
}

impl Parts {
    /// What the parts do not explain (should be near 0).
    fn unaccounted(&self) -> isize {
        self.total
            - self.text as isize
            - self.text_headers
            - self.log_records
            - self.recall as isize
            - self.rest
            - self.structs
    }
}

fn build(args: &Args, turns: &[(bool, String)], layered: bool) -> Parts {
    let budget = layered.then_some(args.budget);
    let config = memory_config(args.window, None, layered, budget, &[]);
    let backend = OfflineBackend::default();
    let persona = PersonaPrompt {
        name: "Melanie".into(),
        text: "You are Melanie, talking with Caroline.".into(),
        style: SummaryStyle::english(),
    };
    let started = Instant::now();
    let before = live();
    let mut npcs: Vec<NpcMemory> = Vec::with_capacity(args.npcs);
    for npc in 0..args.npcs {
        let mut memory = NpcMemory::new(persona.clone(), &config);
        // Each NPC starts at its own turn so no two logs are alike.
        let offset = npc * 997 % turns.len();
        let mut layers = memory.layers();
        for m in 0..args.messages {
            let (player, text) = &turns[(offset + m) % turns.len()];
            let time = (m * 30) as f64;
            let role = if *player { Role::User } else { Role::Assistant };
            // `&str`: every message gets its own text, as lines from a game would.
            if m + 1 == args.messages {
                layers.say(text.as_str(), time);
            } else {
                layers.record(role, text.as_str(), time);
            }
            layers.summarize_due(|job| Ok(backend.summarize(&job.input)));
        }
        npcs.push(memory);
    }
    let mut parts = Parts {
        total: live() - before,
        seconds: started.elapsed().as_secs_f64(),
        ..Parts::default()
    };
    for memory in &mut npcs {
        parts.recall += memory.context.recall().memory_bytes();
        // Old summaries that nothing but the history holds any more.
        parts.history += memory
            .context
            .history()
            .iter()
            .filter(|record| Arc::strong_count(&record.summary) == 1)
            .map(|record| arc_str_allocation(&record.summary))
            .sum::<usize>();
        let context_before = live();
        let persona = memory.context.persona().clone();
        let context = std::mem::replace(
            &mut memory.context,
            NpcMemory::new(persona, &config).context,
        );
        let emptied = live();
        drop(context);
        // What the context held, less the empty one that replaced it.
        parts.rest += emptied - live() - (emptied - context_before);
        let messages = memory.log.messages();
        let text: usize = messages.iter().map(|m| m.content.len()).sum();
        let text_allocations: usize = messages.iter().map(text_allocation).sum();
        parts.messages += messages.len();
        parts.text += text;
        parts.text_headers += text_allocations as isize - text as isize;
        let log_before = live();
        drop(std::mem::take(&mut memory.log));
        parts.log_records += log_before - live() - text_allocations as isize;
    }
    parts.rest -= parts.recall as isize;
    parts.structs = (npcs.capacity() * size_of::<NpcMemory>()) as isize;
    drop(npcs);
    parts
}

/// Bytes the allocator was asked for to hold one message's text: an `Arc<str>`'s
/// two counts and the bytes, rounded up to its alignment. Shared text counts once,
/// with its last owner.
fn text_allocation(message: &ChatMessage) -> usize {
    if Arc::strong_count(&message.content) > 1 {
        return 0;
    }
    arc_str_allocation(&message.content)
}

/// Bytes the allocator was asked for to hold an `Arc<str>`.
fn arc_str_allocation(text: &Arc<str>) -> usize {
    let header = 2 * size_of::<usize>();
    (header + text.len()).next_multiple_of(align_of::<usize>())
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let (turns, source) = match &args.data {
        Some(path) => match locomo_turns(path) {
            Ok(turns) => (turns, path.display().to_string()),
            Err(message) => {
                eprintln!("{message}");
                std::process::exit(1);
            }
        },
        None => (synthetic_turns(), "synthetic".to_owned()),
    };
    let mut rows = Vec::new();
    for (name, layered) in [("layered", true), ("basic", false)] {
        rows.push((name, build(&args, &turns, layered)));
    }
    report(&args, &source, &rows);
}

fn report(args: &Args, source: &str, rows: &[(&str, Parts)]) {
    let thousands = (args.npcs * args.messages) as f64 / 1000.0;
    let per = |bytes: f64| bytes / thousands;
    let json_rows: Vec<Value> = rows
        .iter()
        .map(|(name, p)| {
            let text = p.text as f64;
            json!({
                "config": name,
                "npcs": args.npcs,
                "messages_per_npc": args.messages,
                "total_bytes": p.total,
                "per_npc_per_1000_messages": {
                    "total": per(p.total as f64),
                    "text": per(text),
                    "text_headers": per(p.text_headers as f64),
                    "log_records": per(p.log_records as f64),
                    "recall_index": per(p.recall as f64),
                    "window": 0.0,
                    "npc_structs": per(p.structs as f64),
                    "rest": per(p.rest as f64),
                    "rest_summary_history": per(p.history as f64),
                    "unaccounted": per(p.unaccounted() as f64),
                },
                "ratio_to_text": {
                    "total": p.total as f64 / text,
                    "log_overhead": (p.text_headers + p.log_records) as f64 / text,
                    "recall_index": p.recall as f64 / text,
                    "rest": p.rest as f64 / text,
                    "rest_summary_history": p.history as f64 / text,
                },
                "build_seconds": p.seconds,
            })
        })
        .collect();
    if args.json {
        let out = json!({"data": source, "window": args.window, "budget": args.budget, "rows": json_rows});
        println!("{}", serde_json::to_string_pretty(&out).expect("JSON"));
        return;
    }
    println!(
        "{} NPCs x {} messages ({source}); bytes per NPC per 1,000 messages, and x the text.",
        args.npcs, args.messages
    );
    println!(
        "The window holds no copies: it is a start index into the log, inside the NPC struct."
    );
    println!(
        "| config | total | text | text headers | log records | recall index | rest | of which old summaries | NPC structs | unaccounted | total / text | build s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, p) in rows {
        let text = p.text as f64;
        let cell = |bytes: f64| format!("{:.0} ({:.2}x)", per(bytes), bytes / text);
        println!(
            "| {name} | {} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.1} |",
            cell(p.total as f64),
            per(text),
            cell(p.text_headers as f64),
            cell(p.log_records as f64),
            cell(p.recall as f64),
            cell(p.rest as f64),
            cell(p.history as f64),
            cell(p.structs as f64),
            cell(p.unaccounted() as f64),
            p.total as f64 / text,
            p.seconds,
        );
    }
}
