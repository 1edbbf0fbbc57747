//! The reply and summary pipeline: player lines in, requests out, results back in.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use bevy::asset::AssetLoadFailedEvent;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::bridge::{Finished, LlmBridge, TaskEvent, TaskId, Ticket};
use super::layers::Layers;
use super::messages::*;
use super::persona::{Persona, PersonaBindings, persona_config};
use super::settings::NpcMemorySettings;
use super::telemetry::{Telemetry, TelemetryEvent};
use super::usage::{LlmUsage, RequestOutcome};
use crate::llm::{BackendError, ChatRequest, ChatResponse, Purpose, ReplyInput, RequestKind};
use crate::memory::{
    Degradation, MemoryConfig, NpcId, Role, SummaryJob, SummaryJobId, SummaryOutcome,
    estimate_prompt_tokens, estimate_tokens,
};

/// What each NPC is doing right now: the requests in flight and the lines waiting.
#[derive(Resource, Default, Debug)]
pub struct Conversations {
    npcs: HashMap<NpcId, Conversation>,
    in_flight: usize,
    queued: usize,
}

#[derive(Default, Debug)]
struct Conversation {
    reply: Option<Ticket>,
    summary: Option<Ticket>,
    queued: VecDeque<String>,
    /// Characters of the reply in flight passed on as deltas so far.
    streamed_chars: usize,
}

impl Conversations {
    /// Whether the NPC is producing a reply.
    pub fn reply_in_flight(&self, npc: &NpcId) -> bool {
        self.npcs.get(npc).is_some_and(|c| c.reply.is_some())
    }

    /// Whether the NPC's memory is being summarized.
    pub fn summary_in_flight(&self, npc: &NpcId) -> bool {
        self.npcs.get(npc).is_some_and(|c| c.summary.is_some())
    }

    /// The player's lines waiting for the NPC, oldest first.
    pub fn queued_lines(&self, npc: &NpcId) -> impl Iterator<Item = &str> {
        self.npcs
            .get(npc)
            .into_iter()
            .flat_map(|c| c.queued.iter().map(String::as_str))
    }

    /// Requests in flight over all NPCs.
    pub fn requests_in_flight(&self) -> usize {
        self.in_flight
    }

    /// Player lines waiting over all NPCs.
    pub fn lines_waiting(&self) -> usize {
        self.queued
    }

    /// Whether no request is in flight and no line waits, for any NPC.
    pub fn is_idle(&self) -> bool {
        self.in_flight == 0 && self.queued == 0
    }

    fn enqueue(&mut self, npc: &NpcId, line: String) {
        self.entry(npc).queued.push_back(line);
        self.queued += 1;
    }

    fn dequeue(&mut self, npc: &NpcId) -> Option<String> {
        let line = self.npcs.get_mut(npc)?.queued.pop_front()?;
        self.queued -= 1;
        Some(line)
    }

    fn drain_queue(&mut self, npc: &NpcId) -> VecDeque<String> {
        let lines = self
            .npcs
            .get_mut(npc)
            .map(|c| std::mem::take(&mut c.queued))
            .unwrap_or_default();
        self.queued -= lines.len();
        lines
    }

    fn entry(&mut self, npc: &NpcId) -> &mut Conversation {
        self.npcs.entry(npc.clone()).or_default()
    }

    fn start(&mut self, npc: &NpcId, purpose: Purpose, ticket: Ticket) {
        let conversation = self.entry(npc);
        let slot = match purpose {
            Purpose::Reply => {
                conversation.streamed_chars = 0;
                &mut conversation.reply
            }
            Purpose::Summary => &mut conversation.summary,
        };
        debug_assert!(slot.is_none(), "one {purpose:?} in flight per NPC");
        *slot = Some(ticket);
        self.in_flight += 1;
    }

    /// Takes the ticket for a finished task, or `None` when the task was cancelled.
    fn finish(&mut self, npc: &NpcId, task: TaskId) -> Option<Purpose> {
        let conversation = self.npcs.get_mut(npc)?;
        let purpose = if conversation.reply.as_ref().is_some_and(|t| t.id == task) {
            conversation.reply = None;
            Purpose::Reply
        } else if conversation.summary.as_ref().is_some_and(|t| t.id == task) {
            conversation.summary = None;
            Purpose::Summary
        } else {
            return None;
        };
        self.in_flight -= 1;
        Some(purpose)
    }

    /// The part of a streamed piece that may be shown: none if the piece belongs to
    /// a cancelled request, and nothing past `max_chars` of the reply in total.
    fn admit_delta(
        &mut self,
        npc: &NpcId,
        task: TaskId,
        piece: String,
        max_chars: usize,
    ) -> Option<String> {
        let conversation = self.npcs.get_mut(npc)?;
        if !conversation.reply.as_ref().is_some_and(|t| t.id == task) {
            return None;
        }
        let room = max_chars.saturating_sub(conversation.streamed_chars);
        let piece = match piece.char_indices().nth(room) {
            Some((cut, _)) => piece[..cut].to_owned(),
            None => piece,
        };
        conversation.streamed_chars += piece.chars().count();
        (!piece.is_empty()).then_some(piece)
    }
}

/// The messages the pipeline writes.
#[derive(SystemParam)]
pub(crate) struct Outbox<'w> {
    replied: MessageWriter<'w, NpcReplied>,
    deltas: MessageWriter<'w, NpcReplyDelta>,
    failed: MessageWriter<'w, NpcReplyFailed>,
    summaries: MessageWriter<'w, NpcSummaryUpdated>,
    degraded: MessageWriter<'w, NpcMemoryDegraded>,
}

/// Everything the pipeline changes, borrowed together.
#[derive(SystemParam)]
pub(crate) struct Pipeline<'w> {
    layers: Layers<'w>,
    conversations: ResMut<'w, Conversations>,
    bridge: ResMut<'w, LlmBridge>,
    settings: Res<'w, NpcMemorySettings>,
    telemetry: Res<'w, Telemetry>,
    time: Res<'w, Time>,
    bindings: ResMut<'w, PersonaBindings>,
    usage: ResMut<'w, LlmUsage>,
    out: Outbox<'w>,
}

impl<'w> Pipeline<'w> {
    /// A player line: checked, then answered now or queued.
    fn say(&mut self, npc: &NpcId, text: String) {
        let error = if let Some(error) = self.unfit_line(&text) {
            Some(error)
        } else if self.layers.contains(npc) {
            None
        } else if let Some(reason) = self.bindings.failure(npc) {
            Some(ReplyError::PersonaUnavailable {
                npc: npc.clone(),
                reason: reason.to_owned(),
            })
        } else if !self.bindings.is_bound(npc) {
            Some(ReplyError::UnknownNpc(npc.clone()))
        } else {
            None
        };
        if let Some(error) = error {
            return self.reject(npc, error, text);
        }

        let ready = self.layers.contains(npc);
        let max_queued = self.settings.max_queued_lines;
        let conversation = self.conversations.entry(npc);
        if ready && conversation.reply.is_none() && conversation.queued.is_empty() {
            return self.start_reply(npc, text);
        }
        if conversation.queued.len() >= max_queued {
            let queued = conversation.queued.len();
            return self.reject(
                npc,
                ReplyError::Busy {
                    npc: npc.clone(),
                    queued,
                },
                text,
            );
        }
        self.conversations.enqueue(npc, text);
        // Waiting lines are saved with the NPC's memory.
        self.layers.mark_changed(npc);
    }

    /// Why a line cannot be taken whoever it is for: empty, or too long.
    fn unfit_line(&self, text: &str) -> Option<ReplyError> {
        let chars = text.chars().count();
        if text.trim().is_empty() {
            Some(ReplyError::EmptyLine)
        } else if chars > self.settings.max_line_chars {
            Some(ReplyError::LineTooLong {
                chars,
                max: self.settings.max_line_chars,
            })
        } else {
            None
        }
    }

    fn reject(&mut self, npc: &NpcId, error: ReplyError, line: String) {
        self.out.failed.write(NpcReplyFailed {
            npc: npc.clone(),
            error,
            unrecorded_line: Some(line),
        });
    }

    /// Starts the next queued line if the NPC is free.
    fn next_line(&mut self, npc: &NpcId) {
        if !self.layers.contains(npc) {
            return;
        }
        if self.conversations.reply_in_flight(npc) {
            return;
        }
        if let Some(text) = self.conversations.dequeue(npc) {
            self.layers.mark_changed(npc);
            self.start_reply(npc, text);
        }
    }

    fn start_reply(&mut self, npc: &NpcId, text: String) {
        let now = self.time.elapsed_secs_f64();
        let Some(mut layers) = self.layers.get_mut(npc) else {
            return;
        };
        let recorded = layers.record(Role::User, text, now);
        let request = ChatRequest {
            npc: npc.clone(),
            kind: RequestKind::Reply(ReplyInput {
                npc_name: layers.context.persona().name.clone(),
                summary: Arc::from(layers.context.summary()),
            }),
            messages: layers.reply_prompt(),
        };
        self.report_overflow(npc, recorded.overflow);
        self.send(request, None);
        self.start_summary(npc);
    }

    fn start_summary(&mut self, npc: &NpcId) {
        if self.conversations.summary_in_flight(npc) {
            return;
        }
        let Some(job) = self.layers.get_mut(npc).and_then(|mut l| l.start_summary()) else {
            return;
        };
        self.send_summary(npc, job);
    }

    fn send_summary(&mut self, npc: &NpcId, job: SummaryJob) {
        let request = ChatRequest {
            npc: npc.clone(),
            kind: RequestKind::Summary(job.input),
            messages: job.messages,
        };
        self.send(request, Some(job.id));
    }

    fn send(&mut self, request: ChatRequest, summary_job: Option<SummaryJobId>) {
        let purpose = request.purpose();
        // Copying the prompt and estimating its tokens costs microseconds per request;
        // only pay for it when someone records telemetry.
        if self.telemetry.is_recording() {
            self.telemetry.emit(TelemetryEvent::Request {
                npc: request.npc.clone(),
                purpose,
                backend: self.bridge.backend_name(purpose).to_owned(),
                at: self.time.elapsed_secs_f64(),
                estimated_tokens: estimate_prompt_tokens(&request.messages),
                messages: request.messages.clone(),
            });
        }
        let npc = request.npc.clone();
        let ticket = self.bridge.spawn(request, summary_job);
        self.conversations.start(&npc, purpose, ticket);
    }

    fn finished(&mut self, done: Finished) {
        let Finished {
            npc,
            task,
            summary_job,
            result,
            latency,
            retries,
        } = done;
        let Some(purpose) = self.conversations.finish(&npc, task) else {
            return;
        };
        let result =
            result.and_then(|response| checked_reply(response, self.bridge.backend_name(purpose)));
        let outcome = RequestOutcome {
            ok: result.is_ok(),
            retries,
            latency,
            usage: result.as_ref().ok().and_then(|r| r.usage),
        };
        self.usage.record(&npc, purpose, &outcome);
        if self.telemetry.is_recording() {
            self.telemetry.emit(TelemetryEvent::Response {
                npc: npc.clone(),
                purpose,
                latency_ms: latency.as_secs_f64() * 1000.0,
                retries,
                content: result.as_ref().ok().map(|r| r.content.clone()),
                error: result.as_ref().err().map(ToString::to_string),
                estimated_tokens: result.as_ref().map_or(0, |r| estimate_tokens(&r.content)),
                usage: outcome.usage,
            });
        }
        match (purpose, summary_job) {
            (Purpose::Summary, Some(job)) => self.summary_finished(&npc, job, result, latency),
            _ => self.reply_finished(&npc, result),
        }
    }

    fn reply_finished(&mut self, npc: &NpcId, result: Result<ChatResponse, BackendError>) {
        match result {
            Ok(response) => {
                let now = self.time.elapsed_secs_f64();
                let content = self.cut_runaway(npc, response.content);
                if let Some(mut layers) = self.layers.get_mut(npc) {
                    let text: Arc<str> = content.into();
                    let recorded = layers.record(Role::Assistant, text.clone(), now);
                    self.out.replied.write(NpcReplied {
                        npc: npc.clone(),
                        text,
                        index: recorded.index,
                    });
                    self.report_overflow(npc, recorded.overflow);
                    self.start_summary(npc);
                }
            }
            Err(error) => {
                self.out.failed.write(NpcReplyFailed {
                    npc: npc.clone(),
                    error: ReplyError::Backend(error),
                    unrecorded_line: None,
                });
            }
        }
        self.next_line(npc);
    }

    fn summary_finished(
        &mut self,
        npc: &NpcId,
        job: SummaryJobId,
        result: Result<ChatResponse, BackendError>,
        latency: Duration,
    ) {
        let Some(mut layers) = self.layers.get_mut(npc) else {
            return;
        };
        let result = result
            .as_ref()
            .map(|r| r.content.as_str())
            .map_err(ToString::to_string);
        match layers.finish_summary(job, result, latency) {
            SummaryOutcome::Updated(update) => {
                self.telemetry.emit(TelemetryEvent::SummaryUpdated {
                    npc: npc.clone(),
                    old: update.old.to_string(),
                    new: update.new.to_string(),
                    covered_from: update.covered.start,
                    covered_to: update.covered.end,
                    latency_ms: update.latency.as_secs_f64() * 1000.0,
                    trigger: update.trigger,
                    fact_changes: update
                        .fact_changes
                        .iter()
                        .map(ToString::to_string)
                        .collect(),
                    forgotten_messages: update.forgotten.forgotten_messages.len(),
                });
                self.out.summaries.write(NpcSummaryUpdated {
                    npc: npc.clone(),
                    old: update.old,
                    new: update.new,
                    covered: update.covered,
                    latency: update.latency,
                    trigger: update.trigger,
                    fact_changes: update.fact_changes,
                });
                // Messages that arrived meanwhile may already make the next one due.
                self.start_summary(npc);
            }
            SummaryOutcome::Retry(retry) => self.send_summary(npc, retry),
            SummaryOutcome::Degraded(degradation) => self.report(npc, degradation),
            SummaryOutcome::Stale => {}
        }
    }

    /// A reply cut to `max_reply_chars`, the same prefix its deltas stopped at.
    fn cut_runaway(&self, npc: &NpcId, content: String) -> String {
        let max = self.settings.max_reply_chars;
        let Some((cut, _)) = content.char_indices().nth(max) else {
            return content;
        };
        self.telemetry.emit(TelemetryEvent::ReplyCut {
            npc: npc.clone(),
            chars: content.chars().count(),
            kept: max,
        });
        content[..cut].to_owned()
    }

    fn report_overflow(&mut self, npc: &NpcId, overflow: Option<Degradation>) {
        if let Some(degradation) = overflow {
            self.report(npc, degradation);
        }
    }

    fn report(&mut self, npc: &NpcId, degradation: Degradation) {
        self.telemetry.emit(TelemetryEvent::Degraded {
            npc: npc.clone(),
            reason: degradation.to_string(),
            degradation: degradation.clone(),
        });
        self.out.degraded.write(NpcMemoryDegraded {
            npc: npc.clone(),
            degradation,
        });
    }

    fn clear(&mut self, npc: &NpcId) {
        self.cancel(npc);
        if let Some(mut layers) = self.layers.get_mut(npc) {
            layers.clear();
        }
    }

    fn cancel(&mut self, npc: &NpcId) {
        if let Some(conversation) = self.conversations.npcs.get_mut(npc) {
            let tickets = [conversation.reply.take(), conversation.summary.take()];
            for ticket in tickets.into_iter().flatten() {
                ticket.cancel();
                self.conversations.in_flight -= 1;
            }
        }
        self.layers.mark_changed(npc);
        for line in self.conversations.drain_queue(npc) {
            self.reject(npc, ReplyError::Cancelled, line);
        }
    }

    fn reconfigure(&mut self, npc: &NpcId, config: &MemoryConfig) {
        let Some(mut layers) = self.layers.get_mut(npc) else {
            return;
        };
        let overflow = layers.reconfigure(config);
        self.report_overflow(npc, overflow);
        self.start_summary(npc);
    }

    fn summarize_now(&mut self, npc: &NpcId) {
        if let Some(mut layers) = self.layers.get_mut(npc) {
            layers.request_summary();
        }
        self.start_summary(npc);
    }

    /// The player's lines waiting for the NPC, oldest first, for a save.
    pub(crate) fn queued_lines(&self, npc: &NpcId) -> Vec<String> {
        self.conversations
            .queued_lines(npc)
            .map(str::to_owned)
            .collect()
    }

    /// Puts lines restored from a save back in the NPC's queue, and starts the
    /// first if the NPC is free.
    /// A restored line is held to the same rules as a new one: a save is data from
    /// outside, and a line unfit now is handed back instead of queued.
    pub(crate) fn requeue(&mut self, npc: &NpcId, lines: Vec<String>) {
        for line in lines {
            match self.unfit_line(&line) {
                Some(error) => self.reject(npc, error, line),
                None => self.conversations.enqueue(npc, line),
            }
        }
        self.next_line(npc);
    }

    /// The layers, for loading and saving.
    pub(crate) fn layers(&mut self) -> &mut Layers<'w> {
        &mut self.layers
    }

    /// Defaults for NPCs whose persona sets no sizes.
    pub(crate) fn default_memory(&self) -> &MemoryConfig {
        &self.settings.memory
    }

    /// Cancels every request in flight and every queued line, as loading another
    /// save slot must: their results belong to the memory being replaced.
    pub(crate) fn cancel_all(&mut self) {
        let npcs: Vec<NpcId> = self.conversations.npcs.keys().cloned().collect();
        for npc in npcs {
            self.cancel(&npc);
        }
    }

    /// Gives every NPC with a loaded persona asset that persona again, since the
    /// live asset wins over the one stored in a save. A spawned NPC the save does
    /// not hold (its id changed between builds, or the slot is from another layout)
    /// starts with a fresh memory, so lines sent to it are answered, not kept
    /// waiting for a memory that will never come.
    pub(crate) fn reapply_personas(&mut self, personas: &Assets<Persona>) {
        for (id, npcs) in self.bindings.all() {
            let Some(persona) = personas.get(id) else {
                continue;
            };
            for npc in npcs {
                self.apply_persona(&npc, persona);
            }
        }
    }

    /// A persona failed to load: lines waiting for it fail rather than wait forever.
    /// An NPC that already has memory keeps its last good persona.
    fn persona_failed(&mut self, npc: &NpcId, reason: &str) {
        if self.layers.contains(npc) {
            return;
        }
        self.layers.mark_changed(npc);
        for line in self.conversations.drain_queue(npc) {
            let error = ReplyError::PersonaUnavailable {
                npc: npc.clone(),
                reason: reason.to_owned(),
            };
            self.reject(npc, error, line);
        }
    }

    pub(crate) fn apply_persona(&mut self, npc: &NpcId, persona: &Persona) {
        let (prompt, config, overrides) = persona_config(persona, &self.settings.memory);
        self.layers.ensure(npc, prompt, &config, overrides);
        self.next_line(npc);
    }
}

/// An empty reply is no reply: it would teach the NPC to say nothing.
fn checked_reply(mut response: ChatResponse, backend: &str) -> Result<ChatResponse, BackendError> {
    let trimmed = response.content.trim();
    if trimmed.is_empty() {
        return Err(BackendError::Malformed {
            backend: backend.to_owned(),
            reason: "the reply was empty".into(),
        });
    }
    if trimmed.len() != response.content.len() {
        response.content = trimmed.to_owned();
    }
    Ok(response)
}

pub(crate) fn apply_personas(
    mut pipeline: Pipeline,
    mut events: MessageReader<AssetEvent<Persona>>,
    mut failures: MessageReader<AssetLoadFailedEvent<Persona>>,
    personas: Res<Assets<Persona>>,
) {
    for failure in failures.read() {
        let reason = format!("{}: {}", failure.path, failure.error);
        tracing::error!("NPC persona failed to load: {reason}");
        pipeline.bindings.mark_failed(failure.id, reason.clone());
        for npc in pipeline.bindings.npcs(failure.id).to_vec() {
            pipeline.persona_failed(&npc, &reason);
        }
    }
    let mut changed = pipeline.bindings.take_spawned();
    changed.extend(events.read().filter_map(|event| match event {
        AssetEvent::Added { id }
        | AssetEvent::Modified { id }
        | AssetEvent::LoadedWithDependencies { id } => Some(*id),
        _ => None,
    }));
    if changed.is_empty() {
        return;
    }
    changed.sort_unstable();
    changed.dedup();
    for id in changed {
        let Some(persona) = personas.get(id) else {
            continue;
        };
        pipeline.bindings.mark_loaded(id);
        for npc in pipeline.bindings.npcs(id).to_vec() {
            pipeline.apply_persona(&npc, persona);
        }
    }
}

pub(crate) fn take_requests(
    mut pipeline: Pipeline,
    mut talk: MessageReader<TalkToNpc>,
    mut clear: MessageReader<ClearNpcMemory>,
    mut summarize: MessageReader<SummarizeNow>,
    mut reconfigure: MessageReader<ReconfigureNpcMemory>,
    mut set_fact: MessageReader<SetPinnedFact>,
    mut remove_fact: MessageReader<RemovePinnedFact>,
) {
    // Facts first: a quest update in the same frame as a line should shape its reply.
    for SetPinnedFact { npc, key, value } in set_fact.read() {
        if let Some(mut layers) = pipeline.layers.get_mut(npc)
            && let Err(error) = layers.set_fact(key.clone(), value, Vec::new())
        {
            tracing::warn!("pinned fact {key} for NPC {npc} was not set: {error}");
        }
    }
    for RemovePinnedFact { npc, key } in remove_fact.read() {
        if let Some(mut layers) = pipeline.layers.get_mut(npc) {
            layers.remove_fact(key);
        }
    }
    for ReconfigureNpcMemory { npc, config } in reconfigure.read() {
        pipeline.reconfigure(npc, config);
    }
    for ClearNpcMemory { npc } in clear.read() {
        pipeline.clear(npc);
    }
    for TalkToNpc { npc, text } in talk.read() {
        pipeline.say(npc, text.clone());
    }
    for SummarizeNow { npc } in summarize.read() {
        pipeline.summarize_now(npc);
    }
}

/// Applies finished requests, within a time budget per frame: a burst of replies is
/// spread over a few frames instead of stalling one.
pub(crate) fn collect_results(mut pipeline: Pipeline) {
    let started = std::time::Instant::now();
    let budget = pipeline.settings.collect_budget;
    while started.elapsed() < budget
        && let Some(event) = pipeline.bridge.try_next()
    {
        match event {
            TaskEvent::Delta { npc, task, text } => {
                let max = pipeline.settings.max_reply_chars;
                if let Some(delta) = pipeline.conversations.admit_delta(&npc, task, text, max) {
                    pipeline.out.deltas.write(NpcReplyDelta { npc, delta });
                }
            }
            TaskEvent::Done(done) => pipeline.finished(done),
        }
    }
}
