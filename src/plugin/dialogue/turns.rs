//! The [`Dialogue`] system parameter, and a player line's way through it: said,
//! queued or answered, sent, handed back; and the NPC-wide changes (clears,
//! reconfigurations, tiers, personas) that every turn must see.

use std::sync::Arc;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::outbox::Outbox;

use crate::backends::{ChatRequest, RequestKind};
use crate::memory::{
    Degradation, FactKey, Line, MemoryConfig, NpcId, PromptMessage, ReplyFields, ReplyInput,
    ReplyTagStream, SummaryJob, estimate_prompt_tokens,
};
use crate::plugin::actions::{ActionRegistry, ActionTurns};
use crate::plugin::bridge::LlmBridge;
use crate::plugin::clock::NpcMemoryClock;
use crate::plugin::layers::Layers;
use crate::plugin::lore::NpcLore;
use crate::plugin::messages::{NpcReplyFailed, NpcReplyStarted, ReplyError, SwitchBackend};
use crate::plugin::npc::{TierMemory, TurnId};
use crate::plugin::persona::{Persona, PersonaBindings, persona_config};
use crate::plugin::rebuild::{NpcMemoryLoads, RECALL_BUILD_OFF_THREAD};
use crate::plugin::requests::{LineRules, NpcRequests, Offer, QueuedLine, Readiness};
use crate::plugin::schedule::NpcMemoryScheduler;
use crate::plugin::settings::NpcMemorySettings;
use crate::plugin::telemetry::{Telemetry, TelemetryEvent};
use crate::plugin::tier_bindings::TierBindings;
use crate::save::WaitingLine;

/// Everything handling one NPC event touches, borrowed together.
#[derive(SystemParam)]
pub(crate) struct Dialogue<'w, 's> {
    pub(super) layers: Layers<'w>,
    pub(super) requests: ResMut<'w, NpcRequests>,
    pub(super) bridge: ResMut<'w, LlmBridge>,
    pub(super) settings: Res<'w, NpcMemorySettings>,
    pub(super) telemetry: Res<'w, Telemetry>,
    pub(super) clock: ResMut<'w, NpcMemoryClock>,
    pub(super) bindings: ResMut<'w, PersonaBindings>,
    pub(super) lore: ResMut<'w, NpcLore>,
    pub(super) loads: ResMut<'w, NpcMemoryLoads>,
    pub(super) scheduler: ResMut<'w, NpcMemoryScheduler>,
    pub(super) tier_bindings: ResMut<'w, TierBindings>,
    pub(super) registry: Res<'w, ActionRegistry>,
    pub(super) actions: ResMut<'w, ActionTurns>,
    pub(super) out: Outbox<'w, 's>,
}

impl<'w> Dialogue<'w, '_> {
    pub(super) fn rules(&self) -> LineRules {
        LineRules {
            max_line_chars: self.settings.max_line_chars,
            // More waiting lines than a save holds would make every save fail.
            max_queued_lines: self
                .settings
                .max_queued_lines
                .min(crate::save::MAX_SAVED_QUEUED_LINES),
        }
    }

    pub(super) fn readiness(&self, npc: &NpcId) -> Readiness {
        if self.layers.contains(npc) {
            Readiness::Ready
        } else if let Some(reason) = self.bindings.failure(npc) {
            Readiness::Failed(reason.to_owned())
        } else if self.bindings.is_bound(npc) {
            Readiness::Loading
        } else {
            Readiness::Unknown
        }
    }

    /// A player line: answered now, queued, or handed back. A private line is
    /// never passed on to another NPC; the line keeps its speaker while it waits.
    ///
    /// While a load is in flight the line is held for the loaded memory (see
    /// [`release_held`](Self::release_held)): answering it from the memory about to
    /// be replaced would lose it with that memory.
    pub(crate) fn say(&mut self, npc: &NpcId, line: WaitingLine) {
        let rules = self.rules();
        if self.loads.is_loading() {
            if let Some(error) = crate::plugin::requests::unfit_line(&line.text, rules) {
                return self.reject(npc, error, None, line.text);
            }
            let text = line.text.clone();
            if !self.loads.hold(npc, line, rules.max_queued_lines) {
                let error = ReplyError::Busy {
                    npc: npc.clone(),
                    queued: rules.max_queued_lines,
                };
                self.reject(npc, error, None, text);
            }
            return;
        }
        let readiness = self.readiness(npc);
        match self.requests.offer(npc, line, &readiness, rules) {
            Offer::Start(line) => self.answer(npc, line),
            // Waiting lines are saved with the NPC's memory.
            Offer::Queued(_) => self.layers.mark_changed(npc),
            Offer::Refused(error, line) => self.reject(npc, error, None, line),
        }
    }

    /// Hands a line back unrecorded; `turn` is set when it had been accepted.
    pub(super) fn reject(
        &mut self,
        npc: &NpcId,
        error: ReplyError,
        turn: Option<TurnId>,
        line: String,
    ) {
        self.out.failed(NpcReplyFailed {
            npc: npc.clone(),
            turn,
            error,
            unrecorded_line: Some(line),
        });
    }

    /// Starts the next waiting line if the NPC is free.
    pub(super) fn next_line(&mut self, npc: &NpcId) {
        if !self.layers.contains(npc) {
            return;
        }
        if let Some(line) = self.requests.next_line(npc) {
            self.layers.mark_changed(npc);
            self.answer(npc, line);
        }
    }

    /// The line enters memory, and its reply request (and any summary due) starts.
    pub(super) fn answer(&mut self, npc: &NpcId, line: QueuedLine) {
        let now = self.clock.now();
        let Some(mut layers) = self.layers.get_mut(npc) else {
            return;
        };
        let text: Arc<str> = line.text.into();
        // Looked up before the line enters the log, so the line is the query and
        // the messages before it are its context.
        let knowledge = self
            .lore
            .knowledge(npc, &text, layers.log(), &self.settings.lore);
        let mut said_line = Line::new(text.clone()).by(&line.speaker).knowing(knowledge);
        if line.private {
            said_line = said_line.privately();
        }
        let said = layers.say(said_line, now);
        self.out.started(NpcReplyStarted {
            npc: npc.clone(),
            turn: line.turn,
            line: text,
        });
        self.report_overflow(npc, said.overflow);
        self.send_reply(npc, line.turn, said.messages, said.reply);
        self.send_summary(npc, said.summary);
    }

    pub(super) fn send_reply(
        &mut self,
        npc: &NpcId,
        turn: TurnId,
        messages: Vec<PromptMessage>,
        input: ReplyInput,
    ) {
        let max_rounds = self.settings.max_action_rounds;
        let actions = self.actions.offer(&self.registry, npc, turn, max_rounds);
        let request = ChatRequest {
            npc: npc.clone(),
            kind: RequestKind::Reply(input),
            messages,
            actions,
        };
        let ticket = self.bridge.reserve();
        self.scheduler.queue_reply(npc, ticket.id, request);
        let tags = self.bindings.reply_fields(npc).map(ReplyTagStream::new);
        self.requests.start_reply(npc, ticket, turn, tags);
    }

    /// Queues a summary that became due; it is built when the scheduler sends it.
    /// Once the NPC's window nears its hard cap, its waiting summary goes now and
    /// before other summaries: past the cap messages would leave the prompt
    /// unsummarized.
    pub(super) fn send_summary(&mut self, npc: &NpcId, job: Option<SummaryJob>) {
        if let Some(job) = job {
            let tokens = estimate_prompt_tokens(&job.messages) as u64;
            let ticket = self.bridge.reserve();
            let settings = &self.settings.schedule;
            self.scheduler
                .queue_summary(npc, ticket.id, job.id, tokens, settings);
            self.requests.start_summary(npc, ticket, job.id);
        }
        if self.layers.window_near_cap(npc) {
            self.scheduler.press(npc);
        }
    }

    pub(super) fn trace_request(&self, request: &ChatRequest) {
        // Copying the prompt and estimating its tokens costs microseconds per
        // request; only pay for it when someone records telemetry.
        if self.telemetry.is_recording() {
            let purpose = request.purpose();
            self.telemetry.emit(TelemetryEvent::Request {
                npc: request.npc.clone(),
                purpose,
                backend: self.bridge.backend_name(purpose).to_owned(),
                at: self.clock.seconds(),
                estimated_tokens: estimate_prompt_tokens(&request.messages),
                messages: request.messages.clone(),
            });
        }
    }

    /// Later requests go to the backends `switch` names.
    pub(crate) fn switch_backend(&mut self, switch: &SwitchBackend) {
        self.bridge.switch(switch);
    }

    /// Forgets the NPC's memory; requests in flight and waiting lines are cancelled,
    /// lines held for a load in flight too (they were said to the memory cleared).
    pub(crate) fn clear(&mut self, npc: &NpcId) {
        self.cancel(npc);
        for line in self.loads.take_held(npc) {
            self.reject(npc, ReplyError::Cancelled, None, line.text);
        }
        self.loads.cancel_recall(npc);
        if let Some(mut layers) = self.layers.get_mut(npc) {
            layers.clear();
        }
        self.bridge.forget(Some(npc));
    }

    pub(super) fn cancel(&mut self, npc: &NpcId) {
        self.scheduler.forget(npc);
        self.actions.forget(npc);
        let cancelled = self.requests.cancel(npc);
        if !cancelled.waiting.is_empty() {
            self.layers.mark_changed(npc);
        }
        for line in cancelled.waiting {
            self.reject(npc, ReplyError::Cancelled, Some(line.turn), line.text);
        }
        if cancelled.reply {
            self.out.stopped(npc);
        }
    }

    /// Cancels every request in flight and every waiting line, as loading another
    /// save slot must: their results belong to the memory being replaced. The
    /// backends drop what they derived from that memory too.
    pub(crate) fn cancel_all(&mut self) {
        for npc in self.requests.npcs() {
            self.cancel(&npc);
        }
        self.scheduler.forget_all();
        self.bridge.forget(None);
    }

    /// Applies a new configuration. Switching recall on for a log with a long
    /// backlog ([`RECALL_BUILD_OFF_THREAD`] messages or more) builds the index off
    /// the main thread: everything else applies at once, and the NPC answers without
    /// recall until the index is in place ([`install_recall`](Self::install_recall)).
    /// A newer reconfiguration replaces a build in flight.
    pub(crate) fn reconfigure(&mut self, npc: &NpcId, config: &MemoryConfig) {
        if let Err(invalid) = config.check() {
            tracing::error!("not reconfiguring {npc}: {invalid}; its memory keeps its settings");
            return;
        }
        self.loads.cancel_recall(npc);
        let Some(mut layers) = self.layers.get_mut(npc) else {
            return;
        };
        let switching_on =
            config.features.recall.enabled && !layers.context.features().recall.enabled;
        let reconfigured = if switching_on && layers.recall_backlog() >= RECALL_BUILD_OFF_THREAD {
            let mut now = config.clone();
            now.features.recall.enabled = false;
            let reconfigured = layers.reconfigure(&now);
            let messages = layers.log.messages().to_vec();
            self.loads
                .build_recall(npc, messages, config.features.recall.clone());
            reconfigured
        } else {
            layers.reconfigure(config)
        };
        self.report_overflow(npc, reconfigured.overflow);
        self.send_summary(npc, reconfigured.summary);
    }

    /// NPCs whose tier changed get the memory settings of their new tier, if their
    /// persona sets any that differ. Costs nothing on frames without a tier change.
    pub(crate) fn retier(&mut self) {
        let (mut npcs, default_changed) = self.scheduler.take_retiered();
        if default_changed {
            npcs.extend(self.tier_bindings.ids());
        }
        for npc in npcs {
            let tier = self.scheduler.tier(&npc);
            if let Some(config) = self.tier_bindings.retier(&npc, tier) {
                self.reconfigure(&npc, &config);
            }
        }
    }

    /// A summary now: a new one, or the one held back, which goes at once.
    pub(crate) fn summarize_now(&mut self, npc: &NpcId) {
        let job = self.layers.get_mut(npc).and_then(|mut l| l.summarize_now());
        if job.is_none() {
            self.scheduler.hurry(npc);
        }
        self.send_summary(npc, job);
    }

    pub(crate) fn set_fact(&mut self, npc: &NpcId, key: &FactKey, value: &str) {
        if let Some(mut layers) = self.layers.get_mut(npc)
            && let Err(error) =
                layers.set_fact_at(key.clone(), value, Vec::new(), self.clock.seconds())
        {
            tracing::warn!("pinned fact {key} for NPC {npc} was not set: {error}");
        }
    }

    pub(crate) fn remove_fact(&mut self, npc: &NpcId, key: &FactKey) {
        if let Some(mut layers) = self.layers.get_mut(npc) {
            layers.remove_fact_at(key, self.clock.seconds());
        }
    }

    /// A persona failed to load: lines waiting for it fail rather than wait forever.
    /// An NPC that already has memory keeps its last good persona.
    pub(crate) fn persona_failed(&mut self, persona: AssetId<Persona>, reason: String) {
        tracing::error!("NPC persona failed to load: {reason}");
        self.bindings.mark_failed(persona, reason.clone());
        for npc in self.bindings.npcs(persona).to_vec() {
            if self.layers.contains(&npc) {
                continue;
            }
            for line in self.requests.drain(&npc) {
                let error = ReplyError::PersonaUnavailable {
                    npc: npc.clone(),
                    reason: reason.clone(),
                };
                self.reject(&npc, error, Some(line.turn), line.text);
            }
        }
    }

    /// A persona asset loaded or changed: every NPC bound to it gets it.
    pub(crate) fn persona_ready(&mut self, id: AssetId<Persona>, persona: &Persona) {
        // A persona made in code, or the plugin's defaults, can ask for sizes no
        // save holds; such a persona fails like a file that does not load.
        if let Err(problem) = persona.check_config(&self.settings.memory) {
            self.persona_failed(id, format!("the persona's memory settings: {problem}"));
            return;
        }
        self.bindings.mark_loaded(id);
        for npc in self.bindings.npcs(id).to_vec() {
            self.apply_persona(&npc, persona);
        }
    }

    /// NPCs spawned since the last frame, whose persona may already be loaded.
    pub(crate) fn take_spawned(&mut self) -> Vec<AssetId<Persona>> {
        self.bindings.take_spawned()
    }

    pub(super) fn apply_persona(&mut self, npc: &NpcId, persona: &Persona) {
        self.lore.set_groups(npc, &persona.groups);
        self.actions.allow(npc, &persona.actions);
        self.bindings
            .set_reply_fields(npc, persona.reply_field_set());
        self.scheduler.set_persona_tier(npc, persona.tier);
        let (prompt, config, overrides) = persona_config(persona, &self.settings.memory);
        let tier = self.scheduler.tier(npc);
        let tiers = self.tiers_of(npc, persona, &config);
        let config = self.tier_bindings.bind(npc, config, &tiers, tier);
        if let Some(reconfigured) = self.layers.ensure(npc, prompt, &config, overrides) {
            self.report_overflow(npc, reconfigured.overflow);
            self.send_summary(npc, reconfigured.summary);
        }
        self.next_line(npc);
    }

    /// The persona's tiers over the plugin's. The persona's were checked when it
    /// loaded; the plugin's are checked against each persona here, and dropped
    /// for one they do not fit rather than let its lines go unsummarized.
    pub(super) fn tiers_of(
        &self,
        npc: &NpcId,
        persona: &Persona,
        config: &MemoryConfig,
    ) -> TierMemory {
        if self.settings.tiers.is_empty() {
            return persona.tiers.clone();
        }
        let merged = persona.tiers.or(&self.settings.tiers);
        match merged.check(config) {
            Ok(()) => merged,
            Err(invalid) => {
                tracing::warn!(
                    "{npc}: the plugin's memory tiers do not fit its persona ({invalid}); \
                     it keeps the persona's own"
                );
                persona.tiers.clone()
            }
        }
    }

    /// Takes the reply-field tag off the start of a reply of the NPC: the fields it
    /// set, and the words. An NPC without reply fields keeps its reply as it is.
    pub(super) fn split_fields(&self, npc: &NpcId, reply: String) -> (ReplyFields, String) {
        let Some(set) = self.bindings.reply_fields(npc) else {
            return (ReplyFields::default(), reply);
        };
        let (fields, words) = set.split(&reply);
        if words.len() == reply.len() {
            return (fields, reply);
        }
        (fields, words.to_owned())
    }

    pub(super) fn report_overflow(&mut self, npc: &NpcId, overflow: Option<Degradation>) {
        if let Some(degradation) = overflow {
            self.out.degraded(&self.telemetry, npc, degradation);
        }
    }
}
