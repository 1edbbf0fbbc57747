//! Finished requests come back: [`receive_results`] passes streamed pieces on,
//! paces the scheduler and accounts for each request; [`record_results`] puts
//! replies and summaries into memory with one core call each, once the actions
//! stage has taken the replies that call actions.

use std::sync::Arc;
use std::time::Duration;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::core::TurnCore;
use super::outbox::Outbox;
use crate::backends::{BackendError, ChatResponse, Purpose};
use crate::memory::{NpcId, SummaryJobId, SummaryOutcome, estimate_tokens};
use crate::plugin::bridge::{Finished, LlmBridge, TaskEvent, TaskId};
use crate::plugin::clock::NpcMemoryClock;
use crate::plugin::messages::{NpcReplied, NpcReplyDelta, NpcReplyFailed, ReplyError};
use crate::plugin::npc::TurnId;
use crate::plugin::persona::PersonaBindings;
use crate::plugin::requests::{Arrived, ArrivedWork, FinishedTask, NpcRequests, Resend};
use crate::plugin::schedule::{Class, NpcMemoryScheduler};
use crate::plugin::settings::NpcMemorySettings;
use crate::plugin::telemetry::{Telemetry, TelemetryEvent};
use crate::plugin::usage::{RequestFinished, RequestOutcome};

/// What taking results from the backends borrows.
#[derive(SystemParam)]
pub(crate) struct Receive<'w, 's> {
    bridge: ResMut<'w, LlmBridge>,
    requests: ResMut<'w, NpcRequests>,
    scheduler: ResMut<'w, NpcMemoryScheduler>,
    settings: Res<'w, NpcMemorySettings>,
    out: Outbox<'w, 's>,
}

/// Takes what the backends sent within the frame's time budget: a burst of
/// replies is spread over a few frames instead of stalling one.
pub(crate) fn receive_results(mut receive: Receive) {
    let started = bevy::platform::time::Instant::now();
    let budget = receive.settings.collect_budget;
    while started.elapsed() < budget
        && let Some(event) = receive.bridge.try_next()
    {
        match event {
            TaskEvent::Delta { npc, task, text } => {
                let max = receive.settings.max_reply_chars;
                if let Some((turn, delta)) = receive.requests.admit_delta(&npc, task, text, max) {
                    receive.out.delta(NpcReplyDelta { npc, turn, delta });
                }
            }
            TaskEvent::RateLimited {
                npc,
                task,
                retry_after,
            } => receive.retried_in_backend(&npc, task, retry_after),
            TaskEvent::Done(done) => receive.finished(done),
        }
    }
}

/// Whether a request came back and waits to be recorded.
pub(crate) fn results_arrived(requests: Res<NpcRequests>) -> bool {
    requests.has_arrived()
}

impl Receive<'_, '_> {
    fn finished(&mut self, done: Finished) {
        let Finished {
            npc,
            backend,
            task,
            purpose,
            result,
            latency,
            retries,
        } = done;
        if let Err(error) = &result
            && let Some(retry_after) = error.rate_limit()
            && self.rate_limited(&npc, task, purpose, retry_after)
        {
            return;
        }
        self.paced(task, &result);
        // A start held back as a possible tag that was none is the reply's last
        // piece: the deltas add up to the reply.
        let max = self.settings.max_reply_chars;
        if result.is_ok()
            && let Some((turn, delta)) = self.requests.flush_delta(&npc, task, max)
        {
            let npc = npc.clone();
            self.out.delta(NpcReplyDelta { npc, turn, delta });
        }
        let finished = self.requests.finish(&npc, task);
        let result = result.and_then(|response| checked_reply(response, &backend));
        // A request cancelled after it was sent (a clear, an interrupt, a
        // conversation ended) that still came back was answered, and billed: it
        // counts in the usage figures though nothing records it.
        self.account(&npc, purpose, &result, latency, retries);
        let Some(finished) = finished else {
            return;
        };
        let work = match finished {
            FinishedTask::Reply(turn) => ArrivedWork::Reply { turn, result },
            FinishedTask::Summary(job) => ArrivedWork::Summary { job, result },
        };
        self.requests.arrive(Arrived {
            npc,
            backend,
            work,
            latency,
        });
    }

    /// Usage figures and the response's telemetry.
    fn account(
        &mut self,
        npc: &NpcId,
        purpose: Purpose,
        result: &Result<ChatResponse, BackendError>,
        latency: Duration,
        retries: u32,
    ) {
        let outcome = RequestOutcome {
            ok: result.is_ok(),
            retries,
            latency,
            usage: result.as_ref().ok().and_then(|r| r.usage),
        };
        let usage = outcome.usage;
        self.out.request_finished(RequestFinished {
            npc: npc.clone(),
            purpose,
            outcome,
        });
        let telemetry = self.out.telemetry();
        if telemetry.is_recording() {
            telemetry.emit(TelemetryEvent::Response {
                npc: npc.clone(),
                purpose,
                latency_ms: latency.as_secs_f64() * 1000.0,
                retries,
                content: result.as_ref().ok().map(|r| r.content.clone()),
                error: result.as_ref().err().map(ToString::to_string),
                estimated_tokens: result.as_ref().map_or(0, |r| estimate_tokens(&r.content)),
                usage,
            });
        }
    }

    /// A request the provider rate-limited: dispatch pauses, and the request waits
    /// its turn again unless it already did too often. Returns whether it was
    /// queued again, in which case it has not finished.
    fn rate_limited(
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
            Some(Resend::Reply(request)) => {
                let class = Class::of_reply(self.requests.reply_is_background(npc));
                self.scheduler.requeue_reply(npc, task, request, class);
            }
            Some(Resend::Summary(job)) => self.scheduler.requeue_summary(npc, task, job),
            None => {}
        }
        self.out.telemetry().emit(TelemetryEvent::Backoff {
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
    fn retried_in_backend(&mut self, npc: &NpcId, task: TaskId, retry_after: Option<Duration>) {
        if !self.requests.is_running(npc, task) {
            return; // cancelled meanwhile: its limit is no longer our business
        }
        let settings = &self.settings.schedule;
        let pause = self
            .scheduler
            .backend_waits_out(task, retry_after, settings);
        self.out.telemetry().emit(TelemetryEvent::Backoff {
            npc: npc.clone(),
            purpose: self.purpose_of(npc, task),
            pause_ms: pause.as_secs_f64() * 1000.0,
            retry_after: retry_after.is_some(),
            requeued: false,
            backend_retries: true,
        });
    }

    /// Whether request `task` of `npc` is its reply or a summary.
    fn purpose_of(&self, npc: &NpcId, task: TaskId) -> Purpose {
        if self.requests.reply_task(npc) == Some(task) {
            Purpose::Reply
        } else {
            Purpose::Summary
        }
    }

    /// A request came back: a success resets the rate-limit pause's doubling.
    fn paced(&mut self, task: TaskId, result: &Result<ChatResponse, BackendError>) {
        if let Ok(response) = result {
            self.scheduler.succeeded(task);
            if let Some(usage) = response.usage {
                self.scheduler.billed(task, usage);
            }
        }
    }
}

/// What recording results borrows.
#[derive(SystemParam)]
pub(crate) struct Recording<'w, 's> {
    core: TurnCore<'w, 's>,
    bindings: Res<'w, PersonaBindings>,
    clock: Res<'w, NpcMemoryClock>,
    settings: Res<'w, NpcMemorySettings>,
}

/// Replies and summaries that came back enter memory, in the order they came.
pub(crate) fn record_results(mut recording: Recording) {
    for arrived in recording.core.requests.take_arrived() {
        let Arrived {
            npc,
            backend,
            work,
            latency,
        } = arrived;
        match work {
            ArrivedWork::Reply { turn, result } => {
                recording.reply_finished(&npc, turn, result, &backend)
            }
            ArrivedWork::Summary { job, result } => {
                recording.summary_finished(&npc, job, result, latency)
            }
        }
    }
}

impl Recording<'_, '_> {
    fn reply_finished(
        &mut self,
        npc: &NpcId,
        turn: TurnId,
        result: Result<ChatResponse, BackendError>,
        backend: &str,
    ) {
        let mut fields = self.core.requests.take_fields(npc, turn);
        let result = result.and_then(|response| {
            let (own, words) = self.bindings.split_fields(npc, response.content);
            fields.merge(own);
            if words.is_empty() {
                // Only a tag: no words to remember or show.
                return Err(empty_reply(backend));
            }
            Ok(words)
        });
        match result {
            Ok(words) => {
                let now = self.clock.now();
                let max = self.settings.max_reply_chars;
                let text: Arc<str> = cut_runaway(self.core.out.telemetry(), npc, words, max).into();
                if let Some(mut layers) = self.core.layers.get_mut(npc) {
                    let replied = layers.reply(text.clone(), now);
                    self.core.out.replied(NpcReplied {
                        npc: npc.clone(),
                        turn,
                        text,
                        index: replied.index,
                        fields,
                    });
                    self.core.report_overflow(npc, replied.overflow);
                    self.core.send_summary(npc, replied.summary);
                }
            }
            Err(error) => {
                self.core.out.failed(NpcReplyFailed {
                    npc: npc.clone(),
                    turn: Some(turn),
                    error: ReplyError::Backend(error),
                    unrecorded_line: None,
                });
            }
        }
        self.core.next_line(npc);
    }

    fn summary_finished(
        &mut self,
        npc: &NpcId,
        job: SummaryJobId,
        result: Result<ChatResponse, BackendError>,
        latency: Duration,
    ) {
        let Some(mut layers) = self.core.layers.get_mut(npc) else {
            return;
        };
        let result = result
            .as_ref()
            .map(|r| r.content.as_str())
            .map_err(ToString::to_string);
        match layers.finish_summary(job, result, latency) {
            SummaryOutcome::Updated(mut update) => {
                let next = update.next.take();
                self.core.out.summary_updated(npc, update);
                self.core.send_summary(npc, next);
            }
            SummaryOutcome::Retry(retry) => self.core.send_summary(npc, Some(retry)),
            SummaryOutcome::Degraded(degradation) => {
                self.core.out.degraded(npc, degradation);
            }
            SummaryOutcome::Stale => {}
        }
    }
}

/// A reply cut to `max` characters, the same prefix its deltas stopped at.
pub(super) fn cut_runaway(
    telemetry: &Telemetry,
    npc: &NpcId,
    content: String,
    max: usize,
) -> String {
    let Some((cut, _)) = content.char_indices().nth(max) else {
        return content;
    };
    telemetry.emit(TelemetryEvent::ReplyCut {
        npc: npc.clone(),
        chars: content.chars().count(),
        kept: max,
    });
    content[..cut].to_owned()
}

/// An empty reply is no reply: it would teach the NPC to say nothing. One that
/// calls actions may say nothing while it acts.
fn checked_reply(mut response: ChatResponse, backend: &str) -> Result<ChatResponse, BackendError> {
    let trimmed = response.content.trim();
    if trimmed.is_empty() && response.action_calls.is_empty() {
        return Err(empty_reply(backend));
    }
    if trimmed.len() != response.content.len() {
        response.content = trimmed.to_owned();
    }
    Ok(response)
}

/// The error for an answer that says nothing (and calls no action it was
/// offered).
pub(super) fn empty_reply(backend: &str) -> BackendError {
    BackendError::Malformed {
        backend: backend.to_owned(),
        reason: "the reply was empty".into(),
    }
}
