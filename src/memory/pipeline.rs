//! The one place where the three layers change together.
//!
//! Data flows one way: a message enters L2, the window (L1) trims, a summary job
//! may start (L3), and a finished summary rewrites the system prompt that L1 sends.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use super::chat_log::ChatLog;
use super::config::MemoryConfig;
use super::context::{
    ContextMemory, Degradation, InFlight, PersonaPrompt, SummaryJobId, SummaryRecord,
    SummaryTrigger, transcript,
};
use super::message::{ChatMessage, LogIndex, PromptMessage, Role};
use super::window::RollingWindow;

/// Requests per summary before it degrades: the first try and one retry.
pub const SUMMARY_ATTEMPTS: u32 = 2;

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
        let context = ContextMemory::new(persona, config.threshold(), config.max_summary_chars);
        let window =
            RollingWindow::new(context.system_prompt(), config.window(), config.hard_cap());
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
        let overflow = self.trim();
        Recorded { index, overflow }
    }

    /// The messages a reply request sends: system prompt, then the window.
    pub fn reply_prompt(&self) -> Vec<PromptMessage> {
        self.window.prompt(self.log)
    }

    /// Asks for a summary of everything uncovered, whatever the threshold says.
    pub fn request_summary(&mut self) {
        self.context.manual_requested = true;
    }

    /// Starts a summary if one is due and none is in flight.
    pub fn start_summary(&mut self) -> Option<SummaryJob> {
        let trigger = self.context.due(self.log.next_index())?;
        self.context.manual_requested = false;
        let start = self.context.covered_until;
        let end = self
            .log
            .next_index()
            .min(start + self.window.hard_cap() as LogIndex);
        let id = SummaryJobId(self.context.next_job);
        self.context.next_job += 1;
        self.context.in_flight = Some(InFlight {
            id,
            covered: start..end,
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
        let Some(job) = self.context.in_flight.as_mut().filter(|job| job.id == id) else {
            return SummaryOutcome::Stale;
        };
        job.latency += latency;
        let checked = result.and_then(|raw| {
            self.context
                .validate(raw)
                .map_err(|why| format!("malformed summary: {why}"))
        });
        match checked {
            Ok(summary) => SummaryOutcome::Updated(self.accept(summary)),
            Err(reason) => self.fail(reason),
        }
    }

    /// Replaces the persona, keeping the summary, and rewrites the system prompt.
    pub fn set_persona(&mut self, persona: PersonaPrompt) {
        self.context.persona = persona;
        self.window.set_system_prompt(self.context.system_prompt());
    }

    /// Applies a new window size and threshold. The window trims at once if it
    /// shrank; uncovered messages still stay.
    pub fn reconfigure(&mut self, config: &MemoryConfig) -> Option<Degradation> {
        self.window.resize(config.window(), config.hard_cap());
        self.context.threshold = config.threshold();
        self.context.max_summary_chars = config.max_summary_chars;
        self.trim()
    }

    /// Forgets everything but the persona and the configuration.
    pub fn clear(&mut self) {
        *self.log = ChatLog::new();
        let persona = self.context.persona.clone();
        *self.context = ContextMemory::new(
            persona,
            self.context.threshold,
            self.context.max_summary_chars,
        );
        self.window.reset(0);
        self.window.set_system_prompt(self.context.system_prompt());
    }

    fn trim(&mut self) -> Option<Degradation> {
        let dropped = self.window.trim(self.log, self.context.covered_until)?;
        let degradation = Degradation::WindowOverflow { dropped };
        self.context.degradations.push(degradation.clone());
        Some(degradation)
    }

    fn accept(&mut self, summary: Arc<str>) -> SummaryUpdate {
        let job = self
            .context
            .in_flight
            .take()
            .expect("accept runs on a job in flight");
        let old = std::mem::replace(&mut self.context.summary, summary.clone());
        self.context.covered_until = job.covered.end;
        self.context.retry_after = 0;
        self.context.history.push(SummaryRecord {
            covered: job.covered.clone(),
            summary: summary.clone(),
            trigger: job.trigger,
            latency: job.latency,
            attempts: job.attempt,
        });
        self.window.set_system_prompt(self.context.system_prompt());
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
        }
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
        self.context.retry_after = self.log.next_index() + self.context.threshold as LogIndex;
        let degradation = Degradation::SummaryFailed {
            range: job.covered,
            attempts: job.attempt,
            reason,
        };
        self.context.degradations.push(degradation.clone());
        SummaryOutcome::Degraded(degradation)
    }

    fn job_for_in_flight(&self) -> SummaryJob {
        let job = self.context.in_flight.as_ref().expect("a job is in flight");
        let persona = &self.context.persona;
        let style = &persona.style;
        let messages = self.log.range(job.covered.clone());
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
            transcript(persona, messages)
        );
        SummaryJob {
            id: job.id,
            covered: job.covered.clone(),
            attempt: job.attempt,
            trigger: job.trigger,
            messages: vec![
                PromptMessage::new(Role::System, style.instruction.as_str()),
                PromptMessage::new(Role::User, body),
            ],
            input: SummaryInput {
                previous_summary: self.context.summary.clone(),
                transcript: messages.to_vec(),
                player_name: style.player_name.clone(),
                npc_name: persona.name.clone(),
            },
        }
    }
}
