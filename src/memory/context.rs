//! L3: context memory. Folds messages into a summary and rewrites the system prompt.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::assembly::{
    AssembledPrompt, ComposedPrompt, Conversation, SummarySource, whole_log_fits, whole_log_prefix,
};
use super::clock::DateFormat;
use super::config::MemoryFeatures;
use super::config::ShortLogs;
use super::facts::PinnedFacts;
use super::log::ChatLog;
use super::message::LogIndex;
use super::persona::PersonaPrompt;
use super::privacy::Withheld;
use super::recall::RecallIndex;
use super::segments::Segments;
use super::text::shorten_to_chars;

/// Longest text kept from outside the game in a stored reason (a failed summary's
/// error, a server's message), in characters. Longer text is shortened when it is
/// stored or loaded.
pub const MAX_STORED_REASON_CHARS: usize = 500;

/// Over this many times their limit, segments are compacted without waiting for
/// a whole batch ([`SegmentConfig::compact_batch`](super::SegmentConfig)).
pub(crate) const COMPACT_ANYWAY: usize = 4;

/// How far past the budget a log nothing has folded yet is still sent whole, as
/// a share of the follow-ups' growth: at 0.5, a 2,000-token budget growing to
/// 3,000 sends it whole up to 2,500. Folds start there, half the growth before
/// the follow-ups' cap, so their summaries are in by the rebuild that needs them.
pub(crate) const WHOLE_LOG_GROWTH: f64 = 0.5;

/// Requests per summary before it degrades: the first try and one retry.
pub const SUMMARY_ATTEMPTS: u32 = 2;

/// Identifies one summary job, so that a result for a job that no longer exists
/// (the memory was cleared meanwhile) is recognised and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SummaryJobId(pub u64);

/// Why a summary was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryTrigger {
    /// Enough messages arrived since the last summary.
    Threshold,
    /// The game asked for one.
    Manual,
    /// Old segments outgrew their budget and are merged.
    Compaction,
}

/// One successful summary: what it said and which messages it covered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryRecord {
    /// The log indices this summary folded in.
    pub covered: Range<LogIndex>,
    /// The summary text, previous summaries merged in.
    pub summary: Arc<str>,
    /// Why it was made.
    pub trigger: SummaryTrigger,
    /// How long the request took, over all attempts.
    pub latency: Duration,
    /// How many requests it took (1, or 2 after a retry).
    pub attempts: u32,
}

/// A loss of memory quality that the game should know about.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Degradation {
    /// A summary failed twice; the last good summary stays in the prompt.
    SummaryFailed {
        /// The messages it should have covered. They stay pending for the next try.
        range: Range<LogIndex>,
        /// Requests made.
        attempts: u32,
        /// Why the last attempt failed.
        reason: String,
    },
    /// The window reached its hard cap while messages were still uncovered, so these
    /// left the prompt unsummarized. They are still in the log and stay pending.
    WindowOverflow {
        /// The messages that left the prompt.
        dropped: Range<LogIndex>,
    },
}

impl Degradation {
    /// Cuts a failure's reason to [`MAX_STORED_REASON_CHARS`]: it is text from
    /// outside (a server's error, a model's malformed reply) and is kept in saves.
    ///
    pub(crate) fn shorten_reason(&mut self) {
        if let Degradation::SummaryFailed { reason, .. } = self {
            let short = shorten_to_chars(reason, MAX_STORED_REASON_CHARS);
            if short.len() != reason.len() {
                *reason = short.into_owned();
            }
        }
    }
}

impl std::fmt::Display for Degradation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Degradation::SummaryFailed {
                range,
                attempts,
                reason,
            } => write!(
                f,
                "summary of messages {}..{} failed after {attempts} attempts ({reason}); keeping the last good summary",
                range.start, range.end
            ),
            Degradation::WindowOverflow { dropped } => write!(
                f,
                "window hit its hard cap: messages {}..{} left the prompt before a summary covered them",
                dropped.start, dropped.end
            ),
        }
    }
}

/// What a summary job does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SummaryKind {
    /// Folds new messages into the summary (or into a new segment).
    Fold,
    /// Merges the segments at these positions into one of the next level.
    Compact {
        /// Positions in the segment list, oldest first.
        segments: Range<usize>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct InFlight {
    pub(crate) id: SummaryJobId,
    pub(crate) kind: SummaryKind,
    pub(crate) covered: Range<LogIndex>,
    pub(crate) attempt: u32,
    pub(crate) trigger: SummaryTrigger,
    pub(crate) latency: Duration,
    /// Whether the request last built for it asked for facts: its reply is read
    /// that way even if facts were switched meanwhile (the NPC changed tier).
    pub(crate) facts: bool,
}

/// The context memory of one NPC (L3): the current summary, how far it reaches, and
/// its history.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextMemory {
    pub(crate) persona: PersonaPrompt,
    pub(crate) summary: Arc<str>,
    pub(crate) covered_until: LogIndex,
    pub(crate) threshold: usize,
    pub(crate) max_summary_chars: usize,
    pub(crate) in_flight: Option<InFlight>,
    pub(crate) retry_after: LogIndex,
    pub(crate) manual_requested: bool,
    pub(crate) next_job: u64,
    pub(crate) history: Vec<SummaryRecord>,
    pub(crate) degradations: Vec<Degradation>,
    pub(crate) features: MemoryFeatures,
    pub(crate) segments: Segments,
    pub(crate) facts: PinnedFacts,
    pub(crate) recall: RecallIndex,
    pub(crate) last_prompt: Option<Arc<AssembledPrompt>>,
    /// The prompt the next line of the conversation may extend.
    pub(crate) conversation: Conversation,
    pub(crate) forgetting_compaction: bool,
    pub(crate) composed: ComposedPrompt,
    /// How prompts write dates: the format of the latest event ([`Now`](super::Now)).
    pub(crate) dates: DateFormat,
    /// The line the reply being asked for answers: the newest line to the NPC when
    /// its prompt was built. Another NPC's line may arrive before the reply does
    /// (in a conversation), and the reply is as private as the line it answered.
    pub(crate) answering: Option<LogIndex>,
}

impl ContextMemory {
    /// An empty memory for a persona.
    pub fn new(persona: PersonaPrompt, threshold: usize, max_summary_chars: usize) -> Self {
        Self {
            persona,
            summary: Arc::from(""),
            covered_until: 0,
            threshold: threshold.max(1),
            max_summary_chars,
            in_flight: None,
            retry_after: 0,
            manual_requested: false,
            next_job: 0,
            history: Vec::new(),
            degradations: Vec::new(),
            features: MemoryFeatures::default(),
            segments: Segments::default(),
            facts: PinnedFacts::default(),
            recall: RecallIndex::default(),
            last_prompt: None,
            conversation: Conversation::default(),
            composed: ComposedPrompt::default(),
            forgetting_compaction: false,
            dates: DateFormat::default(),
            answering: None,
        }
    }

    /// The persona this memory extends.
    pub fn persona(&self) -> &PersonaPrompt {
        &self.persona
    }

    /// How prompts write dates: the format the latest event came with.
    pub fn date_format(&self) -> &DateFormat {
        &self.dates
    }

    /// The current summary, empty before the first one.
    pub fn summary(&self) -> &str {
        &self.summary
    }

    /// The first log index no summary covers yet.
    pub fn covered_until(&self) -> LogIndex {
        self.covered_until
    }

    /// Messages per summary.
    pub fn threshold(&self) -> usize {
        self.threshold
    }

    /// Longest summary accepted, in characters.
    pub fn max_summary_chars(&self) -> usize {
        self.max_summary_chars
    }

    /// Every successful summary, oldest first.
    pub fn history(&self) -> &[SummaryRecord] {
        &self.history
    }

    /// Every degradation, oldest first.
    pub fn degradations(&self) -> &[Degradation] {
        &self.degradations
    }

    /// The features beyond basic mode that are switched on.
    pub fn features(&self) -> &MemoryFeatures {
        &self.features
    }

    /// The summary segments, oldest first (empty unless segments are on).
    pub fn segments(&self) -> &Segments {
        &self.segments
    }

    /// The pinned facts.
    pub fn facts(&self) -> &PinnedFacts {
        &self.facts
    }

    /// The recall index over the full log (empty unless recall is on).
    pub fn recall(&self) -> &RecallIndex {
        &self.recall
    }

    /// How the last reply prompt was built: its sections, and which messages were
    /// recalled and why. `None` before the first reply.
    pub fn last_prompt(&self) -> Option<&AssembledPrompt> {
        self.last_prompt.as_deref()
    }

    /// The messages the summary in flight covers, if one is in flight.
    pub fn summary_in_flight(&self) -> Option<Range<LogIndex>> {
        self.in_flight.as_ref().map(|job| job.covered.clone())
    }

    /// The pinned facts section, without the facts that cite a `withheld` line.
    pub(crate) fn facts_section(
        &self,
        speakers: &[super::speaker::SpeakerId],
        withheld: &Withheld,
    ) -> Option<String> {
        self.features.facts.enabled.then(|| {
            self.facts
                .render_without(self.persona.style.language, speakers, |fact| {
                    withheld.hides_fact(fact)
                })
        })
    }

    pub(crate) fn summary_source(&self) -> SummarySource<'_> {
        if self.features.segments.enabled {
            SummarySource::Segments(self.segments.list())
        } else if self.features.any() {
            SummarySource::Rolling(&self.summary)
        } else {
            SummarySource::Labelled(&self.summary)
        }
    }

    /// Whether a layered prompt sends `log` whole ([`ShortLogs::SentWhole`]): the
    /// persona, `facts` and every message fit [`Self::whole_log_limit`].
    pub(crate) fn sends_whole_log(&self, log: &ChatLog, facts: Option<&str>) -> bool {
        self.whole_log_limit()
            .is_some_and(|limit| whole_log_fits(log, (&self.persona, &self.dates), facts, limit))
    }

    /// The most tokens a log is sent whole at, if it is sent whole at all: the
    /// budget, and while no fold has covered any of the log, [`WHOLE_LOG_GROWTH`]
    /// of the follow-ups' growth past it. Until then a fold would only repeat
    /// what the prompt holds; after it the prompt is layered within the budget.
    pub(crate) fn whole_log_limit(&self) -> Option<usize> {
        let before_folds = self.whole_log_limit_before_folds()?;
        // Sent whole at all means there is a budget.
        let max = self.features.budget.max_tokens?;
        Some(if self.covered_until > 0 {
            max
        } else {
            before_folds
        })
    }

    fn whole_log_limit_before_folds(&self) -> Option<usize> {
        let budget = &self.features.budget;
        let max = budget
            .max_tokens
            .filter(|_| self.features.any() && budget.short_logs == ShortLogs::SentWhole)?;
        let growth = budget.follow_up_cap().unwrap_or(max).saturating_sub(max);
        Some(max + (growth as f64 * WHOLE_LOG_GROWTH) as usize)
    }

    /// Whether the window's hard cap waits: the next prompt will still hold the
    /// whole log (it is sent whole, or the conversation extends a prompt that
    /// holds it within the follow-ups' cap), so nothing the cap would drop
    /// leaves the prompt; or the first folds are still covering what was sent
    /// whole before them, which they will cover in a moment.
    pub(crate) fn hard_cap_waits(&self, log: &ChatLog, facts: Option<&str>) -> bool {
        let speaker = (&self.persona, &self.dates);
        let cap = self.features.budget.follow_up_cap();
        let extends_whole = || {
            self.whole_log_limit().is_some()
                && self.conversation.holds_whole_log()
                && cap.is_some_and(|cap| whole_log_fits(log, speaker, facts, cap))
        };
        let folding_what_was_whole = || {
            self.whole_log_limit_before_folds().is_some_and(|limit| {
                self.covered_until < whole_log_prefix(log, speaker, facts, limit)
            })
        };
        self.sends_whole_log(log, facts) || extends_whole() || folding_what_was_whole()
    }

    /// Whether a summary would be due for a log of `log_len` messages. While the
    /// log is sent whole, folds wait: a summary would only repeat it. With
    /// follow-ups, the conversation's prompt goes on holding the whole log past
    /// that point, which gives the folds their lead; without them the next
    /// prompt is layered at once, so folds also start once the messages no
    /// summary covers come within a threshold of the window's `hard_cap`.
    pub(crate) fn due(
        &self,
        log_len: LogIndex,
        whole_log_sent: bool,
        hard_cap: usize,
    ) -> Option<SummaryTrigger> {
        if self.in_flight.is_some() {
            return None;
        }
        let uncovered = log_len > self.covered_until;
        if self.manual_requested && uncovered {
            return Some(SummaryTrigger::Manual);
        }
        // Compaction goes first: folding more in would only widen the overshoot.
        if self.compaction_due() && log_len >= self.retry_after {
            return Some(SummaryTrigger::Compaction);
        }
        if !uncovered {
            return None;
        }
        let pending = log_len - self.covered_until;
        let threshold = self.threshold as LogIndex;
        let near_cap = self.features.budget.follow_up_cap().is_none()
            && pending.saturating_add(threshold) >= hard_cap as LogIndex;
        (pending >= threshold && log_len >= self.retry_after && (!whole_log_sent || near_cap))
            .then_some(SummaryTrigger::Threshold)
    }

    /// The segment budget in force, if segments are compacted at all.
    fn segment_limit(&self) -> Option<usize> {
        let segments = &self.features.segments;
        segments.compact_above_tokens.or_else(|| {
            let budget = &self.features.budget;
            budget
                .max_tokens
                .map(|max| (max as f64 * f64::from(budget.shares.summaries.max(0.0))) as usize)
        })
    }

    /// Whether old segments should be compacted before more are added. Over the
    /// limit, a compaction waits for a whole batch of segments older than the
    /// newest, unless they reach [`COMPACT_ANYWAY`] times the limit: merging two
    /// as soon as the limit is passed ran about one compaction per fold, each a
    /// request and each a lossy pass over what it merges.
    pub(crate) fn compaction_due(&self) -> bool {
        let segments = &self.features.segments;
        let batch = segments.compact_batch.max(2);
        let candidates = self.segments.compaction_candidates(batch);
        let Some(candidates) = candidates.filter(|_| segments.enabled) else {
            return false;
        };
        let tokens = self.segments.tokens();
        self.forgetting_compaction
            || self.segment_limit().is_some_and(|limit| {
                let whole_batch =
                    candidates.len() >= batch && candidates.end < self.segments.list().len();
                tokens > limit && (whole_batch || tokens > limit.saturating_mul(COMPACT_ANYWAY))
            })
    }

    /// Checks a model's summary and returns it cleaned, or why it is unusable.
    pub(crate) fn validate(&self, raw: &str) -> Result<Arc<str>, String> {
        let text = raw.trim();
        if text.is_empty() {
            return Err("the summary was empty".into());
        }
        let chars = text.chars().count();
        if chars > self.max_summary_chars {
            return Err(format!(
                "the summary was {chars} characters, over the limit of {}",
                self.max_summary_chars
            ));
        }
        if self.features.any() {
            // Quoted whole wherever it is placed, so its lines are data already.
            return Ok(Arc::from(text));
        }
        Ok(Arc::from(super::assembly::neutralize_summary(
            text,
            &self.persona,
        )))
    }
}
