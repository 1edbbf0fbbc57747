//! The features beyond basic mode, in the core: segments and their compaction under a
//! budget, forgetting, and basic mode's prompt staying exact when everything is off.

use super::*;
use crate::backends::OfflineBackend;
use crate::memory::{
    AssembledPrompt, DateFormat, FactKey, ForgettingPolicy, LogIndex, MemoryConfig, MemoryFeatures,
    MemoryParts, Now, PersonaPrompt, PromptMessage, Role, SectionKind, SummaryKind, SummaryOutcome,
    SummaryStyle, SummaryTrigger,
};
use std::time::Duration;

fn persona() -> PersonaPrompt {
    PersonaPrompt {
        name: "ECHO-7".into(),
        text: "You are ECHO-7.".into(),
        style: SummaryStyle::english(),
    }
}

/// Plays `turns` exchanges, answering every summary job with the offline backend.
fn play(config: &MemoryConfig, turns: usize) -> NpcMemory {
    let mut memory = NpcMemory::new(persona(), config);
    let backend = OfflineBackend::default();
    for turn in 0..turns {
        let mut layers = memory.layers();
        let t = turn as f64 * 10.0;
        layers.record(
            Role::User,
            format!("Report {turn}: valve {} is stuck open.", turn % 13),
            t,
        );
        layers.record(Role::Assistant, format!("Logged report {turn}."), t + 1.0);
        layers.summarize_due(|job| Ok(backend.summarize(&job.input)));
    }
    memory
}

/// A window of 8 that folds every 4 messages into a segment of its own.
fn segmented() -> MemoryConfig {
    let mut config = MemoryConfig {
        summary_threshold: Some(4),
        ..MemoryConfig::with_window(8)
    };
    config.features.segments.enabled = true;
    config
}

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

#[test]
fn a_summary_that_waited_covers_everything_uncovered_when_it_is_sent() {
    let config = MemoryConfig {
        summary_threshold: Some(4),
        ..MemoryConfig::with_window(8)
    };
    let mut memory = NpcMemory::new(persona(), &config);
    let mut layers = memory.layers();
    let mut job = None;
    for i in 0..4 {
        job = job.or(layers.say(format!("line {i}"), i as f64).summary);
    }
    let job = job.expect("the threshold of 4 made a summary due");
    assert_eq!(job.covered, 0..4);
    // The job waits; three more messages arrive meanwhile and start no second job.
    for i in 4..7 {
        assert!(layers.say(format!("line {i}"), i as f64).summary.is_none());
    }
    let sent = layers.summary_job_now(job.id).expect("still in flight");
    assert_eq!(sent.id, job.id);
    assert_eq!(sent.covered, 0..7, "one request covers all seven");
    let transcript: String = sent
        .messages
        .iter()
        .map(|m| m.content.to_string())
        .collect();
    assert!(transcript.contains("line 6"), "{transcript}");
    let outcome = layers.finish_summary(job.id, Ok("All seven lines."), std::time::Duration::ZERO);
    assert!(matches!(outcome, SummaryOutcome::Updated(_)));
    assert_eq!(layers.context().covered_until(), 7);
    // A job that is gone is not rebuilt.
    assert!(layers.summary_job_now(job.id).is_none());
}

/// The plugin sends a summary as it was built when it became due while nothing
/// touched the memory since: that must be exactly what `summary_job_now` would
/// build then, for a fold, with pinned facts asked for, for a retry and for the
/// next fold a summary leaves due.
#[test]
fn a_summary_sent_before_memory_changes_is_the_one_built_when_it_became_due() {
    let mut layered = MemoryFeatures::layered(2000);
    layered.budget.short_logs = crate::memory::ShortLogs::Layered;
    for features in [MemoryFeatures::default(), layered] {
        let config = MemoryConfig {
            summary_threshold: Some(2),
            features,
            ..MemoryConfig::with_window(4)
        };
        let mut memory = NpcMemory::new(persona(), &config);
        let mut layers = memory.layers();
        let job = (0..)
            .find_map(|i| layers.say(format!("line {i}"), i as f64).summary)
            .expect("a summary becomes due");
        assert_eq!(layers.summary_job_now(job.id).as_ref(), Some(&job));
        let SummaryOutcome::Retry(retry) = layers.finish_summary(
            job.id,
            Err("the backend failed".into()),
            std::time::Duration::ZERO,
        ) else {
            panic!("a first failure is retried");
        };
        assert_eq!(layers.summary_job_now(retry.id).as_ref(), Some(&retry));
        assert_eq!(retry.attempt, 2);
    }
}

#[test]
fn a_deferred_fold_never_covers_more_than_a_hard_cap_at_once() {
    let config = MemoryConfig {
        summary_threshold: Some(2),
        ..MemoryConfig::with_window(4)
    };
    let mut memory = NpcMemory::new(persona(), &config);
    let mut layers = memory.layers();
    let mut job = None;
    for i in 0..40 {
        job = job.or(layers.say(format!("line {i}"), i as f64).summary);
    }
    let job = job.expect("due");
    let cap = layers.window().hard_cap() as LogIndex;
    let sent = layers.summary_job_now(job.id).expect("in flight");
    assert_eq!(sent.covered, 0..cap);
}

/// A summary is read the way it was asked for: an NPC whose facts are switched off
/// (or on) while its summary is out (its tier changed) neither keeps the JSON reply
/// as its summary nor fails a plain one.
#[test]
fn a_summary_reply_is_read_as_its_request_asked_whatever_facts_are_now() {
    let mut config = MemoryConfig {
        summary_threshold: Some(2),
        ..MemoryConfig::with_window(8)
    };
    config.features.facts.enabled = true;
    let mut off = config.clone();
    off.features.facts.enabled = false;
    let mut memory = NpcMemory::new(persona(), &config);
    let mut layers = memory.layers();
    layers.say("My name is Alex.", 0.0);
    let job = layers.say("Hello.", 1.0).summary.expect("due at 2");
    let sent = layers.summary_job_now(job.id).expect("in flight");
    assert!(sent.messages[0].content.contains("JSON"), "asks for facts");
    layers.reconfigure(&off);
    let reply = r#"{"summary": "Alex said hello.", "facts": [{"key": "player_name", "value": "Alex", "evidence": [0]}]}"#;
    let outcome = layers.finish_summary(job.id, Ok(reply), std::time::Duration::ZERO);
    assert!(matches!(outcome, SummaryOutcome::Updated(_)));
    assert_eq!(layers.context().summary(), "Alex said hello.");

    layers.say("I fix pumps.", 2.0);
    let job = layers.say("Bye.", 3.0).summary.expect("due again");
    let sent = layers.summary_job_now(job.id).expect("in flight");
    assert!(
        !sent.messages[0].content.contains("JSON"),
        "asks for no facts"
    );
    layers.reconfigure(&config);
    let outcome = layers.finish_summary(job.id, Ok("Alex fixes pumps."), Default::default());
    assert!(matches!(outcome, SummaryOutcome::Updated(_)), "{outcome:?}");
    assert_eq!(layers.context().summary(), "Alex fixes pumps.");
}

#[test]
fn only_recalled_lines_the_prompt_sends_count_as_recalled() {
    let mut config = MemoryConfig {
        summary_threshold: Some(4),
        ..MemoryConfig::with_window(8)
    };
    config.features = MemoryFeatures::layered(300);
    config.features.forgetting.keep_if_recalled = 1;
    let mut memory = play(&config, 60);
    let mut layers = memory.layers();
    layers.record(
        Role::User,
        "Which valve was stuck open in report 7?",
        1000.0,
    );
    let prompt = layers.assemble();
    let recalled = prompt
        .section(SectionKind::Recalled)
        .expect("a recall section");
    assert!(
        recalled.left_out > 0,
        "the budget left candidates out: {recalled:?}"
    );
    let sent: Vec<LogIndex> = prompt.recalled.iter().map(|r| r.index).collect();
    assert!(!sent.is_empty());
    let recall = memory.context.recall();
    for index in 0..memory.log.next_index() {
        let expected = u32::from(sent.contains(&index));
        assert_eq!(recall.access_count(index), expected, "message {index}");
    }
}

/// Follow-up lines: within a conversation each layered prompt is the whole of the
/// last one with what came since appended, so a provider's cache and the local
/// model's KV cache reuse all of it; a prompt is built afresh, within the budget,
/// only when appending would pass the budget plus its growth, or after a pause.
#[test]
fn within_a_conversation_each_layered_prompt_extends_the_whole_last_one() {
    let mut config = MemoryConfig::with_window(20);
    config.features = MemoryFeatures::layered(600);
    // A larger share than the default, so a follow-up's own finds show at this size.
    config.features.budget.follow_ups.recall = 0.3;
    let cap = config.features.budget.follow_up_cap().unwrap();
    assert_eq!(cap, 900);
    let mut memory = NpcMemory::new(persona(), &config);
    let mut previous: Option<Vec<PromptMessage>> = None;
    let (mut extended, mut fresh, mut found_for_a_follow_up) = (0, 0, 0);
    // The most old lines one follow-up recalled for its own line.
    let mut most_recalled = 0;
    let mut recalled_before = 0;
    for turn in 0..80u32 {
        let mut layers = memory.layers();
        let t = f64::from(turn) * 30.0;
        let line = format!(
            "Report {turn}: the {} valve in bay {} is stuck again.",
            ["red", "blue", "green"][turn as usize % 3],
            turn % 7
        );
        let said = layers.say(line.as_str(), t);
        let messages = said.messages.clone();
        let prompt = layers.context().last_prompt().unwrap().clone();
        assert_eq!(prompt.messages, messages);
        assert_eq!(
            messages.last().unwrap().content.as_ref(),
            line,
            "the line comes last"
        );
        assert!(
            prompt.tokens <= cap,
            "turn {turn}: {} tokens",
            prompt.tokens
        );
        match &previous {
            Some(before) if messages.starts_with(before) => {
                extended += 1;
                let added = &messages[before.len()..];
                assert_eq!(added[0].role, Role::Assistant, "the reply comes first");
                if added.len() == 3 {
                    assert_eq!(added[1].role, Role::System);
                    assert!(added[1].content.contains("Recalled word for word"));
                    found_for_a_follow_up += 1;
                }
                most_recalled = most_recalled.max(prompt.recalled.len() - recalled_before);
            }
            _ => {
                fresh += 1;
                assert!(prompt.tokens <= 600, "a fresh prompt keeps to the budget");
            }
        }
        layers.answer_offline(said.summary);
        let replied = layers.reply(format!("Logged report {turn}."), t + 1.0);
        layers.answer_offline(replied.summary);
        previous = Some(messages);
        recalled_before = prompt.recalled.len();
    }
    assert!(extended >= 60, "{extended} of 80 prompts extended the last");
    assert!(fresh >= 3, "outgrowing the cap builds afresh: {fresh}");
    assert!(found_for_a_follow_up >= 10, "{found_for_a_follow_up}");
    assert!(
        memory.context.history().len() >= 2,
        "folds went on meanwhile"
    );

    // After a pause the line is the first of a new conversation: it recalls as
    // much as a fresh prompt would, appended if that fits, afresh if not.
    let mut layers = memory.layers();
    layers.reply("Anything else?", 80.0 * 30.0);
    let before = layers.context().last_prompt().unwrap().clone();
    layers.say("Which valve was stuck in bay 3?", 80.0 * 30.0 + 301.0);
    let after = layers.context().last_prompt().unwrap().clone();
    let recalled_now = if after.follow_up {
        after.recalled.len() - before.recalled.len()
    } else {
        after.recalled.len()
    };
    assert!(
        recalled_now > most_recalled,
        "{recalled_now} lines after a pause, at most {most_recalled} for a follow-up"
    );
}

/// Plays `turns` lines 30 s apart and returns every prompt built afresh after the
/// first, with whether the line before it came within `pause_secs` (so the
/// conversation went on and outgrew its cap).
fn rebuilt_prompts(config: &MemoryConfig, turns: u32) -> Vec<AssembledPrompt> {
    let mut memory = NpcMemory::new(persona(), config);
    let mut rebuilt = Vec::new();
    for turn in 0..turns {
        let mut layers = memory.layers();
        let t = f64::from(turn) * 30.0;
        let line = format!(
            "Report {turn}: valve {} in bay {} is stuck.",
            turn % 5,
            turn % 7
        );
        let said = layers.say(line.as_str(), t);
        let prompt = layers.context().last_prompt().unwrap().clone();
        if turn > 0 && !prompt.follow_up {
            rebuilt.push(prompt);
        }
        layers.answer_offline(said.summary);
        let replied = layers.reply(format!("Logged report {turn}, bay {}.", turn % 7), t + 1.0);
        layers.answer_offline(replied.summary);
    }
    rebuilt
}

/// A conversation that outgrows its cap is rebuilt within `refill` of the budget,
/// so it can grow for longer before the next rebuild (which no cache serves);
/// with `refill` 1 the rebuilds fill the whole budget, as a new conversation does.
#[test]
fn a_conversation_that_outgrows_its_cap_is_rebuilt_within_the_refill() {
    let mut config = MemoryConfig::with_window(20);
    config.features = MemoryFeatures::layered(600);
    assert_eq!(config.features.budget.follow_ups.refill, 0.6);
    let smaller = rebuilt_prompts(&config, 80);
    assert!(smaller.len() >= 3, "{} rebuilds", smaller.len());
    for prompt in &smaller {
        assert_eq!(prompt.budget, Some(360));
        assert!(prompt.tokens <= 360, "{} tokens", prompt.tokens);
    }

    config.features.budget.follow_ups.refill = 1.0;
    let whole = rebuilt_prompts(&config, 80);
    assert!(whole.iter().all(|p| p.budget == Some(600)));
    assert!(
        whole.iter().any(|p| p.tokens > 360),
        "whole rebuilds fill more than the refill: {:?}",
        whole.iter().map(|p| p.tokens).collect::<Vec<_>>()
    );
    assert!(
        whole.len() > smaller.len(),
        "smaller rebuilds come less often: {} against {}",
        smaller.len(),
        whole.len()
    );
}

/// A follow-up line always gets its best old line: beyond its share when that is
/// too small, and in a prompt built afresh when the cap leaves no room for it.
#[test]
fn a_follow_up_question_about_something_old_gets_its_best_find() {
    let mut config = MemoryConfig::with_window(8);
    config.features = MemoryFeatures::layered(600);
    config.features.facts.enabled = false;
    // No share at all for a follow-up's own finds.
    config.features.budget.follow_ups.recall = 0.0;
    // Summaries that keep nothing: only recall can bring the code back.
    let forget = |layers: &mut LayersMut<'_>, mut job: Option<SummaryJob>| {
        while let Some(current) = job {
            job = match layers.finish_summary(current.id, Ok("Small talk."), Duration::ZERO) {
                SummaryOutcome::Updated(update) => update.next,
                _ => None,
            };
        }
    };
    let mut follow_ups = 0;
    for fillers in 12..40u32 {
        let mut memory = NpcMemory::new(persona(), &config);
        let mut layers = memory.layers();
        let said = layers.say("Remember this: the vault code is 9182.", 0.0);
        forget(&mut layers, said.summary);
        let replied = layers.reply("Noted.", 1.0);
        forget(&mut layers, replied.summary);
        for turn in 1..=fillers {
            let t = f64::from(turn) * 30.0;
            let line = format!(
                "Pump {turn} in bay {}: pressure steady, gauges read, filters cleaned, seals tight.",
                turn % 4
            );
            let said = layers.say(line, t);
            forget(&mut layers, said.summary);
            let replied = layers.reply("Pumps logged, the night crew signed for them.", t + 1.0);
            forget(&mut layers, replied.summary);
        }
        let asked = layers.say(
            "What was the vault code again?",
            f64::from(fillers) * 30.0 + 20.0,
        );
        let prompt = layers.context().last_prompt().unwrap().clone();
        follow_ups += usize::from(prompt.follow_up);
        assert!(
            asked.messages[..asked.messages.len() - 1]
                .iter()
                .any(|m| m.content.contains("9182")),
            "{fillers} fillers, follow-up {}: {:#?}",
            prompt.follow_up,
            asked.messages
        );
    }
    assert!(
        follow_ups >= 5,
        "{follow_ups} of the questions were follow-ups"
    );
}

/// A pause starts a new conversation, which recalls with the whole recall share,
/// but a prompt that still holds every message of the log has nothing to recall:
/// it goes on extending instead of being built afresh near its cap.
#[test]
fn after_a_pause_a_prompt_that_holds_the_whole_log_is_still_extended() {
    let mut config = MemoryConfig::with_window(4);
    config.hard_cap = Some(200);
    config.features = MemoryFeatures::layered(400);
    let cap = config.features.budget.follow_up_cap().unwrap();
    let mut memory = NpcMemory::new(persona(), &config);
    let mut layers = memory.layers();
    let mut t = 0.0;
    // Past the budget but short of the cap, with too little room left for a whole
    // recall share: before, a pause rebuilt the prompt here.
    let room_for_recall = (400.0 * 0.7 / 2.0) as usize;
    let mut turn = 0;
    loop {
        let said = layers.say(format!("Line {turn} about the pumps."), t);
        layers.answer_offline(said.summary);
        let prompt = layers.context().last_prompt().unwrap().clone();
        assert!(
            turn == 0 || prompt.follow_up,
            "turn {turn} extends the last"
        );
        let replied = layers.reply(format!("Pumps logged, {turn}."), t + 1.0);
        layers.answer_offline(replied.summary);
        if prompt.tokens > 400 && cap - prompt.tokens < room_for_recall + 20 {
            break;
        }
        turn += 1;
        t += 30.0;
        assert!(turn < 100, "the prompt never came near its cap");
    }
    let before = layers.context().last_prompt().unwrap().messages.clone();
    let after = layers.say("Back again. Anything new?", t + 600.0).messages;
    assert!(after.starts_with(&before), "the pause kept the prompt");
    let log = layers.log().messages();
    for message in log {
        assert!(
            after.iter().any(|m| m.content == message.content),
            "message {} is still sent",
            message.index
        );
    }
}

/// A layered prompt sends a short log as it is: the persona and every message,
/// with no summary requested, past the window's hard cap, and on as a follow-up
/// past the budget. Folds start only once the whole log comes within the lead of
/// the follow-up cap, so the summaries are in by the time the conversation is
/// rebuilt, and the rebuilt prompt has them.
#[test]
fn a_log_that_fits_the_budget_is_sent_whole_and_folds_wait() {
    let mut config = MemoryConfig::with_window(4);
    config.features = MemoryFeatures::layered(400);
    let cap = config.features.budget.follow_up_cap().unwrap();
    let mut memory = NpcMemory::new(persona(), &config);
    let mut first_fold = None;
    for turn in 0..60u32 {
        let mut layers = memory.layers();
        let t = f64::from(turn) * 30.0;
        let said = layers.say(format!("Line {turn} about the pumps."), t);
        let prompt = layers.context().last_prompt().unwrap().clone();
        let folded = said.summary.is_some() || !layers.context().history().is_empty();
        if first_fold.is_none() && !folded {
            let log = layers.log().messages();
            // One system message, then the whole log word for word.
            assert_eq!(said.messages.len(), 1 + log.len(), "turn {turn}");
            for (sent, message) in said.messages[1..].iter().zip(log) {
                assert_eq!(sent.content, message.content);
            }
            assert!(prompt.tokens <= cap - (cap - 400) / 2, "turn {turn}");
        } else if first_fold.is_none() {
            // The fold waited past the budget, until the lead of the cap.
            assert!(prompt.tokens > 400, "turn {turn}: {}", prompt.tokens);
            first_fold = Some(turn);
        } else if !prompt.follow_up {
            // The rebuild that outgrew the cap finds every message before its
            // window in a summary.
            let window = prompt
                .sections
                .iter()
                .find(|s| s.kind == SectionKind::Window);
            let oldest = window.unwrap().included[0];
            assert!(layers.context().covered_until() >= oldest, "{prompt:?}");
            assert!(
                layers.context().degradations().is_empty(),
                "nothing was forced out of the window"
            );
            return;
        }
        layers.answer_offline(said.summary);
        let replied = layers.reply(format!("Pumps logged, {turn}."), t + 1.0);
        if first_fold.is_none() {
            assert!(
                replied.summary.is_none(),
                "turn {turn}: the log is still held"
            );
        }
        layers.answer_offline(replied.summary);
    }
    panic!("no rebuild after the first fold at {first_fold:?}");
}

/// Folds wait on what is sent, not on the log's words: notes go out with their
/// dates and framing, so a log of notes can stop fitting before its words do,
/// and from the first prompt that does not hold the whole log, folds run.
#[test]
fn folds_wait_only_while_what_is_sent_is_the_whole_log() {
    let mut config = MemoryConfig::with_window(4);
    config.features = MemoryFeatures::layered(300);
    let mut memory = NpcMemory::new(persona(), &config);
    let mut layered = 0;
    for turn in 0..40u32 {
        let t = f64::from(turn) * 600.0;
        let mut layers = memory.layers();
        let noted = layers.witness(format!("Crate {turn} was moved to bay {turn}."), 0.5, t);
        layers.answer_offline(noted.summary);
        let said = layers.say(format!("Crate {turn}?").as_str(), t + 1.0);
        let prompt = layers.context().last_prompt().unwrap().clone();
        let window = prompt.section(SectionKind::Window).unwrap();
        if window.included.len() < layers.log().messages().len() {
            layered += 1;
            let folding = said.summary.is_some() || layers.context().covered_until() > 0;
            assert!(folding, "turn {turn}: layered, and folds still wait");
        }
        layers.answer_offline(said.summary);
        let replied = layers.reply("Logged.", t + 2.0);
        layers.answer_offline(replied.summary);
    }
    assert!(layered > 0, "the log outgrew its prompt");
}

/// Until the first fold, a fresh prompt (here the first after a load) sends the
/// whole log past the budget, up to half the follow-ups' growth, as the
/// conversation's prompt did; no fold is due until then.
#[test]
fn before_the_first_fold_a_fresh_prompt_sends_the_whole_log_past_the_budget() {
    let mut config = MemoryConfig::with_window(4);
    config.features = MemoryFeatures::layered(300);
    let mut memory = NpcMemory::new(persona(), &config);
    let mut t = 0.0;
    while memory.context.last_prompt().is_none_or(|p| p.tokens <= 310) {
        let mut layers = memory.layers();
        let said = layers.say("Is the pump on line four still rattling?", t);
        assert!(
            said.summary.is_none(),
            "no fold before the log outgrows 375"
        );
        let replied = layers.reply("It rattles, but it holds.", t + 1.0);
        assert!(replied.summary.is_none());
        t += 10.0;
    }
    let parts = MemoryParts::of(&memory.log, &memory.window, &memory.context);
    let mut loaded = parts.into_memory().unwrap();
    let said = loaded.layers().say("Still there?", t + 400.0);
    let prompt = loaded.context.last_prompt().unwrap();
    assert!(!prompt.follow_up && prompt.tokens > 300, "{prompt:?}");
    assert_eq!(said.messages.len(), 1 + loaded.log.messages().len());
}

/// A pinned fact that changes mid-conversation is appended before the next line,
/// under a heading that says it replaces the facts above, so the prompt still
/// extends the last one; the next fresh prompt has it in the system message.
#[test]
fn a_fact_changed_mid_conversation_is_appended_not_rebuilt() {
    let mut config = MemoryConfig::with_window(20);
    config.features = MemoryFeatures::layered(2000);
    let mut memory = NpcMemory::new(persona(), &config);
    let mut layers = memory.layers();
    let first = layers.say("The hatch is jammed.", 1.0).messages;
    layers.reply("Logged.", 2.0);
    layers
        .set_fact(FactKey::CURRENT_GOAL, "open the hatch", vec![0])
        .unwrap();
    let second = layers.say("Can you help?", 3.0).messages;
    assert!(second.starts_with(&first), "the last prompt is kept whole");
    let added = &second[first.len()..];
    assert_eq!(added.len(), 3, "{added:?}");
    assert_eq!(added[1].role, Role::System);
    assert!(added[1].content.starts_with("[Pinned facts have changed"));
    assert!(added[1].content.contains("open the hatch"));
    assert!(layers.context().last_prompt().unwrap().follow_up);

    // Unchanged since, the facts are not appended again.
    layers.reply("On my way.", 4.0);
    let third = layers.say("Thanks.", 5.0).messages;
    assert!(third.starts_with(&second));
    assert!(
        !third[second.len()..]
            .iter()
            .any(|m| m.content.contains("have changed"))
    );

    // After a load the next prompt is fresh, with the fact in its system message.
    let parts = MemoryParts::of(&memory.log, &memory.window, &memory.context);
    let mut loaded = parts.into_memory().unwrap();
    let fresh = loaded.layers().say("Still there?", 400.0).messages;
    assert!(fresh[0].content.contains("open the hatch"));
    assert!(!loaded.context.last_prompt().unwrap().follow_up);
}

/// A log is sent whole only when what is sent fits the budget: notes go out with
/// their dates and framing, so a log whose words fit can come to more, and then
/// the prompt is layered, its window within the hard cap.
#[test]
fn a_log_is_sent_whole_only_when_what_is_sent_fits() {
    let mut config = MemoryConfig::with_window(2);
    config.features = MemoryFeatures::layered(160);
    config.features.budget.follow_ups.growth = 0.0;
    let budget = 160;
    let mut memory = NpcMemory::new(persona(), &config);
    let mut past_the_cap = 0;
    for turn in 0..12u32 {
        let t = f64::from(turn) * 10.0;
        let mut layers = memory.layers();
        layers.witness(format!("Crate {turn} was moved to bay {turn}."), 0.5, t);
        layers.say(format!("Crate {turn}?").as_str(), t + 1.0);
        let prompt = layers.context().last_prompt().unwrap().clone();
        layers.record(Role::Assistant, "Logged.", t + 2.0);
        let lines = prompt
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .count();
        if lines > config.hard_cap() {
            past_the_cap += 1;
            assert!(
                prompt.tokens <= budget,
                "turn {turn}: the whole log went out at {} tokens",
                prompt.tokens
            );
        }
    }
    assert!(past_the_cap > 0, "some whole logs were sent");
}
