//! Summary segments and their compaction under a budget, forgetting, dates, and
//! basic mode's prompt staying exact when everything is off.

use super::*;

#[test]
fn segments_stay_separate_until_the_budget_demands_compaction() {
    let mut config = segmented();
    let unbounded = play(&config, 40);
    let segments = unbounded.context.segments().list();
    assert_eq!(segments.len(), 20, "one segment per fold, none merged");
    assert!(segments.iter().all(|s| s.level == 0));

    config.features.segments.compact_above_tokens = Some(120);
    let bounded = play(&config, 40);
    let segments = bounded.context.segments().list();
    assert!(segments.len() < 20, "{} segments", segments.len());
    assert!(
        segments.iter().any(|s| s.level >= 1),
        "old segments were compacted"
    );
    // Together they still cover the log from the start, without gaps or overlaps.
    assert_eq!(segments[0].covered.start, 0);
    assert!(
        segments
            .windows(2)
            .all(|w| w[0].covered.end == w[1].covered.start)
    );
    assert_eq!(
        segments.last().unwrap().covered.end,
        bounded.context.covered_until()
    );
    // The newest segments are the least compacted.
    assert_eq!(segments.last().unwrap().level, 0);
    let history = bounded.context.history();
    assert!(
        history
            .iter()
            .any(|r| r.trigger == SummaryTrigger::Compaction)
    );
}

/// Over the limit, a compaction waits for a whole batch of segments older than the
/// newest: merging two as soon as the limit is passed ran about one compaction per
/// fold, a request each.
#[test]
fn a_compaction_waits_for_a_whole_batch_of_older_segments() {
    let mut config = segmented();
    config.features.segments.compact_above_tokens = Some(120);
    let batch = config.features.segments.compact_batch;
    let mut memory = NpcMemory::new(persona(), &config);
    let backend = OfflineBackend::default();
    let (mut folds, mut compactions, mut whole_batches) = (0, 0, 0);
    for turn in 0..80 {
        let mut layers = memory.layers();
        let t = f64::from(turn) * 10.0;
        layers.record(
            Role::User,
            format!("Report {turn}: valve {} is stuck open.", turn % 13),
            t,
        );
        layers.record(Role::Assistant, format!("Logged report {turn}."), t + 1.0);
        layers.summarize_due(|job| {
            if let SummaryKind::Compact { segments } = &job.kind {
                compactions += 1;
                whole_batches += usize::from(segments.len() >= batch);
            } else {
                folds += 1;
            }
            Ok(backend.summarize(&job.input))
        });
    }
    assert!(compactions >= 2, "{compactions} compactions");
    assert!(whole_batches >= 2, "{whole_batches} whole batches");
    assert!(
        compactions * 2 <= folds,
        "{compactions} compactions for {folds} folds"
    );
}

#[test]
fn forgetting_drops_old_recall_entries_but_never_the_log() {
    let mut config = MemoryConfig {
        summary_threshold: Some(4),
        ..MemoryConfig::with_window(8)
    };
    config.features.recall.enabled = true;
    config.features.forgetting = ForgettingPolicy {
        enabled: true,
        compress_after_messages: 40,
        drop_after_messages: 80,
        keep_if_recalled: 2,
        ..ForgettingPolicy::default()
    };
    let memory = play(&config, 100);
    assert_eq!(memory.log.len(), 200, "the log keeps every message");
    let recall = memory.context.recall();
    assert!(recall.is_forgotten(0), "an old covered line left recall");
    assert!(!recall.is_forgotten(190), "recent lines stay");
}

#[test]
fn with_every_feature_off_the_prompt_is_the_seeds() {
    let config = MemoryConfig {
        summary_threshold: Some(2),
        ..MemoryConfig::with_window(4)
    };
    let mut memory = play(&config, 5);
    // The design's prompt, written out by hand: persona, label and summary, then
    // the window's messages as they are.
    let mut expected = vec![PromptMessage::new(
        Role::System,
        format!(
            "You are ECHO-7.\n\n[Previously]: {}",
            memory.context.summary()
        ),
    )];
    expected.extend(
        memory
            .window
            .messages(&memory.log)
            .iter()
            .map(|m| m.to_prompt()),
    );
    assert!(memory.context.summary().starts_with("Player: "));
    let mut layers = memory.layers();
    assert_eq!(layers.reply_prompt(), expected);
}

#[test]
fn stamps_never_run_backwards_even_when_the_clock_does() {
    let mut memory = NpcMemory::new(persona(), &MemoryConfig::with_window(8));
    let mut layers = memory.layers();
    layers.say("first", 500.0);
    layers.reply("second", 200.0);
    layers.say("third", f64::NAN);
    layers.reply("fourth", 800.0);
    let stamps: Vec<f64> = memory.log.messages().iter().map(|m| m.timestamp).collect();
    assert_eq!(stamps, [500.0, 500.0, 500.0, 800.0]);
    let mut layers = memory.layers();
    layers
        .set_fact_at(FactKey::new("door").unwrap(), "open", Vec::new(), 10.0)
        .unwrap();
    let fact = memory.context.facts().get(&FactKey::new("door").unwrap());
    assert_eq!(
        fact.unwrap().changed_at,
        800.0,
        "no fact before the newest line"
    );
}

#[test]
fn segment_time_spans_follow_the_stamps() {
    let mut config = MemoryConfig {
        summary_threshold: Some(4),
        ..MemoryConfig::with_window(8)
    };
    config.features.segments.enabled = true;
    let mut memory = NpcMemory::new(persona(), &config);
    let backend = OfflineBackend::default();
    // A game calendar that starts on day 40 and moves an hour per line.
    let start = 40.0 * 86_400.0;
    for line in 0..12 {
        let mut layers = memory.layers();
        let at = start + f64::from(line) * 3_600.0;
        layers.record(Role::User, format!("Report {line}: valve stuck."), at);
        layers.summarize_due(|job| Ok(backend.summarize(&job.input)));
    }
    let log = memory.log.messages();
    let segments = memory.context.segments().list();
    assert!(!segments.is_empty());
    for segment in segments {
        let first = &log[segment.covered.start as usize];
        let last = &log[segment.covered.end as usize - 1];
        assert_eq!(segment.from_time, first.timestamp);
        assert_eq!(segment.to_time, last.timestamp);
        assert!(segment.from_time >= start);
    }
}

#[test]
fn a_custom_date_format_reaches_segment_spans_and_recall_headings() {
    let mut config = MemoryConfig {
        summary_threshold: Some(4),
        ..MemoryConfig::with_window(8)
    };
    config.features.segments.enabled = true;
    config.features.recall.enabled = true;
    let mut memory = NpcMemory::new(persona(), &config);
    let backend = OfflineBackend::default();
    let moon = DateFormat::new(|s| format!("moon-day {}", (s / 86_400.0) as u64));
    for i in 0..16 {
        let line = if i == 0 {
            "The reactor key is under the blue crate.".to_owned()
        } else {
            format!("Valve {i} reading is normal today.")
        };
        let mut layers = memory.layers();
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        layers.record(role, line, f64::from(i) * 86_400.0);
        layers.summarize_due(|job| Ok(backend.summarize(&job.input)));
    }
    let turn = memory
        .layers()
        .say("Where is the reactor key?", Now::new(16.0 * 86_400.0, moon));
    // The summaries open the prompt; the recalled lines come before the newest line.
    let system: String = turn
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| &*m.content)
        .collect();
    assert!(system.contains("[moon-day 0]"), "recall heading: {system}");
    assert!(
        system.contains("(moon-day 0 to moon-day 3)"),
        "segment span: {system}"
    );
    assert!(
        !system.contains("day 1 00:00"),
        "no default dates: {system}"
    );
}
