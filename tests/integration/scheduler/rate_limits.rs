//! Rate limits pause every request, back off, and lose nothing.

use super::*;

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
