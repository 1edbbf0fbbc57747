//! What the debug panel shows for one NPC, computed from the plugin's resources
//! without egui, so it can be tested headless and reused by other UIs.

use std::ops::Range;
use std::time::Duration;

use crate::llm::Purpose;
use crate::memory::{LogIndex, NpcId, Role, SummaryTrigger, estimate_tokens};
use crate::plugin::{
    ChatLogs, ContextMemoryManager, Conversations, LlmUsage, RollingWindows, UsageStats,
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
}

impl NpcMemoryReport {
    /// The report for `npc`, or `None` if it has no memory.
    pub fn build(
        npc: &NpcId,
        logs: &ChatLogs,
        windows: &RollingWindows,
        contexts: &ContextMemoryManager,
        conversations: &Conversations,
        usage: &LlmUsage,
    ) -> Option<Self> {
        let log = logs.get(npc)?;
        let window = windows.get(npc)?;
        let context = contexts.get(npc)?;
        let covered = context.covered_until();
        let row = |m: &crate::memory::ChatMessage| MessageRow {
            index: Some(m.index),
            role: m.role,
            text: m.content.to_string(),
            tokens: estimate_tokens(&m.content),
            timestamp: m.timestamp,
            unsummarized: m.index >= covered,
        };
        let mut window_rows = vec![MessageRow {
            index: None,
            role: Role::System,
            text: window.system_prompt().to_owned(),
            tokens: estimate_tokens(window.system_prompt()),
            timestamp: 0.0,
            unsummarized: false,
        }];
        window_rows.extend(window.messages(log).iter().map(row));
        Some(Self {
            npc: npc.clone(),
            window_tokens: crate::memory::estimate_prompt_tokens(&window.prompt(log)),
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
            reply_in_flight: conversations.reply_in_flight(npc),
            summary_in_flight: conversations.summary_in_flight(npc),
            queued_lines: conversations.queued_lines(npc).map(str::to_owned).collect(),
            degradations: context
                .degradations()
                .iter()
                .map(ToString::to_string)
                .collect(),
            reply_usage: usage.npc(npc, Purpose::Reply).cloned(),
            summary_usage: usage.npc(npc, Purpose::Summary).cloned(),
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
