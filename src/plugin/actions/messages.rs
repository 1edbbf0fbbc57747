//! What actions say to the game: a checked call for its handler, a call for its
//! veto, the handler's answer, and what came of a call.

use bevy::prelude::*;

use crate::memory::{ActionOutcome, LogIndex, NpcId};
use crate::plugin::npc::TurnId;

/// A call of action `A` that passed every check, handed to its handler system as
/// `In<ActionInvocation<A>>`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ActionInvocation<A> {
    /// The NPC that acts.
    pub npc: NpcId,
    /// Its entity, the oldest if several carry its id; `None` when none is spawned.
    pub entity: Option<Entity>,
    /// The turn the action belongs to.
    pub turn: TurnId,
    /// The model's id for the call.
    pub call_id: String,
    /// The arguments, checked against `A` and its JSON Schema.
    pub args: A,
}

/// A call about to reach its handler, shown to the game's veto
/// ([`NpcActionsAppExt::set_npc_action_veto`](crate::actions::NpcActionsAppExt::set_npc_action_veto)). Its arguments already fit the
/// action's type and its JSON Schema.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ProposedAction {
    /// The NPC that wants to act.
    pub npc: NpcId,
    /// Its entity, if one is spawned.
    pub entity: Option<Entity>,
    /// The turn.
    pub turn: TurnId,
    /// The action's name.
    pub name: String,
    /// The arguments as JSON.
    pub arguments: serde_json::Value,
}

/// An NPC called an action and it came to `outcome`: done, refused (by the
/// plugin's checks or the game's veto) or failed. Written once the call and its
/// result are in the NPC's log, before the NPC says what came of it.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// # use bevy_npc_memory::actions::NpcActed;
/// fn show_actions(mut acted: MessageReader<NpcActed>) {
///     for act in acted.read() {
///         info!("{} used {} ({}): {}", act.npc, act.name, act.turn, act.outcome);
///     }
/// }
/// # App::new()
/// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
/// #     .add_systems(Update, show_actions.after(NpcMemorySystems::Collect))
/// #     .update();
/// ```
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct NpcActed {
    /// Who acted.
    pub npc: NpcId,
    /// The turn it acted in.
    pub turn: TurnId,
    /// The model's id for the call.
    pub call_id: String,
    /// The action's name, as the model called it.
    pub name: String,
    /// The arguments as the model wrote them (JSON text, possibly invalid when
    /// the call was refused).
    pub arguments: String,
    /// What came of it.
    pub outcome: ActionOutcome,
    /// The index of the result's entry in the NPC's log.
    pub index: LogIndex,
}

/// The game's later answer to an action whose handler returned
/// [`ActionReply::Later`](crate::memory::ActionReply::Later). An answer for a
/// call that is not waiting (it timed out, or the NPC's memory was cleared) is
/// ignored. Meanwhile the NPC is thinking and its next lines wait; an
/// [`InterruptNpc`](crate::dialogue::InterruptNpc) does not stop a turn waiting for
/// the game, only the reply that follows it.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AnswerNpcAction {
    /// The NPC that acted.
    pub npc: NpcId,
    /// The call answered: [`ActionInvocation::call_id`].
    pub call_id: String,
    /// What came of it.
    pub outcome: ActionOutcome,
}

impl AnswerNpcAction {
    /// The answer to call `call_id` of `npc`.
    pub fn new(npc: impl Into<NpcId>, call_id: impl Into<String>, outcome: ActionOutcome) -> Self {
        Self {
            npc: npc.into(),
            call_id: call_id.into(),
            outcome,
        }
    }
}
