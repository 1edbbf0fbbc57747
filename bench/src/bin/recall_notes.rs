//! Recall query latency with summarizer notes indexed: the recall bench's English
//! 10k-message log (`benches/recall.rs`, same seeds, so the index without notes is
//! the one that bench times), queried as it is with and without a note on every
//! third line, one query after the other so both see the same machine.
//!
//! ```text
//! cargo run --release -p bevy_npc_memory_bench --bin recall_notes
//! ```
//!
//! A note is 4-8 words drawn from the log's own vocabulary, as a summarizer's
//! phrase about a line would mostly reuse the conversation's words; each cites
//! its line alone.

use std::hint::black_box;

use std::time::{Duration, Instant};

use bevy_npc_memory::memory::{LineNote, LogIndex, RecallConfig, RecallIndex, RecallQuery};
use bevy_npc_memory_bench::workload::{EnglishLines, LATENCY_QUERIES, LOG_MESSAGES, Random, chat};

const WINDOW: usize = 20;
const CONTEXT: usize = 4;
/// Every this many lines, one note.
const NOTE_EVERY: usize = 3;

fn main() {
    let mut random = Random(0xfeed);
    let english = EnglishLines::new(&mut random);
    let (log, queries) = chat(|random, words| english.line(random, words));

    let config = RecallConfig::enabled();
    let mut plain = RecallIndex::from_log(&log);
    let mut noted = RecallIndex::from_log(&log);
    let mut notes_random = Random(0x0_7e5);
    let all = 0..log.len() as LogIndex;
    let notes: Vec<LineNote> = (0..log.len())
        .step_by(NOTE_EVERY)
        .map(|line| {
            LineNote::new(
                &note(&english, &mut notes_random),
                [line as LogIndex],
                all.clone(),
            )
            .expect("a short note on a logged line")
        })
        .collect();
    let started = Instant::now();
    let mut added = 0;
    for note in notes {
        added += usize::from(noted.add_note(note));
    }
    let adding = started.elapsed();

    let end = log.len();
    let context: Vec<&str> = log[end - CONTEXT..]
        .iter()
        .map(|message| &*message.content)
        .collect();
    let query = |index: &mut RecallIndex, line: &str| {
        let query = RecallQuery {
            line,
            context: &context,
            exclude: (end - WINDOW) as LogIndex..end as LogIndex,
            line_index: None,
            now: log[end - 1].timestamp + 5.0,
            own_name: "",
        };
        // Best of three: on a shared machine one timing's tail is mostly other
        // processes, as in the recall bench.
        (0..3)
            .map(|_| {
                let started = Instant::now();
                black_box(index.query(&query, &log, &config).len());
                started.elapsed()
            })
            .min()
            .unwrap()
    };
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for (n, line) in queries.iter().enumerate() {
        // Alternate which goes first, so neither always runs on a warm cache.
        if n % 2 == 0 {
            without.push(query(&mut plain, line));
            with.push(query(&mut noted, line));
        } else {
            with.push(query(&mut noted, line));
            without.push(query(&mut plain, line));
        }
    }
    let micros = |latencies: &mut Vec<Duration>, p: f64| {
        latencies.sort_unstable();
        let at = ((latencies.len() - 1) as f64 * p).round() as usize;
        latencies[at].as_secs_f64() * 1e6
    };
    println!(
        "recall/english: {LOG_MESSAGES} messages, {added} notes (one every {NOTE_EVERY} lines), \
         added in {:.2} µs/note; index {} B without notes, {} B with",
        adding.as_secs_f64() * 1e6 / added.max(1) as f64,
        plain.memory_bytes(),
        noted.memory_bytes(),
    );
    println!(
        "recall/english: {LATENCY_QUERIES} queries, best of 3 each: without notes p50 {:.1} µs, \
         p99 {:.1} µs; with notes p50 {:.1} µs, p99 {:.1} µs",
        micros(&mut without, 0.5),
        micros(&mut without, 0.99),
        micros(&mut with, 0.5),
        micros(&mut with, 0.99),
    );
}

/// A note: 4-8 words of the log's own vocabulary, drawn as its lines draw them.
fn note(english: &EnglishLines, random: &mut Random) -> String {
    let words = 4 + random.below(5);
    (0..words)
        .map(|_| english.vocabulary[english.zipf.draw(random)].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}
