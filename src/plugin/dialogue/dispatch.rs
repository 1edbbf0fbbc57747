//! Queued requests go out: as many as the concurrency cap, the budget and rate
//! limits allow, in the scheduler's order. A summary is built only now, so one
//! that waited covers every message that arrived meanwhile.

use std::time::Duration;

use super::Dialogue;
use crate::backends::{BackendError, ChatRequest, Purpose, RequestKind};
use crate::memory::{NpcId, estimate_prompt_tokens};
use crate::plugin::bridge::TaskId;
use crate::plugin::requests::Resend;
use crate::plugin::schedule::{Entry, Work, WorkKind};
use crate::plugin::telemetry::TelemetryEvent;

impl Dialogue<'_, '_> {
    /// Sends queued requests while a slot is free and the scheduler allows. Costs
    /// O(log n) per request sent, nothing per idle NPC.
    pub(crate) fn dispatch(&mut self) {
        let max = self.settings.max_concurrent_requests.max(1);
        while self.requests.running() < max {
            let Some(entry) = self.scheduler.next(&self.settings.schedule, &self.requests) else {
                break;
            };
            self.send(entry);
        }
        self.scheduler.end(&self.settings.schedule);
    }

    fn send(&mut self, entry: Entry<Work>) {
        let waited = self.scheduler.now().saturating_sub(entry.queued_at);
        let Work { npc, task, kind } = entry.work;
        let request = match kind {
            WorkKind::Reply(request) => request,
            WorkKind::Summary(job) => {
                let job = self
                    .layers
                    .get_mut(&npc)
                    .and_then(|mut layers| layers.summary_job_now(job));
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
        if !waited.is_zero() && self.telemetry.is_recording() {
            self.telemetry.emit(TelemetryEvent::Deferred {
                npc: npc.clone(),
                purpose,
                waited_ms: waited.as_secs_f64() * 1000.0,
                queue_depth: self.scheduler.queue_depth(),
            });
        }
        self.trace_request(&request);
        let kept = (purpose == Purpose::Reply).then(|| request.clone());
        let ticket = self.bridge.spawn(task, request);
        self.requests.launch(&npc, ticket, kept);
        self.scheduler.count_sent();
    }

    /// A request the provider rate-limited: dispatch pauses, and the request waits
    /// its turn again unless it already did too often. Returns whether it was
    /// queued again, in which case it has not finished.
    pub(crate) fn rate_limited(
        &mut self,
        npc: &NpcId,
        task: TaskId,
        purpose: Purpose,
        retry_after: Option<Duration>,
    ) -> bool {
        let settings = &self.settings.schedule;
        let pause = self.scheduler.rate_limited(retry_after, settings);
        let resend = self.requests.resend(npc, task, settings.rate_limit_retries);
        let requeued = resend.is_some();
        match resend {
            Some(Resend::Reply(request)) => self.scheduler.requeue_reply(npc, task, request),
            Some(Resend::Summary(job)) => self.scheduler.requeue_summary(npc, task, job),
            None => {}
        }
        self.telemetry.emit(TelemetryEvent::Backoff {
            npc: npc.clone(),
            purpose,
            pause_ms: pause.as_secs_f64() * 1000.0,
            retry_after: retry_after.is_some(),
            requeued,
            backend_retries: false,
        });
        requeued
    }

    /// The backend waits out a rate limit and retries the request itself (an HTTP
    /// client's own retries): the request keeps running, and every other one
    /// pauses too, rather than meeting the same limit.
    pub(crate) fn retried_in_backend(
        &mut self,
        npc: &NpcId,
        task: TaskId,
        retry_after: Option<Duration>,
    ) {
        if !self.requests.is_running(npc, task) {
            return; // cancelled meanwhile: its limit is no longer our business
        }
        let settings = &self.settings.schedule;
        let pause = self
            .scheduler
            .backend_waits_out(task, retry_after, settings);
        self.telemetry.emit(TelemetryEvent::Backoff {
            npc: npc.clone(),
            purpose: self.purpose_of(npc, task),
            pause_ms: pause.as_secs_f64() * 1000.0,
            retry_after: retry_after.is_some(),
            requeued: false,
            backend_retries: true,
        });
    }

    /// Whether request `task` of `npc` is its reply or a summary.
    pub(crate) fn purpose_of(&self, npc: &NpcId, task: TaskId) -> Purpose {
        if self.requests.reply_task(npc) == Some(task) {
            Purpose::Reply
        } else {
            Purpose::Summary
        }
    }

    /// A request came back: a success resets the rate-limit pause's doubling.
    pub(crate) fn paced(
        &mut self,
        task: TaskId,
        result: &Result<crate::backends::ChatResponse, BackendError>,
    ) {
        if let Ok(response) = result {
            self.scheduler.succeeded(task);
            if let Some(usage) = response.usage {
                self.scheduler.billed(task, usage);
            }
        }
    }
}
