//! Lines said while a load is in flight: where the load's work runs, and what
//! becomes of the held lines when the game interrupts, clears, loads again or
//! quits before the loaded memory is in place. None is ever lost silently.

use crate::loads::{echo_with_one_exchange, loads, log_len, long_save};
use crate::support::logs::log_lines_with;
use crate::support::temp_dir;
use bevy::prelude::*;
use bevy_npc_memory::dialogue::InterruptNpc;
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::saves::LoadError;

/// Starts loading a long save (slow enough to build in a debug build that the
/// test's next frames see it in flight) and holds `lines` for echo7.
fn loading(
    name: &str,
    messages: usize,
    lines: &[&str],
) -> (crate::support::Harness, std::path::PathBuf) {
    let dir = temp_dir(name);
    let path = dir.join("slot.json");
    long_save(&["echo7"], messages, true, "saved")
        .write_to(&path, u64::MAX)
        .unwrap();
    let mut h = echo_with_one_exchange();
    h.start_load(&path);
    for line in lines {
        h.say("echo7", line);
    }
    h.app.update();
    assert!(loads(&h).is_loading(), "the load is in flight");
    assert_eq!(loads(&h).held_lines(), lines.len());
    (h, dir)
}

fn wait_for_load(h: &mut crate::support::Harness) {
    h.run_until("the load is in place", |world| {
        !world
            .resource::<crate::support::Inbox<MemoryLoaded>>()
            .0
            .is_empty()
    });
}

/// Load off the main thread: the load completes off the main thread, and talking
/// during a load works. The rebuild logs from the thread that ran it: one of the
/// async compute pool's, not the thread running the frames.
#[test]
fn load_off_the_main_thread_completes_and_talking_during_it_works() {
    crate::support::logs::captured_logs();
    // A size no other test loads, to find this load's line in the shared log.
    const MESSAGES: usize = 4_321;
    let (mut h, dir) = loading("load-thread", MESSAGES, &["Said with the load."]);
    h.say("echo7", "Said during the load.");
    wait_for_load(&mut h);
    h.wait_for_replies(3);
    h.settle();
    assert!(h.inbox::<NpcReplyFailed>().is_empty(), "no line was lost");
    let log = h.log("echo7");
    assert_eq!(log.len(), MESSAGES + 4);
    assert!(
        log[0].1.starts_with("saved"),
        "answered by the loaded memory"
    );
    assert_eq!(log[MESSAGES].1, "Said with the load.");
    assert_eq!(log[MESSAGES + 2].1, "Said during the load.");

    let built = log_lines_with(&format!("messages={MESSAGES}"));
    assert_eq!(built.len(), 1, "one rebuild of this save: {built:?}");
    let here = std::thread::current();
    assert!(
        !built[0].contains(&format!("{:?}", here.id())),
        "not rebuilt on the thread running the frames: {}",
        built[0]
    );
    assert!(
        built[0].contains("Async Compute Task Pool"),
        "rebuilt on the async compute pool: {}",
        built[0]
    );
    std::fs::remove_dir_all(dir).ok();
}

/// A plain interrupt keeps the held lines (waiting lines carry on); one clearing
/// the queue hands them back like any waiting line, and they are never answered.
#[test]
fn an_interrupt_clearing_the_queue_hands_held_lines_back() {
    let (mut h, dir) = loading("interrupt-held", 20_000, &["First.", "Second."]);
    h.app.world_mut().write_message(InterruptNpc::new("echo7"));
    h.app.update();
    assert_eq!(loads(&h).held_lines(), 2, "a plain interrupt keeps them");
    h.app
        .world_mut()
        .write_message(InterruptNpc::clearing_queue("echo7"));
    h.app.update();
    assert!(loads(&h).is_loading(), "still loading: the case under test");
    assert_eq!(loads(&h).held_lines(), 0);
    let failed = h.inbox::<NpcReplyFailed>();
    let handed_back: Vec<_> = failed
        .iter()
        .map(|f| (f.error.clone(), f.unrecorded_line.clone()))
        .collect();
    assert_eq!(
        handed_back,
        [
            (
                ReplyError::Interrupted { kept: None },
                Some("First.".to_owned())
            ),
            (
                ReplyError::Interrupted { kept: None },
                Some("Second.".to_owned())
            ),
        ]
    );
    wait_for_load(&mut h);
    for _ in 0..10 {
        h.app.update();
    }
    h.settle();
    assert_eq!(
        log_len(&h, "echo7"),
        20_000,
        "nothing handed back is answered"
    );
    assert_eq!(
        h.inbox::<NpcReplied>().len(),
        1,
        "only the line before the load"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// A newer load replacing one in flight keeps the held lines; its memory answers
/// them.
#[test]
fn lines_held_for_a_replaced_load_are_answered_by_the_newer_one() {
    let (mut h, dir) = loading("held-superseded", 20_000, &["Held across loads."]);
    let newer = dir.join("newer.json");
    long_save(&["echo7"], 10, false, "newer")
        .write_to(&newer, u64::MAX)
        .unwrap();
    h.start_load(&newer);
    wait_for_load(&mut h);
    h.wait_for_replies(2);
    h.wait_for::<MemoryLoadFailed>(1);
    h.settle();
    let failed = h.inbox::<MemoryLoadFailed>();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].error, LoadError::Superseded);
    assert_eq!(h.inbox::<MemoryLoaded>()[0].path, newer);
    assert!(h.inbox::<NpcReplyFailed>().is_empty());
    let log = h.log("echo7");
    assert!(log[0].1.starts_with("newer"));
    assert_eq!(log.len(), 12);
    assert_eq!(log[10].1, "Held across loads.");
    std::fs::remove_dir_all(dir).ok();
}

/// Clearing an NPC's memory during a load hands its held lines back as cancelled,
/// as it does its waiting lines.
#[test]
fn clearing_an_npc_during_a_load_hands_its_held_lines_back() {
    let (mut h, dir) = loading("clear-held", 20_000, &["Forget this."]);
    h.app
        .world_mut()
        .write_message(ClearNpcMemory::new("echo7"));
    h.app.update();
    assert_eq!(loads(&h).held_lines(), 0);
    let failed = h.inbox::<NpcReplyFailed>();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].error, ReplyError::Cancelled);
    assert_eq!(failed[0].unrecorded_line.as_deref(), Some("Forget this."));
    wait_for_load(&mut h);
    std::fs::remove_dir_all(dir).ok();
}

/// Quitting mid-load: the loaded memory never arrives, so the held lines are
/// handed back in the last frame rather than dropped with the app.
#[test]
fn lines_held_when_the_app_exits_are_handed_back() {
    let (mut h, dir) = loading("exit-held", 20_000, &["Goodbye?"]);
    h.app.world_mut().write_message(AppExit::Success);
    h.app.update();
    h.app.update();
    let failed = h.inbox::<NpcReplyFailed>();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].npc, NpcId::new("echo7"));
    assert_eq!(failed[0].error, ReplyError::Cancelled);
    assert_eq!(failed[0].unrecorded_line.as_deref(), Some("Goodbye?"));
    assert_eq!(loads(&h).held_lines(), 0);
    std::fs::remove_dir_all(dir).ok();
}
