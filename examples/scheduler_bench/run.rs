//! One mode's run: the player's lines and the chatter written on schedule, frame
//! after frame, and what the server, the scheduler and the brackets saw.

use std::time::{Duration, Instant};

use bevy_npc_memory::prelude::*;

use bevy_npc_memory::schedule::NpcMemoryScheduler;

use crate::app::{Mode, Observed, build_app};
use crate::args::Args;
use crate::lines::Schedule;
use crate::measure::{Bracket, Control};
use crate::provider::FakeProvider;
use crate::report::{ModeReport, Stats};
use crate::thread::pin_this_thread;
use crate::{CLOCK_READS, FOREGROUND, FRAME_BUDGET, FRAME_SLEEP};

pub(crate) fn run_mode(mode: Mode, args: &Args, plan: &Schedule) -> ModeReport {
    // Threads inherit the affinity of the thread that starts them: everything the
    // server and the app start now gets the other CPUs, then the frame thread
    // takes its own.
    if let Some(cpu) = args.frame_cpu {
        pin_this_thread(|other| other != cpu);
    }
    let server = FakeProvider::start(args.limit);
    let mut app = build_app(mode, args, &server);
    if let Some(cpu) = args.frame_cpu {
        pin_this_thread(|other| other == cpu);
    }
    let loaded = mode != Mode::Unloaded;
    let run = Duration::from_secs(args.seconds);
    let (mut next_chatter, mut next_player) = (0, 0);
    let mut frames = 0;
    let start = Instant::now();
    loop {
        let now = start.elapsed();
        if now >= run {
            break;
        }
        let inputs = (next_chatter, next_player);
        while loaded && next_chatter < plan.chatter.len() && plan.chatter[next_chatter].0 <= now {
            let (_, npc, line) = &plan.chatter[next_chatter];
            app.world_mut()
                .write_message(NpcWitnessed::new([format!("bg{npc}")], line.as_str()));
            next_chatter += 1;
        }
        while next_player < plan.player.len() && plan.player[next_player].0 <= now {
            let line = &plan.player[next_player].1;
            app.world_mut()
                .resource_mut::<Observed>()
                .written
                .insert(line.clone(), Instant::now());
            app.world_mut()
                .write_message(TalkToNpc::new(FOREGROUND, line.as_str()));
            next_player += 1;
        }
        app.update();
        if inputs != (next_chatter, next_player)
            && let Some(active) = app.world_mut().resource_mut::<Bracket>().active.last_mut()
        {
            *active = true;
        }
        frames += 1;
        std::thread::sleep(FRAME_SLEEP);
    }
    let seconds = start.elapsed().as_secs_f64();
    let (replies, summaries) = server.traffic();
    let world = app.world_mut();
    let bracket = std::mem::take(&mut world.resource_mut::<Bracket>().samples);
    let cpu = std::mem::take(&mut world.resource_mut::<Bracket>().cpu_samples);
    let active = std::mem::take(&mut world.resource_mut::<Bracket>().active);
    let control = std::mem::take(&mut world.resource_mut::<Control>().samples);
    let control_wall = std::mem::take(&mut world.resource_mut::<Control>().wall_samples);
    let beyond_wall = |cpu: &[Duration], wall: &[Duration]| {
        cpu.iter()
            .zip(wall)
            .filter(|(cpu, wall)| **cpu > FRAME_BUDGET && **cpu > **wall + CLOCK_READS)
            .count()
    };
    let cpu_over_budget_preempted = world.resource::<Bracket>().preempted_over_budget;
    let control_over_budget_preempted = world.resource::<Control>().preempted_over_budget;
    let total = |samples: &[Duration]| samples.iter().sum::<Duration>().as_secs_f64();
    let scheduler = world.resource::<NpcMemoryScheduler>();
    let (plugin_requests, deferred_at_end, queue_at_end, budget) = (
        scheduler.requests_sent(),
        scheduler.deferred_summaries(),
        scheduler.queue_depth(),
        scheduler.budget_use().requests_per_minute,
    );
    let observed = world.resource::<Observed>();
    ModeReport {
        mode,
        npcs: if loaded { args.npcs } else { 1 },
        seconds,
        frames,
        player_lines: next_player,
        chatter_lines: next_chatter,
        latency: Stats::of(&observed.latencies),
        unanswered: observed.written.len() + observed.turns.len(),
        foreground_failures: observed.foreground_failures.clone(),
        frames_over_budget: bracket.iter().filter(|d| **d > FRAME_BUDGET).count(),
        bracket: Stats::of(&bracket),
        cpu_over_budget: cpu.iter().filter(|d| **d > FRAME_BUDGET).count(),
        cpu_over_budget_active: cpu
            .iter()
            .zip(&active)
            .filter(|(d, active)| **d > FRAME_BUDGET && **active)
            .count(),
        cpu_over_budget_preempted,
        cpu_over_budget_beyond_wall: beyond_wall(&cpu, &bracket),
        cpu_total: total(&cpu),
        cpu: (!cpu.is_empty()).then(|| Stats::of(&cpu)),
        control_over_budget: control.iter().filter(|d| **d > FRAME_BUDGET).count(),
        control_over_budget_preempted,
        control_over_budget_beyond_wall: beyond_wall(&control, &control_wall),
        control_total: total(&control),
        control: (!control.is_empty()).then(|| Stats::of(&control)),
        plugin_requests,
        replies,
        summaries,
        observed_summaries: observed.summaries,
        covered: observed.covered,
        overflows: observed.overflows,
        summary_failures: observed.summary_failures,
        deferred_at_end,
        queue_at_end,
        budget,
    }
}
