//! Loads off the main thread: a load's (or a restore's) memory is built on a task
//! pool and swapped in on a later frame, lines said meanwhile wait for it, the
//! newest load wins, and recall switched on live for a long log is built off the
//! main thread too.

use std::sync::Arc;

use crate::support::{Harness, add_inbox, persona, temp_dir};
use bevy_npc_memory::dialogue::NpcReplyStarted;
use bevy_npc_memory::dialogue::ReconfigureNpcMemory;
use bevy_npc_memory::memory::{ChatMessage, MemoryParts, NpcMemory, Origin, PersonaPrompt};
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::saves::MemoryRestored;
use bevy_npc_memory::saves::NpcMemoryLoads;
use bevy_npc_memory::saves::NpcMemorySnapshot;
use bevy_npc_memory::saves::{LoadError, NpcSave, SaveGame};

/// A save of `npcs` with `messages` generated lines each, recall on or off.
pub(crate) fn long_save(npcs: &[&str], messages: usize, recall: bool, mark: &str) -> SaveGame {
    let mut config = MemoryConfig::with_window(4);
    config.features.recall.enabled = recall;
    let saves = npcs
        .iter()
        .map(|id| {
            let persona = PersonaPrompt {
                name: (*id).into(),
                text: format!("You are {id}.").into(),
                style: Default::default(),
            };
            let empty = NpcMemory::new(persona, &config);
            let mut parts = MemoryParts::of(&empty.log, &empty.window, &empty.context);
            parts.log = (0..messages)
                .map(|m| ChatMessage {
                    role: if m % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    content: format!("{mark} line {m}: the lantern by the north gate was lit")
                        .into(),
                    index: m as u64,
                    timestamp: m as f64,
                    origin: Origin::default(),
                    speaker: None,
                })
                .collect();
            parts.window_start = messages.saturating_sub(2) as u64;
            Arc::new(NpcSave::new(NpcId::new(*id), parts))
        })
        .collect();
    SaveGame::new(saves)
}

pub(crate) fn log_len(h: &Harness, npc: &str) -> usize {
    h.app
        .world()
        .resource::<ChatLogs>()
        .get(&NpcId::new(npc))
        .map_or(0, |log| log.len())
}

pub(crate) fn loads(h: &Harness) -> &NpcMemoryLoads {
    h.app.world().resource::<NpcMemoryLoads>()
}

pub(crate) fn echo_with_one_exchange() -> Harness {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    // Summaries of a long uncovered log are slow in a debug build on a busy machine.
    h.wait_secs = 60;
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "Before the load.");
    h.wait_for_replies(1);
    h.settle();
    assert_eq!(log_len(&h, "echo7"), 2);
    h
}

/// The frame that takes the load returns with the old memory in place and the load
/// visible; the memory is built while later frames run, and swapped in whole.
#[test]
fn a_load_is_built_off_the_main_thread_and_swapped_in_on_a_later_frame() {
    let dir = temp_dir("load-off-thread");
    let path = dir.join("slot.json");
    long_save(&["echo7"], 20_000, true, "saved")
        .write_to(&path, u64::MAX)
        .unwrap();
    let mut h = echo_with_one_exchange();

    h.start_load(&path);
    h.app.update();
    assert!(loads(&h).is_loading(), "the load is in flight");
    assert_eq!(log_len(&h, "echo7"), 2, "the old memory is still in place");
    assert!(h.inbox::<MemoryLoaded>().is_empty());

    let mut saw_building = false;
    h.run_until("the load is in place", |world| {
        !world
            .resource::<crate::support::Inbox<MemoryLoaded>>()
            .0
            .is_empty()
    });
    // Checked frame by frame on a second load below; here the outcome.
    assert!(!loads(&h).is_loading());
    assert_eq!(log_len(&h, "echo7"), 20_000);
    let contexts = h.app.world().resource::<ContextMemoryManager>();
    let context = contexts.get(&NpcId::new("echo7")).unwrap();
    assert!(context.features().recall.enabled);
    assert_eq!(
        context.recall().len(),
        20_000,
        "the recall index was rebuilt"
    );

    // Once more, watching every frame: while the memory is being built, frames
    // return with the memory in use untouched.
    let other = dir.join("other.json");
    long_save(&["echo7"], 20_000, true, "other")
        .write_to(&other, u64::MAX)
        .unwrap();
    h.start_load(&other);
    let first_line = |h: &Harness| h.log("echo7")[0].1.clone();
    loop {
        h.app.update();
        if h.inbox::<MemoryLoaded>().len() == 2 {
            break;
        }
        if loads(&h).is_building() {
            saw_building = true;
        }
        assert!(
            first_line(&h).starts_with("saved"),
            "the old memory stays until the new one is built"
        );
    }
    assert!(
        saw_building,
        "at least one frame returned while the memory was being built"
    );
    assert!(first_line(&h).starts_with("other"));
    std::fs::remove_dir_all(dir).ok();
}

/// Lines said while a load is in flight wait for the loaded memory: never answered
/// from the memory being replaced, never lost.
#[test]
fn talking_during_a_load_is_answered_from_the_loaded_memory() {
    let dir = temp_dir("talk-during-load");
    let path = dir.join("slot.json");
    long_save(&["echo7"], 5_000, true, "saved")
        .write_to(&path, u64::MAX)
        .unwrap();
    let mut h = echo_with_one_exchange();

    h.start_load(&path);
    h.say("echo7", "Said with the load.");
    h.app.update();
    assert_eq!(loads(&h).held_lines(), 1);
    h.say("echo7", "Said during the load.");
    loop {
        h.app.update();
        if !h.inbox::<MemoryLoaded>().is_empty() {
            break;
        }
        assert_eq!(
            log_len(&h, "echo7"),
            2,
            "nothing is answered from the memory being replaced"
        );
        assert_eq!(h.inbox::<NpcReplyStarted>().len(), 1, "only the old line");
    }
    h.wait_for_replies(3);
    h.settle();
    assert!(h.inbox::<NpcReplyFailed>().is_empty());
    let log = h.log("echo7");
    assert_eq!(log.len(), 5_004);
    assert!(log[0].1.starts_with("saved"), "the loaded memory");
    assert_eq!(log[5_000].1, "Said with the load.");
    assert_eq!(log[5_002].1, "Said during the load.");
    std::fs::remove_dir_all(dir).ok();
}

/// A second load asked for while one is in flight wins; the first is reported as
/// replaced and its memory is never used.
#[test]
fn the_newest_load_wins() {
    let dir = temp_dir("newest-load");
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    long_save(&["echo7"], 3_000, true, "a")
        .write_to(&a, u64::MAX)
        .unwrap();
    long_save(&["echo7"], 10, false, "b")
        .write_to(&b, u64::MAX)
        .unwrap();
    let mut h = echo_with_one_exchange();
    h.start_load(&a);
    h.app.update();
    h.start_load(&b);
    h.run_until("the newest load is in place", |world| {
        !world
            .resource::<crate::support::Inbox<MemoryLoaded>>()
            .0
            .is_empty()
    });
    // A few frames more: the older load never lands afterwards.
    for _ in 0..20 {
        h.app.update();
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let loaded = h.inbox::<MemoryLoaded>();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].path, b);
    let failed = h.inbox::<MemoryLoadFailed>();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].path, a);
    assert_eq!(failed[0].error, LoadError::Superseded);
    assert!(!failed[0].autosave_paused);
    assert_eq!(log_len(&h, "echo7"), 10);
    assert!(h.log("echo7")[0].1.starts_with("b "));
    std::fs::remove_dir_all(dir).ok();
}

/// A snapshot the game puts in is built off the main thread too; lines wait for it.
#[test]
fn a_restored_snapshot_is_built_off_the_main_thread_and_lines_wait_for_it() {
    let mut h = echo_with_one_exchange();
    add_inbox::<MemoryRestored>(&mut h.app);
    *h.app.world_mut().resource_mut::<NpcMemorySnapshot>() =
        NpcMemorySnapshot::restore(long_save(&["echo7"], 1_500, true, "snap"));
    h.say("echo7", "Said with the restore.");
    h.app.update();
    assert!(loads(&h).is_loading());
    assert_eq!(log_len(&h, "echo7"), 2, "the old memory is still in place");
    assert!(
        h.app.world().resource::<NpcMemorySnapshot>().is_pending(),
        "the resource shows the memory about to be in use"
    );
    h.wait_for::<MemoryRestored>(1);
    h.wait_for_replies(2);
    h.settle();
    let log = h.log("echo7");
    assert_eq!(log.len(), 1_502);
    assert!(log[0].1.starts_with("snap"));
    assert_eq!(log[1_500].1, "Said with the restore.");
    assert!(!h.app.world().resource::<NpcMemorySnapshot>().is_pending());
    assert!(h.inbox::<NpcReplyFailed>().is_empty());
}

/// Autosave does not write the memory being replaced while a load is in flight.
#[test]
fn autosave_waits_for_a_load_in_flight() {
    let dir = temp_dir("autosave-during-load");
    let (slot, other) = (dir.join("autosave.json"), dir.join("other.json"));
    long_save(&["echo7"], 1_500, true, "other")
        .write_to(&other, u64::MAX)
        .unwrap();
    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(slot.clone()));
    h.wait_secs = 60;
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "Before the load.");
    h.wait_for_replies(1);
    h.settle();
    h.run_until("the autosave is written", |_| slot.exists());
    // Let every write already asked for finish.
    let mut quiet = 0;
    let mut saves_before = h.inbox::<MemorySaved>().len();
    while quiet < 40 {
        h.app.update();
        std::thread::sleep(std::time::Duration::from_millis(3));
        let saves = h.inbox::<MemorySaved>().len();
        quiet = if saves == saves_before { quiet + 1 } else { 0 };
        saves_before = saves;
    }
    h.start_load(&other);
    h.say("echo7", "During the load.");
    loop {
        h.app.update();
        if !h.inbox::<MemoryLoaded>().is_empty() {
            break;
        }
        assert_eq!(
            h.inbox::<MemorySaved>().len(),
            saves_before,
            "no autosave while loading"
        );
    }
    h.wait_for_replies(2);
    h.settle();
    assert_eq!(log_len(&h, "echo7"), 1_502);
    std::fs::remove_dir_all(dir).ok();
}

/// Switching recall on live for a long log builds the index off the main thread;
/// the NPC answers without recall meanwhile, and the index covers every line once
/// it is in place, those said meanwhile included.
#[test]
fn recall_switched_on_for_a_long_log_is_built_off_the_main_thread() {
    let dir = temp_dir("recall-on-live");
    let path = dir.join("slot.json");
    long_save(&["echo7"], 6_000, false, "saved")
        .write_to(&path, u64::MAX)
        .unwrap();
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.wait_secs = 60;
    h.spawn("echo7", persona("ECHO-7"));
    h.load_ok(&path);
    let npc = NpcId::new("echo7");
    let recall_on = |h: &Harness| {
        let contexts = h.app.world().resource::<ContextMemoryManager>();
        let context = contexts.get(&npc).unwrap();
        (context.features().recall.enabled, context.recall().len())
    };
    assert_eq!(recall_on(&h), (false, 0));

    let mut config = MemoryConfig::with_window(4);
    config.features.recall.enabled = true;
    h.app
        .world_mut()
        .write_message(ReconfigureNpcMemory::new("echo7", config));
    h.say("echo7", "Do you remember the lantern?");
    h.app.update();
    assert!(loads(&h).building_recall(&npc));
    assert_eq!(recall_on(&h), (false, 0), "not built on the main thread");
    assert_eq!(
        h.inbox::<NpcReplyStarted>().len(),
        1,
        "the line is answered at once, without recall"
    );
    h.wait_for_replies(1);
    h.run_until("the recall index is in place", |world| {
        !world.resource::<NpcMemoryLoads>().building_recall(&npc)
    });
    h.settle();
    assert_eq!(recall_on(&h), (true, log_len(&h, "echo7")));
    assert_eq!(log_len(&h, "echo7"), 6_002);
    std::fs::remove_dir_all(dir).ok();
}
