//! The apps and what brackets the plugin's systems: a headless app with or
//! without the plugin, its NPCs, and the recording of each frame's time.

use std::time::{Duration, Instant};

use bevy::ecs::schedule::SingleThreadedExecutor;
use bevy::prelude::*;
use bevy_npc_memory::prelude::*;

use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::dialogue::NpcSummaryUpdated;

use crate::stats::Stats;
use crate::{MAX_CONCURRENT, WARMUP_FRAMES};

/// The stamp taken before the plugin's systems and the times recorded after them.
#[derive(Resource, Default)]
struct Bracket {
    started: Option<Instant>,
    /// With `--sets`: the end of each set but the last, this frame.
    marks: Vec<Instant>,
    samples: Vec<Duration>,
    set_samples: Vec<[Duration; 4]>,
    recording: bool,
}

fn bracket_start(mut bracket: ResMut<Bracket>) {
    bracket.marks.clear();
    bracket.started = Some(Instant::now());
}

fn set_mark(mut bracket: ResMut<Bracket>) {
    bracket.marks.push(Instant::now());
}

fn bracket_end(mut bracket: ResMut<Bracket>) {
    let now = Instant::now();
    let Some(started) = bracket.started.take() else {
        return;
    };
    if !bracket.recording {
        return;
    }
    bracket.samples.push(now - started);
    if let [a, b, c] = bracket.marks[..] {
        bracket
            .set_samples
            .push([a - started, b - a, c - b, now - c]);
    }
}

/// What the plugin sent back during scenario B.
#[derive(Resource, Default)]
pub(crate) struct Counts {
    pub(crate) replies: usize,
    pub(crate) busy: usize,
    pub(crate) other_failures: usize,
    pub(crate) summaries: usize,
}

fn count_messages(
    mut counts: ResMut<Counts>,
    mut replies: MessageReader<NpcReplied>,
    mut failures: MessageReader<NpcReplyFailed>,
    mut summaries: MessageReader<NpcSummaryUpdated>,
) {
    counts.replies += replies.read().count();
    for failure in failures.read() {
        if matches!(failure.error, ReplyError::Busy { .. }) {
            counts.busy += 1;
        } else {
            counts.other_failures += 1;
        }
    }
    counts.summaries += summaries.read().count();
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Executor {
    Multi,
    Single,
}

impl Executor {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Executor::Multi => "multi-threaded",
            Executor::Single => "single-threaded",
        }
    }
}

/// A headless app; with `backend`, the plugin is in it.
pub(crate) fn build_app(backend: Option<&ScriptedBackend>, executor: Executor, sets: bool) -> App {
    let mut app = App::new();
    app.add_plugins((MinimalPlugins, AssetPlugin::default()))
        .init_resource::<Bracket>();
    if executor == Executor::Single {
        app.edit_schedule(Update, |schedule| {
            schedule.set_executor(SingleThreadedExecutor::new());
        });
    }
    match backend {
        Some(backend) => {
            let settings = NpcMemorySettings {
                max_concurrent_requests: MAX_CONCURRENT,
                ..default()
            };
            app.add_plugins(
                NpcMemoryPlugin::default()
                    .with_settings(settings)
                    .with_backend(backend.clone()),
            )
            .init_resource::<Counts>()
            .add_systems(
                Update,
                (
                    bracket_start.before(NpcMemorySystems::Personas),
                    bracket_end.after(NpcMemorySystems::Persist),
                    count_messages.after(bracket_end),
                ),
            );
            if sets {
                use NpcMemorySystems::*;
                app.add_systems(
                    Update,
                    (
                        set_mark.after(Personas).before(Intake),
                        set_mark.after(Intake).before(Collect),
                        set_mark.after(Collect).before(Persist),
                    ),
                );
            }
        }
        None => {
            app.add_systems(Update, (bracket_start, bracket_end).chain());
        }
    }
    // What the runner does before the first frame; `app.run()` is never called.
    app.finish();
    app.cleanup();
    app
}

/// Systems in `Update` once it has been built, sync points included.
pub(crate) fn update_systems(app: &App) -> usize {
    app.get_schedule(Update)
        .map_or(0, |schedule| schedule.systems_len())
}

/// Spawns `npcs` NPCs sharing one persona and runs frames until all have memory.
pub(crate) fn spawn_npcs(app: &mut App, npcs: usize) -> usize {
    let persona = Persona::new(
        "Guard",
        "You are a guard in an underground bunker. Answer in one or two sentences.",
    );
    let handle = app
        .world_mut()
        .resource_mut::<Assets<Persona>>()
        .add(persona);
    for i in 0..npcs {
        app.world_mut()
            .spawn(Npc::new(format!("npc{i}"), handle.clone()));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut frames = 0;
    while app.world().resource::<ContextMemoryManager>().len() < npcs {
        assert!(
            Instant::now() < deadline,
            "only {} of {npcs} NPCs got memory within a minute",
            app.world().resource::<ContextMemoryManager>().len()
        );
        app.update();
        frames += 1;
    }
    frames
}

pub(crate) fn warm_up(app: &mut App) {
    for _ in 0..WARMUP_FRAMES {
        app.update();
    }
}

/// Runs one frame and returns how long `app.update()` took.
pub(crate) fn timed_update(app: &mut App) -> Duration {
    let started = Instant::now();
    app.update();
    started.elapsed()
}

pub(crate) fn start_recording(app: &mut App) {
    let mut bracket = app.world_mut().resource_mut::<Bracket>();
    bracket.samples.clear();
    bracket.set_samples.clear();
    bracket.recording = true;
}

/// The bracket's samples, and each set's when `--sets` stamps them.
pub(crate) fn stop_recording(app: &mut App) -> (Stats, Option<[Stats; 4]>) {
    let mut bracket = app.world_mut().resource_mut::<Bracket>();
    bracket.recording = false;
    let samples = std::mem::take(&mut bracket.samples);
    let set_samples = std::mem::take(&mut bracket.set_samples);
    let sets = (!set_samples.is_empty()).then(|| {
        std::array::from_fn(|set| {
            Stats::of(&set_samples.iter().map(|s| s[set]).collect::<Vec<_>>())
        })
    });
    (Stats::of(&samples), sets)
}
