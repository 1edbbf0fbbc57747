//! NPC memory inside the game's own save: a reflection-based save crate
//! (moonshine-save) writes the world with the memory snapshot in it, a fresh app
//! loads it, and the NPC remembers. Loading an older slot brings back that slot's
//! memory, not the newest.

use std::path::Path;

use bevy::prelude::*;
use bevy_npc_memory::prelude::*;
use moonshine_save::prelude::*;

use crate::support::{Harness, add_inbox, temp_dir};
use bevy_npc_memory::NpcMemoryClock;
use bevy_npc_memory::saves::MemoryRestoreFailed;
use bevy_npc_memory::saves::MemoryRestored;
use bevy_npc_memory::saves::NpcMemorySnapshot;

/// The game: the plugin, the save crate's observers, and inboxes for the outcome.
fn game() -> Harness {
    let mut h = Harness::new(NpcMemoryPlugin::default().with_window(6));
    h.app
        .add_observer(save_on_default_event)
        .add_observer(load_on_default_event);
    add_inbox::<MemoryRestored>(&mut h.app);
    add_inbox::<MemoryRestoreFailed>(&mut h.app);
    h
}

fn save_game(h: &mut Harness, path: &Path) {
    let path = path.to_owned();
    h.app.world_mut().commands().trigger_save(
        SaveWorld::default_into_file(path.clone()).include_resource::<NpcMemorySnapshot>(),
    );
    h.app.update();
    assert!(path.exists(), "the game saved {}", path.display());
}

fn load_game(h: &mut Harness, path: &Path) {
    let before = h.inbox::<MemoryRestored>().len();
    h.app
        .world_mut()
        .commands()
        .trigger_load(LoadWorld::default_from_file(path.to_owned()));
    h.run_until("the memory in the save is restored", |world| {
        world
            .resource::<crate::support::Inbox<MemoryRestored>>()
            .0
            .len()
            > before
    });
}

fn talk(h: &mut Harness, line: &str) {
    let replies = h.inbox::<NpcReplied>().len();
    h.say("echo7", line);
    h.wait_for_replies(replies + 1);
}

fn said(h: &Harness, npc: &str) -> Vec<String> {
    h.log(npc)
        .into_iter()
        .filter(|(role, _)| *role == Role::User)
        .map(|(_, text)| text)
        .collect()
}

fn npc_entities(h: &mut Harness) -> Vec<(NpcId, String)> {
    let world = h.app.world_mut();
    let mut query = world.query::<&Npc>();
    query
        .iter(world)
        .map(|npc| {
            let path = npc
                .persona
                .path()
                .map(|p| p.to_string())
                .unwrap_or_default();
            (npc.id.clone(), path)
        })
        .collect()
}

#[test]
fn memory_rides_in_the_games_save_and_an_older_slot_brings_back_its_own() {
    let dir = temp_dir("game-save");
    let (slot1, slot2) = (dir.join("slot1.ron"), dir.join("slot2.ron"));

    let mut h = game();
    let persona: Handle<Persona> = h
        .app
        .world()
        .resource::<AssetServer>()
        .load("npcs/echo7.npc.ron");
    h.app.world_mut().spawn((Npc::new("echo7", persona), Save));
    talk(&mut h, "My name is Alex.");
    save_game(&mut h, &slot1);
    talk(&mut h, "The reactor code is 7-4-1.");
    save_game(&mut h, &slot2);
    let text = std::fs::read_to_string(&slot2).unwrap();
    assert!(
        text.contains("NpcMemorySnapshot"),
        "the memory is in the game's save"
    );
    assert!(text.contains("7-4-1"));
    drop(h); // the player quits

    // A fresh launch: no NPC spawned, no memory, until the game loads its save.
    let mut h = game();
    h.app.update();
    assert!(npc_entities(&mut h).is_empty());
    load_game(&mut h, &slot2);
    assert_eq!(
        npc_entities(&mut h),
        [(NpcId::new("echo7"), "npcs/echo7.npc.ron".to_owned())],
        "the NPC entity came back from the save, persona and all"
    );
    assert_eq!(
        said(&h, "echo7"),
        ["My name is Alex.", "The reactor code is 7-4-1."]
    );
    let stamps = |h: &Harness| -> Vec<f64> {
        let logs = h.app.world().resource::<ChatLogs>();
        let log = logs.get(&NpcId::new("echo7")).unwrap();
        log.messages().iter().map(|m| m.timestamp).collect()
    };
    let saved_newest = stamps(&h).into_iter().fold(0.0, f64::max);
    talk(&mut h, "Do you remember the code?");
    let new_stamps = stamps(&h);
    assert!(
        new_stamps[4..].iter().all(|&t| t > saved_newest),
        "time went on from the game's save, not from zero: {new_stamps:?}"
    );
    let window: Vec<String> = h
        .window("echo7")
        .iter()
        .map(|m| m.content.to_string())
        .collect();
    assert!(
        window.iter().any(|m| m.contains("7-4-1")),
        "the next prompt carries what was said before the quit: {window:?}"
    );

    // Loading the older slot gives that slot's memory, not the newest.
    load_game(&mut h, &slot1);
    assert_eq!(said(&h, "echo7"), ["My name is Alex."]);
    let snapshot = h.app.world().resource::<NpcMemorySnapshot>();
    assert!(!snapshot.is_pending(), "restored, not waiting");
    let npcs: Vec<_> = snapshot.npcs().cloned().collect();
    assert_eq!(npcs, [NpcId::new("echo7")]);
    talk(&mut h, "What is my name?");
    assert_eq!(
        said(&h, "echo7"),
        ["My name is Alex.", "What is my name?"],
        "the NPC goes on from the older slot"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// A snapshot is kept current without the game asking: after each change the
/// resource holds what a file save would hold.
#[test]
fn the_snapshot_follows_every_change_and_matches_a_file_save() {
    let dir = temp_dir("snapshot-current");
    let mut h = game();
    h.spawn("echo7", crate::support::persona("ECHO-7"));
    talk(&mut h, "First line.");
    h.app.update();
    let snapshot = |h: &Harness| {
        h.app
            .world()
            .resource::<NpcMemorySnapshot>()
            .save()
            .unwrap()
    };
    let clock = |h: &Harness| h.app.world().resource::<NpcMemoryClock>().seconds();
    let taken = snapshot(&h);
    assert_eq!(taken.clock, clock(&h), "the clock is the one of this frame");
    let path = dir.join("file.json");
    h.save_to(&path);
    let on_disk = bevy_npc_memory::saves::SaveGame::read_from(&path, u64::MAX)
        .map(|(_, save)| save)
        .unwrap();
    assert!(
        on_disk.clock > taken.clock,
        "play time went on while the file was written"
    );
    assert_eq!(
        taken.with_clock(0.0),
        on_disk.with_clock(0.0),
        "the same memory"
    );

    // Frames without a change keep the clock current and the memory shared.
    let before = snapshot(&h);
    for _ in 0..3 {
        std::thread::sleep(std::time::Duration::from_millis(2));
        h.app.update();
    }
    let idle = snapshot(&h);
    assert!(idle.clock > before.clock);
    assert_eq!(idle.clock, clock(&h));
    assert!(
        std::sync::Arc::ptr_eq(&idle.npcs[0], &before.npcs[0]),
        "an unchanged NPC is not taken apart again"
    );

    talk(&mut h, "Second line.");
    h.app.update();
    let again = snapshot(&h);
    let log = &again.npcs[0].memory.log;
    assert_eq!(log.len(), 4, "both lines and both replies: {log:?}");
    std::fs::remove_dir_all(dir).ok();
}

/// A damaged memory blob in the game's save does not fail the game's load: the
/// memory in use stays, and the game is told why.
#[test]
fn an_unreadable_snapshot_keeps_the_memory_in_use_and_says_why() {
    let mut h = game();
    h.spawn("echo7", crate::support::persona("ECHO-7"));
    talk(&mut h, "Keep this.");
    let damaged: NpcMemorySnapshot =
        serde_json::from_str(r#""{\"format_version\": 2, \"npcs\": [{}]}""#).unwrap();
    assert!(damaged.save().is_err());
    *h.app.world_mut().resource_mut::<NpcMemorySnapshot>() = damaged;
    h.wait_for::<MemoryRestoreFailed>(1);
    assert_eq!(said(&h, "echo7"), ["Keep this."]);
    talk(&mut h, "Still here?");
    assert_eq!(said(&h, "echo7"), ["Keep this.", "Still here?"]);
    let current = h.app.world().resource::<NpcMemorySnapshot>();
    assert!(
        current.save().is_ok(),
        "the resource holds the memory in use again"
    );
}
