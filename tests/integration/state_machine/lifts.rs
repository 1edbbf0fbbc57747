//! The lift: an action the game answers later. A game system answers calls to
//! an even floor a frame after the handler saw them (unless the wait ran out
//! first: then they time out and the answer is ignored); calls to an odd floor
//! are never answered and time out. `Step::AnswerLate` answers a call that no
//! longer waits, which must change nothing.

use bevy::prelude::*;
use bevy_npc_memory::actions::{AnswerNpcAction, NpcActed};
use bevy_npc_memory::memory::{ActionOutcome, ActionReply};
use bevy_npc_memory::prelude::*;

use super::play::Play;
use super::steps::NPCS;

/// How long a call waits for the game before it times out. Long enough that the
/// game's answer a frame later usually wins, short enough for long runs.
pub(super) const LIFT_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// Calls the lift to a floor.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub(super) struct CallLift {
    /// Which floor.
    floor: u32,
}

impl NpcAction for CallLift {
    const NAME: &'static str = "call_lift";
    const DESCRIPTION: &'static str = "Call the lift to a floor.";
}

/// Lift calls the game has yet to answer: the NPC, the call and the floor.
#[derive(Resource, Default)]
struct LiftCalls(Vec<(NpcId, String, u32)>);

fn call_lift(call: In<ActionInvocation<CallLift>>, mut calls: ResMut<LiftCalls>) -> ActionReply {
    calls
        .0
        .push((call.npc.clone(), call.call_id.clone(), call.args.floor));
    ActionReply::Later
}

/// The game's answer to the calls it answers, as a game whose lift takes a
/// frame to come would send it.
fn answer_lifts(mut calls: ResMut<LiftCalls>, mut answers: MessageWriter<AnswerNpcAction>) {
    for (npc, call_id, floor) in calls.0.drain(..) {
        if floor.is_multiple_of(2) {
            answers.write(AnswerNpcAction::new(
                npc,
                call_id,
                ActionOutcome::Done(arrival(floor)),
            ));
        }
    }
}

/// What the game says when the lift comes.
fn arrival(floor: u32) -> String {
    format!("The lift arrives at floor {floor}.")
}

/// The floor a call asks for: even if the game will answer it.
pub(super) fn floor(answered: bool, door: &str) -> u32 {
    2 * door.chars().count() as u32 + u32::from(!answered)
}

/// The lift's action, its calls and the game's answers.
pub(super) fn install(app: &mut App) {
    app.init_resource::<LiftCalls>()
        .register_npc_action(call_lift)
        .add_systems(Update, answer_lifts);
}

impl Play {
    /// The game answers a call that no longer waits (answered or timed out
    /// before), or one never made. Nothing may come of it.
    pub(super) fn answer_late(&mut self, npc: usize, pick: u8) {
        let acted = self.h.inbox::<NpcActed>();
        let lifts: Vec<&NpcActed> = acted.iter().filter(|a| a.name == CallLift::NAME).collect();
        let (to, call_id) = match lifts.len() {
            0 => (self.ids[npc].clone(), "call-never".to_owned()),
            _ if pick.is_multiple_of(4) => (self.ids[npc].clone(), "call-never".to_owned()),
            n => {
                let call = lifts[pick as usize % n];
                (call.npc.clone(), call.call_id.clone())
            }
        };
        let (before, replies) = (acted.len(), self.count::<NpcReplied>());
        self.write(AnswerNpcAction::new(
            to,
            call_id.clone(),
            ActionOutcome::Done("It came after all.".into()),
        ));
        self.h.settle();
        assert_eq!(
            (self.count::<NpcActed>(), self.count::<NpcReplied>()),
            (before, replies),
            "a late answer to {call_id} made an NPC act or reply"
        );
        for other in 0..NPCS {
            assert_eq!(
                self.log(other),
                self.before[other],
                "a late answer to {call_id} changed NPC {other}'s log"
            );
        }
    }

    /// Every lift call came to one end: the game's answer (to an even floor
    /// only, and in the log where the NPC says it acted), a timeout, or a refusal
    /// before the game saw it.
    pub(super) fn check_lifts(&self, acted_before: usize) {
        let acted = self.h.inbox::<NpcActed>();
        let mut ids = std::collections::HashSet::new();
        for (n, call) in acted.iter().enumerate() {
            assert!(
                ids.insert((call.npc.clone(), call.call_id.clone())),
                "call {} of {} acted twice",
                call.call_id,
                call.npc
            );
            if call.name != CallLift::NAME {
                continue;
            }
            let floor = serde_json::from_str::<serde_json::Value>(&call.arguments)
                .ok()
                .and_then(|args| args["floor"].as_u64());
            match (&call.outcome, floor) {
                (ActionOutcome::Failed(why), _) => assert_eq!(why, "timed out", "{call:?}"),
                // Not the game's to answer: an NPC without the action, say.
                (ActionOutcome::Refused(_), _) => {}
                (ActionOutcome::Done(text), Some(floor)) if floor.is_multiple_of(2) => {
                    assert_eq!(*text, arrival(floor as u32), "{call:?}");
                    let npc = self.ids.iter().position(|id| *id == call.npc).unwrap();
                    if n >= acted_before && !self.may_shrink[npc] {
                        let logs = self.h.app.world().resource::<ChatLogs>();
                        let entry = logs
                            .get(&call.npc)
                            .and_then(|log| log.messages().iter().find(|m| m.index == call.index));
                        assert_eq!(
                            entry.map(|m| &*m.content),
                            Some(text.as_str()),
                            "the game's answer is not where {call:?} says"
                        );
                    }
                }
                (outcome, _) => panic!("a lift call the game never answers came to {outcome:?}"),
            }
        }
    }
}
