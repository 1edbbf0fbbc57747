//! Scenario L: loading a large save while frames run, next to an idle run of
//! the same app and main's synchronous path, emulated.

use std::time::{Duration, Instant};

use bevy::prelude::*;
use bevy_npc_memory::prelude::*;
use serde_json::{Value, json};

use bevy_npc_memory::backends::ScriptedBackend;

use crate::harness::{
    Executor, build_app, spawn_npcs, start_recording, stop_recording, timed_update, warm_up,
};
use crate::report::{header, stats_row};
use crate::save::big_save;
use crate::stats::{Stats, round2};
use crate::{FRAME_SLEEP, LOAD_IDLE_FRAMES, LOAD_TAIL_FRAMES};

/// Frame times while loading, next to an idle run of the same app.
struct LoadPass {
    label: &'static str,
    /// From `LoadMemory` to `MemoryLoaded`.
    load_time: Duration,
    frames_during_load: usize,
    plugin_bracket: Stats,
    plugin_frame: Stats,
}

pub(crate) struct LoadRun {
    executor: Executor,
    npcs: usize,
    messages: usize,
    save_bytes: u64,
    idle_bracket: Stats,
    idle_frame: Stats,
    passes: Vec<LoadPass>,
    /// Main's path, emulated: every NPC rebuilt in one frame's system.
    sync_frame: Duration,
}

/// Loads `path` while frames run; returns once `MemoryLoaded` (or a failure) came
/// and a few frames more ran.
fn load_while_running(app: &mut App, path: &std::path::Path, label: &'static str) -> LoadPass {
    let loaded_before = app.world().resource::<LoadOutcomes>().loaded;
    let mut frames = Vec::new();
    start_recording(app);
    app.world_mut()
        .write_message(LoadMemory::new(path.to_owned()));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(600);
    let mut load_time = None;
    let mut frames_during_load = 0;
    let mut tail = 0;
    while tail < LOAD_TAIL_FRAMES {
        frames.push(timed_update(app));
        let outcomes = app.world().resource::<LoadOutcomes>();
        assert_eq!(outcomes.failed, 0, "the load failed");
        match load_time {
            None if outcomes.loaded > loaded_before => load_time = Some(started.elapsed()),
            None => frames_during_load += 1,
            Some(_) => tail += 1,
        }
        assert!(Instant::now() < deadline, "the load took over 10 minutes");
        std::thread::sleep(FRAME_SLEEP);
    }
    let (plugin_bracket, _) = stop_recording(app);
    LoadPass {
        label,
        load_time: load_time.expect("loaded"),
        frames_during_load,
        plugin_bracket,
        plugin_frame: Stats::of(&frames),
    }
}

#[derive(Resource, Default)]
struct LoadOutcomes {
    loaded: usize,
    failed: usize,
}

fn count_loads(
    mut outcomes: ResMut<LoadOutcomes>,
    mut loaded: MessageReader<MemoryLoaded>,
    mut failed: MessageReader<MemoryLoadFailed>,
) {
    outcomes.loaded += loaded.read().count();
    outcomes.failed += failed.read().count();
}

/// The save main's `finish_io` rebuilt on the main thread, and whether to do it
/// this frame.
#[derive(Resource, Default)]
struct SyncRebuild {
    save: Option<std::sync::Arc<bevy_npc_memory::saves::SaveGame>>,
    run: bool,
}

/// Main's path, emulated: every NPC's memory rebuilt inside one frame's system,
/// as main's `replace_memory` did.
fn sync_rebuild(mut rebuild: ResMut<SyncRebuild>) {
    if !std::mem::take(&mut rebuild.run) {
        return;
    }
    let Some(save) = &rebuild.save else {
        return;
    };
    let built: Vec<_> = save
        .npcs
        .iter()
        .filter_map(|npc| npc.memory.clone().into_memory().ok())
        .collect();
    std::hint::black_box(&built);
}

pub(crate) fn run_load(executor: Executor, npcs: usize, messages: usize) -> LoadRun {
    let dir = std::env::temp_dir().join(format!("frame-bench-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp folder");
    let first = dir.join("first.json");
    let second = dir.join("second.json");
    let save = big_save(npcs, messages, 7);
    save.write_to(&first, u64::MAX)
        .expect("the save is written");
    big_save(npcs, messages, 11)
        .write_to(&second, u64::MAX)
        .expect("the save is written");
    let save_bytes = std::fs::metadata(&first).map_or(0, |m| m.len());

    let backend = ScriptedBackend::new();
    let mut app = build_app(Some(&backend), executor, false);
    app.init_resource::<LoadOutcomes>()
        .insert_resource(SyncRebuild {
            save: Some(std::sync::Arc::new(save)),
            run: false,
        })
        .add_systems(
            Update,
            (
                count_loads.after(NpcMemorySystems::Persist),
                sync_rebuild.before(NpcMemorySystems::Personas),
            ),
        );
    spawn_npcs(&mut app, npcs);
    warm_up(&mut app);

    let into_empty = load_while_running(&mut app, &first, "into empty NPCs");
    let over_loaded = load_while_running(&mut app, &second, "over the loaded memory");

    // Idle, with the same memory and the same frame loop.
    let mut idle_frames = Vec::with_capacity(LOAD_IDLE_FRAMES);
    start_recording(&mut app);
    for _ in 0..LOAD_IDLE_FRAMES {
        idle_frames.push(timed_update(&mut app));
        std::thread::sleep(FRAME_SLEEP);
    }
    let (idle_bracket, _) = stop_recording(&mut app);

    app.world_mut().resource_mut::<SyncRebuild>().run = true;
    let sync_frame = timed_update(&mut app);
    std::fs::remove_dir_all(&dir).ok();
    LoadRun {
        executor,
        npcs,
        messages,
        save_bytes,
        idle_bracket,
        idle_frame: Stats::of(&idle_frames),
        passes: vec![into_empty, over_loaded],
        sync_frame,
    }
}

impl LoadRun {
    pub(crate) fn print(&self) {
        println!(
            "== {} executor: load a save of {} NPCs × {} messages ({:.1} MB JSON, recall on) while frames run ==",
            self.executor.name(),
            self.npcs,
            self.messages,
            self.save_bytes as f64 / 1e6
        );
        header();
        stats_row("idle: plugin systems (bracket)", &self.idle_bracket);
        stats_row("idle: whole frame", &self.idle_frame);
        for pass in &self.passes {
            println!(
                "  load {}: MemoryLoaded after {:.2} s, {} frames ran meanwhile",
                pass.label,
                pass.load_time.as_secs_f64(),
                pass.frames_during_load
            );
            stats_row("  plugin systems (bracket)", &pass.plugin_bracket);
            stats_row("  whole frame", &pass.plugin_frame);
        }
        println!(
            "  main's synchronous path (emulated, every NPC rebuilt in one frame): that frame took {:.1} ms",
            self.sync_frame.as_secs_f64() * 1e3
        );
        println!();
    }

    pub(crate) fn json(&self) -> Value {
        json!({
            "executor": self.executor.name(),
            "npcs": self.npcs,
            "messages_per_npc": self.messages,
            "save_bytes": self.save_bytes,
            "idle": {
                "plugin_bracket": self.idle_bracket.json(),
                "plugin_frame": self.idle_frame.json(),
            },
            "loads": self.passes.iter().map(|pass| json!({
                "label": pass.label,
                "load_time_s": round2(pass.load_time.as_secs_f64()),
                "frames_during_load": pass.frames_during_load,
                "plugin_bracket": pass.plugin_bracket.json(),
                "plugin_frame": pass.plugin_frame.json(),
            })).collect::<Vec<_>>(),
            "sync_path_frame_ms": round2(self.sync_frame.as_secs_f64() * 1e3),
        })
    }
}
