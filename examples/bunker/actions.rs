//! What the bunker's NPCs can do: ECHO-7 opens doors and switches lights, RUSTY-3
//! repairs machines. Each action is a Rust type (its JSON Schema is what the model
//! sees), a handler system that changes [`Bunker`], and a scene system that shows
//! the change.

use std::collections::HashSet;
use std::fmt;

use bevy::prelude::*;
use bevy_npc_memory::memory::ActionOutcome;
use bevy_npc_memory::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;

/// The state the actions change, and the scene shows.
#[derive(Resource, Default, Debug)]
pub struct Bunker {
    pub open_doors: HashSet<Door>,
    pub dark_areas: HashSet<Area>,
    pub repaired: HashSet<Machine>,
}

/// A door of the bunker.
#[derive(Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Door {
    Reactor,
    Storage,
}

/// An area whose lights ECHO-7 controls.
#[derive(Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Area {
    Corridor,
    Reactor,
    Storage,
}

/// A machine RUSTY-3 can repair.
#[derive(Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Machine {
    Generator,
    Vents,
    Pipes,
}

/// Opens one of the bunker's doors.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenDoor {
    /// Which door.
    pub door: Door,
}

impl NpcAction for OpenDoor {
    const NAME: &'static str = "open_door";
    const DESCRIPTION: &'static str =
        "Open one of the bunker's doors: the reactor or the storage door.";
}

/// Switches the lights of one area.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetLights {
    /// Which area.
    pub area: Area,
    /// On (true) or off (false).
    pub on: bool,
}

impl NpcAction for SetLights {
    const NAME: &'static str = "set_lights";
    const DESCRIPTION: &'static str =
        "Switch the lights of the corridor, the reactor room or the storage room on or off.";
}

/// Repairs a broken machine.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Repair {
    /// Which machine.
    pub system: Machine,
}

impl NpcAction for Repair {
    const NAME: &'static str = "repair";
    const DESCRIPTION: &'static str = "Repair the generator, the vents or the pipes.";
}

impl fmt::Display for Door {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Door::Reactor => "reactor",
            Door::Storage => "storage",
        })
    }
}

impl fmt::Display for Area {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Area::Corridor => "corridor",
            Area::Reactor => "reactor room",
            Area::Storage => "storage room",
        })
    }
}

impl fmt::Display for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Machine::Generator => "generator",
            Machine::Vents => "vents",
            Machine::Pipes => "pipes",
        })
    }
}

fn open_door(call: In<ActionInvocation<OpenDoor>>, mut bunker: ResMut<Bunker>) -> ActionOutcome {
    let door = call.args.door;
    if bunker.open_doors.insert(door) {
        ActionOutcome::Done(format!("The {door} door slid open."))
    } else {
        ActionOutcome::Done(format!("The {door} door was already open."))
    }
}

fn set_lights(call: In<ActionInvocation<SetLights>>, mut bunker: ResMut<Bunker>) -> ActionOutcome {
    let SetLights { area, on } = call.args;
    if on {
        bunker.dark_areas.remove(&area);
    } else {
        bunker.dark_areas.insert(area);
    }
    let state = if on { "on" } else { "off" };
    ActionOutcome::Done(format!("The {area} lights are {state}."))
}

fn repair(call: In<ActionInvocation<Repair>>, mut bunker: ResMut<Bunker>) -> ActionOutcome {
    let machine = call.args.system;
    if bunker.repaired.insert(machine) {
        ActionOutcome::Done(format!("The {machine} runs again."))
    } else {
        ActionOutcome::Refused(format!("The {machine} is not broken."))
    }
}

/// A door's sprite; it slides up into the wall when the door opens.
#[derive(Component)]
struct DoorPanel(Door);

/// A translucent shade over an area, shown while its lights are off.
#[derive(Component)]
struct Shade(Area);

/// A machine's status lamp: red while broken, green once repaired.
#[derive(Component)]
struct Lamp(Machine);

const DOOR_Y: f32 = 300.0;

pub fn plugin(app: &mut App) {
    app.init_resource::<Bunker>()
        .register_npc_action(open_door)
        .register_npc_action(set_lights)
        .register_npc_action(repair)
        .add_systems(Startup, build_fixtures)
        .add_systems(Update, show_bunker.run_if(resource_changed::<Bunker>));
}

fn build_fixtures(mut commands: Commands) {
    let rect = |color: Color, w: f32, h: f32, x: f32, y: f32, z: f32| {
        (
            Sprite::from_color(color, Vec2::new(w, h)),
            Transform::from_xyz(x, y, z),
        )
    };
    // Doors in the wall, each with its room's label and a shade for its lights.
    for (door, area, x) in [
        (Door::Reactor, Area::Reactor, 30.0),
        (Door::Storage, Area::Storage, 130.0),
    ] {
        commands.spawn(rect(
            Color::srgb(0.03, 0.03, 0.04),
            76.0,
            76.0,
            x,
            DOOR_Y,
            0.25,
        ));
        commands.spawn((
            rect(Color::srgb(0.45, 0.47, 0.50), 72.0, 72.0, x, DOOR_Y, 0.3),
            DoorPanel(door),
        ));
        commands.spawn((
            Text2d::new(door.to_string()),
            TextFont::from_font_size(12.0),
            TextColor(Color::srgb(0.9, 0.8, 0.3)),
            Transform::from_xyz(x, DOOR_Y - 50.0, 1.0),
        ));
        commands.spawn((
            rect(
                Color::srgba(0.0, 0.0, 0.0, 0.7),
                90.0,
                90.0,
                x,
                DOOR_Y,
                0.35,
            ),
            Shade(area),
            Visibility::Hidden,
        ));
    }
    commands.spawn((
        rect(
            Color::srgba(0.0, 0.0, 0.0, 0.55),
            1280.0,
            720.0,
            0.0,
            0.0,
            0.45,
        ),
        Shade(Area::Corridor),
        Visibility::Hidden,
    ));
    // RUSTY-3's board: one lamp per machine.
    for (row, machine) in [Machine::Generator, Machine::Vents, Machine::Pipes]
        .into_iter()
        .enumerate()
    {
        let y = 150.0 - row as f32 * 24.0;
        commands.spawn((
            rect(Color::srgb(0.8, 0.15, 0.1), 14.0, 14.0, 20.0, y, 0.6),
            Lamp(machine),
        ));
        commands.spawn((
            Text2d::new(machine.to_string()),
            TextFont::from_font_size(13.0),
            TextColor(Color::srgb(0.75, 0.95, 0.9)),
            Transform::from_xyz(70.0, y, 1.0),
        ));
    }
}

fn show_bunker(
    bunker: Res<Bunker>,
    mut doors: Query<(&DoorPanel, &mut Transform)>,
    mut shades: Query<(&Shade, &mut Visibility)>,
    mut lamps: Query<(&Lamp, &mut Sprite)>,
) {
    for (DoorPanel(door), mut transform) in &mut doors {
        // An open door leaves a sliver at the top of its frame.
        transform.translation.y = if bunker.open_doors.contains(door) {
            DOOR_Y + 32.0
        } else {
            DOOR_Y
        };
        transform.scale.y = if bunker.open_doors.contains(door) {
            0.12
        } else {
            1.0
        };
    }
    for (Shade(area), mut visibility) in &mut shades {
        *visibility = if bunker.dark_areas.contains(area) {
            Visibility::Visible
        } else {
            Visibility::Hidden
        };
    }
    for (Lamp(machine), mut sprite) in &mut lamps {
        sprite.color = if bunker.repaired.contains(machine) {
            Color::srgb(0.2, 0.85, 0.3)
        } else {
            Color::srgb(0.8, 0.15, 0.1)
        };
    }
}
