//! NPCs that act: a reply calls a game action, the game's handler system runs, and
//! the NPC says what came of it, all in one turn, with every call and result in
//! memory. Everything goes through the public API, as a game would.

use bevy::prelude::*;
use bevy_npc_memory::memory::{ActionStep, ChatMessage, Origin, SpeakerId};
use bevy_npc_memory::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::support::actions::OpenDoor;
use crate::support::{Harness, add_inbox, persona, temp_dir};
use bevy_npc_memory::actions::Acted;
use bevy_npc_memory::actions::AnswerNpcAction;
use bevy_npc_memory::actions::NpcActed;
use bevy_npc_memory::actions::ProposedAction;
use bevy_npc_memory::backends::ChatRequest;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::dialogue::TurnId;
use bevy_npc_memory::memory::ActionCall;
use bevy_npc_memory::memory::ActionOutcome;
use bevy_npc_memory::memory::ActionReply;

mod later;
mod records;
mod refusals;
mod turns;

/// Registered, but no persona here allows it.
#[derive(Debug, Deserialize, JsonSchema)]
struct LaunchMissiles {}

impl NpcAction for LaunchMissiles {
    const NAME: &'static str = "launch_missiles";
    const DESCRIPTION: &'static str = "Launch the missiles.";
}

/// Calls the lift, which takes a while to come.
#[derive(Debug, Deserialize, JsonSchema)]
struct CallElevator {
    /// Which floor.
    floor: u32,
}

impl NpcAction for CallElevator {
    const NAME: &'static str = "call_elevator";
    const DESCRIPTION: &'static str = "Call the elevator to a floor.";
}

/// Lift calls the game has yet to answer: (call id, floor).
#[derive(Resource, Default)]
struct Elevator(Vec<(String, u32)>);

fn call_elevator(
    call: In<ActionInvocation<CallElevator>>,
    mut elevator: ResMut<Elevator>,
) -> ActionReply {
    elevator.0.push((call.call_id.clone(), call.args.floor));
    ActionReply::Later
}

/// Every handler run, as the game saw it.
#[derive(Resource, Default)]
struct Handled(Vec<(String, NpcId, Option<Entity>, Option<TurnId>)>);

fn open_door(call: In<ActionInvocation<OpenDoor>>, mut handled: ResMut<Handled>) -> ActionOutcome {
    let door = call.args.door.clone();
    handled
        .0
        .push((door.clone(), call.npc.clone(), call.entity, Some(call.turn)));
    ActionOutcome::Done(format!("The {door} door slides open."))
}

fn launch_missiles(
    call: In<ActionInvocation<LaunchMissiles>>,
    mut handled: ResMut<Handled>,
) -> ActionOutcome {
    handled
        .0
        .push(("missiles".into(), call.npc.clone(), call.entity, None));
    ActionOutcome::Done("Launched.".into())
}

fn turn_of(replies: &[NpcReplied]) -> TurnId {
    replies.first().map(|r| r.turn).expect("a reply")
}

/// Actions the NPC's entity heard of, through its observer.
#[derive(Resource, Default)]
struct SeenOnEntity(Vec<String>);

/// The game refuses to open the vault, whatever the model says.
fn no_vault(proposed: In<ProposedAction>) -> Option<String> {
    (proposed.arguments["door"] == "vault").then(|| "the vault stays shut".to_owned())
}

fn harness(backend: &ScriptedBackend, settings: NpcMemorySettings) -> (Harness, Entity) {
    let persona = persona("ECHO-7").with_actions(["open_door", "call_elevator"]);
    harness_for(backend, settings, persona)
}

fn harness_for(
    backend: &ScriptedBackend,
    settings: NpcMemorySettings,
    persona: Persona,
) -> (Harness, Entity) {
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(backend.clone())
            .with_settings(settings),
    );
    add_inbox::<NpcActed>(&mut h.app);
    h.app
        .init_resource::<Handled>()
        .register_npc_action(open_door)
        .register_npc_action(launch_missiles)
        .register_npc_action(call_elevator)
        .set_npc_action_veto(no_vault)
        .init_resource::<SeenOnEntity>()
        .init_resource::<Elevator>();
    let entity = h.spawn("echo7", persona);
    h.app.world_mut().entity_mut(entity).observe(
        |acted: On<Acted>, mut seen: ResMut<SeenOnEntity>| seen.0.push(acted.name.clone()),
    );
    (h, entity)
}

fn call(id: &str, name: &str, arguments: &str) -> ActionCall {
    ActionCall::new(id, name, arguments)
}

fn steps(messages: &[ChatMessage]) -> Vec<Option<ActionStep>> {
    messages
        .iter()
        .map(|m| match &m.origin {
            Origin::Acted(note) => Some(note.step),
            _ => None,
        })
        .collect()
}

/// One turn with a door opened, played to the end.
fn opened_door() -> (Harness, ScriptedBackend, Entity) {
    let backend = ScriptedBackend::new();
    backend
        .push_calls("", vec![call("c1", "open_door", r#"{"door": "north"}"#)])
        .push_reply("There, the north door is open.");
    let (mut h, entity) = harness(&backend, NpcMemorySettings::default());
    h.say("echo7", "Open the north door, please.");
    h.wait_for_replies(1);
    h.settle();
    (h, backend, entity)
}
