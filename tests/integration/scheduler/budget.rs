//! Replies go before summaries, and the per-minute budgets hold.

use super::*;

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
