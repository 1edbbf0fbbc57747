//! Which NPCs use which persona asset, and what each NPC's persona declares that
//! the dialogue needs per reply.

use std::collections::HashMap;
use std::sync::Arc;

use bevy::prelude::*;

use super::tier_bindings::TierBindings;
use super::{Npc, Persona};
use crate::memory::{NpcId, ReplyFieldSet, ReplyFields};

/// Which NPCs use which persona asset, so a persona that loads late or is edited
/// reaches every NPC using it.
#[derive(Resource, Default)]
pub(crate) struct PersonaBindings {
    by_asset: HashMap<AssetId<Persona>, Vec<NpcId>>,
    spawned: Vec<AssetId<Persona>>,
    failed: HashMap<AssetId<Persona>, String>,
    /// The reply fields of each NPC whose persona declares any.
    reply_fields: HashMap<NpcId, Arc<ReplyFieldSet>>,
    /// The memory settings per tier of each NPC whose persona sets any.
    pub(crate) tiers: TierBindings,
}

impl PersonaBindings {
    pub(crate) fn bind(&mut self, npc: NpcId, persona: AssetId<Persona>) {
        let npcs = self.by_asset.entry(persona).or_default();
        if !npcs.contains(&npc) {
            npcs.push(npc);
        }
        self.spawned.push(persona);
    }

    /// The NPC's persona declares these reply fields (none: replies are not parsed).
    pub(crate) fn set_reply_fields(&mut self, npc: &NpcId, set: ReplyFieldSet) {
        if set.is_empty() {
            self.reply_fields.remove(npc);
        } else {
            self.reply_fields.insert(npc.clone(), Arc::new(set));
        }
    }

    /// The reply fields the NPC declares, if any.
    pub(crate) fn reply_fields(&self, npc: &NpcId) -> Option<Arc<ReplyFieldSet>> {
        self.reply_fields.get(npc).cloned()
    }

    /// Takes the personas to apply: those of NPCs spawned since the last call,
    /// or every bound one after [`reapply_all`](Self::reapply_all).
    pub(crate) fn take_spawned(&mut self) -> Vec<AssetId<Persona>> {
        std::mem::take(&mut self.spawned)
    }

    /// Every bound persona is applied again: a load replaced memory, and the live
    /// asset wins over the persona stored in the save.
    pub(crate) fn reapply_all(&mut self) {
        self.spawned.extend(self.by_asset.keys().copied());
    }

    /// Takes the reply-field tag off the start of a reply of the NPC: the fields it
    /// set, and the words. An NPC without reply fields keeps its reply as it is.
    pub(crate) fn split_fields(&self, npc: &NpcId, reply: String) -> (ReplyFields, String) {
        let Some(set) = self.reply_fields.get(npc) else {
            return (ReplyFields::default(), reply);
        };
        let (fields, words) = set.split(&reply);
        if words.len() == reply.len() {
            return (fields, reply);
        }
        (fields, words.to_owned())
    }

    pub(crate) fn npcs(&self, persona: AssetId<Persona>) -> &[NpcId] {
        self.by_asset.get(&persona).map_or(&[], Vec::as_slice)
    }

    pub(crate) fn is_bound(&self, npc: &NpcId) -> bool {
        self.by_asset.values().any(|npcs| npcs.contains(npc))
    }

    pub(crate) fn mark_failed(&mut self, persona: AssetId<Persona>, reason: String) {
        self.failed.insert(persona, reason);
    }

    pub(crate) fn mark_loaded(&mut self, persona: AssetId<Persona>) {
        self.failed.remove(&persona);
    }

    /// Why the persona of an NPC failed to load, if it did.
    pub(crate) fn failure(&self, npc: &NpcId) -> Option<&str> {
        self.by_asset
            .iter()
            .find(|(_, npcs)| npcs.contains(npc))
            .and_then(|(id, _)| self.failed.get(id))
            .map(String::as_str)
    }
}

/// An `Npc` was inserted: on a new entity, or over another one (a new id or
/// persona), which binds the new pair the same way.
pub(crate) fn on_npc_inserted(
    insert: On<Insert, Npc>,
    npcs: Query<&Npc>,
    mut bindings: ResMut<PersonaBindings>,
) {
    if let Ok(npc) = npcs.get(insert.entity) {
        bindings.bind(npc.id.clone(), npc.persona.id());
    }
}
