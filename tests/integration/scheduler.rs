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

#[test]
fn a_foreground_reply_overtakes_queued_background_summaries() {
    let (release, gate) = async_channel::bounded::<()>(1);
    let backend = Recording {
        hold_first_summary: Some(gate),
        ..Recording::default()
    };
    let plugin = NpcMemoryPlugin::default()
        .with_backend(backend.clone())
        .with_settings(settings(|s| {
            s.max_concurrent_requests = 1;
            s.schedule.background_delay = Duration::ZERO;
        }));
    let mut h = simulated(plugin);
    for npc in ["bg1", "bg2", "bg3"] {
        h.spawn(npc, persona(npc).with_tier(MemoryTier::Background));
    }
    let fg = h.spawn("fg", persona("fg"));
    h.app
        .world_mut()
        .entity_mut(fg)
        .insert(MemoryTier::Foreground);
    for npc in ["bg1", "bg2", "bg3"] {
        h.say(npc, "Status report.");
    }
    // Three replies, then the first summary holds the only slot and two wait.
    let seen = backend.clone();
    h.run_until("the first summary is held, two wait", move |w| {
        w.resource::<NpcMemoryScheduler>().deferred_summaries() == 2
            && w.resource::<Inbox<NpcReplied>>().0.len() == 3
            && seen.count() == 4
    });
    assert_eq!(backend.sent().last().map(|s| s.0), Some(Purpose::Summary));
    assert_eq!(
        scheduler(&h).tier(&NpcId::new("fg")),
        MemoryTier::Foreground
    );
    assert_eq!(
        scheduler(&h).tier(&NpcId::new("bg2")),
        MemoryTier::Background
    );

    h.say("fg", "Open the door!");
    h.app.update();
    assert_eq!(scheduler(&h).queue_depth(), 3, "the reply waits too");
    release.close();
    h.wait_for_replies(4);
    h.settle();

    let after_held: Vec<_> = backend.sent().into_iter().skip(4).collect();
    assert_eq!(
        after_held,
        [
            (Purpose::Reply, "fg".to_owned()),
            (Purpose::Summary, "fg".to_owned()),
            (Purpose::Summary, "bg2".to_owned()),
            (Purpose::Summary, "bg3".to_owned()),
        ],
        "the player's reply, then its foreground summary, went before the \
         background summaries queued earlier"
    );
}

#[test]
fn no_minute_holds_more_requests_than_the_budget_and_every_line_is_answered() {
    let backend = Recording::default();
    let plugin = NpcMemoryPlugin::default()
        .with_backend(backend.clone())
        .with_settings(settings(|s| s.schedule.requests_per_minute = Some(3)));
    let mut h = simulated(plugin);
    let npcs = ["a", "b", "c", "d"];
    for npc in npcs {
        h.spawn(npc, persona(npc));
        for line in 0..3 {
            h.say(npc, &format!("Line {line} for {npc}."));
        }
    }
    // Requests sent in each simulated second, from second 0 (the spawns' frames).
    settle(&mut h, &backend);
    let mut sent = scheduler(&h).requests_sent();
    let mut per_second = vec![sent];
    while !(h.inbox::<NpcReplied>().len() == 12
        && h.app.world().resource::<NpcRequests>().is_idle())
    {
        assert!(per_second.len() < 3600, "an hour went by without finishing");
        advance(&mut h, Duration::from_secs(1));
        settle(&mut h, &backend);
        let now = scheduler(&h).requests_sent();
        per_second.push(now - sent);
        sent = now;
    }
    for (start, _) in per_second.iter().enumerate() {
        let minute: u64 = per_second[start..].iter().take(60).sum();
        assert!(
            minute <= 3,
            "{minute} requests in the minute from second {start}"
        );
    }
    let total = backend.count();
    assert!(total >= 12, "12 replies at least, and their summaries");
    assert_eq!(total as u64, sent, "every request sent reached the backend");
    let minutes = per_second.len() / 60;
    assert!(
        minutes + 1 >= total / 3,
        "{total} requests in {minutes} minutes"
    );
    assert!(h.inbox::<NpcReplyFailed>().is_empty());
    let budget = scheduler(&h).budget_use();
    assert_eq!(budget.requests_per_minute, Some(3));
    assert!(budget.requests <= 3);
}

/// Background summaries with a backlog leave part of the budget to replies, so the
/// player's line is answered at once rather than when the minute's first request
/// ages out. Found by `examples/scheduler_bench/`: with the whole budget open to
/// summaries, 199 background NPCs spent it in a burst as their delays ran out, and
/// the foreground NPC's replies waited for the window to roll over.
#[test]
fn a_reply_finds_budget_left_while_background_summaries_have_a_backlog() {
    for reserve in [0.25, 0.0] {
        let backend = Recording::default();
        let plugin = NpcMemoryPlugin::default()
            .with_backend(backend.clone())
            .with_settings(settings(|s| {
                s.schedule.requests_per_minute = Some(4);
                s.schedule.background_delay = Duration::ZERO;
                s.schedule.reply_reserve = reserve;
            }));
        let mut h = simulated(plugin);
        let background: Vec<String> = (0..6).map(|i| format!("bg{i}")).collect();
        for npc in &background {
            h.spawn(npc, persona(npc).with_tier(MemoryTier::Background));
        }
        h.spawn("fg", persona("fg").with_tier(MemoryTier::Foreground));
        // Two events each reach the threshold: six summaries want to go now.
        for event in ["The lift is stuck again.", "Someone took the last battery."] {
            h.app
                .world_mut()
                .write_message(NpcWitnessed::new(background.clone(), event));
        }
        settle(&mut h, &backend);
        let summaries = backend.count();
        advance(&mut h, Duration::from_secs(1));
        h.say("fg", "Open the door!");
        settle(&mut h, &backend);
        let replied = h.inbox::<NpcReplied>().len();
        if reserve > 0.0 {
            assert_eq!(summaries, 3, "summaries leave one of four requests");
            assert_eq!(replied, 1, "the reply went at once");
            assert_eq!(scheduler(&h).budget_use().requests, 4);
        } else {
            assert_eq!(summaries, 4, "without a reserve summaries spend it all");
            assert_eq!(replied, 0, "and the reply waits for the window");
            advance(&mut h, Duration::from_secs(59));
            settle(&mut h, &backend);
            assert_eq!(h.inbox::<NpcReplied>().len(), 1, "a minute later");
        }
        assert_eq!(
            backend
                .sent()
                .iter()
                .filter(|s| s.0 == Purpose::Reply)
                .count(),
            1
        );
    }
}

/// A provider bills far more than the plugin's estimate of a short line (a long
/// persona in its own tokenizer, say): the tokens-per-minute budget counts what it
/// reported, so the next line waits for the minute instead of meeting a 429.
#[test]
fn the_token_budget_counts_what_the_provider_reports_not_the_estimate() {
    for reported in [None, Some(1_400)] {
        let backend = Recording {
            usage: reported.map(|prompt_tokens| TokenUsage {
                prompt_tokens,
                completion_tokens: 50,
                cached_tokens: None,
            }),
            ..Recording::default()
        };
        let plugin = NpcMemoryPlugin::default()
            .with_backend(backend.clone())
            .with_settings(settings(|s| {
                s.schedule.tokens_per_minute = Some(1_000);
                s.memory.summary_threshold = Some(100);
            }));
        let mut h = simulated(plugin);
        h.spawn("echo7", persona("ECHO-7"));
        h.spawn("guard", persona("Guard"));
        h.say("echo7", "Hello?");
        let first = run_timed(&mut h, &backend, |h| h.inbox::<NpcReplied>().len() == 1);
        h.say("guard", "Evening.");
        let second = run_timed(&mut h, &backend, |h| h.inbox::<NpcReplied>().len() == 2);
        assert_eq!(first, [0.0]);
        let used = scheduler(&h).budget_use().tokens;
        match reported {
            None => {
                assert_eq!(second, [0.0], "estimates alone leave room");
                assert!(used < 1_000, "{used} estimated tokens");
            }
            Some(_) => {
                assert_eq!(second.len(), 1);
                assert!(second[0] >= 59.0, "waited for the minute: {second:?}");
                assert!(h.inbox::<NpcReplyFailed>().is_empty());
            }
        }
    }
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

#[test]
fn a_429_storm_backs_off_exponentially_then_recovers_with_nothing_lost() {
    let backend = Recording::default();
    backend.rate_limits.store(4, Ordering::SeqCst);
    let plugin = NpcMemoryPlugin::default()
        .with_backend(backend.clone())
        .with_settings(settings(|s| s.memory.summary_threshold = Some(100)));
    let mut h = simulated(plugin);
    h.spawn("echo7", persona("ECHO-7"));
    h.spawn("guard", persona("Guard"));
    h.say("echo7", "Hello?");
    let at = run_timed(&mut h, &backend, |h| {
        h.inbox::<NpcReplied>().len() == 1 && scheduler(h).queue_depth() == 0
    });
    // Four 429s: pauses of 1, 2, 4 and 8 seconds between the five sends.
    let gaps: Vec<f64> = at.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(at.len(), 5, "sent at {at:?}");
    for (gap, pause) in gaps.iter().zip([1.0, 2.0, 4.0, 8.0]) {
        assert!(*gap >= pause, "gaps {gaps:?}");
    }
    assert!(h.inbox::<NpcReplyFailed>().is_empty(), "nothing failed");
    assert!(l2_has(&h, "echo7", "Hello?"), "the player's line is in L2");
    assert_eq!(h.log("echo7").len(), 2, "and the reply after it");

    // Recovered: the next line goes at once.
    h.say("guard", "Evening.");
    let at = run_timed(&mut h, &backend, |h| h.inbox::<NpcReplied>().len() == 2);
    assert_eq!(at, [0.0]);
    assert_eq!(scheduler(&h).budget_use().rate_limited_for, None);
}

#[test]
fn retry_after_pauses_every_npc_and_the_reply_goes_first_after_it() {
    let backend = Recording {
        retry_after: Some(Duration::from_secs(10)),
        ..Recording::default()
    };
    backend.rate_limits.store(1, Ordering::SeqCst);
    let plugin = NpcMemoryPlugin::default()
        .with_backend(backend.clone())
        .with_settings(settings(|s| {
            s.max_concurrent_requests = 1;
            s.memory.summary_threshold = Some(100);
        }));
    let mut h = simulated(plugin);
    h.spawn("echo7", persona("ECHO-7"));
    h.spawn("guard", persona("Guard").with_tier(MemoryTier::Background));
    h.say("echo7", "Hello?");
    h.say("guard", "Evening.");
    let at = run_timed(&mut h, &backend, |h| h.inbox::<NpcReplied>().len() == 2);
    assert_eq!(at.len(), 3, "sent at {at:?}");
    assert_eq!(at[0], 0.0);
    assert!(at[1] >= 10.0, "nothing went before Retry-After: {at:?}");
    let order: Vec<_> = backend.sent().into_iter().map(|s| s.1).collect();
    assert_eq!(
        order,
        ["echo7", "echo7", "guard"],
        "the rate-limited reply first"
    );
    assert!(h.inbox::<NpcReplyFailed>().is_empty());
}

#[test]
fn a_background_summary_waits_and_then_covers_everything_in_one_request() {
    let backend = Recording::default();
    let plugin = NpcMemoryPlugin::default()
        .with_backend(backend.clone())
        .with_settings(settings(|s| {
            s.memory.max_context_window = 8;
            s.schedule.background_delay = Duration::from_secs(30);
        }));
    let mut h = simulated(plugin);
    h.spawn("crowd", persona("Crowd").with_tier(MemoryTier::Background));
    for (i, line) in ["One.", "Two.", "Three."].into_iter().enumerate() {
        h.say("crowd", line);
        h.wait_for_replies(i + 1);
        settle(&mut h, &backend);
    }
    assert!(backend.summaries().is_empty(), "the summary is held back");
    assert!(scheduler(&h).deferred(&NpcId::new("crowd")).is_some());
    run_timed(&mut h, &backend, |h| {
        !h.inbox::<NpcSummaryUpdated>().is_empty()
    });
    let summaries = backend.summaries();
    assert_eq!(summaries.len(), 1, "one request for all six messages");
    let text: String = summaries[0]
        .messages
        .iter()
        .map(|m| m.content.to_string())
        .collect();
    for line in ["One.", "Two.", "Three."] {
        assert!(text.contains(line), "{line} missing from {text}");
    }
    let updated = &h.inbox::<NpcSummaryUpdated>()[0];
    assert_eq!(updated.covered, 0..6);
    assert_eq!(scheduler(&h).deferred(&NpcId::new("crowd")), None);
}

/// A Background NPC whose summaries wait an hour, on simulated time that the
/// tests never move that far: whatever sends a summary early is what is tested.
fn background_npc_held_for_an_hour() -> (Harness, Recording) {
    let backend = Recording::default();
    let plugin = NpcMemoryPlugin::default()
        .with_backend(backend.clone())
        .with_settings(settings(|s| {
            s.schedule.background_delay = Duration::from_secs(3600)
        }));
    let mut h = simulated(plugin);
    h.spawn("crowd", persona("Crowd").with_tier(MemoryTier::Background));
    (h, backend)
}

#[test]
fn a_held_back_summary_goes_before_the_window_would_drop_anything() {
    let (mut h, backend) = background_npc_held_for_an_hour();
    // Window 4, hard cap 8: time never moves, yet the summary must go.
    for i in 0..6 {
        h.say("crowd", &format!("Line {i}."));
        h.wait_for_replies(i + 1);
        settle(&mut h, &backend);
    }
    assert!(!backend.summaries().is_empty(), "the full window sent it");
    let dropped = h
        .inbox::<NpcMemoryDegraded>()
        .iter()
        .any(|d| matches!(d.degradation, Degradation::WindowOverflow { .. }));
    assert!(!dropped, "nothing left the prompt unsummarized");
}

/// Under a spent budget, waiting summaries go in order of need, not of arrival:
/// the NPC whose window nears its hard cap is summarized first, so nothing leaves
/// its prompt while summaries of roomy windows wait. Found by
/// `examples/scheduler_bench/`, where first-come order let 5 windows overflow.
#[test]
fn the_summary_of_a_window_near_its_hard_cap_goes_before_older_ones() {
    let backend = Recording::default();
    let plugin = NpcMemoryPlugin::default()
        .with_backend(backend.clone())
        .with_settings(settings(|s| {
            // Six requests a minute, summaries at most three of them.
            s.schedule.requests_per_minute = Some(6);
            s.schedule.reply_reserve = 0.5;
        }));
    let mut h = simulated(plugin);
    // Three quiet NPCs: one line each, in one frame. Their replies spend the
    // summaries' share, so their summaries (due after two messages) wait, oldest
    // first.
    for npc in ["q1", "q2", "q3", "busy"] {
        h.spawn(npc, persona(npc));
    }
    for npc in ["q1", "q2", "q3"] {
        h.say(npc, &format!("Hello from {npc}."));
    }
    settle(&mut h, &backend);
    // The busy NPC's three lines spend the rest of the minute; its window (4,
    // hard cap 8) holds six unsummarized messages: two from the cap.
    for line in 0..3 {
        h.say("busy", &format!("Busy line {line}."));
        settle(&mut h, &backend);
    }
    assert_eq!(h.inbox::<NpcReplied>().len(), 6);
    assert!(backend.summaries().is_empty(), "the budget is spent");

    advance(&mut h, Duration::from_secs(61));
    settle(&mut h, &backend);
    let order: Vec<String> = backend
        .summaries()
        .iter()
        .map(|r| r.npc.to_string())
        .collect();
    assert_eq!(order.first().map(String::as_str), Some("busy"), "{order:?}");
    // It has room again: two more exchanges leave nothing unsummarized.
    for line in 3..5 {
        h.say("busy", &format!("Busy line {line}."));
        settle(&mut h, &backend);
    }
    advance(&mut h, Duration::from_secs(61));
    settle(&mut h, &backend);
    check_invariant_of(&h, &["q1", "q2", "q3", "busy"]);
    let overflowed = h
        .inbox::<NpcMemoryDegraded>()
        .iter()
        .any(|d| matches!(d.degradation, Degradation::WindowOverflow { .. }));
    assert!(!overflowed, "no window reached its hard cap");
}

#[test]
fn a_rising_tier_sends_a_held_back_summary_at_once() {
    let (mut h, backend) = background_npc_held_for_an_hour();
    h.say("crowd", "Hello.");
    h.wait_for_replies(1);
    settle(&mut h, &backend);
    assert!(backend.summaries().is_empty());
    h.app
        .world_mut()
        .write_message(SetMemoryTier::new("crowd", MemoryTier::Nearby));
    h.wait_for_summaries(1);
    assert_eq!(backend.summaries().len(), 1);
}

/// One step of a random session.
#[derive(Clone, Debug)]
enum Step {
    Say(usize),
    Tier(usize, u8),
    Wait(u16),
    RateLimit(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0..3usize).prop_map(Step::Say),
        2 => (0..3usize, 0..3u8).prop_map(|(n, t)| Step::Tier(n, t)),
        2 => (1..90u16).prop_map(Step::Wait),
        1 => (1..4u8).prop_map(Step::RateLimit),
    ]
}

const NPCS: [&str; 3] = ["n0", "n1", "n2"];

fn tier(t: u8) -> MemoryTier {
    [
        MemoryTier::Foreground,
        MemoryTier::Nearby,
        MemoryTier::Background,
    ][t as usize]
}

/// Every message that left an NPC's prompt is covered by its summary, or was
/// reported dropped past the hard cap.
fn check_invariant(h: &Harness) {
    check_invariant_of(h, &NPCS);
}

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

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn nothing_leaves_the_prompt_unsummarized_under_deferral(
        steps in prop::collection::vec(step(), 10..40),
        rpm in prop::option::of(1..6u32),
        delay in 0..120u64,
    ) {
        let backend = Recording::default();
        let plugin = NpcMemoryPlugin::default()
            .with_backend(backend.clone())
            .with_settings(settings(|s| {
                s.max_queued_lines = 100;
                // Every 429 in this test is followed by a success soon enough.
                s.schedule.rate_limit_retries = 1000;
                s.schedule.requests_per_minute = rpm;
                s.schedule.background_delay = Duration::from_secs(delay);
            }));
        let mut h = simulated(plugin);
        for npc in NPCS {
            h.spawn(npc, persona(npc).with_tier(MemoryTier::Background));
        }
        let mut said = 0;
        for step in steps {
            match step {
                Step::Say(n) => {
                    h.say(NPCS[n], &format!("Line {said}."));
                    said += 1;
                }
                Step::Tier(n, t) => {
                    h.app.world_mut().write_message(SetMemoryTier::new(NPCS[n], tier(t)));
                }
                Step::Wait(secs) => advance(&mut h, Duration::from_secs(secs.into())),
                Step::RateLimit(n) => backend.rate_limits.store(n.into(), Ordering::SeqCst),
            }
            settle(&mut h, &backend);
            check_invariant(&h);
        }
        // However long it takes, every line is answered and nothing is lost.
        let mut minutes = 0;
        while !h.app.world().resource::<NpcRequests>().is_idle() {
            prop_assert!(minutes < 600, "ten hours without finishing");
            advance(&mut h, Duration::from_secs(60));
            settle(&mut h, &backend);
            check_invariant(&h);
            minutes += 1;
        }
        prop_assert_eq!(h.inbox::<NpcReplied>().len(), said);
        prop_assert!(h.inbox::<NpcReplyFailed>().is_empty());
    }
}
