//! Conversations among NPCs that the plugin runs: the game starts one, and the
//! NPCs take turns, each answering from its own memory with its own backend,
//! until the conversation's rules or the game end it.
//!
//! The turns themselves go through the turn pipeline (`dialogue/conversing.rs`);
//! this module holds what the game sends and hears, and the resource that shows
//! what is running.

mod messages;
mod state;

use bevy::prelude::*;

pub use messages::{
    ConversationEnd, ConversationEnded, ConversationError, ConversationLine, ConversationStarted,
    Converse, EndConversation, StartConversation,
};
pub use state::{Conversation, ConversationId, NpcConversations};
pub(crate) use state::{Heard, Step, TurnNewsItem};

use super::persona::Npc;

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<NpcConversations>()
        .add_message::<StartConversation>()
        .add_message::<EndConversation>()
        .add_message::<ConversationStarted>()
        .add_message::<ConversationLine>()
        .add_message::<ConversationEnded>()
        .register_type::<StartConversation>()
        .register_type::<Converse>()
        .add_observer(on_converse);
}

/// A [`Converse`] becomes the [`StartConversation`] of the entities' NPCs.
fn on_converse(
    converse: On<Converse>,
    npcs: Query<&Npc>,
    mut messages: MessageWriter<StartConversation>,
) {
    let ids = |entities: &[Entity]| -> Vec<_> {
        entities
            .iter()
            .filter_map(|&entity| match npcs.get(entity) {
                Ok(npc) => Some(npc.id.clone()),
                Err(_) => {
                    tracing::warn!("Converse names {entity}, which is not an NPC; skipped");
                    None
                }
            })
            .collect()
    };
    let mut start = converse.start.clone();
    start.participants = ids(&converse.participants);
    start.earshot = ids(&converse.earshot);
    messages.write(start);
}
