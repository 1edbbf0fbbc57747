//! What a loaded memory may hold. A save is data from outside: a hand-edited file,
//! another build, a corrupt disk. Every index it carries is checked against its log
//! and every size against a sane maximum before anything is built from it, so a bad
//! file is refused with the field it got wrong instead of crashing the game or
//! allocating without bound.

use std::ops::Range;

use super::config::MemoryConfig;
use super::context::SUMMARY_ATTEMPTS;
use super::context::{Degradation, SummaryRecord};
use super::invalid_field::InvalidField;
use super::message::LogIndex;
use super::parts::MemoryParts;
use super::recall::{LineNote, MAX_NOTES};

/// The largest window, threshold or hard cap a memory may have, in messages.
pub const MAX_WINDOW_MESSAGES: usize = 100_000;
/// The largest prompt budget or segment budget, in tokens.
pub const MAX_BUDGET_TOKENS: usize = 10_000_000;
/// The longest summary a memory may be configured to accept, in characters.
pub const MAX_SUMMARY_CHARS_LIMIT: usize = 1_000_000;
/// The deepest compaction level of a summary segment. Each level merges at least two
/// segments of the level below, so even four billion messages stay far below it.
pub const MAX_SEGMENT_LEVEL: u8 = 64;
/// The most a follow-up prompt may grow past its budget, as a share of it
/// ([`FollowUps::growth`](super::FollowUps::growth)).
pub const MAX_FOLLOW_UP_GROWTH: f32 = 8.0;
/// Most messages recall may fetch or look back at, and the widest passage.
pub const MAX_RECALL_MESSAGES: usize = 10_000;
/// Most pinned facts, history entries per key, or updates per summary a memory
/// may be configured for; and the longest fact value, in characters.
pub const MAX_FACT_SETTING: usize = 100_000;

fn invalid(field: impl Into<String>, problem: impl Into<String>) -> InvalidField {
    InvalidField {
        field: field.into(),
        problem: problem.into(),
    }
}

/// Checks that `value` lies in `range`.
fn within<T: PartialOrd + std::fmt::Display>(
    field: &str,
    value: T,
    range: std::ops::RangeInclusive<T>,
) -> Result<(), InvalidField> {
    if range.contains(&value) {
        return Ok(());
    }
    Err(invalid(
        field,
        format!("{value} is outside {}..={}", range.start(), range.end()),
    ))
}

/// Checks that a weight is a finite number in `range`.
fn weight(
    field: &str,
    value: f32,
    range: std::ops::RangeInclusive<f32>,
) -> Result<(), InvalidField> {
    if !value.is_finite() {
        return Err(invalid(field, "is not a finite number"));
    }
    within(field, value, range)
}

impl MemoryConfig {
    /// Checks every size and weight against its sane range: what a loaded save or a
    /// persona file may set. Sizes the code clamps anyway (a window below 2) are
    /// refused here too, so a file never means something other than it says.
    pub fn check(&self) -> Result<(), InvalidField> {
        within(
            "config.max_context_window",
            self.max_context_window,
            2..=MAX_WINDOW_MESSAGES,
        )?;
        if let Some(threshold) = self.summary_threshold {
            within(
                "config.summary_threshold",
                threshold,
                1..=MAX_WINDOW_MESSAGES,
            )?;
        }
        if let Some(cap) = self.hard_cap {
            within("config.hard_cap", cap, 2..=2 * MAX_WINDOW_MESSAGES)?;
        }
        within(
            "config.max_summary_chars",
            self.max_summary_chars,
            1..=MAX_SUMMARY_CHARS_LIMIT,
        )?;
        let features = &self.features;
        let recall = &features.recall;
        within(
            "config.features.recall.max_messages",
            recall.max_messages,
            0..=MAX_RECALL_MESSAGES,
        )?;
        within(
            "config.features.recall.context_messages",
            recall.context_messages,
            0..=MAX_RECALL_MESSAGES,
        )?;
        within(
            "config.features.recall.context_below_terms",
            recall.context_below_terms,
            0..=MAX_RECALL_MESSAGES,
        )?;
        within(
            "config.features.recall.expansion_hits",
            recall.expansion_hits,
            0..=MAX_RECALL_MESSAGES,
        )?;
        within(
            "config.features.recall.expansion_terms",
            recall.expansion_terms,
            0..=MAX_RECALL_MESSAGES,
        )?;
        within(
            "config.features.recall.passage_span",
            recall.passage_span,
            0..=MAX_RECALL_MESSAGES as u64,
        )?;
        for (name, value) in [
            ("neighbour_weight", recall.neighbour_weight),
            ("context_weight", recall.context_weight),
            ("player_weight", recall.player_weight),
            ("recency_weight", recall.recency_weight),
            ("bm25_k1", recall.bm25_k1),
            ("neighbour_after_weight", recall.neighbour_after_weight),
            ("common_term_weight", recall.common_term_weight),
            ("passage_weight", recall.passage_weight),
            ("date_weight", recall.date_weight),
            ("when_weight", recall.when_weight),
            ("expansion_weight", recall.expansion_weight),
            ("cjk_unigram_weight", recall.cjk_unigram_weight),
            ("note_weight", recall.note_weight),
        ] {
            weight(
                &format!("config.features.recall.{name}"),
                value,
                0.0..=1000.0,
            )?;
        }
        weight("config.features.recall.bm25_b", recall.bm25_b, 0.0..=1.0)?;
        weight(
            "config.features.recall.cjk_function_pair_weight",
            recall.cjk_function_pair_weight,
            0.0..=1.0,
        )?;
        weight(
            "config.features.recall.common_term_share",
            recall.common_term_share,
            0.0..=1.0,
        )?;
        if recall
            .calendar
            .is_some_and(|calendar| !calendar.unix_epoch.is_finite())
        {
            return Err(invalid(
                "config.features.recall.calendar.unix_epoch",
                "is not a finite number of seconds",
            ));
        }
        let half_life = recall.recency_half_life;
        if !(half_life.is_finite() && half_life > 0.0) {
            return Err(invalid(
                "config.features.recall.recency_half_life",
                "is not a positive finite number of seconds",
            ));
        }
        let forgetting = &features.forgetting;
        for (name, limit) in [
            ("compress_after_seconds", forgetting.compress_after_seconds),
            ("drop_after_seconds", forgetting.drop_after_seconds),
        ] {
            if limit.is_some_and(|seconds| !(seconds.is_finite() && seconds >= 0.0)) {
                return Err(invalid(
                    format!("config.features.forgetting.{name}"),
                    "is not a finite, non-negative number of seconds",
                ));
            }
        }
        let facts = &features.facts;
        within(
            "config.features.facts.max_facts",
            facts.max_facts,
            0..=MAX_FACT_SETTING,
        )?;
        within(
            "config.features.facts.max_value_chars",
            facts.max_value_chars,
            1..=MAX_FACT_SETTING,
        )?;
        within(
            "config.features.facts.history_per_key",
            facts.history_per_key,
            0..=MAX_FACT_SETTING,
        )?;
        within(
            "config.features.facts.max_updates",
            facts.max_updates,
            0..=MAX_FACT_SETTING,
        )?;
        let segments = &features.segments;
        if let Some(tokens) = segments.compact_above_tokens {
            within(
                "config.features.segments.compact_above_tokens",
                tokens,
                0..=MAX_BUDGET_TOKENS,
            )?;
        }
        within(
            "config.features.segments.compact_batch",
            segments.compact_batch,
            0..=MAX_RECALL_MESSAGES,
        )?;
        let budget = &features.budget;
        if let Some(tokens) = budget.max_tokens {
            within(
                "config.features.budget.max_tokens",
                tokens,
                0..=MAX_BUDGET_TOKENS,
            )?;
        }
        for (name, value) in [
            ("window", budget.shares.window),
            ("summaries", budget.shares.summaries),
            ("recall", budget.shares.recall),
            ("lore", budget.shares.lore),
        ] {
            weight(
                &format!("config.features.budget.shares.{name}"),
                value,
                0.0..=1.0,
            )?;
        }
        let follow_ups = &budget.follow_ups;
        weight(
            "config.features.budget.follow_ups.growth",
            follow_ups.growth,
            0.0..=MAX_FOLLOW_UP_GROWTH,
        )?;
        weight(
            "config.features.budget.follow_ups.recall",
            follow_ups.recall,
            0.0..=1.0,
        )?;
        weight(
            "config.features.budget.follow_ups.refill",
            follow_ups.refill,
            0.0..=1.0,
        )?;
        let pause = follow_ups.pause_secs;
        if !(pause.is_finite() && pause >= 0.0) {
            return Err(invalid(
                "config.features.budget.follow_ups.pause_secs",
                format!("is {pause}, not a finite number of seconds from 0"),
            ));
        }
        Ok(())
    }
}

impl MemoryParts {
    /// Checks that the parts describe a memory this crate could have made: every
    /// index inside the log, every range ordered, every size within its limit.
    pub fn validate(&self) -> Result<(), InvalidField> {
        self.config.check()?;
        let len = self.log.len() as LogIndex;
        for (position, message) in self.log.iter().enumerate() {
            let field = || format!("log[{position}]");
            if message.index != position as LogIndex {
                return Err(invalid(
                    format!("{}.index", field()),
                    format!("is {}", message.index),
                ));
            }
            if let Err(problem) = message.origin.check(message.role) {
                return Err(invalid(format!("{}.origin", field()), problem));
            }
            // The id and name were checked as they were read; only player lines
            // have a speaker.
            let player_line = message.role == super::message::Role::User
                && matches!(
                    message.origin,
                    super::origin::Origin::Said | super::origin::Origin::SaidPrivately
                );
            if message.speaker.is_some() && !player_line {
                return Err(invalid(
                    format!("{}.speaker", field()),
                    "is set on an entry that is not a player line",
                ));
            }
            if !message.timestamp.is_finite() {
                return Err(invalid(
                    format!("{}.timestamp", field()),
                    "is not a finite number",
                ));
            }
        }
        index_at_most("window_start", self.window_start, len)?;
        index_at_most("covered_until", self.covered_until, len)?;
        // Summaries only ever cover messages before `covered_until`; a record or a
        // segment past it would be folded a second time.
        for (position, record) in self.history.iter().enumerate() {
            check_record(position, record, self.covered_until)?;
        }
        for (position, degradation) in self.degradations.iter().enumerate() {
            check_degradation(position, degradation, len)?;
        }
        let mut previous_end = 0;
        for (position, segment) in self.segments.list().iter().enumerate() {
            let field = format!("segments[{position}]");
            range_in_log(
                &format!("{field}.covered"),
                &segment.covered,
                self.covered_until,
            )?;
            if segment.covered.is_empty() {
                return Err(invalid(format!("{field}.covered"), "covers no message"));
            }
            if segment.covered.start < previous_end {
                return Err(invalid(
                    format!("{field}.covered"),
                    "overlaps or precedes the segment before it",
                ));
            }
            previous_end = segment.covered.end;
            within(
                &format!("{field}.level"),
                segment.level,
                0..=MAX_SEGMENT_LEVEL,
            )?;
            if !(segment.from_time.is_finite() && segment.to_time.is_finite()) {
                return Err(invalid(
                    format!("{field}.from_time"),
                    "is not a finite number",
                ));
            }
        }
        for (position, fact) in self.facts.all_facts().enumerate() {
            let field = format!("facts.facts[{position}]");
            super::facts::check_saved_fact(fact).map_err(|problem| invalid(&field, problem))?;
            if fact.evidence.len() > super::facts::MAX_EVIDENCE {
                return Err(invalid(
                    format!("{field}.evidence"),
                    format!(
                        "has {} entries, over {}",
                        fact.evidence.len(),
                        super::facts::MAX_EVIDENCE
                    ),
                ));
            }
            increasing_indices(
                &format!("{field}.evidence"),
                fact.evidence.iter().copied(),
                len,
            )?;
            let chars = fact.value.chars().count();
            within(
                &format!("{field}.value (characters)"),
                chars,
                1..=MAX_FACT_SETTING,
            )?;
        }
        let limits = self.facts.limits();
        within(
            "facts.limits.max_facts",
            limits.max_facts,
            0..=MAX_FACT_SETTING,
        )?;
        within(
            "facts.limits.max_value_chars",
            limits.max_value_chars,
            1..=MAX_FACT_SETTING,
        )?;
        within(
            "facts.limits.history_per_key",
            limits.history_per_key,
            0..=MAX_FACT_SETTING,
        )?;
        increasing_indices(
            "recall.forgotten",
            self.recall.forgotten.iter().copied(),
            len,
        )?;
        increasing_indices(
            "recall.access_counts",
            self.recall.access_counts.iter().map(|&(index, _)| index),
            len,
        )?;
        check_notes(&self.recall.notes, len)
    }
}

/// The summarizer's notes in a save: within the limits a live note is held to,
/// each citing lines of this log in order.
fn check_notes(notes: &[LineNote], len: LogIndex) -> Result<(), InvalidField> {
    if notes.len() > MAX_NOTES {
        return Err(invalid(
            "recall.notes",
            format!("holds {} notes, over the limit of {MAX_NOTES}", notes.len()),
        ));
    }
    for (position, note) in notes.iter().enumerate() {
        let field = format!("recall.notes[{position}]");
        let checked = LineNote::new(&note.text, note.lines.iter().copied(), 0..len)
            .map_err(|error| invalid(&field, error.to_string()))?;
        if checked != *note {
            return Err(invalid(
                field,
                "is untrimmed, or cites its lines out of order or twice",
            ));
        }
    }
    Ok(())
}

fn index_at_most(field: &str, index: LogIndex, len: LogIndex) -> Result<(), InvalidField> {
    if index > len {
        return Err(invalid(
            field,
            format!("is {index}, but the log has {len} messages"),
        ));
    }
    Ok(())
}

/// Checks that `range` is ordered and ends at or before `end` (the log's length, or
/// the first message no summary covers).
fn range_in_log(field: &str, range: &Range<LogIndex>, end: LogIndex) -> Result<(), InvalidField> {
    if range.start > range.end || range.end > end {
        return Err(invalid(
            field,
            format!("is {}..{}, past message {end}", range.start, range.end),
        ));
    }
    Ok(())
}

/// Checks that indices are strictly increasing and name messages of the log.
fn increasing_indices(
    field: &str,
    indices: impl Iterator<Item = LogIndex>,
    len: LogIndex,
) -> Result<(), InvalidField> {
    let mut previous: Option<LogIndex> = None;
    for (position, index) in indices.enumerate() {
        if index >= len {
            return Err(invalid(
                format!("{field}[{position}]"),
                format!("is {index}, but the log has {len} messages"),
            ));
        }
        if previous.is_some_and(|p| p >= index) {
            return Err(invalid(
                format!("{field}[{position}]"),
                "is not in increasing order",
            ));
        }
        previous = Some(index);
    }
    Ok(())
}

fn check_record(
    position: usize,
    record: &SummaryRecord,
    covered_until: LogIndex,
) -> Result<(), InvalidField> {
    let field = format!("history[{position}]");
    range_in_log(&format!("{field}.covered"), &record.covered, covered_until)?;
    within(
        &format!("{field}.attempts"),
        record.attempts,
        1..=SUMMARY_ATTEMPTS,
    )
}

fn check_degradation(
    position: usize,
    degradation: &Degradation,
    len: LogIndex,
) -> Result<(), InvalidField> {
    let field = format!("degradations[{position}]");
    match degradation {
        Degradation::SummaryFailed {
            range, attempts, ..
        } => {
            range_in_log(&format!("{field}.range"), range, len)?;
            within(
                &format!("{field}.attempts"),
                *attempts,
                1..=SUMMARY_ATTEMPTS,
            )
        }
        Degradation::WindowOverflow { dropped } => {
            range_in_log(&format!("{field}.dropped"), dropped, len)
        }
    }
}

#[cfg(test)]
mod tests;
