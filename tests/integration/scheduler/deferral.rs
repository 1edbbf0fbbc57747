//! Random sessions: nothing leaves a prompt unsummarized, however summaries wait.

use super::*;

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
