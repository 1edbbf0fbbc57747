//! Turn ids and the line queue of [`NpcRequests`].

use super::*;
use crate::plugin::messages::ReplyError;

const RULES: LineRules = LineRules {
    max_line_chars: 100,
    max_queued_lines: 2,
};

#[test]
fn accepted_lines_get_unique_turns_that_they_keep_while_waiting() {
    let mut requests = NpcRequests::default();
    let echo = NpcId::new("echo7");
    let guard = NpcId::new("guard");
    // Lines for NPCs whose persona is loading wait, whoever they are for.
    let Offer::Queued(first) =
        requests.offer(&echo, WaitingLine::new("one"), &Readiness::Loading, RULES)
    else {
        panic!("a loading NPC's line waits");
    };
    let Offer::Queued(other) =
        requests.offer(&guard, WaitingLine::new("hi"), &Readiness::Loading, RULES)
    else {
        panic!("a loading NPC's line waits");
    };
    let Offer::Queued(second) =
        requests.offer(&echo, WaitingLine::new("two"), &Readiness::Loading, RULES)
    else {
        panic!("a loading NPC's line waits");
    };
    assert!(matches!(
        requests.offer(&echo, WaitingLine::new("three"), &Readiness::Loading, RULES),
        Offer::Refused(ReplyError::Busy { .. }, _)
    ));
    assert!(
        first < other && other < second,
        "ids are unique across NPCs"
    );
    let restored = requests.restore(&guard, WaitingLine::new("from a save"));
    assert_eq!(
        restored.get(),
        second.get() + 1,
        "the refused line took none"
    );

    assert_eq!(requests.next_line(&echo).map(|l| l.turn), Some(first));
    assert_eq!(requests.next_line(&echo).map(|l| l.turn), Some(second));
    let drained: Vec<_> = requests.drain(&guard).into_iter().map(|l| l.turn).collect();
    assert_eq!(drained, [other, restored]);
    assert!(requests.is_idle());
    assert_eq!(requests.state(&echo), NpcState::Idle);
}

#[test]
fn a_line_about_to_be_answered_holds_the_npc_but_takes_no_room_in_its_queue() {
    let mut requests = NpcRequests::default();
    let echo = NpcId::new("echo7");
    let Offer::Start(line) =
        requests.offer(&echo, WaitingLine::new("one"), &Readiness::Ready, RULES)
    else {
        panic!("a free NPC takes the line at once");
    };
    requests.start_line(&echo, line);
    assert_eq!(requests.take_ready(), std::slice::from_ref(&echo));
    // The NPC is answering "one": the next lines wait, as many as the rules allow.
    for text in ["two", "three"] {
        let offer = requests.offer(&echo, WaitingLine::new(text), &Readiness::Ready, RULES);
        assert!(matches!(offer, Offer::Queued(_)), "{text}: {offer:?}");
    }
    assert!(matches!(
        requests.offer(&echo, WaitingLine::new("four"), &Readiness::Ready, RULES),
        Offer::Refused(ReplyError::Busy { queued: 2, .. }, _)
    ));
    assert_eq!(requests.lines_waiting(), 2);
    assert_eq!(
        requests.next_line(&echo).map(|l| l.text).as_deref(),
        Some("one")
    );

    // A cancel hands back the line about to be answered first, and tells the
    // scheduler to forget the NPC.
    let Offer::Start(line) = requests.offer(
        &NpcId::new("rusty"),
        WaitingLine::new("hi"),
        &Readiness::Ready,
        RULES,
    ) else {
        panic!("a free NPC takes the line at once");
    };
    let rusty = NpcId::new("rusty");
    requests.start_line(&rusty, line);
    let cancelled = requests.cancel(&rusty);
    let texts: Vec<_> = cancelled.waiting.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(texts, ["hi"]);
    assert!(requests.next_line(&rusty).is_none());
    assert!(matches!(
        requests.take_outbound().as_slice(),
        [Outbound::Forget(Some(npc))] if *npc == rusty
    ));
}

#[test]
fn a_summary_goes_as_built_only_while_the_memory_is_at_the_edition_it_was_built_from() {
    use crate::memory::{MemoryConfig, NpcMemory, PersonaPrompt, SummaryStyle};
    let persona = PersonaPrompt {
        name: "ECHO-7".into(),
        text: "You are ECHO-7.".into(),
        style: SummaryStyle::english(),
    };
    let config = MemoryConfig {
        summary_threshold: Some(2),
        ..MemoryConfig::with_window(4)
    };
    let mut memory = NpcMemory::new(persona, &config);
    let mut layers = memory.layers();
    layers.say("one", 1.0);
    let job = layers.say("two", 2.0).summary.expect("due at 2");
    let echo = NpcId::new("echo7");
    let mut requests = NpcRequests::default();

    requests.send_summary(&echo, job.clone(), 7);
    let task = match requests.take_outbound().as_slice() {
        [Outbound::Summary { task, .. }] => *task,
        other => panic!("one summary for the scheduler: {other:?}"),
    };
    assert_eq!(
        requests.take_built_summary(&echo, task, 7),
        Some(job.clone())
    );
    assert_eq!(
        requests.take_built_summary(&echo, task, 7),
        None,
        "taken once: a resent summary is built anew"
    );

    requests.cancel(&echo);
    requests.send_summary(&echo, job.clone(), 7);
    let task = match requests.take_outbound().as_slice() {
        [Outbound::Forget(_), Outbound::Summary { task, .. }] => *task,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        requests.take_built_summary(&echo, task, 8),
        None,
        "the memory changed since: built again"
    );
}
