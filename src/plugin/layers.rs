//! The three memory layers as Bevy resources, keyed by [`NpcId`].

use std::collections::{HashMap, HashSet};

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use crate::memory::{
    ChatLog, ContextMemory, FactKey, FactSource, LayersMut, LogIndex, MemoryConfig, MemoryParts,
    NpcId, NpcMemory, Origin, PersonaPrompt, Reconfigured, RollingWindow, Told,
};

macro_rules! layer_resource {
    ($(#[$doc:meta])* $name:ident, $layer:ty) => {
        $(#[$doc])*
        #[derive(Resource, Default, Debug)]
        pub struct $name(HashMap<NpcId, $layer>);

        impl $name {
            /// The layer of one NPC.
            pub fn get(&self, npc: &NpcId) -> Option<&$layer> {
                self.0.get(npc)
            }

            /// Every NPC's layer, in no particular order.
            pub fn iter(&self) -> impl Iterator<Item = (&NpcId, &$layer)> {
                self.0.iter()
            }

            /// How many NPCs have one.
            pub fn len(&self) -> usize {
                self.0.len()
            }

            /// Whether no NPC has one.
            pub fn is_empty(&self) -> bool {
                self.0.is_empty()
            }
        }
    };
}

layer_resource!(
    /// L2 of every NPC: the full chat logs.
    ChatLogs,
    ChatLog
);
layer_resource!(
    /// L1 of every NPC: the rolling windows.
    RollingWindows,
    RollingWindow
);
layer_resource!(
    /// L3 of every NPC: summaries and their history.
    ContextMemoryManager,
    ContextMemory
);

impl ChatLogs {
    /// Who knows `entry` of `npc`'s log, and from whom: every NPC whose log holds
    /// the same words, with where they sit and how they got there (said, seen, or
    /// heard, with the chain of tellers). `npc` itself comes first. Empty when there
    /// is no such entry. For inspection and tools: it reads every log.
    pub fn who_knows(&self, npc: &NpcId, entry: LogIndex) -> Vec<Knower> {
        let Some(text) = self
            .get(npc)
            .and_then(|log| log.get(entry))
            .map(|m| m.content.clone())
        else {
            return Vec::new();
        };
        let mut knowers: Vec<Knower> = self
            .iter()
            .flat_map(|(id, log)| {
                log.messages()
                    .iter()
                    .filter(|m| m.content == text)
                    .map(|m| Knower {
                        npc: id.clone(),
                        index: m.index,
                        origin: m.origin.clone(),
                    })
            })
            .collect();
        knowers.sort_by(|a, b| {
            (&a.npc != npc)
                .cmp(&(&b.npc != npc))
                .then(a.origin.hops().cmp(&b.origin.hops()))
                .then(a.npc.cmp(&b.npc))
        });
        knowers
    }
}

impl ContextMemoryManager {
    /// Who knows pinned fact `key`, and from whom: every NPC with an active value
    /// for it, best source first (the game's word, then first-hand, then hearsay by
    /// hops), then by id. Values may differ between NPCs; each says what that NPC
    /// holds, and [`FactSource::heard`](crate::memory::FactSource::heard) gives the
    /// chain of tellers. For inspection and tools: it reads every NPC's facts.
    pub fn who_knows_fact(&self, key: &FactKey) -> Vec<FactKnower> {
        let mut knowers: Vec<FactKnower> = self
            .iter()
            .filter_map(|(npc, context)| {
                let fact = context.facts().get(key)?;
                Some(FactKnower {
                    npc: npc.clone(),
                    value: fact.value.clone(),
                    source: fact.source.clone(),
                })
            })
            .collect();
        knowers.sort_by(|a, b| {
            a.source
                .precedence()
                .cmp(&b.source.precedence())
                .then(a.npc.cmp(&b.npc))
        });
        knowers
    }
}

/// One NPC that holds a pinned fact ([`ContextMemoryManager::who_knows_fact`]).
#[derive(Clone, Debug, PartialEq)]
pub struct FactKnower {
    /// Which NPC.
    pub npc: NpcId,
    /// The value it holds.
    pub value: std::sync::Arc<str>,
    /// How it came to know it: the game, first-hand, or heard (with the tellers).
    pub source: FactSource,
}

/// One NPC that knows something ([`ChatLogs::who_knows`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Knower {
    /// Whose log.
    pub npc: NpcId,
    /// Where in it.
    pub index: LogIndex,
    /// How it got there; for hearsay, who told it and where it started.
    pub origin: Origin,
}

/// NPCs whose memory changed since the last autosave took them in, and when each
/// last changed at all.
#[derive(Resource, Default, Debug)]
pub(crate) struct MemoryChanges {
    pub(crate) dirty: HashSet<NpcId>,
    /// Mutable accesses so far, over all NPCs.
    edits: u64,
    /// The count of mutable accesses at each NPC's latest.
    last_edit: HashMap<NpcId, u64>,
}

impl MemoryChanges {
    fn edit(&mut self, npc: &NpcId) {
        self.edits += 1;
        match self.last_edit.get_mut(npc) {
            Some(last) => *last = self.edits,
            None => {
                self.last_edit.insert(npc.clone(), self.edits);
            }
        }
        if !self.dirty.contains(npc) {
            self.dirty.insert(npc.clone());
        }
    }
}

/// Every NPC's memory, taken out to be dropped.
pub(crate) struct ReplacedMemory {
    _logs: HashMap<NpcId, ChatLog>,
    _windows: HashMap<NpcId, RollingWindow>,
    _contexts: HashMap<NpcId, ContextMemory>,
}

/// Mutable access to all three layers, for the pipeline's systems. Every mutable
/// access marks the NPC as changed, so autosave never misses a change.
#[derive(SystemParam)]
pub(crate) struct Layers<'w> {
    logs: ResMut<'w, ChatLogs>,
    windows: ResMut<'w, RollingWindows>,
    contexts: ResMut<'w, ContextMemoryManager>,
    changes: ResMut<'w, MemoryChanges>,
}

impl Layers<'_> {
    pub(crate) fn contains(&self, npc: &NpcId) -> bool {
        self.contexts.0.contains_key(npc)
    }

    /// Whether `told` passes on words that the NPC it started with has since
    /// made private (a player line, or a reply to one): those who heard them
    /// before keep them, but pass them on no further.
    pub(crate) fn private_at_source(&self, told: &Told) -> bool {
        let Some(source) = told.hearsay.chain.last() else {
            return false;
        };
        self.logs.get(&source.id).is_some_and(|log| {
            log.messages()
                .iter()
                .any(|m| m.origin == Origin::SaidPrivately && m.content == told.text)
        })
    }

    /// Whether the NPC's window has used half the room between its size and its
    /// hard cap (at least up to one exchange from the cap), past which
    /// unsummarized messages would leave the prompt. Half, not the last exchange:
    /// under a spent budget the summary may wait a while for its turn.
    /// Read-only, so it marks nothing changed.
    pub(crate) fn window_near_cap(&self, npc: &NpcId) -> bool {
        let (Some(window), Some(log)) = (self.windows.0.get(npc), self.logs.0.get(npc)) else {
            return false;
        };
        let room = window.hard_cap().saturating_sub(window.len(log));
        let margin = window
            .hard_cap()
            .saturating_sub(window.max_context_window())
            / 2;
        room <= margin.max(1)
    }

    /// The NPC's full log, read-only (marks nothing changed).
    pub(crate) fn log(&self, npc: &NpcId) -> Option<&ChatLog> {
        self.logs.0.get(npc)
    }

    /// The NPC's display name, from its persona.
    pub(crate) fn name(&self, npc: &NpcId) -> Option<String> {
        Some(self.contexts.0.get(npc)?.persona().name.clone())
    }

    pub(crate) fn get_mut(&mut self, npc: &NpcId) -> Option<LayersMut<'_>> {
        if !self.contains(npc) {
            return None;
        }
        self.changes.edit(npc);
        Some(LayersMut {
            log: self.logs.0.get_mut(npc)?,
            window: self.windows.0.get_mut(npc)?,
            context: self.contexts.0.get_mut(npc)?,
        })
    }

    /// Which version of the NPC's memory is in place: it grows with every mutable
    /// access, so anything built from the memory at one edition is still what the
    /// memory would build while the edition is the same.
    pub(crate) fn edition(&self, npc: &NpcId) -> u64 {
        self.changes.last_edit.get(npc).copied().unwrap_or(0)
    }

    /// Marks the NPC as changed for autosave, for changes outside its layers (the
    /// lines waiting for it).
    pub(crate) fn mark_changed(&mut self, npc: &NpcId) {
        if self.contains(npc) && !self.changes.dirty.contains(npc) {
            self.changes.dirty.insert(npc.clone());
        }
    }

    /// Creates the NPC's memory, or gives an existing one the persona. `overrides`
    /// holds the persona's own window and threshold, which win over live changes.
    ///
    /// Returns what applying the persona's own sizes led to, which the caller reports
    /// and sends on.
    pub(crate) fn ensure(
        &mut self,
        npc: &NpcId,
        persona: PersonaPrompt,
        config: &MemoryConfig,
        overrides: bool,
    ) -> Option<Reconfigured> {
        let unchanged = self
            .contexts
            .0
            .get(npc)
            .is_some_and(|c| *c.persona() == persona);
        if unchanged && !overrides {
            return None;
        }
        if let Some(mut layers) = self.get_mut(npc) {
            layers.set_persona(persona);
            return overrides.then(|| layers.reconfigure(config));
        }
        self.insert(npc.clone(), NpcMemory::new(persona, config));
        None
    }

    /// Puts a whole memory in place, replacing any the NPC had.
    pub(crate) fn insert(&mut self, npc: NpcId, memory: NpcMemory) {
        let NpcMemory {
            log,
            window,
            context,
        } = memory;
        self.logs.0.insert(npc.clone(), log);
        self.windows.0.insert(npc.clone(), window);
        self.contexts.0.insert(npc.clone(), context);
        self.changes.edit(&npc);
    }

    /// Retracts, in every NPC's memory, the lore it was told that no longer holds
    /// ([`LayersMut::retract_lore`]), and has NPCs whose last prompt carried such
    /// lore build the next one afresh. Only NPCs that were told or sent lore are
    /// touched, so autosave rewrites no one else.
    pub(crate) fn retract_lore(&mut self, current: impl Fn(&str) -> Option<std::sync::Arc<str>>) {
        let contexts = &self.contexts.0;
        let told: Vec<NpcId> = self
            .logs
            .0
            .iter()
            .filter(|(npc, log)| {
                log.messages().iter().any(is_told_lore) || sent_lore(contexts.get(*npc))
            })
            .map(|(npc, _)| npc.clone())
            .collect();
        for npc in told {
            if let Some(mut layers) = self.get_mut(&npc) {
                layers.retract_lore(&current);
            }
        }
    }

    /// Every other NPC stops passing on what it heard first-hand from `npc` of the
    /// line `npc` just made private at `index`, of its replies to it
    /// ([`LayersMut::withhold_told`]) and of the facts resting on private lines
    /// alone ([`LayersMut::withhold_told_facts`]): the mark then holds even once
    /// `npc` has forgotten the line. Only NPCs that heard something from `npc`
    /// are touched.
    pub(crate) fn withhold_told(&mut self, npc: &NpcId, index: LogIndex) {
        let (texts, facts) = match self.get_mut(npc) {
            Some(source) => {
                let texts: Vec<std::sync::Arc<str>> = std::iter::once(index)
                    .chain(source.replies_to(index))
                    .filter_map(|i| source.log().get(i).map(|m| m.content.clone()))
                    .collect();
                (texts, source.private_facts())
            }
            None => return,
        };
        let contexts = &self.contexts.0;
        let heard: Vec<NpcId> = self
            .logs
            .0
            .iter()
            .filter(|(other, log)| {
                *other != npc
                    && (log.messages().iter().any(|m| heard_from(m, npc))
                        || contexts
                            .get(*other)
                            .is_some_and(|c| heard_facts_from(c, npc)))
            })
            .map(|(other, _)| other.clone())
            .collect();
        for other in heard {
            if let Some(mut layers) = self.get_mut(&other) {
                layers.withhold_told(npc, &texts);
                layers.withhold_told_facts(npc, &facts);
            }
        }
    }

    /// [`retract_lore`](Self::retract_lore) for `npcs` only: those a load's rebuild
    /// found holding told lore, every other NPC's memory being new.
    pub(crate) fn retract_lore_in(
        &mut self,
        npcs: &[NpcId],
        current: impl Fn(&str) -> Option<std::sync::Arc<str>>,
    ) {
        for npc in npcs {
            if let Some(mut layers) = self.get_mut(npc) {
                layers.retract_lore(&current);
            }
        }
    }

    /// Takes every NPC's memory out, as loading another slot does; the caller
    /// drops it (off the main thread: a long log takes a while to free).
    pub(crate) fn take_all(&mut self) -> ReplacedMemory {
        self.changes.dirty.clear();
        // Editions only grow: a memory put in place later starts above any kept.
        self.changes.last_edit.clear();
        ReplacedMemory {
            _logs: std::mem::take(&mut self.logs.0),
            _windows: std::mem::take(&mut self.windows.0),
            _contexts: std::mem::take(&mut self.contexts.0),
        }
    }

    /// Ids of the NPCs changed since `take_changed` was last called.
    pub(crate) fn take_changed(&mut self) -> HashSet<NpcId> {
        std::mem::take(&mut self.changes.dirty)
    }

    /// The NPC's memory as data, for a save.
    pub(crate) fn parts(&self, npc: &NpcId) -> Option<MemoryParts> {
        Some(MemoryParts::of(
            self.logs.0.get(npc)?,
            self.windows.0.get(npc)?,
            self.contexts.0.get(npc)?,
        ))
    }
}

/// Whether an entry is lore another NPC told, not yet retracted.
/// Whether `log` holds lore its NPC was told that is not retracted yet.
pub(crate) fn holds_told_lore(log: &ChatLog) -> bool {
    log.messages().iter().any(is_told_lore)
}

/// Whether the NPC's last prompt carried lore found for its line.
fn sent_lore(context: Option<&ContextMemory>) -> bool {
    context
        .and_then(ContextMemory::last_prompt)
        .is_some_and(|prompt| !prompt.lore.is_empty())
}

fn is_told_lore(message: &crate::memory::ChatMessage) -> bool {
    matches!(&message.origin, Origin::Heard(heard)
        if matches!(heard.source, crate::memory::Source::Lore { retracted: false, .. }))
}

/// Whether an entry is something `source` passed on first-hand.
fn heard_from(message: &crate::memory::ChatMessage, source: &NpcId) -> bool {
    matches!(&message.origin, Origin::Heard(heard)
        if heard.first_told_by(source))
}

/// Whether an NPC holds a fact `source` told first-hand.
fn heard_facts_from(context: &ContextMemory, source: &NpcId) -> bool {
    context.facts().active().iter().any(|fact| {
        fact.source
            .heard()
            .is_some_and(|heard| heard.first_told_by(source))
    })
}
