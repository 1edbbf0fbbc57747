//! The app under test: the modes, the plugin set up for each, and the system
//! that collects what the plugin reports.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bevy::ecs::schedule::SingleThreadedExecutor;
use bevy::prelude::*;
use bevy_npc_memory::prelude::*;

use bevy_npc_memory::dialogue::NpcMemoryDegraded;
use bevy_npc_memory::dialogue::NpcReplyStarted;
use bevy_npc_memory::dialogue::NpcSummaryUpdated;
use bevy_npc_memory::dialogue::TurnId;
use bevy_npc_memory::schedule::MemoryTier;

use crate::args::Args;
use crate::measure::{Bracket, Control, bracket_end, bracket_start, control_bracket, set_stamp};
use crate::provider::FakeProvider;
use crate::{BUDGET_SHARE, FOREGROUND, REPLY_MODEL, SUMMARY_EVERY, SUMMARY_MODEL, WINDOW};

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Mode {
    Unloaded,
    Scheduled,
    Unscheduled,
}

impl Mode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Unloaded => "unloaded",
            Mode::Scheduled => "scheduled",
            Mode::Unscheduled => "unscheduled",
        }
    }
}

/// What came back from the plugin.
#[derive(Resource, Default)]
pub(crate) struct Observed {
    /// When each foreground line was written, by its text.
    pub(crate) written: HashMap<String, Instant>,
    /// Foreground turns being answered, and when their line was written.
    pub(crate) turns: HashMap<TurnId, Instant>,
    pub(crate) latencies: Vec<Duration>,
    pub(crate) foreground_failures: Vec<String>,
    background_replies: u64,
    pub(crate) summaries: u64,
    /// Messages the applied summaries folded in.
    pub(crate) covered: u64,
    pub(crate) overflows: u64,
    pub(crate) summary_failures: u64,
}

fn observe(
    mut observed: ResMut<Observed>,
    mut started: MessageReader<NpcReplyStarted>,
    mut replied: MessageReader<NpcReplied>,
    mut failed: MessageReader<NpcReplyFailed>,
    mut summaries: MessageReader<NpcSummaryUpdated>,
    mut degraded: MessageReader<NpcMemoryDegraded>,
    mut bracket: ResMut<Bracket>,
) {
    let now = Instant::now();
    let events = started.len() + replied.len() + failed.len() + summaries.len() + degraded.len();
    bracket.active.push(events > 0);
    for start in started.read() {
        if start.npc.as_str() == FOREGROUND
            && let Some(at) = observed.written.remove(&*start.line)
        {
            observed.turns.insert(start.turn, at);
        }
    }
    for reply in replied.read() {
        match observed.turns.remove(&reply.turn) {
            Some(at) => observed.latencies.push(now - at),
            None => observed.background_replies += 1,
        }
    }
    for failure in failed.read() {
        if failure.npc.as_str() == FOREGROUND {
            observed.foreground_failures.push(failure.error.to_string());
            if let Some(turn) = failure.turn {
                observed.turns.remove(&turn);
            }
            // Refused at once (busy): it never got a turn, so it is not waiting.
            if let Some(line) = &failure.unrecorded_line {
                observed.written.remove(line);
            }
        }
    }
    for summary in summaries.read() {
        observed.summaries += 1;
        observed.covered += summary.covered.end - summary.covered.start;
    }
    for event in degraded.read() {
        match event.degradation {
            bevy_npc_memory::memory::Degradation::WindowOverflow { ref dropped } => {
                observed.overflows += 1;
                if std::env::var_os("SCHEDULER_BENCH_OVERFLOWS").is_some() {
                    eprintln!("window overflow: {} dropped {dropped:?}", event.npc);
                }
            }
            _ => observed.summary_failures += 1,
        }
    }
}

pub(crate) fn build_app(mode: Mode, args: &Args, server: &FakeProvider) -> App {
    let mut settings = NpcMemorySettings::default();
    settings.memory.max_context_window = WINDOW;
    settings.memory.summary_threshold = Some(SUMMARY_EVERY);
    if mode != Mode::Unscheduled {
        let budget = ((args.limit as f64 * BUDGET_SHARE).floor() as u32).max(1);
        settings.schedule.requests_per_minute = Some(budget);
        settings.schedule.background_delay = Duration::from_secs(args.delay);
        if let Some(reserve) = args.reply_reserve {
            settings.schedule.reply_reserve = reserve;
        }
    }
    let config = OpenAiConfig::custom("fake", server.base_url(), REPLY_MODEL)
        .with_summary_model(SUMMARY_MODEL);
    let backend = OpenAiBackend::new(config).expect("no key is needed");

    let mut app = App::new();
    app.add_plugins((MinimalPlugins, AssetPlugin::default()))
        .add_plugins(
            NpcMemoryPlugin::default()
                .with_settings(settings)
                .with_backend(backend),
        )
        .insert_resource(Bracket {
            one_thread: args.single_threaded,
            ..default()
        })
        .init_resource::<Observed>()
        .insert_resource(Control {
            reads_memory: args.control_reads_memory,
            ..default()
        })
        .add_systems(
            Update,
            (
                bracket_start.before(NpcMemorySystems::Personas),
                set_stamp
                    .after(NpcMemorySystems::Personas)
                    .before(NpcMemorySystems::Intake),
                set_stamp
                    .after(NpcMemorySystems::Intake)
                    .before(NpcMemorySystems::Collect),
                set_stamp
                    .after(NpcMemorySystems::Collect)
                    .before(NpcMemorySystems::Persist),
                bracket_end.after(NpcMemorySystems::Persist),
                observe.after(bracket_end),
            ),
        );
    // Where the control runs: after the plugin, by default, or first in the frame,
    // closest to the thread waking from the pause between frames.
    if args.control_first {
        app.add_systems(Update, control_bracket.before(bracket_start));
    } else {
        app.add_systems(Update, control_bracket.after(observe));
    }
    if args.single_threaded {
        app.edit_schedule(Update, |schedule| {
            schedule.set_executor(SingleThreadedExecutor::new());
        });
    }
    // What the runner does before the first frame; `app.run()` is never called.
    app.finish();
    app.cleanup();

    let persona = Persona::new(
        "Villager",
        "You live in a small underground settlement. Answer in one or two sentences.",
    );
    let handle = app
        .world_mut()
        .resource_mut::<Assets<Persona>>()
        .add(persona);
    let fg = app
        .world_mut()
        .spawn(Npc::new(FOREGROUND, handle.clone()))
        .id();
    if mode == Mode::Scheduled || mode == Mode::Unloaded {
        app.world_mut()
            .entity_mut(fg)
            .insert(MemoryTier::Foreground);
    }
    if mode != Mode::Unloaded {
        for i in 0..args.npcs - 1 {
            let npc = app
                .world_mut()
                .spawn(Npc::new(format!("bg{i}"), handle.clone()))
                .id();
            if mode == Mode::Scheduled {
                app.world_mut()
                    .entity_mut(npc)
                    .insert(MemoryTier::Background);
            }
        }
    }
    let npcs = if mode == Mode::Unloaded { 1 } else { args.npcs };
    let deadline = Instant::now() + Duration::from_secs(60);
    while app.world().resource::<ContextMemoryManager>().len() < npcs {
        assert!(
            Instant::now() < deadline,
            "NPCs got no memory within a minute"
        );
        app.update();
    }
    let mut bracket = app.world_mut().resource_mut::<Bracket>();
    bracket.samples.clear();
    bracket.cpu_samples.clear();
    bracket.active.clear();
    bracket.preempted_over_budget = 0;
    let mut control = app.world_mut().resource_mut::<Control>();
    control.samples.clear();
    control.wall_samples.clear();
    control.preempted_over_budget = 0;
    app
}
