//! The memory scheduler: replies overtake summaries, the per-minute budget holds,
//! rate limits pause every request and lose nothing, and background summaries
//! wait and then cover everything at once. Time is simulated: the scheduler reads
//! `Time<Real>`, which these tests advance by hand, so nothing depends on how fast
//! the machine is.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_npc_memory::backends::{BackendFuture, ChatBackend, ChatRequest, Progress, TokenUsage};
use bevy_npc_memory::memory::{Degradation, LogIndex};
use bevy_npc_memory::prelude::*;
use proptest::prelude::*;

use crate::support::{Harness, Inbox, persona};
use bevy_npc_memory::backends::BackendError;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::dialogue::NpcMemoryDegraded;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::dialogue::NpcSummaryUpdated;
use bevy_npc_memory::schedule::MemoryTier;
use bevy_npc_memory::schedule::NpcMemoryScheduler;
use bevy_npc_memory::schedule::SetMemoryTier;

mod background;
mod budget;
mod deferral;
mod rate_limits;

/// Answers like the offline backend, records every request in order, can answer
/// the next few with HTTP 429, and can hold the first summary until released.
#[derive(Clone, Default)]
struct Recording {
    sent: Arc<Mutex<Vec<(Purpose, String)>>>,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
    rate_limits: Arc<AtomicU32>,
    retry_after: Option<Duration>,
    hold_first_summary: Option<async_channel::Receiver<()>>,
    held: Arc<AtomicU32>,
    /// The usage every answer reports, as a provider would.
    usage: Option<TokenUsage>,
}

impl Recording {
    fn sent(&self) -> Vec<(Purpose, String)> {
        self.sent.lock().unwrap().clone()
    }

    fn count(&self) -> usize {
        self.sent.lock().unwrap().len()
    }

    fn summaries(&self) -> Vec<ChatRequest> {
        let requests = self.requests.lock().unwrap();
        let summaries = requests.iter().filter(|r| r.purpose() == Purpose::Summary);
        summaries.cloned().collect()
    }
}

impl ChatBackend for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    fn complete(&self, request: ChatRequest, progress: Progress) -> BackendFuture {
        let purpose = request.purpose();
        self.sent
            .lock()
            .unwrap()
            .push((purpose, request.npc.to_string()));
        self.requests.lock().unwrap().push(request.clone());
        let limited = self
            .rate_limits
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if limited {
            let error = BackendError::RateLimited {
                backend: "recording".into(),
                retry_after: self.retry_after,
                reason: "slow down".into(),
            };
            return Box::pin(std::future::ready(Err(error)));
        }
        let gate = match (&self.hold_first_summary, purpose) {
            (Some(gate), Purpose::Summary) if self.held.fetch_add(1, Ordering::SeqCst) == 0 => {
                Some(gate.clone())
            }
            _ => None,
        };
        let answer = OfflineBackend::default().complete(request, progress);
        let usage = self.usage;
        Box::pin(async move {
            if let Some(gate) = gate {
                let _ = gate.recv().await;
            }
            let mut answer = answer.await?;
            answer.usage = usage.or(answer.usage);
            Ok(answer)
        })
    }
}

/// A harness whose real-time clock only moves when the test says.
fn simulated(plugin: NpcMemoryPlugin) -> Harness {
    let mut h = Harness::new(plugin);
    h.app
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::ZERO));
    h
}

fn settings(configure: impl FnOnce(&mut NpcMemorySettings)) -> NpcMemorySettings {
    let mut settings = NpcMemorySettings::default();
    settings.memory.max_context_window = 4;
    settings.memory.summary_threshold = Some(2);
    // Every finished request is applied the frame it arrives, however slow the
    // machine, so a frame's sends depend only on what came back.
    settings.collect_budget = Duration::from_secs(10);
    configure(&mut settings);
    settings
}

fn scheduler(h: &Harness) -> &NpcMemoryScheduler {
    h.app.world().resource::<NpcMemoryScheduler>()
}

/// Moves simulated time on by `step` in one frame.
fn advance(h: &mut Harness, step: Duration) {
    h.app
        .insert_resource(TimeUpdateStrategy::ManualDuration(step));
    h.app.update();
    h.app
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::ZERO));
}

/// Updates without moving time until every request sent has come back and been
/// applied (the backend answers at once, so this is quick).
fn settle(h: &mut Harness, backend: &Recording) {
    let mut quiet = 0;
    let mut last = (usize::MAX, usize::MAX);
    loop {
        h.run_until("sent requests reach the backend", |w| {
            w.resource::<NpcMemoryScheduler>().requests_sent() as usize == backend.count()
        });
        let now = (
            backend.count(),
            h.inbox::<NpcReplied>().len() + h.inbox::<NpcSummaryUpdated>().len(),
        );
        quiet = if now == last { quiet + 1 } else { 0 };
        last = now;
        if quiet >= 3 {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn l2_has(h: &Harness, npc: &str, line: &str) -> bool {
    h.log(npc).iter().any(|(_, text)| text == line)
}

/// Simulated seconds (in half seconds) at which each request was sent, while
/// time moves on until `done`.
fn run_timed(h: &mut Harness, backend: &Recording, done: impl Fn(&Harness) -> bool) -> Vec<f64> {
    let mut at = Vec::new();
    let mut sent = scheduler(h).requests_sent();
    let mut t = 0.0;
    while !done(h) {
        assert!(t < 600.0, "ten minutes went by");
        settle(h, backend);
        let now = scheduler(h).requests_sent();
        at.extend(std::iter::repeat_n(t, (now - sent) as usize));
        sent = now;
        advance(h, Duration::from_millis(500));
        t += 0.5;
    }
    at
}

/// Every message that left the prompts of `npcs` is covered by a summary, or was
/// reported dropped past the hard cap.
fn check_invariant_of(h: &Harness, npcs: &[&str]) {
    let world = h.app.world();
    for &npc in npcs {
        let id = NpcId::new(npc);
        let start = world.resource::<RollingWindows>().get(&id).unwrap().start();
        let covered = world
            .resource::<ContextMemoryManager>()
            .get(&id)
            .unwrap()
            .covered_until();
        let dropped: Vec<_> = h
            .inbox::<NpcMemoryDegraded>()
            .iter()
            .filter(|d| d.npc == id)
            .filter_map(|d| match &d.degradation {
                Degradation::WindowOverflow { dropped } => Some(dropped.clone()),
                _ => None,
            })
            .collect();
        for index in 0..start {
            let reported = dropped
                .iter()
                .any(|r: &std::ops::Range<LogIndex>| r.contains(&index));
            assert!(
                index < covered || reported,
                "{npc}: message {index} left the prompt (window starts at {start}) \
                 unsummarized (covered until {covered}) and unreported"
            );
        }
    }
}
