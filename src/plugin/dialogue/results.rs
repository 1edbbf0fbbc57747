//! Finished requests come back: streamed pieces are passed on, replies and summaries
//! enter memory with one core call each, and what they lead to is sent on.

use std::sync::Arc;
use std::time::Duration;

use super::Dialogue;
use crate::backends::{BackendError, ChatResponse, Purpose};
use crate::memory::{NpcId, SummaryJobId, SummaryOutcome, estimate_tokens};
use crate::plugin::bridge::{Finished, TaskEvent};
use crate::plugin::messages::{NpcReplied, NpcReplyDelta, NpcReplyFailed, ReplyError};
use crate::plugin::npc::TurnId;
use crate::plugin::requests::FinishedTask;
use crate::plugin::telemetry::TelemetryEvent;
use crate::plugin::usage::{RequestFinished, RequestOutcome};

impl Dialogue<'_, '_> {
    /// Applies finished requests within the frame's time budget: a burst of replies
    /// is spread over a few frames instead of stalling one.
    pub(crate) fn collect(&mut self) {
        let started = bevy::platform::time::Instant::now();
        let budget = self.settings.collect_budget;
        while started.elapsed() < budget
            && let Some(event) = self.bridge.try_next()
        {
            match event {
                TaskEvent::Delta { npc, task, text } => {
                    let max = self.settings.max_reply_chars;
                    if let Some((turn, delta)) = self.requests.admit_delta(&npc, task, text, max) {
                        self.out.delta(NpcReplyDelta { npc, turn, delta });
                    }
                }
                TaskEvent::RateLimited {
                    npc,
                    task,
                    retry_after,
                } => self.retried_in_backend(&npc, task, retry_after),
                TaskEvent::Done(done) => self.finished(done),
            }
        }
    }

    fn finished(&mut self, done: Finished) {
        let Finished {
            npc,
            backend,
            task,
            result,
            latency,
            retries,
        } = done;
        if let Err(error) = &result
            && let Some(retry_after) = error.rate_limit()
        {
            let purpose = self.purpose_of(&npc, task);
            if self.rate_limited(&npc, task, purpose, retry_after) {
                return;
            }
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
        let Some(finished) = self.requests.finish(&npc, task) else {
            return;
        };
        let purpose = match finished {
            FinishedTask::Reply(_) => Purpose::Reply,
            FinishedTask::Summary(_) => Purpose::Summary,
        };
        let backend = backend.to_string();
        let result = result.and_then(|response| checked_reply(response, &backend));
        self.account(&npc, purpose, &result, latency, retries);
        match finished {
            FinishedTask::Summary(job) => self.summary_finished(&npc, job, result, latency),
            FinishedTask::Reply(turn) => self.reply_finished(&npc, turn, result),
        }
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
        if self.telemetry.is_recording() {
            self.telemetry.emit(TelemetryEvent::Response {
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

    fn reply_finished(
        &mut self,
        npc: &NpcId,
        turn: TurnId,
        result: Result<ChatResponse, BackendError>,
    ) {
        let result = result.and_then(|response| self.take_calls(npc, turn, response));
        let Some(result) = result.transpose() else {
            // Its actions go to the game; the turn goes on with the follow-up.
            return;
        };
        self.actions.end_turn(npc);
        let mut fields = self.requests.take_fields(npc, turn);
        let result = result.and_then(|response| {
            let (own, words) = self.split_fields(npc, response.content);
            fields.merge(own);
            if words.is_empty() {
                // Only a tag: no words to remember or show.
                return Err(empty_reply(self.bridge.backend_name(Purpose::Reply)));
            }
            Ok(words)
        });
        match result {
            Ok(words) => {
                let now = self.clock.now();
                let text: Arc<str> = self.cut_runaway(npc, words).into();
                if let Some(mut layers) = self.layers.get_mut(npc) {
                    let replied = layers.reply(text.clone(), now);
                    self.out.replied(NpcReplied {
                        npc: npc.clone(),
                        turn,
                        text,
                        index: replied.index,
                        fields,
                    });
                    self.report_overflow(npc, replied.overflow);
                    self.send_summary(npc, replied.summary);
                }
            }
            Err(error) => {
                self.out.failed(NpcReplyFailed {
                    npc: npc.clone(),
                    turn: Some(turn),
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
            SummaryOutcome::Updated(mut update) => {
                let next = update.next.take();
                self.out.summary_updated(&self.telemetry, npc, update);
                self.send_summary(npc, next);
            }
            SummaryOutcome::Retry(retry) => self.send_summary(npc, Some(retry)),
            SummaryOutcome::Degraded(degradation) => {
                self.out.degraded(&self.telemetry, npc, degradation);
            }
            SummaryOutcome::Stale => {}
        }
    }

    /// A reply cut to `max_reply_chars`, the same prefix its deltas stopped at.
    pub(super) fn cut_runaway(&self, npc: &NpcId, content: String) -> String {
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
