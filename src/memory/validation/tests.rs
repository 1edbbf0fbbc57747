//! The loader's checks, field by field, on a real layered memory with bad values.

use super::*;
use crate::memory::limits::MAX_STORED_REASON_CHARS;
use crate::memory::{
    FactKey, MemoryFeatures, NpcMemory, PersonaPrompt, Role, ShortLogs, SummaryStyle,
};

/// A layered memory with every part filled: segments, facts, recall state,
/// history and a degradation.
fn parts() -> MemoryParts {
    let persona = PersonaPrompt {
        name: "ECHO-7".into(),
        text: "You are ECHO-7.".into(),
        style: SummaryStyle::english(),
    };
    let mut config = MemoryConfig {
        summary_threshold: Some(2),
        features: MemoryFeatures::layered(500),
        ..MemoryConfig::with_window(4)
    };
    // Folds from the first lines, so the save holds segments and facts.
    config.features.budget.short_logs = ShortLogs::Layered;
    let mut memory = NpcMemory::new(persona, &config);
    let mut layers = memory.layers();
    for turn in 0..6 {
        layers.record(
            Role::User,
            format!("The valve {turn} is stuck."),
            turn as f64,
        );
        layers.record(Role::Assistant, "Logged.", turn as f64 + 0.5);
        let requests = layers.summarize_due(|job| {
            Ok(format!(
                r#"{{"summary": "Valve {turn} reported.", "facts": [{{"key": "current_goal", "value": "fix valve {turn}", "evidence": [{}]}}]}}"#,
                job.covered.start
            ))
        });
        assert!(requests <= 1, "every summary is accepted at once");
    }
    layers.summarize_due(|_| Err("down".into()));
    layers
        .set_fact(FactKey::PLAYER_NAME, "Alex", vec![0])
        .unwrap();
    layers.context.recall.forget(1);
    let _ = layers.assemble();
    MemoryParts::of(&memory.log, &memory.window, &memory.context)
}

fn refused(parts: &MemoryParts) -> String {
    parts
        .validate()
        .expect_err("a bad save must be refused")
        .field
}

#[test]
fn a_real_memory_is_valid() {
    let parts = parts();
    assert!(!parts.segments.is_empty() && !parts.facts.is_empty());
    assert!(!parts.recall.forgotten.is_empty());
    parts.validate().unwrap();
}

#[test]
fn recall_indices_outside_the_log_are_refused_before_anything_is_built() {
    let mut bad = parts();
    bad.recall.forgotten = vec![4_294_967_294];
    assert_eq!(refused(&bad), "recall.forgotten[0]");
    // Refused before the index is built, so nothing tens of GiB large is made.
    assert!(bad.into_memory().is_err());
    let mut bad = parts();
    bad.recall.access_counts = vec![(3, 1), (2, 1)];
    assert_eq!(refused(&bad), "recall.access_counts[1]");
}

#[test]
fn every_range_must_lie_in_the_log() {
    let len = parts().log.len() as LogIndex;
    let mut bad = parts();
    bad.window_start = len + 1;
    assert_eq!(refused(&bad), "window_start");
    let mut bad = parts();
    bad.covered_until = u64::MAX;
    assert_eq!(refused(&bad), "covered_until");
    let mut bad = parts();
    bad.history[0].covered = std::ops::Range { start: 5, end: 2 };
    assert_eq!(refused(&bad), "history[0].covered");
    let mut bad = parts();
    bad.history[0].attempts = 0;
    assert_eq!(refused(&bad), "history[0].attempts");
    let mut bad = parts();
    bad.degradations = vec![Degradation::WindowOverflow {
        dropped: 0..len + 9,
    }];
    assert_eq!(refused(&bad), "degradations[0].dropped");
}

#[test]
fn segments_must_be_ordered_non_empty_and_shallow() {
    let mut bad = parts();
    let mut segments = bad.segments.list().to_vec();
    segments[0].level = 255;
    bad.segments = serde_json::from_value(serde_json::to_value(&segments).unwrap()).unwrap();
    assert_eq!(refused(&bad), "segments[0].level");
    let mut bad = parts();
    let mut segments = bad.segments.list().to_vec();
    segments.push(segments[0].clone());
    bad.segments = serde_json::from_value(serde_json::to_value(&segments).unwrap()).unwrap();
    assert_eq!(
        refused(&bad),
        format!("segments[{}].covered", segments.len() - 1)
    );
}

#[test]
fn fact_evidence_must_name_messages_in_order() {
    let good = parts();
    let mut value = serde_json::to_value(&good.facts).unwrap();
    value["facts"][0]["evidence"] = serde_json::json!([999]);
    let mut bad = good.clone();
    bad.facts = serde_json::from_value(value).unwrap();
    assert_eq!(refused(&bad), "facts.facts[0].evidence[0]");
}

#[test]
fn sizes_past_their_limits_are_refused_not_clamped() {
    let mut bad = parts();
    bad.config.max_context_window = usize::MAX;
    assert_eq!(refused(&bad), "config.max_context_window");
    let mut bad = parts();
    bad.config.hard_cap = Some(usize::MAX);
    assert_eq!(refused(&bad), "config.hard_cap");
    let mut bad = parts();
    bad.config.features.budget.max_tokens = Some(usize::MAX);
    assert_eq!(refused(&bad), "config.features.budget.max_tokens");
    let mut bad = parts();
    bad.config.features.recall.bm25_b = f32::NAN;
    assert_eq!(refused(&bad), "config.features.recall.bm25_b");
    let mut bad = parts();
    bad.config.features.recall.cjk_unigram_weight = -1.0;
    assert_eq!(refused(&bad), "config.features.recall.cjk_unigram_weight");
    let mut bad = parts();
    bad.config.features.recall.cjk_function_pair_weight = 2.0;
    assert_eq!(
        refused(&bad),
        "config.features.recall.cjk_function_pair_weight"
    );
    let mut bad = parts();
    bad.config.features.recall.recency_half_life = 0.0;
    assert_eq!(refused(&bad), "config.features.recall.recency_half_life");
    let mut bad = parts();
    bad.config.features.budget.shares.recall = 7.0;
    assert_eq!(refused(&bad), "config.features.budget.shares.recall");
}

#[test]
fn long_stored_reasons_are_shortened_on_load() {
    let mut parts = parts();
    parts.degradations = vec![Degradation::SummaryFailed {
        range: 0..2,
        attempts: 2,
        reason: "é".repeat(100_000),
    }];
    let memory = parts.into_memory().unwrap();
    let Degradation::SummaryFailed { reason, .. } = &memory.context.degradations()[0] else {
        unreachable!()
    };
    assert_eq!(reason.chars().count(), MAX_STORED_REASON_CHARS);
}

#[test]
fn game_set_facts_cannot_cite_messages_that_do_not_exist() {
    let good = parts();
    let mut memory = good.into_memory().unwrap();
    let mut layers = memory.layers();
    let error = layers
        .set_fact(FactKey::CURRENT_GOAL, "leave", vec![10_000])
        .unwrap_err();
    assert!(matches!(
        error,
        crate::memory::FactsError::EvidenceOutOfRange { index: 10_000, .. }
    ));
}

#[test]
fn forgetting_by_game_time_needs_a_sane_number_of_seconds() {
    for bad in [f64::NAN, f64::INFINITY, -1.0] {
        let mut config = MemoryConfig::default();
        config.features.forgetting.drop_after_seconds = Some(bad);
        let error = config.check().unwrap_err();
        assert_eq!(error.field, "config.features.forgetting.drop_after_seconds");
        let mut config = MemoryConfig::default();
        config.features.forgetting.compress_after_seconds = Some(bad);
        assert!(config.check().is_err(), "{bad} refused");
    }
    let mut config = MemoryConfig::default();
    config.features.forgetting.compress_after_seconds = Some(0.0);
    config.features.forgetting.drop_after_seconds = Some(86_400.0);
    assert_eq!(config.check(), Ok(()));
}

#[test]
fn configs_written_before_time_thresholds_still_load() {
    let old = r#"{"enabled":true,"compress_after_messages":10,"drop_after_messages":20,"keep_if_recalled":1}"#;
    let policy: crate::memory::ForgettingPolicy = serde_json::from_str(old).unwrap();
    assert_eq!(policy.compress_after_seconds, None);
    assert_eq!(policy.drop_after_seconds, None);
}

/// The writer and the reader of facts share one rule: what loading refuses, the
/// writer refuses too, so no save is written that would not load. (The writer let a
/// fact with no valid time through, and loading then refused the whole save.)
#[test]
fn a_fact_loading_refuses_is_refused_by_the_writer_too() {
    let mut parts = parts();
    let fact = parts.facts.change_times_mut().next().unwrap();
    *fact = f64::NAN;
    let saved = ron::to_string(&parts.facts).unwrap();
    let read = ron::from_str::<crate::memory::PinnedFacts>(&saved).unwrap_err();
    assert!(read.to_string().contains("no valid time"), "{read}");
    assert!(refused(&parts).starts_with("facts.facts["));
}
