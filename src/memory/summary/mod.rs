//! L3's summary jobs: when one is due, the stateless request it sends, and what
//! its result does to memory (accepted, retried once, or degraded).

mod request;
#[cfg(test)]
mod tests;

pub(crate) use request::job_for_in_flight;

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use super::context::{Degradation, SummaryJobId, SummaryKind, SummaryTrigger};
use super::facts::FactChange;
use super::forgetting::ForgettingReport;
use super::message::{ChatMessage, LogIndex, PromptMessage};

/// A stateless summary request, ready to send.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryJob {
    /// Matches the result to the job.
    pub id: SummaryJobId,
    /// A fold of new messages, or a compaction of old segments.
    pub kind: SummaryKind,
    /// The log indices this summary folds in.
    pub covered: Range<LogIndex>,
    /// 1 for the first try, 2 for the retry.
    pub attempt: u32,
    /// Why it runs.
    pub trigger: SummaryTrigger,
    /// The request: the summarizer instruction, then the previous summary and the
    /// transcript. No persona and no chat history.
    pub messages: Vec<PromptMessage>,
    /// The same content, structured, for backends that summarize without a model.
    pub input: SummaryInput,
}

/// The parts of a summary request, for backends that do not need the prose.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryInput {
    /// The summary so far, empty at first.
    pub previous_summary: Arc<str>,
    /// The messages to fold in.
    pub transcript: Vec<ChatMessage>,
    /// How transcripts name the player.
    pub player_name: String,
    /// How transcripts name the NPC.
    pub npc_name: String,
    /// For a compaction, the segment texts to merge, oldest first; else empty.
    pub segments: Vec<Arc<str>>,
    /// Whether the reply must be the JSON object with fact updates that the
    /// request's instructions describe.
    pub wants_facts: bool,
    /// The log indices the summary covers; fact evidence must lie inside.
    pub covered: Range<LogIndex>,
}

/// A summary that was accepted.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryUpdate {
    /// The summary it replaced.
    pub old: Arc<str>,
    /// The new summary.
    pub new: Arc<str>,
    /// The log indices it folded in.
    pub covered: Range<LogIndex>,
    /// Time spent over all attempts.
    pub latency: Duration,
    /// Requests it took.
    pub attempts: u32,
    /// Why it ran.
    pub trigger: SummaryTrigger,
    /// Pinned facts the summary changed.
    pub fact_changes: Vec<FactChange>,
    /// What the forgetting policy dropped afterwards.
    pub forgotten: ForgettingReport,
    /// Notes on lines the summarizer wrote that recall now indexes.
    pub notes_added: usize,
    /// Notes it wrote that were dropped: malformed, too long, citing lines
    /// outside the summary, or past the limits.
    pub notes_dropped: usize,
    /// The next summary job, when messages that arrived meanwhile (or segments
    /// that outgrew their budget) already make one due. Send it.
    pub next: Option<SummaryJob>,
}

/// What finishing a summary request led to.
#[derive(Clone, Debug, PartialEq)]
pub enum SummaryOutcome {
    /// The summary was accepted and the system prompt rewritten.
    Updated(SummaryUpdate),
    /// The attempt failed; send this retry.
    Retry(SummaryJob),
    /// The retry failed too. The last good summary stays.
    Degraded(Degradation),
    /// The result belongs to a job that no longer exists, and was ignored.
    Stale,
}
