//! The game answers the model's calls: each is checked (known, allowed,
//! arguments that fit, not vetoed) before any game code runs, then its handler
//! runs. Exclusive, because handlers are the game's own systems.

use bevy::prelude::*;

use super::ProposedAction;
use super::registry::{ActionRegistry, ActionTurns, AnsweredRound, Invocation, ProposedRound};
use crate::memory::{ActionCall, ActionOutcome, ActionRecord, NpcId};
use crate::plugin::npc_state::NpcEntities;
use crate::plugin::turn::TurnId;

/// Answers every round of calls proposed this frame, in order.
pub(crate) fn run_actions(world: &mut World) {
    let rounds = std::mem::take(&mut world.resource_mut::<ActionTurns>().proposed);
    for ProposedRound {
        npc,
        turn,
        said,
        calls,
    } in rounds
    {
        let entity = world.resource::<NpcEntities>().get(&npc).first().copied();
        let records = calls
            .into_iter()
            .map(|call| {
                let outcome = answer(world, &npc, entity, turn, &call);
                ActionRecord { call, outcome }
            })
            .collect();
        world
            .resource_mut::<ActionTurns>()
            .answered
            .push(AnsweredRound {
                npc,
                turn,
                said,
                records,
            });
    }
}

/// One call's outcome: a refusal saying why, or what the handler answered.
fn answer(
    world: &mut World,
    npc: &NpcId,
    entity: Option<Entity>,
    turn: TurnId,
    call: &ActionCall,
) -> ActionOutcome {
    let (run, veto) = {
        let registry = world.resource::<ActionRegistry>();
        let turns = world.resource::<ActionTurns>();
        if let Some(refusal) = refusal(registry, turns, npc, call) {
            return ActionOutcome::Refused(refusal);
        }
        let Some(action) = registry.get(&call.name) else {
            unreachable!("refusal() refuses unknown actions");
        };
        (action.run.clone(), registry.veto)
    };
    if let Some(veto) = veto {
        let proposed = ProposedAction {
            npc: npc.clone(),
            entity,
            turn,
            name: call.name.clone(),
            arguments: serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| serde_json::Value::Object(Default::default())),
        };
        match world.run_system_with(veto, proposed) {
            Ok(None) => {}
            Ok(Some(reason)) => return ActionOutcome::Refused(reason),
            Err(error) => {
                tracing::error!("the action veto could not run: {error}");
                return ActionOutcome::Refused("the game could not approve it".into());
            }
        }
    }
    run(
        world,
        Invocation {
            npc: npc.clone(),
            entity,
            turn,
            call: call.clone(),
        },
    )
}

/// Why the plugin refuses `call` before any game code sees it, if it does.
fn refusal(
    registry: &ActionRegistry,
    turns: &ActionTurns,
    npc: &NpcId,
    call: &ActionCall,
) -> Option<String> {
    let options = || {
        let names = turns.options(registry, npc);
        if names.is_empty() {
            "you cannot use any action now".to_owned()
        } else {
            format!("the actions you can use are: {}", names.join(", "))
        }
    };
    let Some(action) = registry.get(&call.name) else {
        return Some(format!(
            "there is no action called {}; {}",
            crate::memory::quote(&call.name),
            options()
        ));
    };
    if !turns.allows(npc, &call.name) {
        return Some(format!(
            "you are not allowed to use the action {}; {}",
            call.name,
            options()
        ));
    }
    (action.check)(&call.arguments).err()
}
