//! What an NPC entity is doing, as a component for UIs.

use bevy::prelude::*;

use super::turn::TurnId;

/// What an NPC entity is doing, for UIs: a thinking bubble, a typewriter line.
///
/// Every entity with [`Npc`](crate::Npc) has one (it is a required component). The plugin
/// changes it only when something happens (a line starts being answered, a piece
/// streams, the reply ends, fails or is interrupted, memory is cleared or a save
/// loaded), so `Changed<NpcState>` finds the NPCs worth redrawing and idle NPCs cost
/// nothing per frame. An entity spawned while its NPC is mid-reply starts with the
/// NPC's current state.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// fn bubbles(npcs: Query<(&Npc, &NpcState), Changed<NpcState>>) {
///     for (npc, state) in &npcs {
///         match state {
///             NpcState::Thinking { .. } => info!("{} is thinking...", npc.id),
///             NpcState::Speaking { partial, .. } => info!("{}: {partial}", npc.id),
///             _ => {}
///         }
///     }
/// }
/// # App::new()
/// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
/// #     .add_systems(Update, bubbles.after(NpcMemorySystems::Collect))
/// #     .update();
/// ```
///
/// Reflected for inspectors. It mirrors requests of this launch only, so saves and
/// scenes do not bring it back: a loaded NPC starts idle.
#[derive(Component, Clone, Debug, Default, PartialEq, Eq, Reflect)]
#[component(clone_behavior = Ignore)]
#[type_path = "bevy_npc_memory"]
#[reflect(Component, Debug, PartialEq, Default, Clone)]
#[non_exhaustive]
pub enum NpcState {
    /// Not answering anything (lines may still wait for a persona to load).
    #[default]
    Idle,
    /// A line is being answered and nothing has streamed yet.
    Thinking {
        /// The turn being answered.
        turn: TurnId,
    },
    /// The reply is streaming.
    Speaking {
        /// The turn being answered.
        turn: TurnId,
        /// The reply so far: every delta of the turn, joined.
        partial: String,
    },
}

impl NpcState {
    /// The turn being answered, unless idle.
    pub fn turn(&self) -> Option<TurnId> {
        match self {
            NpcState::Idle => None,
            NpcState::Thinking { turn } | NpcState::Speaking { turn, .. } => Some(*turn),
        }
    }

    /// Whether the NPC is answering nothing.
    pub fn is_idle(&self) -> bool {
        *self == NpcState::Idle
    }

    /// The reply streamed so far; empty unless speaking.
    pub fn partial(&self) -> &str {
        match self {
            NpcState::Speaking { partial, .. } => partial,
            _ => "",
        }
    }

    /// Adds a streamed piece of `turn`. A piece of a turn this state does not know
    /// (which the plugin does not produce) starts the partial text afresh.
    pub(crate) fn push(&mut self, turn: TurnId, piece: &str) {
        match self {
            NpcState::Speaking { turn: t, partial } if *t == turn => partial.push_str(piece),
            _ => {
                *self = NpcState::Speaking {
                    turn,
                    partial: piece.to_owned(),
                }
            }
        }
    }
}
