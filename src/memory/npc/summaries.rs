//! Summary jobs on the layers: when one is due, what its result does to memory
//! (accepted, retried once, or degraded), and a synchronous driver for tools.

use std::sync::Arc;
use std::time::Duration;

use super::LayersMut;
use crate::memory::FactCategory;
use crate::memory::context::{
    Degradation, InFlight, SUMMARY_ATTEMPTS, SummaryJobId, SummaryKind, SummaryRecord,
    SummaryTrigger,
};
use crate::memory::facts::{FactUpdate, parse_summary_reply};
use crate::memory::message::LogIndex;
use crate::memory::segments::{SegmentPriority, SummarySegment};
use crate::memory::summary::{SummaryJob, SummaryOutcome, SummaryUpdate, job_for_in_flight};

impl LayersMut<'_> {
    /// Asks for a summary of everything uncovered, whatever the threshold says.
    pub fn request_summary(&mut self) {
        self.context.manual_requested = true;
    }

    /// Starts a summary if one is due and none is in flight.
    pub fn start_summary(&mut self) -> Option<SummaryJob> {
        let facts = self.every_fact();
        let whole = self.context.sends_whole_log(self.log, facts.as_deref());
        let trigger = self
            .context
            .due(self.log.next_index(), whole, self.window.hard_cap())?;
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
            facts: false,
        });
        Some(self.build_in_flight())
    }

    /// The request for the job in flight, noting whether it asks for facts.
    fn build_in_flight(&mut self) -> SummaryJob {
        let facts = self.context.features.facts.enabled;
        if let Some(job) = self.context.in_flight.as_mut() {
            job.facts = facts && job.kind == SummaryKind::Fold;
        }
        job_for_in_flight(self.log, self.context)
    }

    /// The job in flight, rebuilt just before it is sent, or `None` when job `id`
    /// is no longer in flight (the memory was cleared or reloaded meanwhile).
    ///
    /// A job that waited (a scheduler deferred it, or the rate limit held it back)
    /// is widened first: a fold then covers every message still uncovered, up to a
    /// hard cap's worth, so one request does what several stale ones would have.
    /// Compactions and retries keep their range: the segments or messages they name
    /// do not change while they wait.
    pub fn summary_job_now(&mut self, id: SummaryJobId) -> Option<SummaryJob> {
        let hard_cap = self.window.hard_cap() as LogIndex;
        let log_end = self.log.next_index();
        let job = self.context.in_flight.as_mut().filter(|job| job.id == id)?;
        if job.kind == SummaryKind::Fold && job.attempt == 1 {
            let end = log_end.min(job.covered.start.saturating_add(hard_cap));
            job.covered.end = job.covered.end.max(end);
        }
        Some(self.build_in_flight())
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
        let wants_facts = job.facts;
        let covered = job.covered.clone();
        let context = &*self.context;
        let checked = result.and_then(|raw| {
            let (summary, updates, notes) = if wants_facts {
                let reply = parse_summary_reply(raw, covered, &context.features.facts)
                    .map_err(|why| format!("malformed summary: {why}"))?;
                let notes = (reply.notes, reply.dropped_notes);
                (reply.summary, reply.updates, notes)
            } else {
                (raw.to_owned(), Vec::new(), (Vec::new(), 0))
            };
            let summary = context
                .validate(&summary)
                .map_err(|why| format!("malformed summary: {why}"))?;
            Ok((summary, updates, notes))
        });
        match checked {
            Ok((summary, mut updates, (notes, notes_dropped))) => {
                // `player_name:<id>` is the name of a speaker who spoke; any other
                // id is the model's guess and would pin a name on no one.
                let speakers = self.log.speakers();
                updates.retain(|u| match (u.key.category(), u.key.subkey()) {
                    (FactCategory::PlayerName, Some(id)) => speakers.iter().any(|s| s.id() == id),
                    _ => true,
                });
                let mut update = self.accept(summary, &updates);
                let offered = notes.len();
                update.notes_added = self.add_notes(notes);
                update.notes_dropped = notes_dropped + (offered - update.notes_added);
                update.next = self.start_summary();
                SummaryOutcome::Updated(update)
            }
            Err(reason) => self.fail(reason),
        }
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
            notes_added: 0,
            notes_dropped: 0,
            next: None,
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
            return SummaryOutcome::Retry(self.build_in_flight());
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

    /// Runs every summary due now through `summarize`, following on with the jobs
    /// each result makes due and retrying a failed one once, the way the plugin does
    /// with a backend. For tools and benchmarks that summarize synchronously.
    /// Returns how many requests `summarize` answered.
    pub fn summarize_due(
        &mut self,
        summarize: impl FnMut(&SummaryJob) -> Result<String, String>,
    ) -> usize {
        let due = self.start_summary();
        self.drive_summaries(due, summarize)
    }

    /// Answers `job` with the offline backend, and every job that follows from it.
    #[cfg(test)]
    pub(crate) fn answer_offline(&mut self, job: Option<SummaryJob>) {
        let backend = crate::backends::OfflineBackend::default();
        self.drive_summaries(job, |job| Ok(backend.summarize(&job.input)));
    }

    /// Answers `due` through `summarize`, then every job its results make due.
    fn drive_summaries(
        &mut self,
        mut due: Option<SummaryJob>,
        mut summarize: impl FnMut(&SummaryJob) -> Result<String, String>,
    ) -> usize {
        let mut requests = 0;
        while let Some(job) = due {
            requests += 1;
            let result = summarize(&job);
            let result = result.as_deref().map_err(String::clone);
            due = match self.finish_summary(job.id, result, Duration::ZERO) {
                SummaryOutcome::Updated(update) => update.next,
                SummaryOutcome::Retry(retry) => Some(retry),
                SummaryOutcome::Degraded(_) | SummaryOutcome::Stale => None,
            };
        }
        requests
    }
}
