//! Exact round trips through the plugin: saves, autosave, slots, reflection, and
//! long NPC ids.

use super::*;

#[test]
fn a_round_trip_through_the_plugin_is_exact() {
    let dir = temp_dir("round-trip");
    let first = dir.join("slot.json");
    let mut h = played_app();
    assert!(
        !h.inbox::<NpcMemoryDegraded>().is_empty(),
        "the scenario includes a degradation"
    );
    h.save_to(&first);
    let saved = read_save(&first);
    assert_eq!(saved.npcs.len(), 2);
    let echo = &saved.npcs[0].memory;
    assert_eq!(echo.log.len(), 6);
    assert!(
        echo.history.len() >= 2,
        "several summaries: {:?}",
        echo.history
    );
    let degraded = saved.npcs.iter().any(|n| {
        n.memory
            .degradations
            .iter()
            .any(|d| matches!(d, Degradation::SummaryFailed { .. }))
    });
    assert!(degraded, "the degradation is saved");

    // A fresh game loads it and saves it again: the two saves are identical.
    let mut fresh = Harness::new(seed_sized(ScriptedBackend::new()));
    fresh.load_from(&first);
    assert_eq!(
        fresh.inbox::<MemoryLoaded>()[0].npcs,
        [NpcId::new("echo7"), NpcId::new("robot")]
    );
    let second = dir.join("again.ron");
    fresh.save_to(&second);
    let again = read_save(&second);
    // Play time went on between the load and the second save, never back.
    assert!(
        again.clock >= saved.clock,
        "{} < {}",
        again.clock,
        saved.clock
    );
    assert_eq!(
        again.with_clock(saved.clock),
        saved,
        "RON and JSON hold the same snapshot"
    );
    // The layers themselves match, L1 included.
    assert_eq!(fresh.log("echo7"), h.log("echo7"));
    assert_eq!(fresh.window("robot"), h.window("robot"));
    assert_eq!(fresh.summary("robot"), h.summary("robot"));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn autosave_writes_after_changes_coalesced_and_keeps_a_backup() {
    let dir = temp_dir("autosave");
    let path = dir.join("savegame.json");
    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&path));
    h.spawn("a", persona("A"));
    h.spawn("b", persona("B"));
    h.spawn("c", persona("C"));
    // Each spawn autosaves; wait for the write that holds all three.
    h.run_until("the spawns are saved", |world| {
        world
            .resource::<crate::support::Inbox<MemorySaved>>()
            .0
            .iter()
            .any(|s| s.npcs == 3)
    });
    let writes_before = h.inbox::<MemorySaved>().len();
    // Three NPCs change in the same frame: one write, not three.
    for npc in ["a", "b", "c"] {
        h.say(npc, "hello");
    }
    h.app.update();
    h.settle();
    wait_for_saved_logs(&mut h, &path, 2);
    assert_eq!(read_save(&path).npcs.len(), 3);
    let writes = h.inbox::<MemorySaved>().len() - writes_before;
    assert!(writes < 6, "6 messages were coalesced into {writes} writes");
    assert!(
        h.inbox::<MemorySaved>()[writes_before..]
            .iter()
            .all(|s| s.autosave && s.npcs == 3)
    );
    // The lines after the first snapshot were appended to its journal: the
    // snapshot is never rewritten for them, and the memory before each append is
    // the journal's earlier records.
    let journal = journal_path(&path);
    assert!(journal.exists(), "the changes went to the journal");
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_restored_window_keeps_unsummarized_messages_and_late_npcs_find_their_memory() {
    let dir = temp_dir("restore");
    let path = dir.join("slot.json");
    let backend = ScriptedBackend::new();
    for i in 0..4 {
        backend.push_reply(format!("reply {i}"));
    }
    for _ in 0..8 {
        backend.push_failure(Purpose::Summary, BackendError::Other("down".into()));
    }
    let mut h = Harness::new(seed_sized(backend));
    h.spawn("echo7", persona("ECHO-7"));
    h.spawn("ghost", persona("Ghost"));
    for i in 0..3 {
        h.say("echo7", &format!("line {i}"));
        h.settle();
    }
    h.say("ghost", "boo");
    h.settle();
    let window_before = h.window("echo7");
    assert_eq!(
        window_before.len(),
        7,
        "nothing was summarized, so nothing left the window"
    );
    h.save_to(&path);

    // The new game spawns only ECHO-7 at first.
    let mut fresh = Harness::new(seed_sized(ScriptedBackend::new()).with_autosave(&path));
    fresh.load_from(&path);
    assert_eq!(fresh.window("echo7"), window_before);
    // The ghost was never spawned, yet its memory is saved again with the next change.
    fresh.spawn("echo7", persona("ECHO-7"));
    fresh
        .app
        .world_mut()
        .write_message(ClearNpcMemory::new(NpcId::new("echo7")));
    fresh.wait_for::<MemorySaved>(1);
    let resaved = read_save(&path);
    assert_eq!(
        resaved
            .npcs
            .iter()
            .find(|n| n.id == NpcId::new("ghost"))
            .unwrap()
            .memory
            .log
            .len(),
        2
    );
    // Spawned later, the ghost finds it.
    fresh.spawn("ghost", persona("Ghost"));
    assert_eq!(fresh.log("ghost")[0], (Role::User, "boo".to_owned()));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn slots_never_leak_into_each_other() {
    let dir = temp_dir("slots");
    let (slot_a, slot_b) = (dir.join("a.json"), dir.join("b.json"));
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "I am from slot B");
    h.settle();
    h.save_to(&slot_b);
    h.app
        .world_mut()
        .write_message(ClearNpcMemory::new(NpcId::new("echo7")));
    h.say("echo7", "I am from slot A");
    h.settle();
    h.save_to(&slot_a);

    h.load_from(&slot_a);
    h.say("echo7", "secret only A knows");
    h.settle();
    h.load_from(&slot_b);
    let log = h.log("echo7");
    assert_eq!(log.len(), 2);
    assert!(
        log.iter()
            .all(|(_, text)| !text.contains("slot A") && !text.contains("secret")),
        "{log:?}"
    );
    assert!(h.summary("echo7").is_empty() || !h.summary("echo7").contains("secret"));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn the_autosave_slot_is_restored_at_startup() {
    let dir = temp_dir("startup-slot");
    let path = dir.join("savegame.json");
    {
        let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&path));
        h.spawn("echo7", persona("ECHO-7"));
        h.say("echo7", "I'm Alex.");
        h.settle();
    } // dropping the app flushes the last autosave
    let mut h = Harness::new(NpcMemoryPlugin::default().with_autosave(&path));
    h.spawn("echo7", persona("ECHO-7"));
    h.wait_for::<MemoryLoaded>(1);
    assert_eq!(
        h.log("echo7")[0].1,
        "I'm Alex.",
        "restored on start, like the seed's RestoreState"
    );
    fs::remove_dir_all(dir).ok();
}

#[test]
fn savegames_are_reflectable_for_reflection_based_save_systems() {
    use bevy::reflect::serde::{TypedReflectDeserializer, TypedReflectSerializer};
    use serde::de::DeserializeSeed;

    let mut h = played_app();
    let dir = temp_dir("reflect");
    let path = dir.join("slot.json");
    h.save_to(&path);
    let save = read_save(&path);

    let registry = h
        .app
        .world()
        .resource::<bevy::ecs::reflect::AppTypeRegistry>()
        .read();
    let json = serde_json::to_string(&TypedReflectSerializer::new(&save, &registry)).unwrap();
    let restored = TypedReflectDeserializer::of::<SaveGame>(&registry)
        .deserialize(&mut serde_json::Deserializer::from_str(&json))
        .unwrap()
        .try_take::<SaveGame>()
        .unwrap();
    assert_eq!(restored, save);
    fs::remove_dir_all(dir).ok();
}

/// An id of any length is the game's to choose: one past what a save holds is
/// shortened where it is made, so its NPC talks, saves and loads, and two long
/// ids that differ only at the end stay two NPCs. Saves of such an NPC used to
/// fail forever (the reader refused the id the writer had let in).
#[test]
fn npcs_with_ids_longer_than_a_save_holds_save_and_load_as_two() {
    let dir = temp_dir("long-ids");
    let path = dir.join("slot.json");
    let long = format!("{}\u{0915}\u{094D}\u{0937}👩‍🚀", "bunker-".repeat(80));
    let (first, second) = (format!("{long}a"), format!("{long}b"));
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn(&first, persona("First"));
    h.spawn(&second, persona("Second"));
    h.say(&first, "I am talking to the first.");
    h.say(&second, "And now to the second.");
    h.settle();
    h.save_to(&path);
    assert!(
        h.inbox::<MemorySaveFailed>().is_empty(),
        "{:?}",
        h.inbox::<MemorySaveFailed>()
    );

    let mut fresh = Harness::new(NpcMemoryPlugin::default());
    fresh.load_from(&path);
    assert!(fresh.inbox::<MemoryLoadFailed>().is_empty());
    let mut loaded = fresh.inbox::<MemoryLoaded>()[0].npcs.clone();
    loaded.sort();
    let mut made = vec![NpcId::new(first.as_str()), NpcId::new(second.as_str())];
    made.sort();
    assert_eq!(loaded, made, "both NPCs, under the ids the game makes");
    for (npc, line) in [
        (&first, "I am talking to the first."),
        (&second, "And now to the second."),
    ] {
        let log = fresh.log(npc);
        assert_eq!(log.len(), 2, "{log:?}");
        assert_eq!(log[0], (Role::User, line.to_owned()));
    }
    fs::remove_dir_all(dir).ok();
}
