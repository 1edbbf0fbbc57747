//! The one lore store every NPC reads, fed by lore files and the game's changes.

use std::collections::{BTreeMap, HashMap};

use bevy::prelude::*;

use super::file::LoreFile;
use crate::memory::limits::MAX_LORE_ENTRIES;
use crate::memory::{
    ChatLog, InvalidField, LoreChanges, LoreEntry, LoreHit, LoreLimits, LoreReader, LoreStore,
    NpcId, SharedKnowledge,
};

/// How many messages before the player's line help find lore, at a lower weight
/// ("tell me about the reactor" … "and who built it?").
const RECENT_MESSAGES: usize = 2;

/// Every NPC's lore: one store, fed by the loaded [`LoreFile`]s and by the lore the
/// game changes while it runs ([`AddLore`](super::AddLore),
/// [`UpdateLore`](super::UpdateLore), [`RemoveLore`](super::RemoveLore)).
///
/// Run-time changes win over the files for the same id, also when a file is
/// edited later, and saves keep them. Lore is never copied into NPC memory: before
/// each reply the plugin looks up the entries that match the player's line and that
/// this NPC may know (its id, and the groups its persona names), and the prompt
/// quotes them in a section of their own.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// # use bevy_npc_memory::lore::NpcLore;
/// fn who_knows_the_code(lore: Res<NpcLore>) {
///     for npc in lore.npcs_that_see("crew_door_code") {
///         info!("{npc} knows the door code");
///     }
/// }
/// ```
#[derive(Resource, Debug, Default)]
pub struct NpcLore {
    store: LoreStore,
    /// The entries of each loaded file, in load order: for an id in two files,
    /// the file loaded last wins.
    files: Vec<(AssetId<LoreFile>, Vec<LoreEntry>)>,
    /// Changes made while the game runs: an entry as set, or `None` if removed.
    changes: BTreeMap<String, Option<LoreEntry>>,
    /// The groups of every NPC whose persona has been applied.
    groups: HashMap<NpcId, Vec<String>>,
    /// Counts changes to `changes`, so saves know when to take them again.
    revision: u64,
    /// Set when an entry in force got another text or went away, so the lore NPCs
    /// told each other can be checked against it.
    texts_changed: bool,
    /// Files loaded for the plugin, kept alive so they stay in the store.
    pub(super) handles: Vec<Handle<LoreFile>>,
}

impl NpcLore {
    /// The store, as it is now.
    pub fn store(&self) -> &LoreStore {
        &self.store
    }

    /// Every entry in force, in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = &LoreEntry> {
        self.store.entries()
    }

    /// The entry with this id, as it is now.
    pub fn get(&self, id: &str) -> Option<&LoreEntry> {
        self.store.get(id)
    }

    /// The groups an NPC belongs to, from its persona.
    pub fn groups(&self, npc: &NpcId) -> &[String] {
        self.groups.get(npc).map_or(&[], Vec::as_slice)
    }

    /// Whether `npc` may know the entry `id`.
    pub fn can_see(&self, npc: &NpcId, id: &str) -> bool {
        self.get(id)
            .is_some_and(|entry| LoreReader::new(npc, self.groups(npc)).sees(&entry.scope))
    }

    /// The NPCs (with a persona applied) that may know the entry `id`, by id.
    pub fn npcs_that_see(&self, id: &str) -> Vec<NpcId> {
        let mut npcs: Vec<NpcId> = self
            .groups
            .keys()
            .filter(|npc| self.can_see(npc, id))
            .cloned()
            .collect();
        npcs.sort();
        npcs
    }

    /// The entries `npc` may know that match `line` (and, at a lower weight, the
    /// `recent` messages before it), best first: what its next prompt would carry.
    pub fn query(
        &self,
        npc: &NpcId,
        line: &str,
        recent: &[&str],
        limits: &LoreLimits,
    ) -> Vec<LoreHit> {
        let reader = LoreReader::new(npc, self.groups(npc));
        self.store.query(&reader, line, recent, limits)
    }

    /// The lore changed while the game ran, as a save keeps it.
    pub fn changes(&self) -> LoreChanges {
        let mut changes = LoreChanges::default();
        for (id, change) in &self.changes {
            match change {
                Some(entry) => changes.entries.push(entry.clone()),
                None => changes.removed.push(id.clone()),
            }
        }
        changes
    }

    /// The lore for a reply to `line` from an NPC whose log is `log` (the line not
    /// in it yet).
    pub(crate) fn knowledge(
        &self,
        npc: &NpcId,
        line: &str,
        log: &ChatLog,
        limits: &LoreLimits,
    ) -> SharedKnowledge {
        if self.store.is_empty() {
            return SharedKnowledge::default();
        }
        let messages = log.messages();
        let recent: Vec<&str> = messages[messages.len().saturating_sub(RECENT_MESSAGES)..]
            .iter()
            .map(|m| &*m.content)
            .collect();
        SharedKnowledge::lore(self.query(npc, line, &recent, limits))
    }

    /// Whether an entry's text changed, or an entry went away, since last asked.
    pub(crate) fn take_texts_changed(&mut self) -> bool {
        std::mem::take(&mut self.texts_changed)
    }

    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    pub(crate) fn set_groups(&mut self, npc: &NpcId, groups: &[String]) {
        if self.groups.get(npc).map(Vec::as_slice) != Some(groups) {
            self.groups.insert(npc.clone(), groups.to_vec());
        }
    }

    /// A lore file loaded or changed: its entries replace the ones it had.
    pub(super) fn set_file(&mut self, file: AssetId<LoreFile>, entries: Vec<LoreEntry>) {
        let old = self.remove_file_entries(file);
        let mut ids: Vec<String> = entries.iter().map(|e| e.id.clone()).collect();
        self.files.push((file, entries));
        ids.extend(old);
        self.refresh_all(ids);
    }

    /// A lore file went away: its entries leave the store.
    pub(super) fn remove_file(&mut self, file: AssetId<LoreFile>) {
        let old = self.remove_file_entries(file);
        self.refresh_all(old);
    }

    fn remove_file_entries(&mut self, file: AssetId<LoreFile>) -> Vec<String> {
        let Some(at) = self.files.iter().position(|(id, _)| *id == file) else {
            return Vec::new();
        };
        let (_, entries) = self.files.remove(at);
        entries.into_iter().map(|e| e.id).collect()
    }

    /// Adds or replaces an entry from now on.
    pub(super) fn add(&mut self, entry: LoreEntry) -> Result<(), InvalidField> {
        entry.check()?;
        self.change(entry.id.clone(), Some(entry))
    }

    /// Gives an entry a new text from now on; `Ok(false)` if no entry has the id.
    pub(super) fn update(&mut self, id: &str, text: &str) -> Result<bool, InvalidField> {
        let Some(mut entry) = self.store.get(id).cloned() else {
            return Ok(false);
        };
        entry.text = text.into();
        entry.check()?;
        self.change(id.to_owned(), Some(entry))?;
        Ok(true)
    }

    /// Removes an entry from now on. One a file holds is remembered as removed, so
    /// the file does not bring it back.
    pub(super) fn remove(&mut self, id: &str) -> bool {
        let existed = self.store.get(id).is_some();
        if self.file_entry(id).is_some() {
            let _ = self.change(id.to_owned(), None);
        } else if self.changes.remove(id).is_some() {
            self.revision += 1;
            self.refresh(id);
        }
        existed
    }

    fn change(&mut self, id: String, change: Option<LoreEntry>) -> Result<(), InvalidField> {
        if !self.changes.contains_key(&id) && self.changes.len() >= MAX_LORE_ENTRIES {
            return Err(InvalidField {
                field: "lore".into(),
                problem: format!("already holds {MAX_LORE_ENTRIES} run-time changes"),
            });
        }
        self.changes.insert(id.clone(), change);
        self.revision += 1;
        self.refresh(&id);
        Ok(())
    }

    /// Puts back the run-time changes of a save, in place of the ones in force.
    pub(crate) fn restore(&mut self, saved: &LoreChanges) {
        let mut ids: Vec<String> = self.changes.keys().cloned().collect();
        self.changes = saved
            .entries
            .iter()
            .map(|entry| (entry.id.clone(), Some(entry.clone())))
            .chain(saved.removed.iter().map(|id| (id.clone(), None)))
            .collect();
        ids.extend(self.changes.keys().cloned());
        self.revision += 1;
        self.refresh_all(ids);
        // The loaded logs may hold lore told before files changed on disk.
        self.texts_changed = true;
    }

    fn file_entry(&self, id: &str) -> Option<&LoreEntry> {
        self.files
            .iter()
            .rev()
            .find_map(|(_, entries)| entries.iter().find(|e| e.id == id))
    }

    fn refresh_all(&mut self, mut ids: Vec<String>) {
        ids.sort_unstable();
        ids.dedup();
        // One pass over the files, not one per id, so a large file reloads in
        // time linear in its size; later files win, as in `file_entry`.
        let mut newest: HashMap<&str, &LoreEntry> = HashMap::new();
        for (_, entries) in &self.files {
            newest.extend(entries.iter().map(|entry| (entry.id.as_str(), entry)));
        }
        let in_force: Vec<(String, Option<LoreEntry>)> = ids
            .into_iter()
            .map(|id| {
                let entry = match self.changes.get(&id) {
                    Some(change) => change.clone(),
                    None => newest.get(id.as_str()).map(|&entry| entry.clone()),
                };
                (id, entry)
            })
            .collect();
        for (id, entry) in in_force {
            self.put(&id, entry);
        }
    }

    /// Puts the entry in force for `id` into the store: the run-time change if
    /// there is one, else the newest file's.
    fn refresh(&mut self, id: &str) {
        let entry = match self.changes.get(id) {
            Some(change) => change.clone(),
            None => self.file_entry(id).cloned(),
        };
        self.put(id, entry);
    }

    fn put(&mut self, id: &str, entry: Option<LoreEntry>) {
        let old_text = self.store.get(id).map(|old| old.text.clone());
        if old_text.is_some() && old_text != entry.as_ref().map(|e| e.text.clone()) {
            self.texts_changed = true;
        }
        match entry {
            Some(entry) => {
                if let Err(error) = self.store.insert(entry) {
                    tracing::warn!("lore entry {id:?} was not added: {error}");
                }
            }
            None => {
                self.store.remove(id);
            }
        }
    }
}
