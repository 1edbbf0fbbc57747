//! The smallest integration: one NPC, one line, one reply.
//!
//! `cargo run --example basic`

use std::time::Duration;

use bevy::app::ScheduleRunnerPlugin;
use bevy::prelude::*;
use bevy_npc_memory::prelude::*;

fn main() {
    App::new()
        .add_plugins((
            MinimalPlugins.set(ScheduleRunnerPlugin::run_loop(Duration::from_millis(16))),
            AssetPlugin::default(),
        ))
        // The default backend is offline: no key, no model, no network.
        .add_plugins(NpcMemoryPlugin::default())
        .add_systems(Startup, spawn_echo7)
        .add_systems(Update, print_replies.after(NpcMemorySystems::Collect))
        .run();
}

fn spawn_echo7(
    mut commands: Commands,
    assets: Res<AssetServer>,
    mut talk: MessageWriter<TalkToNpc>,
) {
    commands.spawn(Npc::new("echo7", assets.load("npcs/echo7.npc.ron")));
    // Lines sent before the persona has loaded wait for it.
    talk.write(TalkToNpc::new(
        "echo7",
        "Hello, I'm Alex. I'm here to fix the power.",
    ));
}

fn print_replies(
    mut replies: MessageReader<NpcReplied>,
    mut failures: MessageReader<NpcReplyFailed>,
    mut exit: MessageWriter<AppExit>,
) {
    for reply in replies.read() {
        println!("{}: {}", reply.npc, reply.text);
        exit.write(AppExit::Success);
    }
    for failure in failures.read() {
        eprintln!("{} could not answer: {}", failure.npc, failure.error);
        exit.write(AppExit::error());
    }
}
