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
