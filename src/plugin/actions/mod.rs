//! NPCs that act: the game registers actions ([`NpcActionsAppExt`]), a persona
//! lists the ones its NPC may take, and a reply may call them as tools.
//!
//! One turn, in one place each: the model's calls come back with its reply
//! (`dialogue/results.rs`), every call is checked and the game's handler runs
//! ([`run_actions`]), the calls and results enter the log and the game hears
//! [`NpcActed`] (`dialogue/actions.rs`), and a follow-up request in the same turn
//! lets the NPC say what came of it, which arrives as the turn's
//! [`NpcReplied`](crate::prelude::NpcReplied).

mod messages;
mod registry;
mod run;

use bevy::prelude::*;

pub use messages::{ActionInvocation, AnswerNpcAction, NpcActed, ProposedAction};
pub use registry::NpcActionsAppExt;
pub(crate) use registry::{ActionRegistry, ActionTurns, AnsweredRound, ProposedRound};
pub(crate) use run::rounds_answered;

use crate::plugin::persona::PersonaChange;
use crate::plugin::sets::{CollectStep, LoadStep};
use run::{calls_pending, run_actions};

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<NpcActed>()
        .add_message::<AnswerNpcAction>()
        .init_resource::<ActionRegistry>()
        .init_resource::<ActionTurns>()
        // Handlers are the game's systems: the calls of replies collected this
        // frame are answered in it, so the follow-up goes out with this frame's
        // requests.
        .add_systems(
            Update,
            (
                allow_persona_actions
                    .run_if(on_message::<PersonaChange>)
                    .in_set(LoadStep::Bind),
                run_actions
                    .run_if(calls_pending)
                    .in_set(CollectStep::Actions),
            ),
        );
}

/// An NPC may call the actions its persona lists.
fn allow_persona_actions(
    mut turns: ResMut<ActionTurns>,
    mut changes: MessageReader<PersonaChange>,
) {
    for applied in changes.read().filter_map(PersonaChange::applied) {
        turns.allow(&applied.npc, &applied.actions);
    }
}
