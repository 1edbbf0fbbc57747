//! The one place where the three layers change together.
//!
//! Data flows one way: a message enters L2, the window (L1) trims, a summary job
//! may start (L3), and a finished summary rewrites the system prompt that L1 sends.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use super::assembly::{AssembledPrompt, AssemblyInput, assemble};
use super::chat_log::ChatLog;
use super::config::MemoryConfig;
use super::context::{
    ContextMemory, Degradation, InFlight, SUMMARY_ATTEMPTS, SummaryJobId, SummaryKind,
    SummaryRecord, SummaryTrigger, transcript,
};
use super::facts::{
    FactChange, FactKey, FactUpdate, FactsError, facts_instruction, indexed_transcript,
    parse_summary_reply,
};
use super::forgetting::{ForgettingReport, MessageFacts};
use super::message::{ChatMessage, LogIndex, PromptMessage, Role};
use super::persona::PersonaPrompt;
use super::recall::RecallQuery;
use super::segments::{SegmentPriority, SummarySegment};
use super::window::RollingWindow;

/// Under a prompt budget, recall fetches one candidate per this many budget tokens
/// (a short chat line with its framing), so the recall share can be filled.
const BUDGET_TOKENS_PER_CANDIDATE: usize = 16;

/// All three layers of one NPC, owned. Engine-agnostic code (benchmarks, tools, other
/// engines) uses this; the Bevy plugin keeps each layer in its own resource instead.
#[derive(Clone, Debug, PartialEq)]
pub struct NpcMemory {
    /// L2, the full chat log.
    pub log: ChatLog,
    /// L1, the rolling window.
    pub window: RollingWindow,
    /// L3, the context memory.
    pub context: ContextMemory,
}

impl NpcMemory {
    /// An empty memory for a persona.
    pub fn new(persona: PersonaPrompt, config: &MemoryConfig) -> Self {
        let mut context = ContextMemory::new(persona, config.threshold(), config.max_summary_chars);
        context.features = config.features.clone();
        context.facts.set_limits(config.features.facts.limits());
        let window = RollingWindow::new(config.window(), config.hard_cap());
        Self {
            log: ChatLog::new(),
            window,
            context,
        }
    }

    /// The layers, borrowed together so the pipeline can change them.
    pub fn layers(&mut self) -> LayersMut<'_> {
        LayersMut {
            log: &mut self.log,
            window: &mut self.window,
            context: &mut self.context,
        }
    }
}

/// The three layers of one NPC, borrowed together. Every change to memory goes
/// through these methods, so the layers never disagree.
pub struct LayersMut<'a> {
    /// L2, the full chat log.
    pub log: &'a mut ChatLog,
    /// L1, the rolling window.
    pub window: &'a mut RollingWindow,
    /// L3, the context memory.
    pub context: &'a mut ContextMemory,
}

/// What recording a message did.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// The new message's index in the log.
    pub index: LogIndex,
    /// Set when the window hit its hard cap and uncovered messages left the prompt.
    pub overflow: Option<Degradation>,
}

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
    /// Whether the reply must be the JSON object with fact updates (see
    /// [`parse_summary_reply`](crate::memory::parse_summary_reply)).
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

impl LayersMut<'_> {
    /// Appends a player or NPC message to the log and trims the window.
    pub fn record(&mut self, role: Role, content: impl Into<Arc<str>>, timestamp: f64) -> Recorded {
        let index = self.log.append(role, content, timestamp);
        self.sync_recall();
        let overflow = self.trim();
        Recorded { index, overflow }
    }

    /// The messages a reply request sends. With the seed's design: the system prompt,
    /// then the window. With more features on: the assembled prompt (see
    /// [`assemble`](Self::assemble)).
    pub fn reply_prompt(&mut self) -> Vec<PromptMessage> {
        self.assemble().messages.clone()
    }

    /// Builds the reply prompt from its sections within the budget, recalling old
    /// messages for the newest player line, and remembers how it was built.
    pub fn assemble(&mut self) -> Arc<AssembledPrompt> {
        let window = self.window.start()..self.log.next_index();
        let recalled = self.recall_for_reply(window);
        let prompt = Arc::new(build_prompt(self.log, self.window, self.context, recalled));
        self.context.last_prompt = Some(prompt.clone());
        prompt
    }

    fn recall_for_reply(&mut self, window: Range<LogIndex>) -> Vec<super::recall::RecallHit> {
        let config = &self.context.features.recall;
        if !config.enabled {
            return Vec::new();
        }
        let messages = self.log.messages();
        let Some(line) = messages.last().filter(|m| m.role == Role::User) else {
            return Vec::new();
        };
        let recent = self.log.range(window.clone());
        let mut context: Vec<&str> = recent
            .iter()
            .rev()
            .skip(1)
            .take(config.context_messages)
            .map(|m| &*m.content)
            .collect();
        context.reverse();
        let query = RecallQuery {
            line: &line.content,
            context: &context,
            exclude: window,
            line_index: Some(line.index),
            now: line.timestamp,
        };
        // Under a budget, fetch enough candidates to fill the recall share; the
        // assembly keeps the best that fit.
        let mut config = config.clone();
        if let Some(budget) = self.context.features.budget.max_tokens {
            config.max_messages = config
                .max_messages
                .max(budget / BUDGET_TOKENS_PER_CANDIDATE);
        }
        self.context.recall.query(&query, messages, &config)
    }

    /// Sets a pinned fact as the game's word, which the model cannot override.
    /// Fails (changing nothing) on an empty or over-long value or a full store.
    pub fn set_fact(
        &mut self,
        key: FactKey,
        value: &str,
        evidence: Vec<LogIndex>,
    ) -> Result<FactChange, FactsError> {
        if let Some(&index) = evidence.iter().find(|&&i| i >= self.log.next_index()) {
            return Err(FactsError::EvidenceOutOfRange {
                key: key.to_string(),
                index,
                covered: 0..self.log.next_index(),
            });
        }
        let now = self.now();
        let change = self.context.facts.set_by_game(key, value, now, evidence)?;
        Ok(change)
    }

    /// Removes a pinned fact (it is kept in the fact's history as outdated).
    pub fn remove_fact(&mut self, key: &FactKey) {
        let now = self.now();
        self.context.facts.remove_by_game(key, now);
    }

    fn now(&self) -> f64 {
        self.log.messages().last().map_or(0.0, |m| m.timestamp)
    }

    /// Keeps the recall index level with the log (also after recall is switched on).
    fn sync_recall(&mut self) {
        if !self.context.features.recall.enabled {
            return;
        }
        let indexed = self.context.recall.len();
        for message in self.log.messages().iter().skip(indexed) {
            self.context.recall.add(message);
        }
    }

    /// Asks for a summary of everything uncovered, whatever the threshold says.
    pub fn request_summary(&mut self) {
        self.context.manual_requested = true;
    }

    /// Starts a summary if one is due and none is in flight.
    pub fn start_summary(&mut self) -> Option<SummaryJob> {
        let trigger = self.context.due(self.log.next_index())?;
        let (kind, covered) = if trigger == SummaryTrigger::Compaction {
            let batch = self.context.features.segments.compact_batch;
            let positions = self.context.segments.compaction_candidates(batch)?;
            let list = &self.context.segments.list()[positions.clone()];
            let covered = list[0].covered.start..list[list.len() - 1].covered.end;
            (
                SummaryKind::Compact {
                    segments: positions,
                },
                covered,
            )
        } else {
            self.context.manual_requested = false;
            let start = self.context.covered_until;
            let end = self
                .log
                .next_index()
                .min(start.saturating_add(self.window.hard_cap() as LogIndex));
            (SummaryKind::Fold, start..end)
        };
        let id = SummaryJobId(self.context.next_job);
        self.context.next_job += 1;
        self.context.in_flight = Some(InFlight {
            id,
            kind,
            covered,
            attempt: 1,
            trigger,
            latency: Duration::ZERO,
        });
        Some(self.job_for_in_flight())
    }

    /// Applies a summary result: the model's text, or why the request failed.
    pub fn finish_summary(
        &mut self,
        id: SummaryJobId,
        result: Result<&str, String>,
        latency: Duration,
    ) -> SummaryOutcome {
        let wants_facts = self.context.features.facts.enabled;
        let Some(job) = self.context.in_flight.as_mut().filter(|job| job.id == id) else {
            return SummaryOutcome::Stale;
        };
        job.latency += latency;
        let wants_facts = wants_facts && job.kind == SummaryKind::Fold;
        let covered = job.covered.clone();
        let context = &*self.context;
        let checked = result.and_then(|raw| {
            let (summary, updates) = if wants_facts {
                let reply = parse_summary_reply(raw, covered, &context.features.facts)
                    .map_err(|why| format!("malformed summary: {why}"))?;
                (reply.summary, reply.updates)
            } else {
                (raw.to_owned(), Vec::new())
            };
            let summary = context
                .validate(&summary)
                .map_err(|why| format!("malformed summary: {why}"))?;
            Ok((summary, updates))
        });
        match checked {
            Ok((summary, updates)) => SummaryOutcome::Updated(self.accept(summary, &updates)),
            Err(reason) => self.fail(reason),
        }
    }

    /// Replaces the persona, keeping the summary, and rewrites the system prompt.
    pub fn set_persona(&mut self, persona: PersonaPrompt) {
        self.context.persona = persona;
    }

    /// Applies a new window size and threshold. The window trims at once if it
    /// shrank; uncovered messages still stay.
    pub fn reconfigure(&mut self, config: &MemoryConfig) -> Option<Degradation> {
        self.window.resize(config.window(), config.hard_cap());
        self.context.threshold = config.threshold();
        self.context.max_summary_chars = config.max_summary_chars;
        self.context.features = config.features.clone();
        self.context
            .facts
            .set_limits(config.features.facts.limits());
        self.sync_recall();
        self.trim()
    }

    /// Forgets everything but the persona and the configuration.
    pub fn clear(&mut self) {
        *self.log = ChatLog::new();
        let persona = self.context.persona.clone();
        let features = std::mem::take(&mut self.context.features);
        *self.context = ContextMemory::new(
            persona,
            self.context.threshold,
            self.context.max_summary_chars,
        );
        self.context.features = features;
        self.window.reset(0);
    }

    fn trim(&mut self) -> Option<Degradation> {
        let dropped = self.window.trim(self.log, self.context.covered_until)?;
        let degradation = Degradation::WindowOverflow { dropped };
        self.context.degradations.push(degradation.clone());
        Some(degradation)
    }

    fn accept(&mut self, summary: Arc<str>, updates: &[FactUpdate]) -> SummaryUpdate {
        let job = self
            .context
            .in_flight
            .take()
            .expect("accept runs on a job in flight");
        let old = std::mem::replace(&mut self.context.summary, summary.clone());
        match &job.kind {
            SummaryKind::Compact { segments } => {
                self.context
                    .segments
                    .replace(segments.clone(), &job.covered, summary.clone());
                self.context.forgetting_compaction = false;
                // The newest text of a segmented memory is its newest segment.
                if let Some(newest) = self.context.segments.list().last() {
                    self.context.summary = newest.text.clone();
                }
            }
            SummaryKind::Fold => {
                self.context.covered_until = job.covered.end;
                if self.context.features.segments.enabled {
                    let messages = self.log.range(job.covered.clone());
                    self.context.segments.push(SummarySegment {
                        covered: job.covered.clone(),
                        text: summary.clone(),
                        level: 0,
                        priority: SegmentPriority::Normal,
                        from_time: messages.first().map_or(0.0, |m| m.timestamp),
                        to_time: messages.last().map_or(0.0, |m| m.timestamp),
                    });
                }
            }
        }
        self.context.retry_after = 0;
        let now = self.now();
        let fact_changes = self.context.facts.apply_model_updates(updates, now);
        let facts = &self.context.facts;
        self.context
            .segments
            .raise_priority(|covered| facts.has_evidence_in(covered.clone()));
        let forgotten = self.forget();
        self.context.history.push(SummaryRecord {
            covered: job.covered.clone(),
            summary: summary.clone(),
            trigger: job.trigger,
            latency: job.latency,
            attempts: job.attempt,
        });
        // More messages are covered now, so the window may shrink back; it cannot
        // overflow, because covering messages only frees room.
        let _ = self.trim();
        SummaryUpdate {
            old,
            new: summary,
            covered: job.covered,
            latency: job.latency,
            attempts: job.attempt,
            trigger: job.trigger,
            fact_changes,
            forgotten,
        }
    }

    /// Runs the forgetting policy and applies what it decided.
    fn forget(&mut self) -> ForgettingReport {
        let context = &*self.context;
        let recall = &context.recall;
        let facts = &context.facts;
        let access = |index| recall.access_count(index);
        let forgotten = |index| recall.is_forgotten(index);
        let evidence = |index| facts.is_evidence(index);
        let report = context.features.forgetting.sweep(
            self.log.messages(),
            context.covered_until,
            &context.segments,
            &MessageFacts {
                access_count: &access,
                is_forgotten: &forgotten,
                is_evidence: &evidence,
            },
        );
        for &index in &report.forgotten_messages {
            self.context.recall.forget(index);
        }
        for covered in &report.dropped_segments {
            let segments = &mut self.context.segments;
            if let Some(position) = segments.list().iter().position(|s| &s.covered == covered) {
                segments.remove(position);
            }
        }
        self.context.forgetting_compaction = report.compaction_due;
        report
    }

    fn wants_facts(&self, kind: &SummaryKind) -> bool {
        self.context.features.facts.enabled && *kind == SummaryKind::Fold
    }

    fn fail(&mut self, reason: String) -> SummaryOutcome {
        let job = self
            .context
            .in_flight
            .as_mut()
            .expect("fail runs on a job in flight");
        if job.attempt < SUMMARY_ATTEMPTS {
            job.attempt += 1;
            return SummaryOutcome::Retry(self.job_for_in_flight());
        }
        let job = self.context.in_flight.take().expect("checked above");
        // Wait for another threshold's worth of messages before trying again, so a
        // dead backend is not hit on every line.
        self.context.retry_after = self
            .log
            .next_index()
            .saturating_add(self.context.threshold as LogIndex);
        let mut degradation = Degradation::SummaryFailed {
            range: job.covered,
            attempts: job.attempt,
            reason,
        };
        degradation.shorten_reason();
        self.context.degradations.push(degradation.clone());
        SummaryOutcome::Degraded(degradation)
    }

    fn job_for_in_flight(&self) -> SummaryJob {
        let job = self.context.in_flight.as_ref().expect("a job is in flight");
        let persona = &self.context.persona;
        let style = &persona.style;
        let wants_facts = self.wants_facts(&job.kind);
        let (messages, segments) = match &job.kind {
            SummaryKind::Compact { segments } => {
                let texts: Vec<Arc<str>> = self.context.segments.list()[segments.clone()]
                    .iter()
                    .map(|s| s.text.clone())
                    .collect();
                (&[][..], texts)
            }
            SummaryKind::Fold => (self.log.range(job.covered.clone()), Vec::new()),
        };
        let (instruction, body) = match &job.kind {
            SummaryKind::Compact { .. } => {
                let mut body = style.segments_heading().to_owned();
                for text in &segments {
                    body.push_str("\n- ");
                    body.push_str(text);
                }
                (style.compaction_instruction().to_owned(), body)
            }
            SummaryKind::Fold if self.context.features.segments.enabled => (
                style.segment_instruction().to_owned(),
                format!(
                    "{}\n{}",
                    style.transcript_heading,
                    numbered_transcript(persona, messages, wants_facts)
                ),
            ),
            SummaryKind::Fold => {
                let previous = if self.context.summary.is_empty() {
                    style.no_previous.as_str()
                } else {
                    &self.context.summary
                };
                let body = format!(
                    "{}\n{}\n\n{}\n{}",
                    style.previous_heading,
                    previous,
                    style.transcript_heading,
                    numbered_transcript(persona, messages, wants_facts)
                );
                (style.instruction.clone(), body)
            }
        };
        let instruction = if wants_facts {
            format!("{instruction}\n\n{}", facts_instruction(style.language))
        } else {
            instruction
        };
        SummaryJob {
            id: job.id,
            kind: job.kind.clone(),
            covered: job.covered.clone(),
            attempt: job.attempt,
            trigger: job.trigger,
            messages: vec![
                PromptMessage::new(Role::System, instruction),
                PromptMessage::new(Role::User, body),
            ],
            input: SummaryInput {
                // A segment stands alone, so it is written without the previous one.
                previous_summary: if self.context.features.segments.enabled {
                    Arc::from("")
                } else {
                    self.context.summary.clone()
                },
                transcript: messages.to_vec(),
                player_name: style.player_name.clone(),
                npc_name: persona.name.clone(),
                segments,
                wants_facts,
                covered: job.covered.clone(),
            },
        }
    }
}

/// The transcript; numbered (and one line per message) when the model must cite
/// evidence for fact updates.
fn numbered_transcript(
    persona: &PersonaPrompt,
    messages: &[ChatMessage],
    numbered: bool,
) -> String {
    if numbered {
        indexed_transcript(messages, &persona.style.player_name, &persona.name)
    } else {
        transcript(persona, messages)
    }
}

/// The prompt the next reply would send, from the same builder as every reply, but
/// without recalled lines: recall needs the player's next line, and a query would
/// count as a recall. In basic mode it is exactly the next reply's prompt minus that
/// line. For debug views and tools; it changes nothing.
pub fn preview_prompt(
    log: &ChatLog,
    window: &RollingWindow,
    context: &ContextMemory,
) -> AssembledPrompt {
    build_prompt(log, window, context, Vec::new())
}

/// The one place a reply prompt is built from the layers.
fn build_prompt(
    log: &ChatLog,
    window: &RollingWindow,
    context: &ContextMemory,
    recalled: Vec<super::recall::RecallHit>,
) -> AssembledPrompt {
    assemble(AssemblyInput {
        persona: &context.persona,
        facts: context.facts_section(),
        summaries: context.summary_source(),
        recalled,
        log,
        window: window.start()..log.next_index(),
        covered_until: context.covered_until,
        budget: &context.features.budget,
    })
}
