//! The game answers the model's calls: each is checked (known, allowed,
//! arguments that fit the action's type and schema, not vetoed) before any game
//! code runs, then its handler runs. Exclusive, because handlers are the game's
//! own systems.

use bevy::ecs::message::MessageCursor;
use bevy::platform::time::Instant;
use bevy::prelude::*;

use super::registry::{
    ActionRegistry, ActionTurns, AnsweredRound, Invocation, ProposedRound, WaitingRound,
};
use super::{AnswerNpcAction, ProposedAction};
use crate::memory::{ActionCall, ActionOutcome, ActionRecord, ActionReply, NpcId};
use crate::plugin::entities::NpcEntities;
use crate::plugin::npc::TurnId;
use crate::plugin::settings::NpcMemorySettings;

/// Whether [`run_actions`] has anything to do. An exclusive system stops every
/// other system for its frame, so it runs only when a round of calls, or the
/// game's answer to one, is waiting: a game whose NPCs never act pays nothing.
pub(crate) fn calls_pending(
    turns: Res<ActionTurns>,
    answers: Res<Messages<AnswerNpcAction>>,
) -> bool {
    !turns.proposed.is_empty() || !turns.waiting.is_empty() || !answers.is_empty()
}

/// Whether a round the game answered waits to enter memory.
pub(crate) fn rounds_answered(turns: Res<ActionTurns>) -> bool {
    !turns.answered.is_empty()
}

/// Answers every round of calls proposed this frame, in order; takes the game's
/// later answers; and fails calls still unanswered past their deadline.
pub(crate) fn run_actions(world: &mut World, mut answers: Local<MessageCursor<AnswerNpcAction>>) {
    let rounds = std::mem::take(&mut world.resource_mut::<ActionTurns>().proposed);
    let timeout = world.resource::<NpcMemorySettings>().action_timeout;
    for ProposedRound {
        npc,
        turn,
        said,
        calls,
    } in rounds
    {
        let entity = world.resource::<NpcEntities>().get(&npc).first().copied();
        let outcomes = calls
            .iter()
            .map(|call| match answer(world, &npc, entity, turn, call) {
                ActionReply::Now(outcome) => Some(outcome),
                ActionReply::Later => None,
            })
            .collect();
        world
            .resource_mut::<ActionTurns>()
            .waiting
            .push(WaitingRound {
                npc,
                turn,
                said,
                calls,
                outcomes,
                deadline: Instant::now() + timeout,
            });
    }
    let answers: Vec<AnswerNpcAction> = answers
        .read(world.resource::<Messages<AnswerNpcAction>>())
        .cloned()
        .collect();
    let mut turns = world.resource_mut::<ActionTurns>();
    for answer in answers {
        take_answer(&mut turns, answer);
    }
    close_rounds(&mut turns, Instant::now());
}

/// Fills the call an answer is for, if it still waits.
fn take_answer(turns: &mut ActionTurns, answer: AnswerNpcAction) {
    let slot = turns
        .waiting
        .iter_mut()
        .filter(|round| round.npc == answer.npc)
        .flat_map(|round| round.calls.iter().zip(round.outcomes.iter_mut()))
        .find(|(call, outcome)| call.id == answer.call_id && outcome.is_none());
    match slot {
        Some((_, outcome)) => *outcome = Some(answer.outcome),
        None => tracing::warn!(
            "{}: an answer to action call {:?} came when no such call waited; ignored",
            answer.npc,
            answer.call_id
        ),
    }
}

/// Rounds whose every call has its outcome, or whose deadline passed, are
/// answered; the rest keep waiting, and their NPC keeps thinking.
fn close_rounds(turns: &mut ActionTurns, now: Instant) {
    let (done, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut turns.waiting)
        .into_iter()
        .partition(|round| now >= round.deadline || round.outcomes.iter().all(Option::is_some));
    turns.waiting = waiting;
    for round in done {
        let records = round
            .calls
            .into_iter()
            .zip(round.outcomes)
            .map(|(call, outcome)| ActionRecord {
                call,
                outcome: outcome.unwrap_or_else(|| ActionOutcome::Failed("timed out".into())),
            })
            .collect();
        turns.answered.push(AnsweredRound {
            npc: round.npc,
            turn: round.turn,
            said: round.said,
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
) -> ActionReply {
    let (run, veto) = {
        let registry = world.resource::<ActionRegistry>();
        let turns = world.resource::<ActionTurns>();
        if let Some(refusal) = refusal(registry, turns, npc, call) {
            return ActionOutcome::Refused(refusal).into();
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
            Ok(Some(reason)) => return ActionOutcome::Refused(reason).into(),
            Err(error) => {
                tracing::error!("the action veto could not run: {error}");
                return ActionOutcome::Refused("the game could not approve it".into()).into();
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
