//! The bunker's shift change, played headless with the very script and briefing code
//! the example runs: the player tells RUSTY-3 two things, one in confidence; at the
//! shift change RUSTY-3 briefs ECHO-7, who then knows the first and that RUSTY-3
//! told it, and never the secret.

use bevy::prelude::*;
use bevy_npc_memory::memory::Origin;
use bevy_npc_memory::prelude::*;

use crate::support::{Harness, read_trace, temp_dir};

#[allow(dead_code)]
#[path = "../../examples/bunker/script.rs"]
mod script;

use script::{ECHO, ROBOT, ShiftChange, Step};

const TOLD: &str = "coolant pump";
const SECRET: &str = "storage key";

fn read(file: &str) -> String {
    std::fs::read_to_string(format!("{}/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// Plays the steps as the bunker's autoplay does, one at a time, each settled.
fn play(h: &mut Harness, shift: &mut ShiftChange, steps: &[Step]) {
    for step in steps {
        match step.talk() {
            Some(line) => {
                h.app.world_mut().write_message(line);
            }
            None => {
                let briefing = shift.briefing(h.app.world().resource::<ChatLogs>());
                h.app.world_mut().write_message_batch(briefing);
            }
        }
        h.app.update();
        h.settle();
    }
}

fn bunker(trace: &std::path::Path) -> Harness {
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_window(4)
            .with_summary_threshold(2)
            .with_trace_file(trace)
            .with_lore("lore/bunker.lore.ron"),
    );
    h.spawn_from_file(ECHO, "npcs/echo7.npc.ron");
    h.spawn_from_file(ROBOT, "npcs/rusty.npc.ron");
    h
}

#[test]
fn the_script_says_who_hears_what() {
    let steps = script::parse(&read("assets/autoplay/shift_change.txt"));
    assert_eq!(steps.len(), 4);
    assert!(matches!(&steps[0], Step::Say { npc, secret: false, .. } if npc.as_str() == ROBOT));
    assert!(matches!(&steps[1], Step::Say { npc, secret: true, .. } if npc.as_str() == ROBOT));
    assert_eq!(steps[2], Step::ShiftChange);
    assert!(steps[1].talk().unwrap().private);
    // The walk-through files are bare lines, all for ECHO-7.
    let walk = script::parse(&read("assets/autoplay/echo7.txt"));
    assert_eq!(walk.len(), 3);
    assert!(walk.iter().all(|s| s.talk().unwrap().npc.as_str() == ECHO));
}

#[test]
fn at_the_shift_change_echo7_learns_what_rusty_was_told_but_not_the_secret() {
    let trace = temp_dir("shift_change").join("trace.jsonl");
    let mut h = bunker(&trace);
    let mut shift = ShiftChange::default();
    let walk = script::parse(&read("assets/autoplay/echo7.txt"));
    let scene = script::parse(&read("assets/autoplay/shift_change.txt"));
    play(&mut h, &mut shift, &walk);
    play(&mut h, &mut shift, &scene);

    // ECHO-7 holds exactly one new thing, heard from RUSTY-3 who heard the player.
    let logs = h.app.world().resource::<ChatLogs>();
    let echo = logs.get(&NpcId::new(ECHO)).unwrap();
    let heard: Vec<_> = echo
        .messages()
        .iter()
        .filter_map(|m| match &m.origin {
            Origin::Heard(hearsay) => Some((m, hearsay.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(heard.len(), 1, "{:?}", echo.messages());
    let (entry, hearsay) = &heard[0];
    assert!(entry.content.contains(TOLD));
    assert_eq!(hearsay.teller().unwrap().name, "RUSTY-3");
    assert_eq!(hearsay.hops, 1);
    assert!(echo.messages().iter().all(|m| !m.content.contains(SECRET)));

    // Asked about it, ECHO-7's request carries it with its source, not the secret.
    let events = read_trace(&trace);
    let last = events
        .iter()
        .rfind(|e| e["event"] == "request" && e["purpose"] == "reply" && e["npc"] == ECHO)
        .unwrap();
    let prompt = serde_json::to_string(&last["messages"]).unwrap();
    assert!(
        prompt.contains("RUSTY-3") && prompt.contains("told you"),
        "{prompt}"
    );
    assert!(prompt.contains(TOLD), "{prompt}");
    assert!(!prompt.contains(SECRET), "{prompt}");
    // The offline backend repeats the newest note it was given: who told it what.
    let reply = h.replies(ECHO).pop().unwrap();
    assert!(reply.contains("RUSTY-3") && reply.contains(TOLD), "{reply}");

    // Who knows the player's line to RUSTY-3: RUSTY-3 first-hand, ECHO-7 from it.
    let rusty = logs.get(&NpcId::new(ROBOT)).unwrap();
    let line = rusty
        .messages()
        .iter()
        .find(|m| m.role == Role::User && m.content.contains(TOLD))
        .unwrap();
    let knowers = logs.who_knows(&NpcId::new(ROBOT), line.index);
    assert_eq!(knowers.len(), 2, "{knowers:?}");
    assert_eq!(knowers[1].npc.as_str(), ECHO);
    assert!(
        matches!(&knowers[1].origin, Origin::Heard(h) if h.teller().unwrap().id.as_str() == ROBOT)
    );

    // A second shift change with nothing new passes nothing on.
    let again = shift.briefing(h.app.world().resource::<ChatLogs>());
    assert!(again.is_empty(), "{again:?}");
}
