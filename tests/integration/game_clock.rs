//! The memory clock: stamps that keep counting across save → quit → load, recall
//! that still sees old lines as old afterwards, old saves with restarted session
//! clocks migrating in order, and a clock and date format the game supplies.

use std::path::Path;
use std::time::Duration;

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy_npc_memory::memory::{ChatMessage, LogIndex};
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::saves::SaveGame;

use crate::support::{Harness, persona, seed_sized, temp_dir};
use bevy_npc_memory::NpcMemoryClock;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::ScriptedBackend;

const HOUR: u64 = 3_600;

/// Time in this app moves only when [`pass`] says so, by as much as it says.
fn manual_time(h: &mut Harness) {
    h.app
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::ZERO));
    h.app
        .world_mut()
        .resource_mut::<Time<Virtual>>()
        .set_max_delta(Duration::from_secs(1_000 * HOUR));
    // Hours pass in one frame; a fixed step of 1/64 s would run the fixed loop
    // hundreds of thousands of times to catch up.
    h.app
        .world_mut()
        .resource_mut::<Time<Fixed>>()
        .set_timestep(Duration::from_secs(HOUR));
    h.app.update();
}

/// One frame in which `seconds` of game time pass.
fn pass(h: &mut Harness, seconds: u64) {
    h.app
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs(
            seconds,
        )));
    h.app.update();
    h.app
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::ZERO));
}

fn clock(h: &Harness) -> f64 {
    h.app.world().resource::<NpcMemoryClock>().seconds()
}

fn talk(h: &mut Harness, npc: &str, line: &str) {
    h.say(npc, line);
    h.settle();
}

/// Replies with "Noted." (matching no query below), summaries from the offline
/// backend, and recall, facts, segments and a budget on.
fn layered(replies: usize) -> (NpcMemoryPlugin, ScriptedBackend) {
    let backend = ScriptedBackend::new();
    for _ in 0..replies {
        backend.push_reply("Noted.");
    }
    let plugin = seed_sized(backend.clone())
        .with_summary_backend(OfflineBackend::default())
        .with_features(crate::support::layered_from_the_start(1500));
    (plugin, backend)
}

fn assert_in_order(log: &[ChatMessage]) {
    for pair in log.windows(2) {
        assert!(
            pair[1].timestamp >= pair[0].timestamp,
            "#{} at {} comes after #{} at {}",
            pair[1].index,
            pair[1].timestamp,
            pair[0].index,
            pair[0].timestamp
        );
    }
}

#[test]
fn time_keeps_counting_across_save_quit_and_load() {
    let dir = temp_dir("clock-continues");
    let path = dir.join("slot.json");
    let mut first = Harness::new(seed_sized(OfflineBackend::default()));
    manual_time(&mut first);
    first.spawn("echo7", persona("ECHO-7"));
    // Three hours into the first session.
    pass(&mut first, 3 * HOUR);
    talk(&mut first, "echo7", "I came to fix the power.");
    pass(&mut first, 60);
    talk(&mut first, "echo7", "The fuse box is in the hall.");
    let old = first.messages("echo7");
    let newest_old = old.iter().map(|m| m.timestamp).fold(f64::MIN, f64::max);
    assert!(newest_old >= (3 * HOUR) as f64, "play time was counted");
    first.save_to(&path);
    let saved_clock = SaveGame::read_from(&path, u64::MAX)
        .map(|(_, save)| save)
        .unwrap()
        .clock;
    assert!(saved_clock >= newest_old);
    // Quit: the app and its `Time` are gone.
    drop(first);

    // A new launch, whose `Time` starts at zero again.
    let mut second = Harness::new(seed_sized(OfflineBackend::default()));
    second.load_from(&path);
    assert_eq!(second.inbox::<MemoryLoaded>().len(), 1);
    assert!(
        clock(&second) >= saved_clock,
        "the clock resumes from the save"
    );
    second.spawn("echo7", persona("ECHO-7"));
    talk(&mut second, "echo7", "Did you find the fuse box?");
    let log = second.messages("echo7");
    assert_eq!(log.len(), old.len() + 2);
    for new in &log[old.len()..] {
        assert!(
            new.timestamp >= saved_clock && new.timestamp >= newest_old,
            "#{} stamped {} before the saved time {saved_clock}",
            new.index,
            new.timestamp
        );
    }
    assert_in_order(&log);
    std::fs::remove_dir_all(dir).ok();
}

/// The score recall gave the line `index` in the last reply prompt.
fn recall_score(h: &Harness, index: LogIndex) -> f32 {
    let contexts = h.app.world().resource::<ContextMemoryManager>();
    let prompt = contexts
        .get(&NpcId::new("echo7"))
        .unwrap()
        .last_prompt()
        .expect("a reply prompt was built");
    prompt
        .recalled
        .iter()
        .find(|r| r.index == index)
        .unwrap_or_else(|| panic!("#{index} not recalled: {:?}", prompt.recalled))
        .score
}

#[test]
fn after_a_load_an_old_line_is_recalled_as_old() {
    let dir = temp_dir("clock-recency");
    let path = dir.join("slot.json");
    let north = "The copper key sits in the north locker.";
    let south = "The copper key sits in the south locker.";

    // Session one: two hours in, the player mentions the north locker.
    let (plugin, _) = layered(4);
    let mut first = Harness::new(plugin);
    manual_time(&mut first);
    first.spawn("echo7", persona("ECHO-7"));
    pass(&mut first, 2 * HOUR);
    talk(&mut first, "echo7", north);
    let old = first.messages("echo7")[0].clone();
    assert_eq!(&*old.content, north);
    first.save_to(&path);
    drop(first);

    // Session two: an hour after launching, the south locker; later, the question.
    // A clock that restarted with the launch would put the south line an hour
    // *before* the north one, and recall would favour the north line.
    let (plugin, _) = layered(8);
    let mut second = Harness::new(plugin);
    manual_time(&mut second);
    second.load_from(&path);
    second.spawn("echo7", persona("ECHO-7"));
    pass(&mut second, HOUR);
    talk(&mut second, "echo7", south);
    let newer = second
        .messages("echo7")
        .into_iter()
        .find(|m| &*m.content == south)
        .unwrap();
    for filler in [
        "Lunch was beans again.",
        "The pipes are noisy tonight.",
        "Storms are on the radio.",
    ] {
        talk(&mut second, "echo7", filler);
    }
    pass(&mut second, 2 * HOUR);
    talk(&mut second, "echo7", "Where is the copper key?");

    // The two lines match the question equally; only their age tells them apart.
    let (old_score, new_score) = (
        recall_score(&second, old.index),
        recall_score(&second, newer.index),
    );
    assert!(
        new_score > old_score,
        "the newer line ({new_score}) outranks the old one ({old_score})"
    );
    assert!(newer.timestamp > old.timestamp);
    std::fs::remove_dir_all(dir).ok();
}

const V3_FIXTURE: &str = "tests/fixtures/savegame_v3_restarts.json";

/// The fixture's stamps as written: three sessions whose clocks each began at zero.
fn raw_fixture_stamps(npc: &str) -> Vec<f64> {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(V3_FIXTURE).unwrap()).unwrap();
    assert_eq!(json["format_version"], 3);
    assert!(json.get("clock").is_none(), "format 3 had no clock");
    let npc = json["npcs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == npc)
        .unwrap();
    npc["memory"]["log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["timestamp"].as_f64().unwrap())
        .collect()
}

#[test]
fn a_format_3_save_with_restarted_clocks_migrates_in_order() {
    let raw = raw_fixture_stamps("echo7");
    let restarts = raw.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(restarts >= 2, "the fixture restarts its clock: {raw:?}");

    let save = SaveGame::from_bytes(&std::fs::read(V3_FIXTURE).unwrap()).expect("format 3 loads");
    assert_eq!(
        save.format_version,
        bevy_npc_memory::saves::SAVE_FORMAT_VERSION
    );
    let echo = &save
        .npcs
        .iter()
        .find(|n| n.id == NpcId::new("echo7"))
        .unwrap()
        .memory;
    let stamps: Vec<f64> = echo.log.iter().map(|m| m.timestamp).collect();
    assert_eq!(stamps.len(), raw.len());
    assert_eq!(stamps[0], raw[0], "the first session keeps its stamps");
    for i in 1..raw.len() {
        assert!(stamps[i] >= stamps[i - 1], "{stamps:?}");
        if raw[i] >= raw[i - 1] {
            assert_eq!(
                stamps[i] - stamps[i - 1],
                raw[i] - raw[i - 1],
                "a session keeps its gaps"
            );
        } else {
            assert_eq!(
                stamps[i],
                stamps[i - 1],
                "a new session continues from the last"
            );
        }
    }
    // Segment spans moved with the messages they cover.
    let segments = echo.segments.list();
    assert!(segments.len() >= 2);
    for segment in segments {
        let first = segment.covered.start as usize;
        let last = segment.covered.end as usize - 1;
        assert_eq!(segment.from_time, stamps[first]);
        assert_eq!(segment.to_time, stamps[last]);
        assert!(segment.from_time <= segment.to_time);
    }
    let newest = save
        .npcs
        .iter()
        .flat_map(|n| n.memory.log.iter().map(|m| m.timestamp))
        .fold(f64::MIN, f64::max);
    assert_eq!(save.clock, newest, "the clock is the newest rebased stamp");
    let fact = echo.facts.get(&FactKey::PLAYER_NAME).unwrap();
    assert!(fact.changed_at <= save.clock, "no fact after the clock");
    // The NPC whose log never restarted is untouched.
    let robot = &save
        .npcs
        .iter()
        .find(|n| n.id == NpcId::new("robot"))
        .unwrap()
        .memory;
    let robot_stamps: Vec<f64> = robot.log.iter().map(|m| m.timestamp).collect();
    assert_eq!(robot_stamps, raw_fixture_stamps("robot"));

    // Loaded into the game, talk continues after all of it.
    let dir = temp_dir("clock-v3");
    let path = dir.join("savegame.json");
    std::fs::copy(V3_FIXTURE, &path).unwrap();
    let mut h = Harness::new(seed_sized(OfflineBackend::default()));
    h.load_ok(&path);
    h.spawn("echo7", persona("ECHO-7"));
    talk(&mut h, "echo7", "I am back again.");
    let log = h.messages("echo7");
    assert_in_order(&log);
    assert!(log.last().unwrap().timestamp >= save.clock);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_game_calendar_drives_the_stamps_and_writes_the_prompt_dates() {
    let day = 86_400.0;
    let (plugin, backend) = layered(8);
    let calendar = NpcMemoryClock::game(40.0 * day)
        .with_format(|seconds| format!("Frost Moon day {}", (seconds / 86_400.0) as u64 + 1));
    let mut h = Harness::new(plugin.with_clock(calendar));
    h.spawn("echo7", persona("ECHO-7"));
    talk(&mut h, "echo7", "The copper key sits in the north locker.");
    for _ in 0..20 {
        h.app.update();
    }
    assert_eq!(
        clock(&h),
        40.0 * day,
        "frames do not move a game-driven clock"
    );

    let set = |h: &mut Harness, seconds: f64| {
        h.app
            .world_mut()
            .resource_mut::<NpcMemoryClock>()
            .set_seconds(seconds);
    };
    set(&mut h, 42.0 * day);
    for filler in [
        "Lunch was beans again.",
        "The pipes are noisy tonight.",
        "Storms are on the radio.",
    ] {
        talk(&mut h, "echo7", filler);
    }
    // The calendar is wound back (a reloaded checkpoint): stamps hold still.
    set(&mut h, 10.0 * day);
    talk(&mut h, "echo7", "Where is the copper key?");

    let log = h.messages("echo7");
    assert_eq!(log[0].timestamp, 40.0 * day);
    assert_in_order(&log);
    assert_eq!(
        log.last().unwrap().timestamp,
        42.0 * day,
        "no stamp before the newest"
    );

    let prompt = crate::support::system_text(
        &backend
            .requests_for(Purpose::Reply)
            .last()
            .expect("the question was sent")
            .messages,
    );
    assert!(
        prompt.contains("[Frost Moon day 41]"),
        "the recalled line is dated by the game's calendar: {prompt}"
    );
    assert!(
        !prompt.contains("day 41 00:00"),
        "no default dates: {prompt}"
    );
}

#[test]
fn a_save_holds_the_clock() {
    let dir = temp_dir("clock-saved");
    let path = dir.join("slot.ron");
    let mut h = Harness::new(seed_sized(OfflineBackend::default()));
    manual_time(&mut h);
    pass(&mut h, 5 * HOUR);
    let before = clock(&h);
    assert_eq!(before, (5 * HOUR) as f64);
    h.save_to(&path);
    let save = SaveGame::read_from(&path, u64::MAX)
        .map(|(_, save)| save)
        .unwrap();
    assert_eq!(save.clock, before);
    assert!(Path::new(&path).exists());
    std::fs::remove_dir_all(dir).ok();
}
