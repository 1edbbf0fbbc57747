//! One LoCoMo conversation replayed into an NPC's memory.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use bevy_npc_memory::memory::{Calendar, LogIndex, MemoryConfig, NpcMemory, Role};
use bevy_npc_memory_bench::evidence::normalize;
use bevy_npc_memory_bench::locomo::{Conversation, observations, parse_date, turn_text};
use bevy_npc_memory_bench::notes::{NoteTally, observation_notes};
use bevy_npc_memory_bench::summarizer::Summarizer;
use serde_json::Value;

/// One conversation replayed into one NPC's memory.
pub(crate) struct Replay {
    pub(crate) memory: NpcMemory,
    pub(crate) window: usize,
    pub(crate) dia_ids: HashMap<String, LogIndex>,
    pub(crate) last_timestamp: f64,
    pub(crate) summary_requests: usize,
    pub(crate) bookkeeping: Duration,
    pub(crate) messages: usize,
    pub(crate) notes: NoteTally,
}

pub(crate) fn replay(
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
