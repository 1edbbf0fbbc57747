//! The bunker itself: the floor, ECHO-7's terminal and RUSTY-3 drawn as sprites,
//! and the two NPCs spawned.

use bevy::prelude::*;
use bevy_npc_memory::prelude::*;

use crate::Scene;
use crate::script::{ECHO, ROBOT};

pub(crate) fn build_bunker(mut commands: Commands) {
    commands.spawn(Camera2d);
    let rect = |color: Color, w: f32, h: f32, x: f32, y: f32, z: f32| {
        (
            Sprite::from_color(color, Vec2::new(w, h)),
            Transform::from_xyz(x, y, z),
        )
    };
    // Floor tiles and walls.
    commands.spawn(rect(
        Color::srgb(0.11, 0.12, 0.13),
        1280.0,
        720.0,
        0.0,
        0.0,
        0.0,
    ));
    for i in 0..16 {
        commands.spawn(rect(
            Color::srgb(0.09, 0.10, 0.11),
            2.0,
            720.0,
            -640.0 + i as f32 * 80.0,
            0.0,
            0.1,
        ));
    }
    for j in 0..9 {
        commands.spawn(rect(
            Color::srgb(0.09, 0.10, 0.11),
            1280.0,
            2.0,
            0.0,
            -360.0 + j as f32 * 80.0,
            0.1,
        ));
    }
    commands.spawn(rect(
        Color::srgb(0.20, 0.21, 0.23),
        1280.0,
        90.0,
        0.0,
        315.0,
        0.2,
    ));
    for k in 0..20 {
        let color = if k % 2 == 0 {
            Color::srgb(0.85, 0.65, 0.10)
        } else {
            Color::srgb(0.12, 0.12, 0.12)
        };
        commands.spawn(rect(
            color,
            32.0,
            14.0,
            -624.0 + k as f32 * 32.0,
            263.0,
            0.3,
        ));
    }
    // ECHO-7's terminal: a desk, a bezel and a glowing screen.
    commands.spawn(rect(
        Color::srgb(0.25, 0.27, 0.30),
        260.0,
        60.0,
        -420.0,
        30.0,
        0.5,
    ));
    commands.spawn(rect(
        Color::srgb(0.15, 0.16, 0.18),
        220.0,
        150.0,
        -420.0,
        150.0,
        0.5,
    ));
    commands.spawn(rect(
        Color::srgb(0.05, 0.55, 0.50),
        196.0,
        124.0,
        -420.0,
        150.0,
        0.6,
    ));
    commands.spawn(rect(
        Color::srgba(0.2, 0.9, 0.8, 0.08),
        420.0,
        300.0,
        -420.0,
        140.0,
        0.4,
    ));
    label(
        &mut commands,
        "ECHO-7  security & guidance AI",
        -420.0,
        245.0,
    );
    // RUSTY-3: body, head, eye and wheels.
    commands.spawn(rect(
        Color::srgb(0.80, 0.42, 0.12),
        90.0,
        110.0,
        -130.0,
        60.0,
        0.5,
    ));
    commands.spawn(rect(
        Color::srgb(0.70, 0.36, 0.10),
        64.0,
        50.0,
        -130.0,
        145.0,
        0.5,
    ));
    commands.spawn(rect(
        Color::srgb(0.3, 0.9, 1.0),
        30.0,
        10.0,
        -130.0,
        150.0,
        0.6,
    ));
    commands.spawn(rect(
        Color::srgb(0.1, 0.1, 0.1),
        100.0,
        16.0,
        -130.0,
        0.0,
        0.6,
    ));
    label(&mut commands, "RUSTY-3  maintenance", -130.0, 195.0);
}

fn label(commands: &mut Commands, text: &str, x: f32, y: f32) {
    commands.spawn((
        Text2d::new(text),
        TextFont::from_font_size(16.0),
        TextColor(Color::srgb(0.75, 0.95, 0.9)),
        Transform::from_xyz(x, y, 1.0),
    ));
}

pub(crate) fn spawn_npcs(mut commands: Commands, assets: Res<AssetServer>, scene: Res<Scene>) {
    let echo = if scene.chinese {
        "npcs/echo7.zh.npc.ron"
    } else {
        "npcs/echo7.npc.ron"
    };
    commands.spawn(Npc::new(ECHO, assets.load(echo)));
    commands.spawn(Npc::new(ROBOT, assets.load("npcs/rusty.npc.ron")));
}
