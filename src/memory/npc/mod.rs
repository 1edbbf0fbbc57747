//! One NPC's memory: the three layers owned together ([`NpcMemory`]) or borrowed
//! together ([`LayersMut`]), and the one call per event that changes them.
//!
//! Data flows one way: a player line enters L2 and L1 trims ([`LayersMut::say`]),
//! the reply is recorded the same way ([`LayersMut::reply`]), a summary job may
//! start, and a finished summary ([`LayersMut::finish_summary`]) rewrites the L3
//! memory the next prompt is built from.

mod actions;
mod fact_gossip;
mod knowledge;
mod recording;
mod summaries;

pub use actions::{ActionRecord, ActionsRecorded};
pub use fact_gossip::ToldFact;
pub use knowledge::{MAX_TOLD_PER_QUERY, Noted, Told};

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use super::assembly::{
    Afresh, AssembledPrompt, AssemblyInput, Next, SummarySource, assemble, basic_prompt,
    player_label_if_mixed,
};
use super::clock::{DateFormat, Now, stamp};
use super::config::MemoryConfig;
use super::context::{ContextMemory, Degradation};
use super::facts::{FactChange, FactKey, FactsError};
use super::forgetting::{ForgettingReport, MessageFacts};
use super::line::Line;
use super::log::ChatLog;
use super::lore::{LoreHit, SharedKnowledge};
use super::message::{LogIndex, PromptMessage, Role};
use super::origin::Origin;
use super::persona::PersonaPrompt;
use super::privacy::{Withheld, addressee};
use super::recall::RecallQuery;
use super::summary::SummaryJob;
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
        let now = now.into();
        self.context.dates = now.format;
        let origin = self.reply_origin();
        let recorded = self.record_from(Role::Assistant, text, now.seconds, origin);
        ReplyRecorded {
            index: recorded.index,
            overflow: recorded.overflow,
            summary: self.start_summary(),
        }
    }

    /// A reply to a private line may repeat it, so it is as private as the line.
    fn reply_origin(&self) -> Origin {
        match self
            .log
            .messages()
            .iter()
            .rev()
            .find(|m| knowledge::is_line_to_npc(m))
        {
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

    /// The messages a reply request sends. In basic mode: the system prompt,
    /// then the window. With more features on: the assembled prompt (see
    /// [`assemble`](Self::assemble)).
    pub fn reply_prompt(&mut self) -> Vec<PromptMessage> {
        let withheld = Withheld::from(self.log, addressee(self.log));
        self.reply_prompt_with(&SharedKnowledge::default(), &withheld)
    }

    /// The reply request for the newest line: its prompt, and the same request's
    /// parts for backends that answer without a model. Neither holds what the
    /// line's speaker must not read: a summary covering a withheld line is left
    /// out of both.
    fn reply_request(&mut self, knowledge: &SharedKnowledge) -> (Vec<PromptMessage>, ReplyInput) {
        let withheld = Withheld::from(self.log, addressee(self.log));
        let messages = self.reply_prompt_with(knowledge, &withheld);
        let summary = if withheld.any_in(&(0..self.context.covered_until)) {
            Arc::from("")
        } else {
            self.context.summary.clone()
        };
        let reply = ReplyInput {
            npc_name: self.context.persona.name.clone(),
            summary,
        };
        (messages, reply)
    }

    fn reply_prompt_with(
        &mut self,
        knowledge: &SharedKnowledge,
        withheld: &Withheld,
    ) -> Vec<PromptMessage> {
        if !self.context.features.any() && knowledge.is_empty() {
            let context = &mut *self.context;
            // A summary of a withheld line would pass it on in other words.
            let system = if withheld.any_in(&(0..context.covered_until)) {
                Arc::clone(&context.persona.text)
            } else {
                context.composed.get(&context.persona, &context.summary)
            };
            let window = self.log.range(self.window.start()..self.log.next_index());
            let window = withheld.keep(window);
            let labels = player_label_if_mixed(self.log, &context.persona);
            return basic_prompt(system, &window, &context.dates, labels);
        }
        self.assemble_for(knowledge, withheld).messages.clone()
    }

    /// Builds the reply prompt from its sections within the budget, recalling old
    /// messages for the newest player line, and remembers how it was built.
    pub fn assemble(&mut self) -> Arc<AssembledPrompt> {
        self.assemble_with(&SharedKnowledge::default())
    }

    /// [`assemble`](Self::assemble), with `knowledge` (lore) in its own section.
    pub fn assemble_with(&mut self, knowledge: &SharedKnowledge) -> Arc<AssembledPrompt> {
        let withheld = Withheld::from(self.log, addressee(self.log));
        self.assemble_for(knowledge, &withheld)
    }

    /// [`assemble_with`](Self::assemble_with), leaving out what `withheld` names:
    /// what the newest line's speaker must not read.
    fn assemble_for(
        &mut self,
        knowledge: &SharedKnowledge,
        withheld: &Withheld,
    ) -> Arc<AssembledPrompt> {
        let window = self.window.start()..self.log.next_index();
        let recalled = self.recall_for_reply(window);
        let context = &*self.context;
        let next = Next {
            log: self.log,
            persona: &context.persona,
            facts: context.facts_section(self.log.speakers(), withheld),
            addressee: addressee(self.log),
            withheld,
            labels: player_label_if_mixed(self.log, &context.persona),
            dates: &context.dates,
            features: &context.features,
            recalled: &recalled,
            lore: &knowledge.lore,
        };
        let (prompt, fresh) = match context.conversation.extend(&next) {
            Ok(prompt) => (Arc::new(prompt), false),
            Err(afresh) => {
                let prompt = build_prompt(
                    (self.log, self.window, context),
                    (recalled.clone(), &knowledge.lore),
                    withheld,
                    afresh,
                );
                (Arc::new(prompt), true)
            }
        };
        let mut conversation = context.conversation.clone();
        conversation.remember(prompt.clone(), &next);
        // Only what the prompt sends was recalled; what the budget left out was not,
        // and what an earlier line of the conversation recalled counted then.
        let sent: Vec<LogIndex> = prompt.recalled.iter().map(|r| r.index).collect();
        let counted: HashSet<LogIndex> = if fresh {
            HashSet::new()
        } else {
            context
                .last_prompt
                .iter()
                .flat_map(|p| p.recalled.iter().map(|r| r.index))
                .collect()
        };
        self.context.conversation = conversation;
        self.context
            .recall
            .count_access(sent.into_iter().filter(|i| !counted.contains(i)));
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
        // Cloned only when used: the index below is borrowed mutably.
        let own_name = if config.skip_own_name {
            self.context.persona().name.clone()
        } else {
            String::new()
        };
        let query = RecallQuery {
            line: &line.content,
            context: &context,
            exclude: window,
            line_index: Some(line.index),
            now: line.timestamp,
            own_name: &own_name,
        };
        // Under a budget, fetch enough candidates to fill the recall share; the
        // assembly keeps the best that fit.
        let mut config = config.clone();
        if let Some(budget) = self.context.features.budget.max_tokens {
            config.max_messages = config
                .max_messages
                .max(budget / BUDGET_TOKENS_PER_CANDIDATE);
        }
        let mut hits = self.context.recall.candidates(&query, messages, &config);
        // Lore that changed since it was told is no memory worth a line.
        hits.retain(|hit| !self.log.get(hit.index).is_some_and(|m| m.is_retracted()));
        hits
    }

    /// Sets a pinned fact as the game's word, which the model cannot override.
    /// Fails (changing nothing) on an empty or over-long value or a full store.
    pub fn set_fact(
        &mut self,
        key: FactKey,
        value: &str,
        evidence: Vec<LogIndex>,
    ) -> Result<FactChange, FactsError> {
        let now = self.now();
        self.set_fact_at(key, value, evidence, now)
    }

    /// [`set_fact`](Self::set_fact) at game time `now` (seconds): the fact's change
    /// time, never earlier than the log's newest message.
    pub fn set_fact_at(
        &mut self,
        key: FactKey,
        value: &str,
        evidence: Vec<LogIndex>,
        now: f64,
    ) -> Result<FactChange, FactsError> {
        if let Some(&index) = evidence.iter().find(|&&i| i >= self.log.next_index()) {
            return Err(FactsError::EvidenceOutOfRange {
                key: key.to_string(),
                index,
                covered: 0..self.log.next_index(),
            });
        }
        let now = stamp(now, self.last_stamp());
        let change = self.context.facts.set_by_game(key, value, now, evidence)?;
        Ok(change)
    }

    /// Removes a pinned fact (it is kept in the fact's history as outdated).
    pub fn remove_fact(&mut self, key: &FactKey) {
        let now = self.now();
        self.remove_fact_at(key, now);
    }

    /// [`remove_fact`](Self::remove_fact) at game time `now` (seconds), never
    /// earlier than the log's newest message.
    pub fn remove_fact_at(&mut self, key: &FactKey, now: f64) {
        let now = stamp(now, self.last_stamp());
        self.context.facts.remove_by_game(key, now);
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

    /// Keeps the recall index level with the log (also after recall is switched on).
    fn sync_recall(&mut self) {
        let calendar = self.context.features.recall.calendar;
        if !self.context.features.recall.enabled {
            return;
        }
        // Dates are in the postings, so an index read with another calendar is
        // rebuilt; what it learned (forgetting, access counts) is kept.
        if self.context.recall.calendar() != calendar {
            let state = self.context.recall.state();
            self.context.recall =
                super::recall::RecallIndex::from_log_with_calendar(self.log.messages(), calendar);
            self.context.recall.restore_state(&state);
            return;
        }
        let indexed = self.context.recall.len();
        for message in self.log.messages().iter().skip(indexed) {
            self.context.recall.add(message);
        }
    }

    /// Notes on lines of the log, as the summarizer writes them (see
    /// [`LineNote`](super::recall::LineNote)): recall indexes each with the lines
    /// it cites, and no prompt ever shows it. For a game or a tool that has notes
    /// of its own. Notes citing lines past the log's end are dropped. Returns how
    /// many were kept.
    pub fn add_notes(&mut self, notes: impl IntoIterator<Item = super::recall::LineNote>) -> usize {
        let end = self.log.next_index();
        let mut kept = 0;
        for note in notes {
            if note.lines.iter().all(|&line| line < end) && self.context.recall.add_note(note) {
                kept += 1;
            }
        }
        kept
    }

    /// Messages recall would have to index if it were switched on now: the part of
    /// the log its index has not seen. Switching recall on for a long log costs
    /// about 5 µs per message, so a game may build the index elsewhere first
    /// ([`RecallIndex::from_log`](super::recall::RecallIndex::from_log)) and
    /// hand it over with [`switch_recall_on`](Self::switch_recall_on).
    pub fn recall_backlog(&self) -> usize {
        self.log.len().saturating_sub(self.context.recall.len())
    }

    /// Switches recall on with `index`, built elsewhere from the start of this
    /// log (by [`RecallIndex::from_log`](super::recall::RecallIndex::from_log)
    /// over a copy of it). What the current index knows of forgetting and access
    /// counts is kept, and messages logged since the copy are indexed here. An
    /// index read with another calendar than `recall.calendar` is rebuilt here,
    /// so build it with [`RecallIndex::from_log_with_calendar`](super::recall::RecallIndex::from_log_with_calendar). Returns
    /// `false`, changing nothing, when `index` covers more messages than the log
    /// holds (the log was cleared meanwhile).
    pub fn switch_recall_on(
        &mut self,
        mut index: super::recall::RecallIndex,
        recall: super::recall::RecallConfig,
    ) -> bool {
        if index.len() > self.log.len() {
            return false;
        }
        index.restore_state(&self.context.recall.state());
        self.context.recall = index;
        self.context.features.recall = recall;
        self.context.features.recall.enabled = true;
        self.sync_recall();
        true
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

/// The prompt the next reply would send, from the same builder as every reply, but
/// without recalled lines: recall needs the player's next line, and a query would
/// count as a recall. In basic mode it is exactly the next reply's prompt minus that
/// line. For debug views and tools; it changes nothing.
pub fn preview_prompt(
    log: &ChatLog,
    window: &RollingWindow,
    context: &ContextMemory,
) -> AssembledPrompt {
    let withheld = Withheld::from(log, addressee(log));
    build_prompt(
        (log, window, context),
        (Vec::new(), &[]),
        &withheld,
        Afresh::Start,
    )
}

/// The one place a fresh reply prompt is built from the layers. While the whole
/// log fits a layered prompt's budget, the log is sent as it is, without summaries
/// or recalled lines.
fn build_prompt(
    (log, window, context): (&ChatLog, &RollingWindow, &ContextMemory),
    (recalled, lore): (Vec<super::recall::RecallHit>, &[LoreHit]),
    withheld: &Withheld,
    afresh: Afresh,
) -> AssembledPrompt {
    let facts = context.facts_section(log.speakers(), withheld);
    let mut budget = context.features.budget.clone();
    if afresh == Afresh::Outgrown {
        let refill = f64::from(budget.follow_ups.refill.clamp(0.0, 1.0));
        budget.max_tokens = budget.max_tokens.map(|max| (max as f64 * refill) as usize);
    }
    let input = |facts, summaries, recalled, start, covered_until| AssemblyInput {
        persona: &context.persona,
        lore,
        facts,
        summaries,
        recalled,
        log,
        window: start..log.next_index(),
        covered_until,
        budget: &budget,
        dates: &context.dates,
        compact_recall: context.features.recall.compact_lines,
        // Layered memory lays its prompt out for caches; lore alone keeps basic
        // mode's one system message.
        cacheable: context.features.any(),
        withheld,
        lore_cap: None,
    };
    if context.sends_whole_log(log, facts.as_deref()) {
        // Lore found for the line shares what the whole log leaves of its limit,
        // within its share of the budget.
        let limit = context.whole_log_limit();
        let shares = &context.features.budget.shares;
        let lore_cap = (context.features.budget.max_tokens)
            .map(|max| (max as f64 * f64::from(shares.lore.max(0.0))) as usize);
        let whole_budget = crate::memory::PromptBudget {
            max_tokens: limit,
            ..context.features.budget.clone()
        };
        let whole = assemble(AssemblyInput {
            budget: &whole_budget,
            lore_cap,
            ..input(facts.clone(), SummarySource::Rolling(""), Vec::new(), 0, 0)
        });
        // The check that chose it cannot count the lore found for the line,
        // which can come to more, and then the assembler would cut the log's
        // start to fit.
        let sent = whole
            .section(crate::memory::SectionKind::Window)
            .map_or(0, |window| window.included.len());
        let fits = limit.is_none_or(|limit| whole.tokens <= limit);
        if fits && sent == withheld.keep(log.messages()).len() {
            return whole;
        }
    }
    // The hard cap waits while the log is sent whole; a log whose words fit but
    // whose sent text does not is layered within it all the same.
    assemble(input(
        facts,
        context.summary_source(),
        recalled,
        window.start().max(window.cap_start(log)),
        context.covered_until,
    ))
}

#[cfg(test)]
mod tests;
