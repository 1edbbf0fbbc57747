//! Requests go out. [`queue_outbound`] hands the requests the other stages
//! started to the scheduler, with the actions each reply offers;
//! [`dispatch_requests`] sends as many as the concurrency cap, the budget and
//! rate limits allow, in the scheduler's order. A summary goes as it was built
//! when it became due, unless the NPC's memory changed while it waited: then it
//! is built again, and covers every message that arrived meanwhile.

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::outbox::Outbox;
use crate::backends::{ChatRequest, RequestKind};
use crate::memory::{ReplyTagStream, estimate_prompt_tokens};
use crate::plugin::actions::{ActionRegistry, ActionTurns};
use crate::plugin::bridge::LlmBridge;
use crate::plugin::layers::Layers;
use crate::plugin::persona::PersonaBindings;
use crate::plugin::requests::{NpcRequests, Outbound};
use crate::plugin::schedule::{Class, Entry, NpcMemoryScheduler, Work, WorkKind};
use crate::plugin::settings::NpcMemorySettings;
use crate::plugin::telemetry::TelemetryEvent;

/// What queueing requests borrows.
#[derive(SystemParam)]
pub(crate) struct Queueing<'w> {
    requests: ResMut<'w, NpcRequests>,
    scheduler: ResMut<'w, NpcMemoryScheduler>,
    actions: ResMut<'w, ActionTurns>,
    registry: Res<'w, ActionRegistry>,
    bindings: Res<'w, PersonaBindings>,
    settings: Res<'w, NpcMemorySettings>,
}

/// The requests started since the last call join the scheduler's queue, in the
/// order they started, and cancelled NPCs leave it. Runs before the game's action
/// handlers, so a cancelled turn's calls are dropped, and again before sending.
pub(crate) fn queue_outbound(mut q: Queueing) {
    for work in q.requests.take_outbound() {
        match work {
            Outbound::Reply {
                npc,
                task,
                turn,
                mut request,
            } => {
                if !q.requests.is_waiting(&npc, task) {
                    continue; // cancelled meanwhile
                }
                let max_rounds = q.settings.max_action_rounds;
                request.actions = q.actions.offer(&q.registry, &npc, turn, max_rounds);
                if let Some(fields) = q.bindings.reply_fields(&npc) {
                    q.requests.set_tags(&npc, task, ReplyTagStream::new(fields));
                }
                let class = Class::of_reply(q.requests.is_background(turn));
                q.scheduler.queue_reply(&npc, task, request, class);
            }
            Outbound::Summary {
                npc,
                task,
                job,
                tokens,
            } => {
                if q.requests.is_waiting(&npc, task) {
                    let settings = &q.settings.schedule;
                    q.scheduler.queue_summary(&npc, task, job, tokens, settings);
                }
            }
            Outbound::Press(npc) => q.scheduler.press(&npc),
            Outbound::Hurry(npc) => q.scheduler.hurry(&npc),
            Outbound::Forget(Some(npc)) => {
                q.scheduler.forget(&npc);
                q.actions.forget(&npc);
            }
            Outbound::Forget(None) => q.scheduler.forget_all(),
        }
    }
}

/// Whether requests wait to be queued.
pub(crate) fn outbound_waiting(requests: Res<NpcRequests>) -> bool {
    requests.has_outbound()
}

/// What sending requests borrows.
#[derive(SystemParam)]
pub(crate) struct Sending<'w, 's> {
    requests: ResMut<'w, NpcRequests>,
    scheduler: ResMut<'w, NpcMemoryScheduler>,
    bridge: ResMut<'w, LlmBridge>,
    layers: Layers<'w>,
    settings: Res<'w, NpcMemorySettings>,
    out: Outbox<'w, 's>,
}

/// Sends queued requests while a slot is free and the scheduler allows. Costs
/// O(log n) per request sent, nothing per idle NPC. The backends first drop what
/// they keep for NPCs whose memory was cleared or replaced.
pub(crate) fn dispatch_requests(mut sending: Sending) {
    for npc in sending.requests.take_forgotten() {
        sending.bridge.forget(npc.as_ref());
    }
    let max = sending.settings.max_concurrent_requests.max(1);
    while sending.requests.running() < max {
        let schedule = &sending.settings.schedule;
        let Some(entry) = sending.scheduler.next(schedule, &sending.requests) else {
            break;
        };
        sending.send(entry);
    }
    sending.scheduler.end(&sending.settings.schedule);
}

impl Sending<'_, '_> {
    fn send(&mut self, entry: Entry<Work>) {
        let waited = self.scheduler.now().saturating_sub(entry.queued_at);
        let Work { npc, task, kind } = entry.work;
        let request = match kind {
            WorkKind::Reply(request) => request,
            WorkKind::Summary(job) => {
                let edition = self.layers.edition(&npc);
                let job = match self.requests.take_built_summary(&npc, task, edition) {
                    Some(built) => Some(built),
                    None => self
                        .layers
                        .get_mut(&npc)
                        .and_then(|mut layers| layers.summary_job_now(job)),
                };
                let Some(job) = job else {
                    self.requests.abandon_summary(&npc, task);
                    return;
                };
                ChatRequest {
                    npc: npc.clone(),
                    kind: RequestKind::Summary(job.input),
                    messages: job.messages,
                    actions: Vec::new(),
                }
            }
        };
        let purpose = request.purpose();
        self.scheduler
            .spend_tokens(task, estimate_prompt_tokens(&request.messages) as u64);
        let telemetry = self.out.telemetry();
        if !waited.is_zero() && telemetry.is_recording() {
            telemetry.emit(TelemetryEvent::Deferred {
                npc: npc.clone(),
                purpose,
                waited_ms: waited.as_secs_f64() * 1000.0,
                queue_depth: self.scheduler.queue_depth(),
            });
        }
        self.trace_request(&request);
        let kept = (purpose == crate::backends::Purpose::Reply).then(|| request.clone());
        let ticket = self.bridge.spawn(task, request);
        self.requests.launch(&npc, ticket, kept);
        self.scheduler.count_sent();
    }

    fn trace_request(&self, request: &ChatRequest) {
        // Copying the prompt and estimating its tokens costs microseconds per
        // request; only pay for it when someone records telemetry.
        let telemetry = self.out.telemetry();
        if telemetry.is_recording() {
            let purpose = request.purpose();
            telemetry.emit(TelemetryEvent::Request {
                npc: request.npc.clone(),
                purpose,
                backend: self.bridge.backend_name(purpose).to_owned(),
                at: self.out.seconds(),
                estimated_tokens: estimate_prompt_tokens(&request.messages),
                messages: request.messages.clone(),
            });
        }
    }
}
