//! What the debug panel shows for one NPC, computed from the plugin's resources
//! without egui, so it can be tested headless and reused by other UIs.

use std::ops::Range;
use std::time::Duration;

use super::action_rows::ActionRow;
use crate::backends::Purpose;
use crate::memory::{
    ContextMemory, FactSource, FactStatus, LogIndex, MemoryConfig, NpcId, RecallReason, Role,
    SectionKind, SegmentPriority, SummaryTrigger, estimate_tokens,
};
use crate::plugin::{
    ChatLogs, ContextMemoryManager, LlmUsage, NpcRequests, RollingWindows, UsageStats,
};

/// One message as the panel lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct MessageRow {
    /// Its index in L2, `None` for the system prompt.
    pub index: Option<LogIndex>,
    /// Who spoke.
    pub role: Role,
    /// The text.
    pub text: String,
    /// Estimated tokens.
    pub tokens: usize,
    /// Game time, in seconds (0 for the system prompt).
    pub timestamp: f64,
    /// Whether no summary covers it yet, so it must stay in the prompt.
    pub unsummarized: bool,
    /// Where it came from: the conversation, an event the NPC saw, something it
    /// heard (the text then says from whom), or a private line.
    pub origin: crate::memory::Origin,
    /// Who said a player line, when it was not the default player.
    pub speaker: Option<crate::memory::SpeakerId>,
    /// The summarizer's notes on it, which recall indexes with it and no prompt
    /// shows.
    pub notes: Vec<std::sync::Arc<str>>,
}

/// One summary in the history.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryRow {
    /// The log indices it covered.
    pub covered: Range<LogIndex>,
    /// Its text.
    pub summary: String,
    /// Why it ran.
    pub trigger: SummaryTrigger,
    /// How long it took.
    pub latency: Duration,
    /// Requests it took.
    pub attempts: u32,
}

/// One pinned fact, current or from its history.
#[derive(Clone, Debug, PartialEq)]
pub struct FactRow {
    /// The fact's key, such as `current_goal`.
    pub key: String,
    /// Its value.
    pub value: String,
    /// Active, outdated or contradicted.
    pub status: FactStatus,
    /// Who set it.
    pub source: FactSource,
    /// The log indices that support it.
    pub evidence: Vec<LogIndex>,
    /// When it last changed, in game seconds.
    pub changed_at: f64,
}

/// One summary segment.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentRow {
    /// The log indices it covers.
    pub covered: Range<LogIndex>,
    /// Its text.
    pub text: String,
    /// 0 for a summary of messages, higher for compactions.
    pub level: u8,
    /// How much it matters.
    pub priority: SegmentPriority,
}

/// One section of the last reply prompt.
#[derive(Clone, Debug, PartialEq)]
pub struct SectionRow {
    /// Which section.
    pub kind: SectionKind,
    /// Estimated tokens it took.
    pub tokens: usize,
    /// Items it sent.
    pub sent: usize,
    /// Items it left out for the budget.
    pub left_out: usize,
}

/// A message recalled into the last reply prompt, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct RecalledRow {
    /// Its place in the log.
    pub index: LogIndex,
    /// Its text.
    pub text: String,
    /// Its relevance score.
    pub score: f32,
    /// Why, in words: the terms it matched, or the match it neighbours.
    pub why: String,
}

/// Everything the debug panel shows for one NPC.
#[derive(Clone, Debug, PartialEq)]
pub struct NpcMemoryReport {
    /// Whose memory.
    pub npc: NpcId,
    /// L1: the system prompt, then the window, as sent with the next request.
    pub window: Vec<MessageRow>,
    /// Estimated tokens of the whole window.
    pub window_tokens: usize,
    /// The window size and its hard cap.
    pub window_limits: (usize, usize),
    /// L2: every message.
    pub log: Vec<MessageRow>,
    /// L3: the current summary.
    pub summary: String,
    /// L3: every summary, oldest first.
    pub history: Vec<SummaryRow>,
    /// Messages not yet covered by a summary.
    pub pending: u64,
    /// Messages per summary.
    pub threshold: usize,
    /// Whether a reply is being produced.
    pub reply_in_flight: bool,
    /// Whether a summary is being made.
    pub summary_in_flight: bool,
    /// Player lines waiting.
    pub queued_lines: Vec<String>,
    /// Every degradation, in words, oldest first.
    pub degradations: Vec<String>,
    /// Reply usage figures, if any request finished.
    pub reply_usage: Option<UsageStats>,
    /// Summary usage figures, if any request finished.
    pub summary_usage: Option<UsageStats>,
    /// The NPC's memory configuration in force, features included.
    pub config: MemoryConfig,
    /// Pinned facts, active ones first, then their history.
    pub facts: Vec<FactRow>,
    /// Summary segments, oldest first.
    pub segments: Vec<SegmentRow>,
    /// The sections of the last reply prompt (empty in basic mode).
    pub prompt_sections: Vec<SectionRow>,
    /// Estimated tokens of the last reply prompt and its budget, if assembled.
    pub prompt_tokens: Option<(usize, Option<usize>)>,
    /// Whether the last reply prompt extended the one before it (a follow-up
    /// line, whose prefix a prompt cache holds).
    pub prompt_follow_up: bool,
    /// The messages recalled into the last reply prompt.
    pub recalled: Vec<RecalledRow>,
    /// The actions the NPC took, oldest first, each with what came of it.
    pub actions: Vec<ActionRow>,
}

/// What an NPC knows beyond its own conversation, split by how it came to know it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KnowledgeRows<'a> {
    /// Events it saw itself.
    pub seen: Vec<&'a MessageRow>,
    /// What other NPCs told it; each row's text names the tellers and the source.
    pub heard: Vec<&'a MessageRow>,
    /// Player lines (and replies) it keeps to itself.
    pub private: Vec<&'a MessageRow>,
    /// Lines other NPCs said to it in conversations among NPCs, first-hand:
    /// what it learned from each of them ([`MessageRow::speaker`] names who).
    pub from_npcs: Vec<&'a MessageRow>,
    /// Pinned facts other NPCs told it, active ones, with who told them
    /// ([`FactSource::heard`]).
    pub heard_facts: Vec<&'a FactRow>,
}

impl NpcMemoryReport {
    /// The log split into what the NPC saw, heard, was told by other NPCs and
    /// keeps private, for the panel's Knowledge section.
    pub fn knowledge(&self) -> KnowledgeRows<'_> {
        let mut rows = KnowledgeRows::default();
        for row in &self.log {
            match row.origin {
                crate::memory::Origin::Witnessed { .. } => rows.seen.push(row),
                crate::memory::Origin::Heard(_) => rows.heard.push(row),
                crate::memory::Origin::SaidPrivately => rows.private.push(row),
                crate::memory::Origin::Said if self.said_by_another_npc(row) => {
                    rows.from_npcs.push(row);
                }
                _ => {}
            }
        }
        rows.heard_facts = self
            .facts
            .iter()
            .filter(|f| f.status == FactStatus::Active && f.source.heard().is_some())
            .collect();
        rows
    }

    fn said_by_another_npc(&self, row: &MessageRow) -> bool {
        row.role == Role::User
            && row
                .speaker
                .as_ref()
                .and_then(crate::memory::SpeakerId::as_npc)
                .is_some_and(|npc| npc != self.npc)
    }

    /// The report for `npc`, or `None` if it has no memory.
    pub fn build(
        npc: &NpcId,
        logs: &ChatLogs,
        windows: &RollingWindows,
        contexts: &ContextMemoryManager,
        requests: &NpcRequests,
        usage: &LlmUsage,
    ) -> Option<Self> {
        let log = logs.get(npc)?;
        let window = windows.get(npc)?;
        let context = contexts.get(npc)?;
        let covered = context.covered_until();
        let dates = context.date_format();
        // Labelled as the prompt labels them, so the rows show what is sent.
        let labels = crate::memory::player_label_if_mixed(log, &context.persona);
        // Once per report: a row looking through every note would cost the
        // whole list per line.
        let mut notes: std::collections::HashMap<LogIndex, Vec<std::sync::Arc<str>>> =
            std::collections::HashMap::new();
        for note in context.recall.notes() {
            for &line in &note.lines {
                notes.entry(line).or_default().push(note.text.clone());
            }
        }
        let row = |m: &crate::memory::ChatMessage| {
            let shown = m.to_prompt_labelled(dates, labels);
            MessageRow {
                index: Some(m.index),
                role: m.role,
                tokens: estimate_tokens(&shown.content),
                text: shown.content.to_string(),
                timestamp: m.timestamp,
                unsummarized: m.index >= covered,
                origin: m.origin.clone(),
                speaker: m.speaker.clone(),
                notes: notes.get(&m.index).cloned().unwrap_or_default(),
            }
        };
        // The system prompt as the next reply would send it; the window as it stands.
        let system = crate::memory::preview_prompt(log, window, context)
            .messages
            .swap_remove(0);
        let mut sent = vec![system.clone()];
        sent.extend(
            window
                .messages(log)
                .iter()
                .map(|m| m.to_prompt_labelled(dates, labels)),
        );
        let mut window_rows = vec![MessageRow {
            index: None,
            role: Role::System,
            tokens: estimate_tokens(&system.content),
            text: system.content.to_string(),
            timestamp: 0.0,
            unsummarized: false,
            origin: Default::default(),
            speaker: None,
            notes: Vec::new(),
        }];
        window_rows.extend(window.messages(log).iter().map(row));
        Some(Self {
            npc: npc.clone(),
            window_tokens: crate::memory::estimate_prompt_tokens(&sent),
            window: window_rows,
            window_limits: (window.max_context_window(), window.hard_cap()),
            log: log.messages().iter().map(row).collect(),
            summary: context.summary().to_owned(),
            history: context
                .history()
                .iter()
                .map(|r| SummaryRow {
                    covered: r.covered.clone(),
                    summary: r.summary.to_string(),
                    trigger: r.trigger,
                    latency: r.latency,
                    attempts: r.attempts,
                })
                .collect(),
            pending: log.next_index().saturating_sub(covered),
            threshold: context.threshold(),
            reply_in_flight: requests.reply_in_flight(npc),
            summary_in_flight: requests.summary_in_flight(npc),
            queued_lines: requests.queued_lines(npc).map(str::to_owned).collect(),
            degradations: context
                .degradations()
                .iter()
                .map(ToString::to_string)
                .collect(),
            reply_usage: usage.npc(npc, Purpose::Reply).cloned(),
            summary_usage: usage.npc(npc, Purpose::Summary).cloned(),
            config: MemoryConfig {
                max_context_window: window.max_context_window(),
                summary_threshold: Some(context.threshold()),
                hard_cap: Some(window.hard_cap()),
                max_summary_chars: context.max_summary_chars(),
                features: context.features().clone(),
            },
            facts: fact_rows(context),
            segments: context
                .segments()
                .list()
                .iter()
                .map(|s| SegmentRow {
                    covered: s.covered.clone(),
                    text: s.text.to_string(),
                    level: s.level,
                    priority: s.priority,
                })
                .collect(),
            prompt_sections: context
                .last_prompt()
                .map(|p| {
                    p.sections
                        .iter()
                        .map(|s| SectionRow {
                            kind: s.kind,
                            tokens: s.tokens,
                            sent: s.included.len(),
                            left_out: s.left_out,
                        })
                        .collect()
                })
                .unwrap_or_default(),
            prompt_tokens: context.last_prompt().map(|p| (p.tokens, p.budget)),
            prompt_follow_up: context.last_prompt().is_some_and(|p| p.follow_up),
            recalled: context
                .last_prompt()
                .map(|p| {
                    p.recalled
                        .iter()
                        .map(|r| RecalledRow {
                            index: r.index,
                            text: log
                                .get(r.index)
                                .map(|m| m.content.to_string())
                                .unwrap_or_default(),
                            score: r.score,
                            why: match &r.reason {
                                RecallReason::Matched { terms } => format!(
                                    "matched {}",
                                    terms.iter().map(|t| &**t).collect::<Vec<_>>().join(", ")
                                ),
                                RecallReason::Neighbour { of } => format!("next to #{of}"),
                            },
                        })
                        .collect()
                })
                .unwrap_or_default(),
            actions: super::action_rows::action_rows(log),
        })
    }

    /// The L2 rows whose text contains `query`, ignoring case. An empty query matches all.
    pub fn search_log(&self, query: &str) -> Vec<&MessageRow> {
        let query = query.trim().to_lowercase();
        self.log
            .iter()
            .filter(|row| query.is_empty() || row.text.to_lowercase().contains(&query))
            .collect()
    }
}

/// Active facts first (in prompt order), then every key's history, newest first.
fn fact_rows(context: &ContextMemory) -> Vec<FactRow> {
    let row = |f: &crate::memory::Fact| FactRow {
        key: f.key.to_string(),
        value: f.value.to_string(),
        status: f.status,
        source: f.source.clone(),
        evidence: f.evidence.clone(),
        changed_at: f.changed_at,
    };
    let facts = context.facts();
    let mut rows: Vec<FactRow> = facts.active().into_iter().map(row).collect();
    for key in facts.keys() {
        rows.extend(
            facts
                .history(key)
                .iter()
                .rev()
                .filter(|f| f.status != FactStatus::Active)
                .map(row),
        );
    }
    rows
}
