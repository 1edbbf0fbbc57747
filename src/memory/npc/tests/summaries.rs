//! Summary jobs: what a fold covers when it is sent, the request built when it
//! became due, and a reply read as its request asked.

use super::*;

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
