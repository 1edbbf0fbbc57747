//! Entity events: the dialogue as observers see it, on the NPC's entity.
//!
//! Each output event wraps the message of the same name, so the two carry the same
//! data by construction; both are produced together in the dialogue's outbox. The
//! messages stay the bulk path (every NPC, spawned or not); the events fire on every
//! spawned entity of the NPC, for `On<E>` observers, global or on one entity.
//!
//! The input events ([`TalkTo`], [`Interrupt`]) name an entity; the plugin resolves
//! it to the NPC's id and sends the matching message.

use std::ops::Deref;

use bevy::prelude::*;

use super::actions::NpcActed;
use super::messages::{
    InterruptNpc, NpcReplied, NpcReplyDelta, NpcReplyFailed, NpcReplyStarted, TalkToNpc,
};
use super::persona::Npc;
use crate::memory::SpeakerId;

macro_rules! npc_entity_event {
    ($(#[$doc:meta])* $name:ident, $message:ty) => {
        $(#[$doc])*
        ///
        /// It derefs to the message, so an observer reads its fields directly, e.g.
        /// `event.npc` or `event.turn`.
        #[derive(EntityEvent, Clone, Debug, PartialEq)]
        #[non_exhaustive]
        pub struct $name {
            /// The NPC's entity.
            pub entity: Entity,
            /// The same data as the message.
            pub message: $message,
        }

        impl $name {
            pub(crate) fn new(entity: Entity, message: $message) -> Self {
                Self { entity, message }
            }
        }

        impl Deref for $name {
            type Target = $message;

            fn deref(&self) -> &$message {
                &self.message
            }
        }
    };
}

npc_entity_event!(
    /// An NPC entity started answering a player line: [`NpcReplyStarted`] as an
    /// entity event.
    ///
    /// ```
    /// # use bevy::prelude::*;
    /// # use bevy_npc_memory::prelude::*;
    /// # use bevy_npc_memory::dialogue::ReplyStarted;
    /// fn show_thinking(started: On<ReplyStarted>) {
    ///     info!("{} thinks about {:?} ({})", started.npc, started.line, started.turn);
    /// }
    /// # App::new()
    /// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
    /// #     .add_observer(show_thinking)
    /// #     .update();
    /// ```
    ReplyStarted,
    NpcReplyStarted
);

npc_entity_event!(
    /// A piece of an NPC entity's reply: [`NpcReplyDelta`] as an entity event.
    ReplyDelta,
    NpcReplyDelta
);

npc_entity_event!(
    /// An NPC entity answered: [`NpcReplied`] as an entity event.
    ///
    /// ```
    /// # use bevy::prelude::*;
    /// # use bevy_npc_memory::prelude::*;
    /// fn spawn_guard(mut commands: Commands, mut personas: ResMut<Assets<Persona>>) {
    ///     let persona = personas.add(Persona::new("Guard", "You guard the gate."));
    ///     commands
    ///         .spawn(Npc::new("guard", persona))
    ///         // Only this entity's replies.
    ///         .observe(|replied: On<Replied>| info!("the guard says {}", replied.text));
    /// }
    /// # App::new()
    /// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
    /// #     .add_systems(Startup, spawn_guard)
    /// #     .update();
    /// ```
    Replied,
    NpcReplied
);

npc_entity_event!(
    /// An NPC entity called an action and it came to an outcome: [`NpcActed`] as
    /// an entity event.
    Acted,
    NpcActed
);

npc_entity_event!(
    /// An NPC entity could not answer a line, or was interrupted: [`NpcReplyFailed`]
    /// as an entity event.
    ReplyFailed,
    NpcReplyFailed
);

/// The player says something to an NPC entity: [`TalkToNpc`] by entity. The plugin
/// finds the entity's [`Npc`] id and sends the message, which is answered in the
/// same frame when triggered before [`NpcMemorySystems::Intake`](crate::NpcMemorySystems)
/// and in the next one otherwise. An entity without [`Npc`] is logged as a warning
/// and the line dropped: there is no NPC to hand it back for.
///
/// [`NpcCommandsExt::talk`](crate::NpcCommandsExt::talk) triggers it.
#[derive(EntityEvent, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Event, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct TalkTo {
    /// The NPC's entity.
    pub entity: Entity,
    /// What the player said.
    pub text: String,
    /// The line is never passed on to another NPC (see [`TalkToNpc::privately`]).
    #[reflect(default)]
    pub private: bool,
    /// Who says it (see [`TalkToNpc::from_speaker`]).
    #[reflect(default)]
    pub speaker: SpeakerId,
}

impl TalkTo {
    /// The player says `text` to the NPC `entity`.
    pub fn new(entity: Entity, text: impl Into<String>) -> Self {
        Self {
            entity,
            text: text.into(),
            private: false,
            speaker: SpeakerId::player(),
        }
    }

    /// Someone other than the game's single player says it: a co-op player or
    /// another NPC (see [`TalkToNpc::from_speaker`]).
    pub fn from_speaker(mut self, speaker: SpeakerId) -> Self {
        self.speaker = speaker;
        self
    }

    /// The player asks the NPC to keep this line to itself.
    pub fn privately(mut self) -> Self {
        self.private = true;
        self
    }
}

/// Interrupts an NPC entity's reply: [`InterruptNpc`] by entity, with the same
/// effect on memory. An entity without [`Npc`] is logged as a warning and ignored.
///
/// [`NpcCommandsExt::interrupt_npc`](crate::NpcCommandsExt::interrupt_npc)
/// triggers it.
#[derive(EntityEvent, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Event, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct Interrupt {
    /// The NPC's entity.
    pub entity: Entity,
    /// Also drop the lines waiting for the NPC.
    pub clear_queue: bool,
}

impl Interrupt {
    /// Interrupts the reply of the NPC `entity`; its waiting lines are still answered.
    pub fn new(entity: Entity) -> Self {
        Self {
            entity,
            clear_queue: false,
        }
    }

    /// Interrupts the reply of the NPC `entity` and drops the lines waiting for it.
    pub fn clearing_queue(entity: Entity) -> Self {
        Self {
            entity,
            clear_queue: true,
        }
    }
}

/// A [`TalkTo`] becomes the [`TalkToNpc`] of the entity's NPC.
pub(crate) fn on_talk_to(
    talk: On<TalkTo>,
    npcs: Query<&Npc>,
    mut messages: MessageWriter<TalkToNpc>,
) {
    match npcs.get(talk.entity) {
        Ok(npc) => {
            let mut line = TalkToNpc::new(npc.id.clone(), talk.text.clone())
                .from_speaker(talk.speaker.clone());
            line.private = talk.private;
            messages.write(line);
        }
        Err(_) => tracing::warn!(
            "TalkTo names {}, which is not an NPC; the line is dropped",
            talk.entity
        ),
    }
}

/// An [`Interrupt`] becomes the [`InterruptNpc`] of the entity's NPC.
pub(crate) fn on_interrupt(
    interrupt: On<Interrupt>,
    npcs: Query<&Npc>,
    mut messages: MessageWriter<InterruptNpc>,
) {
    match npcs.get(interrupt.entity) {
        Ok(npc) => {
            messages.write(InterruptNpc {
                npc: npc.id.clone(),
                clear_queue: interrupt.clear_queue,
            });
        }
        Err(_) => tracing::warn!(
            "Interrupt names {}, which is not an NPC; nothing is interrupted",
            interrupt.entity
        ),
    }
}
