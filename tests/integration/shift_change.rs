//! The bunker's shift change, played headless with the very script, briefing and
//! backend code the example runs: the player tells RUSTY-3 two things, one in
//! confidence; at the shift change RUSTY-3 briefs ECHO-7, who then knows the first
//! and that RUSTY-3 told it, and never the secret; then the two talk about what
//! each saw, and each log holds the other's lines by their speaker.

use bevy::prelude::*;
use bevy_npc_memory::conversations::{
    ConversationEnd, ConversationEnded, ConversationLine, NpcConversations,
};
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::memory::{ConversationStop, Origin};
use bevy_npc_memory::prelude::*;

use crate::support::{Harness, add_inbox, read_trace, temp_dir};

#[allow(dead_code)]
#[path = "../../examples/bunker/script.rs"]
mod script;

use script::{AutoplayBackend, ECHO, ROBOT, SHIFT_TALK_LINES, ShiftChange, Step};

const TOLD: &str = "coolant pump";
const SECRET: &str = "storage key";

fn read(file: &str) -> String {
    std::fs::read_to_string(format!("{}/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// Plays the steps as the bunker's autoplay does, one at a time, each settled,
/// a shift change's talk to its end.
fn play(h: &mut Harness, backend: &AutoplayBackend, shift: &mut ShiftChange, steps: &[Step]) {
    for step in steps {
        match step {
            Step::Say { .. } => {
                h.app.world_mut().write_message(step.talk().unwrap());
            }
            Step::Act { .. } | Step::Says { .. } => backend.queue(step),
            Step::ShiftChange => {
                let talk = shift.start();
                h.app.world_mut().write_message(talk);
            }
        }
        h.app.update();
        settle_talks(h);
        // The briefing follows the talk, as the bunker's `follow_talk` sends it.
        if shift.briefing_due() {
            let ended = h.inbox::<ConversationEnded>().last().unwrap().clone();
            let briefing = shift.talk_ended(&ended, h.app.world().resource::<ChatLogs>());
            assert!(!shift.briefing_due());
            h.app.world_mut().write_message_batch(briefing);
            h.app.update();
            settle_talks(h);
        }
    }
}

fn settle_talks(h: &mut Harness) {
    h.run_until("the NPCs are idle and done talking", |world| {
        world.resource::<NpcRequests>().is_idle() && world.resource::<NpcConversations>().is_empty()
    });
}

/// The bunker's NPCs, with the autoplay's backend: its `says:` lines when it has
/// them, the offline backend otherwise.
fn bunker_with(trace: &std::path::Path, backend: Option<AutoplayBackend>) -> Harness {
    let mut plugin = NpcMemoryPlugin::default()
        .with_window(4)
        .with_summary_threshold(2)
        .with_trace_file(trace)
        .with_lore("lore/bunker.lore.ron");
    if let Some(backend) = backend {
        plugin = plugin.with_backend(backend);
    }
    let mut h = Harness::new(plugin);
    add_inbox::<ConversationLine>(&mut h.app);
    add_inbox::<ConversationEnded>(&mut h.app);
    h.spawn_from_file(ECHO, "npcs/echo7.npc.ron");
    h.spawn_from_file(ROBOT, "npcs/rusty.npc.ron");
    h
}

fn bunker(trace: &std::path::Path, backend: &AutoplayBackend) -> Harness {
    bunker_with(trace, Some(backend.clone()))
}

/// The lines `npc`'s log holds from the other NPC, as that NPC said them.
fn lines_from(h: &Harness, npc: &str, other: &str) -> Vec<String> {
    h.messages(npc)
        .iter()
        .filter(|m| {
            m.role == Role::User
                && m.origin == Origin::Said
                && m.speaker.as_ref().and_then(|s| s.as_npc()) == Some(NpcId::new(other))
        })
        .map(|m| m.content.to_string())
        .collect()
}

/// The script's `says:` lines of `npc`, in order.
fn scripted(steps: &[Step], who: &str) -> Vec<String> {
    steps
        .iter()
        .filter_map(|step| match step {
            Step::Says { npc, text } if npc.as_str() == who => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_script_says_who_hears_what() {
    let steps = script::parse(&read("assets/autoplay/shift_change.txt"));
    assert_eq!(steps.len(), 8);
    assert!(matches!(&steps[0], Step::Say { npc, secret: false, .. } if npc.as_str() == ROBOT));
    assert!(matches!(&steps[1], Step::Say { npc, secret: true, .. } if npc.as_str() == ROBOT));
    // The talk's lines alternate, ECHO-7 first as it opens; they are queued, not said.
    let talkers: Vec<&str> = steps[2..6]
        .iter()
        .map(|s| match s {
            Step::Says { npc, .. } => npc.as_str(),
            other => panic!("not a says: step {other:?}"),
        })
        .collect();
    assert_eq!(talkers, [ECHO, ROBOT, ECHO, ROBOT]);
    assert_eq!(talkers.len(), SHIFT_TALK_LINES as usize);
    assert!(steps[2..6].iter().all(|s| s.talk().is_none()));
    assert_eq!(steps[6], Step::ShiftChange);
    assert!(steps[1].talk().unwrap().private);
    // The walk-through files are bare lines, all for ECHO-7.
    let walk = script::parse(&read("assets/autoplay/echo7.txt"));
    assert_eq!(walk.len(), 3);
    assert!(walk.iter().all(|s| s.talk().unwrap().npc.as_str() == ECHO));
}

#[test]
fn at_the_shift_change_echo7_learns_what_rusty_was_told_but_not_the_secret() {
    let trace = temp_dir("shift_change").join("trace.jsonl");
    let backend = AutoplayBackend::default();
    let mut h = bunker(&trace, &backend);
    let mut shift = ShiftChange::default();
    let walk = script::parse(&read("assets/autoplay/echo7.txt"));
    let scene = script::parse(&read("assets/autoplay/shift_change.txt"));
    play(&mut h, &backend, &mut shift, &walk);
    play(&mut h, &backend, &mut shift, &scene);

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

#[test]
fn at_the_shift_change_echo7_and_rusty_talk_and_each_hears_what_the_other_saw() {
    let trace = temp_dir("shift_talk").join("trace.jsonl");
    let backend = AutoplayBackend::default();
    let mut h = bunker(&trace, &backend);
    let mut shift = ShiftChange::default();
    let scene = script::parse(&read("assets/autoplay/shift_change.txt"));
    play(&mut h, &backend, &mut shift, &scene);
    let (echo_says, rusty_says) = (scripted(&scene, ECHO), scripted(&scene, ROBOT));
    assert_eq!((echo_says.len(), rusty_says.len()), (2, 2));

    // The talk ran its lines and ended by its turn limit, ECHO-7 opening.
    let ended = h.inbox::<ConversationEnded>();
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(
        ended[0].reason,
        ConversationEnd::Stopped(ConversationStop::TurnLimit)
    );
    assert_eq!(ended[0].lines, SHIFT_TALK_LINES);
    let said: Vec<(String, String)> = h
        .inbox::<ConversationLine>()
        .iter()
        .map(|l| (l.speaker.to_string(), l.text.to_string()))
        .collect();
    let expected: Vec<(String, String)> = [
        (ECHO, &echo_says[0]),
        (ROBOT, &rusty_says[0]),
        (ECHO, &echo_says[1]),
        (ROBOT, &rusty_says[1]),
    ]
    .iter()
    .map(|(npc, text)| ((*npc).to_owned(), (*text).clone()))
    .collect();
    assert_eq!(said, expected);

    // Each log holds the other's lines first-hand, by their speaker; ECHO-7's
    // opening cue came from the scene, naming RUSTY-3 and the topic.
    assert_eq!(lines_from(&h, ECHO, ROBOT), rusty_says);
    assert_eq!(lines_from(&h, ROBOT, ECHO), echo_says);
    let echo = h.messages(ECHO);
    let cue = echo
        .iter()
        .find(|m| m.speaker.as_ref().is_some_and(|s| s.id() == "scene"))
        .expect("the scene cued ECHO-7");
    assert!(cue.content.contains("RUSTY-3") && cue.content.contains(script::SHIFT_TOPIC));
    // A ConversationLine points at the entry in its speaker's log.
    for line in h.inbox::<ConversationLine>() {
        let log = h.messages(line.speaker.as_str());
        let entry = log.iter().find(|m| m.index == line.index).unwrap();
        assert_eq!((entry.role, &entry.content), (Role::Assistant, &line.text));
    }

    // The secret told to RUSTY-3 never reaches ECHO-7: not its log, not a prompt.
    assert!(echo.iter().all(|m| !m.content.contains(SECRET)), "{echo:?}");
    let events = read_trace(&trace);
    let echo_prompts: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == "request" && e["npc"] == ECHO)
        .map(|e| serde_json::to_string(&e["messages"]).unwrap())
        .collect();
    assert!(!echo_prompts.is_empty());
    assert!(echo_prompts.iter().all(|p| !p.contains(SECRET)));
    // RUSTY-3's answers were asked with ECHO-7's line as the one to answer.
    let rusty_prompts: Vec<String> = events
        .iter()
        .filter(|e| e["event"] == "request" && e["purpose"] == "reply" && e["npc"] == ROBOT)
        .map(|e| serde_json::to_string(&e["messages"]).unwrap())
        .collect();
    assert!(
        rusty_prompts.iter().any(|p| p.contains(&echo_says[0])),
        "{rusty_prompts:?}"
    );

    // The debug report's Knowledge rows list what each heard from the other.
    for (npc, other, said) in [
        (ECHO, "RUSTY-3", &rusty_says),
        (ROBOT, "ECHO-7", &echo_says),
    ] {
        let report = h.report(npc);
        let known = report.knowledge();
        assert_eq!(known.from_npcs.len(), said.len(), "{npc}: {known:?}");
        for (row, text) in known.from_npcs.iter().zip(said.iter()) {
            assert_eq!(row.speaker.as_ref().unwrap().name(), other);
            assert!(row.text.contains(text.as_str()), "{row:?}");
        }
    }
}

#[test]
fn with_the_offline_backend_the_talk_still_runs_and_keeps_the_secret() {
    let trace = temp_dir("shift_talk_offline").join("trace.jsonl");
    // No `says:` lines queued: every line is the offline backend's, from memory.
    let mut h = bunker_with(&trace, None);
    let mut shift = ShiftChange::default();
    let backend = AutoplayBackend::default();
    let scene = script::parse(&read("assets/autoplay/shift_change.txt"));
    let said: Vec<Step> = scene
        .into_iter()
        .filter(|s| matches!(s, Step::Say { .. } | Step::ShiftChange))
        .collect();
    play(&mut h, &backend, &mut shift, &said);

    let ended = h.inbox::<ConversationEnded>();
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(ended[0].lines, SHIFT_TALK_LINES);
    let rusty_lines: Vec<String> = h
        .inbox::<ConversationLine>()
        .iter()
        .filter(|l| l.speaker.as_str() == ROBOT)
        .map(|l| l.text.to_string())
        .collect();
    assert_eq!(rusty_lines.len(), 2);
    assert_eq!(lines_from(&h, ECHO, ROBOT), rusty_lines);
    // RUSTY-3 answered from a memory that holds the secret; none of it got out.
    assert!(
        h.messages(ROBOT).iter().any(|m| m.content.contains(SECRET)),
        "RUSTY-3 knows the secret"
    );
    let echo = h.messages(ECHO);
    assert!(echo.iter().all(|m| !m.content.contains(SECRET)), "{echo:?}");
}
