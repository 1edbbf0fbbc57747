//! The index from NPC ids to their entities that lets the plugin reach them
//! without a per-frame query, and the observers that keep it and each entity's
//! [`NpcState`] current.

use std::collections::HashMap;

use bevy::prelude::*;

use super::npc::NpcState;
use super::persona::Npc;
use super::requests::NpcRequests;
use crate::memory::NpcId;

/// The spawned entities of every NPC, kept up to date as [`Npc`] components are
/// inserted, replaced and removed. The plugin uses it to fire entity events and
/// update [`NpcState`]; games can use it to find an NPC's entity by id.
///
/// An NPC's memory outlives its entities: an id with no entity still remembers,
/// it just has nobody to fire entity events on. Two entities may carry the same
/// id (say, the old one of a level still despawning while the new one spawns):
/// then both are listed, in the order they got their [`Npc`], and both get every
/// entity event and the same [`NpcState`]. Lines sent to either go to the one
/// memory the id names.
#[derive(Resource, Default, Debug)]
pub struct NpcEntities {
    by_id: HashMap<NpcId, Vec<Entity>>,
}

impl NpcEntities {
    /// The entities carrying `npc`'s id, oldest first; empty when none is spawned.
    pub fn get(&self, npc: &NpcId) -> &[Entity] {
        self.by_id.get(npc).map_or(&[], Vec::as_slice)
    }

    /// Every spawned NPC and its entities, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&NpcId, &[Entity])> {
        self.by_id
            .iter()
            .map(|(id, entities)| (id, entities.as_slice()))
    }

    fn add(&mut self, npc: &NpcId, entity: Entity) {
        let entities = self.by_id.entry(npc.clone()).or_default();
        if !entities.contains(&entity) {
            entities.push(entity);
        }
    }

    fn remove(&mut self, npc: &NpcId, entity: Entity) {
        if let Some(entities) = self.by_id.get_mut(npc) {
            entities.retain(|e| *e != entity);
            if entities.is_empty() {
                self.by_id.remove(npc);
            }
        }
    }
}

/// An [`Npc`] was inserted, on a new entity or over another id: the entity joins its
/// id's list and shows what that NPC is doing now.
pub(crate) fn on_npc_inserted(
    insert: On<Insert, Npc>,
    mut npcs: Query<(&Npc, Option<&mut NpcState>)>,
    mut index: ResMut<NpcEntities>,
    requests: Res<NpcRequests>,
    mut commands: Commands,
) {
    let Ok((npc, state)) = npcs.get_mut(insert.entity) else {
        return;
    };
    index.add(&npc.id, insert.entity);
    let now = requests.state(&npc.id);
    match state {
        Some(mut state) => {
            state.set_if_neq(now);
        }
        // Only if the game removed the state on its own.
        None => {
            commands.entity(insert.entity).insert(now);
        }
    }
}

/// An [`Npc`] is about to be replaced, removed or despawned: the entity leaves its
/// old id's list. When it is replaced, [`on_npc_inserted`] adds it under the new id
/// right after.
pub(crate) fn on_npc_discarded(
    discard: On<Discard, Npc>,
    npcs: Query<&Npc>,
    mut index: ResMut<NpcEntities>,
) {
    if let Ok(npc) = npcs.get(discard.entity) {
        index.remove(&npc.id, discard.entity);
    }
}

/// An [`Npc`] was removed for good: the entity no longer answers, so it shows idle.
pub(crate) fn on_npc_removed(remove: On<Remove, Npc>, mut states: Query<&mut NpcState>) {
    if let Ok(mut state) = states.get_mut(remove.entity) {
        state.set_if_neq(NpcState::Idle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::npc::TurnCounter;

    #[test]
    fn pieces_of_one_turn_add_up_and_a_new_turn_starts_afresh() {
        let mut turns = TurnCounter::default();
        let (first, second) = (turns.take(), turns.take());
        let mut state = NpcState::Thinking { turn: first };
        assert_eq!(state.partial(), "");
        state.push(first, "Hel");
        state.push(first, "lo ");
        assert_eq!(state.partial(), "Hello ");
        assert_eq!(state.turn(), Some(first));
        state.push(second, "Bye");
        assert_eq!(
            state,
            NpcState::Speaking {
                turn: second,
                partial: "Bye".into()
            }
        );
        assert!(!state.is_idle() && NpcState::default().is_idle());
    }
}
