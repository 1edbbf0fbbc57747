//! While an NPC is answering, further lines queue, up to a bound.

use std::time::Duration;

use crate::support::{Harness, persona};
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::memory::Role;
use bevy_npc_memory::prelude::*;

#[test]
fn lines_queue_while_busy_and_overflow_fails_clearly() {
    let backend = ScriptedBackend::new();
    for i in 0..5 {
        backend.push_reply_after(Duration::from_millis(20), format!("answer {i}"));
    }
    let settings = NpcMemorySettings {
        max_queued_lines: 4,
        ..Default::default()
    };
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(backend.clone())
            .with_settings(settings),
    );
    h.spawn("echo7", persona("ECHO-7"));

    for i in 0..6 {
        h.say("echo7", &format!("line {i}"));
    }
    h.app.update();

    // One line is being answered, four wait, the sixth is refused and handed back.
    let conversations = h.app.world().resource::<NpcRequests>();
    let echo = NpcId::new("echo7");
    assert!(conversations.reply_in_flight(&echo));
    assert_eq!(
        conversations.queued_lines(&echo).collect::<Vec<_>>(),
        ["line 1", "line 2", "line 3", "line 4"]
    );
    let failed = h.inbox::<NpcReplyFailed>();
    assert_eq!(failed.len(), 1);
    assert!(
        matches!(failed[0].error, ReplyError::Busy { queued: 4, .. }),
        "{:?}",
        failed[0].error
    );
    assert_eq!(failed[0].unrecorded_line.as_deref(), Some("line 5"));
    assert_eq!(
        failed[0].error.to_string(),
        "echo7 is busy: 4 lines are already waiting"
    );

    h.wait_for_replies(5);
    h.settle();
    let log = h.log("echo7");
    let expected: Vec<(Role, String)> = (0..5)
        .flat_map(|i| {
            [
                (Role::User, format!("line {i}")),
                (Role::Assistant, format!("answer {i}")),
            ]
        })
        .collect();
    assert_eq!(log, expected, "each line is answered in turn, in order");
    // Each request saw the previous answers: the queue waits for them.
    let last = backend.requests_for(Purpose::Reply).pop().unwrap();
    assert!(
        last.messages
            .iter()
            .any(|m| m.content.as_ref() == "answer 3")
    );
}

/// However many waiting lines the game allows, no more wait than a save holds:
/// a busy NPC with a long queue still saves, and the save loads.
#[test]
fn a_queue_set_past_what_a_save_holds_still_saves() {
    use bevy_npc_memory::saves::{MAX_SAVED_QUEUED_LINES, SaveGame};
    let backend = crate::support::held::HeldBackend::new();
    let held = backend.push_held(&[], "At last.");
    let settings = NpcMemorySettings {
        max_queued_lines: 5_000,
        ..Default::default()
    };
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(backend)
            .with_settings(settings),
    );
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "first");
    h.app.update();
    for i in 0..MAX_SAVED_QUEUED_LINES + 5 {
        h.say("echo7", &format!("line {i}"));
    }
    h.app.update();
    let queued = h
        .app
        .world()
        .resource::<NpcRequests>()
        .queued_lines(&NpcId::new("echo7"))
        .count();
    assert_eq!(queued, MAX_SAVED_QUEUED_LINES);
    assert_eq!(h.inbox::<NpcReplyFailed>().len(), 5, "the rest are busy");

    let dir = crate::support::temp_dir("long-queue");
    let path = dir.join("slot.json");
    h.save_to(&path);
    let (_, saved) = SaveGame::read_from(&path, u64::MAX).expect("the save loads");
    assert_eq!(saved.npcs[0].queued.len(), MAX_SAVED_QUEUED_LINES);
    held.start.release();
    held.finish.release();
    std::fs::remove_dir_all(dir).ok();
}
