//! One NPC's memory: the three layers owned together ([`NpcMemory`]) or borrowed
//! together ([`LayersMut`]), and the one call per event that changes them.
//!
//! Data flows one way: a player line enters L2 and L1 trims ([`LayersMut::say`]),
//! the reply is recorded the same way ([`LayersMut::reply`]), a summary job may
//! start, and a finished summary ([`LayersMut::finish_summary`]) rewrites the L3
//! memory the next prompt is built from.

mod actions;
mod fact_gossip;
mod facts;
mod indexing;
mod knowledge;
mod prompt;
mod recording;
mod summaries;

pub use actions::{ActionRecord, ActionsRecorded};
pub use fact_gossip::ToldFact;
pub use knowledge::{MAX_TOLD_PER_QUERY, Noted, Told};
pub use prompt::preview_prompt;

use std::sync::Arc;

use super::clock::{DateFormat, Now};
use super::config::MemoryConfig;
use super::context::{ContextMemory, Degradation};
use super::forgetting::{ForgettingReport, MessageFacts};
use super::line::Line;
use super::log::ChatLog;
use super::lore::SharedKnowledge;
use super::message::{LogIndex, PromptMessage, Role};
use super::origin::Origin;
use super::persona::PersonaPrompt;
use super::privacy::{Withheld, newest_line_to_npc};
use super::summary::SummaryJob;
use super::window::RollingWindow;

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

    /// The layers, borrowed together to change them.
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
    pub(crate) log: &'a mut ChatLog,
    pub(crate) window: &'a mut RollingWindow,
    pub(crate) context: &'a mut ContextMemory,
}

/// What recording a message did.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// The new message's index in the log.
    pub index: LogIndex,
    /// Set when the window hit its hard cap and uncovered messages left the prompt.
    pub overflow: Option<Degradation>,
}

/// The parts of a reply request, for backends that answer without a model.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplyInput {
    /// The NPC's display name.
    pub npc_name: String,
    /// The summary the prompt holds, empty before the first one.
    pub summary: Arc<str>,
}

/// What a player line led to ([`LayersMut::say`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Turn {
    /// The line's index in the log.
    pub index: LogIndex,
    /// Set when the window hit its hard cap and uncovered messages left the prompt.
    pub overflow: Option<Degradation>,
    /// The reply request to send: exactly these messages.
    pub messages: Vec<PromptMessage>,
    /// The same request's parts, for backends that answer without a model.
    pub reply: ReplyInput,
    /// A summary that became due, to send as well.
    pub summary: Option<SummaryJob>,
}

/// What the NPC's reply led to ([`LayersMut::reply`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ReplyRecorded {
    /// The reply's index in the log.
    pub index: LogIndex,
    /// Set when the window hit its hard cap and uncovered messages left the prompt.
    pub overflow: Option<Degradation>,
    /// A summary that became due, to send.
    pub summary: Option<SummaryJob>,
}

/// What a new configuration led to ([`LayersMut::reconfigure`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Reconfigured {
    /// Set when the window shrank past its hard cap with uncovered messages in it.
    pub overflow: Option<Degradation>,
    /// A summary that a lower threshold made due.
    pub summary: Option<SummaryJob>,
}

impl LayersMut<'_> {
    /// L2, the full chat log.
    pub fn log(&self) -> &ChatLog {
        self.log
    }

    /// L1, the rolling window.
    pub fn window(&self) -> &RollingWindow {
        self.window
    }

    /// L3, the context memory.
    pub fn context(&self) -> &ContextMemory {
        self.context
    }

    /// A line is said: it enters the log and the window, the reply prompt is
    /// built (recalling old lines for it when recall is on), and a summary starts
    /// if one is due. Send [`Turn::messages`], and [`Turn::summary`] if set; call
    /// [`reply`](Self::reply) with the answer.
    ///
    /// `line` is plain text for a line from the player, or a [`Line`] that also
    /// says who speaks, whether it is private, and the lore found for it.
    /// `now` is the game time, a number of seconds or a [`Now`] that also says how
    /// the prompt writes dates. The line is stamped no earlier than the log's newest
    /// message (see [`record`](Self::record)).
    pub fn say(&mut self, line: impl Into<Line>, now: impl Into<Now>) -> Turn {
        let (recorded, knowledge) = self.record_line(line.into(), now.into());
        self.turn(recorded, &knowledge)
    }

    /// A line said where the NPC hears it but does not answer it now: another
    /// NPC's line in a conversation the NPC takes part in, or the player's words to
    /// another participant. It enters the log and the window as a line with its
    /// speaker, as [`say`](Self::say) records it (privacy included; the lore of
    /// `line` is not used), is summarized and recalled, and a summary starts if
    /// one is due. No reply request is built.
    pub fn listen(&mut self, line: impl Into<Line>, now: impl Into<Now>) -> Noted {
        let (recorded, _) = self.record_line(line.into(), now.into());
        Noted {
            index: recorded.index,
            overflow: recorded.overflow,
            summary: self.start_summary(),
        }
    }

    /// A line enters the log with its speaker and privacy; its lore comes back.
    fn record_line(&mut self, line: Line, now: Now) -> (Recorded, SharedKnowledge) {
        let Line {
            text,
            speaker,
            private,
            knowledge,
        } = line;
        self.context.dates = now.format;
        let origin = if private {
            Origin::SaidPrivately
        } else {
            Origin::Said
        };
        let speaker = (!speaker.is_player()).then_some(speaker);
        let recorded = self.record_by(Role::User, text, now.seconds, origin, speaker);
        (recorded, knowledge)
    }

    /// The reply request for a player line just recorded.
    fn turn(&mut self, recorded: Recorded, knowledge: &SharedKnowledge) -> Turn {
        let (messages, reply) = self.reply_request(knowledge);
        Turn {
            index: recorded.index,
            overflow: recorded.overflow,
            messages,
            reply,
            summary: self.start_summary(),
        }
    }

    /// The NPC answered with `text`: it enters the log and the window, and a
    /// summary starts if one is due. `now` is as for [`say`](Self::say).
    pub fn reply(&mut self, text: impl Into<Arc<str>>, now: impl Into<Now>) -> ReplyRecorded {
        let origin = self.reply_origin();
        self.own_line(text, now.into(), origin)
    }

    /// The NPC says `text` of its own accord, answering no one (the opening line
    /// of a conversation, as the game wrote it): it enters the log and the window
    /// as the NPC's line, said in the open, and a summary starts if one is due.
    pub fn speak(&mut self, text: impl Into<Arc<str>>, now: impl Into<Now>) -> ReplyRecorded {
        self.own_line(text, now.into(), Origin::Said)
    }

    fn own_line(&mut self, text: impl Into<Arc<str>>, now: Now, origin: Origin) -> ReplyRecorded {
        self.context.dates = now.format;
        let recorded = self.record_from(Role::Assistant, text, now.seconds, origin);
        ReplyRecorded {
            index: recorded.index,
            overflow: recorded.overflow,
            summary: self.start_summary(),
        }
    }

    /// A reply to a private line may repeat it, so it is as private as the line:
    /// the one its prompt answered, though another NPC may have spoken since; the
    /// newest line to the NPC when no prompt was built for it.
    fn reply_origin(&mut self) -> Origin {
        let log = &self.log;
        let answered = self
            .context
            .answering
            .take()
            .and_then(|index| log.get(index))
            .filter(|m| knowledge::is_line_to_npc(m));
        let line = answered.or_else(|| newest_line_to_npc(log));
        match line {
            Some(line) if line.origin == Origin::SaidPrivately => Origin::SaidPrivately,
            _ => Origin::Said,
        }
    }

    /// Summarizes everything uncovered now, whatever the threshold says: the job to
    /// send, unless one is in flight (the request is remembered for after it).
    pub fn summarize_now(&mut self) -> Option<SummaryJob> {
        self.request_summary();
        self.start_summary()
    }

    /// Appends a player or NPC message to the log and trims the window. For tools
    /// that replay a log; a game goes through [`say`](Self::say) and
    /// [`reply`](Self::reply), which also start summaries.
    ///
    /// The message is stamped `max(timestamp, newest stamp in the log)`: a game may
    /// wind its clock back (a loaded checkpoint, a calendar that restarts), but the
    /// log stays in time order, so recall never takes an old line for a new one and
    /// prompt dates never run backwards. A `timestamp` that is not a finite number
    /// counts as the newest stamp.
    pub fn record(&mut self, role: Role, content: impl Into<Arc<str>>, timestamp: f64) -> Recorded {
        self.record_from(role, content, timestamp, Origin::Said)
    }

    /// Sets how prompts write dates until the next event brings its own [`Now`].
    pub fn set_date_format(&mut self, format: DateFormat) {
        self.context.dates = format;
    }

    /// The newest stamp in the log: the memory's own idea of "now" when the caller
    /// gives none (summaries, model-set facts).
    pub(super) fn now(&self) -> f64 {
        self.last_stamp().unwrap_or(0.0)
    }

    fn last_stamp(&self) -> Option<f64> {
        self.log.messages().last().map(|m| m.timestamp)
    }

    /// Replaces the persona, keeping the summary, and rewrites the system prompt.
    pub fn set_persona(&mut self, persona: PersonaPrompt) {
        self.context.persona = persona;
    }

    /// Applies a new window size and threshold. The window trims at once if it
    /// shrank; uncovered messages still stay.
    pub fn reconfigure(&mut self, config: &MemoryConfig) -> Reconfigured {
        self.window.resize(config.window(), config.hard_cap());
        self.context.threshold = config.threshold();
        self.context.max_summary_chars = config.max_summary_chars;
        self.context.features = config.features.clone();
        self.context
            .facts
            .set_limits(config.features.facts.limits());
        self.sync_recall();
        Reconfigured {
            overflow: self.trim(),
            summary: self.start_summary(),
        }
    }

    /// Forgets everything but the persona and the configuration.
    pub fn clear(&mut self) {
        *self.log = ChatLog::new();
        let persona = self.context.persona.clone();
        let features = std::mem::take(&mut self.context.features);
        let dates = std::mem::take(&mut self.context.dates);
        *self.context = ContextMemory::new(
            persona,
            self.context.threshold,
            self.context.max_summary_chars,
        );
        self.context.features = features;
        self.context.dates = dates;
        self.window.reset(0);
    }

    /// Changes where a logged entry came from. Prompts already sent hold the entry
    /// as it was, so the next prompt is built afresh rather than extending them.
    pub(super) fn set_origin(&mut self, index: LogIndex, origin: Origin) -> bool {
        self.context.conversation = Default::default();
        self.log.set_origin(index, origin)
    }

    /// Every pinned fact, whoever may read it: whether the log is sent whole
    /// only decides when folds start and the window's hard cap applies.
    pub(super) fn every_fact(&self) -> Option<String> {
        self.context
            .facts_section(self.log.speakers(), &Withheld::default())
    }

    pub(super) fn trim(&mut self) -> Option<Degradation> {
        let facts = self.every_fact();
        let waits = self.context.hard_cap_waits(self.log, facts.as_deref());
        let dropped = self
            .window
            .trim(self.log, self.context.covered_until, waits)?;
        let degradation = Degradation::WindowOverflow { dropped };
        self.context.degradations.push(degradation.clone());
        Some(degradation)
    }

    /// Runs the forgetting policy and applies what it decided.
    pub(super) fn forget(&mut self) -> ForgettingReport {
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
}
#[cfg(test)]
mod tests;
