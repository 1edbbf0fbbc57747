//! Knowledge from outside the conversation enters memory: events NPCs saw, what
//! one NPC tells another, and player lines made private afterwards.

use bevy::prelude::*;

use super::turns::Turns;
use crate::memory::{FactChange, LogIndex, NpcId, NpcMemory, PersonaPrompt, Teller};
use crate::plugin::knowledge::{About, KnowledgeShared, MarkPrivate, NpcWitnessed, ShareKnowledge};

/// Events, tellings and privacy marks of this frame, before its player lines: a
/// line said right after an event is answered knowing it.
pub(crate) fn take_knowledge(
    mut dialogue: Turns,
    mut witnessed: MessageReader<NpcWitnessed>,
    mut shares: MessageReader<ShareKnowledge>,
    mut marks: MessageReader<MarkPrivate>,
    mut shared: MessageWriter<KnowledgeShared>,
) {
    for mark in marks.read() {
        if !dialogue.mark_private(&mark.npc, mark.index) {
            tracing::warn!(
                "entry {} of {}'s log is not a player line; nothing was made private",
                mark.index,
                mark.npc
            );
        }
    }
    for event in witnessed.read() {
        let mut seen = Vec::with_capacity(event.witnesses.len());
        for npc in &event.witnesses {
            // Listed twice is still seen once.
            if !seen.contains(&npc) {
                seen.push(npc);
                dialogue.witness(npc, &event.text, event.importance, event.at);
            }
        }
    }
    for share in shares.read() {
        let (learned, facts) = dialogue.share(&share.from, &share.to, &share.about);
        shared.write(KnowledgeShared {
            from: share.from.clone(),
            to: share.to.clone(),
            learned,
            facts,
        });
    }
}

impl Turns<'_, '_> {
    /// `npc` saw `text` happen at game time `at` (the memory clock if `None`).
    /// An NPC not spawned yet gets a memory of its own for it, which its persona
    /// joins when it spawns.
    fn witness(&mut self, npc: &NpcId, text: &str, importance: f32, at: Option<f64>) {
        let now = self.now_at(at);
        self.ensure_memory(npc);
        let Some(mut layers) = self.core.layers.get_mut(npc) else {
            return;
        };
        let noted = layers.witness(text, importance, now);
        self.core.report_overflow(npc, noted.overflow);
        self.core.send_summary(npc, noted.summary);
    }

    /// `from` tells `to` what it knows `about`. Returns the entries `to` learned
    /// (none when `from` does not know it, it is private, its first teller has
    /// made it private since, or `to` knew it already)
    /// and, for a fact, what it did to `to`'s pinned facts.
    fn share(
        &mut self,
        from: &NpcId,
        to: &NpcId,
        about: &About,
    ) -> (Vec<LogIndex>, Vec<FactChange>) {
        if from == to {
            return (Vec::new(), Vec::new());
        }
        let now = self.clock.now();
        let Some(mut teller_layers) = self.core.layers.get_mut(from) else {
            return (Vec::new(), Vec::new());
        };
        let teller = Teller {
            id: from.clone(),
            name: teller_layers.context().persona().name.clone(),
        };
        let mut told: Vec<_> = match about {
            About::Entry(index) => teller_layers.tell(*index, &teller).into_iter().collect(),
            About::Query { text, max } => {
                let mut told = teller_layers.tell_about(text, *max, &teller);
                // Lore the teller knows and the listener may not: passed on as
                // hearsay, the only way it reaches an NPC outside its scope.
                let limits = crate::memory::LoreLimits {
                    max_entries: (*max).min(crate::memory::limits::MAX_TOLD_PER_QUERY),
                    max_tokens: usize::MAX,
                };
                for hit in self.lore.query(from, text, &[], &limits) {
                    if !self.lore.can_see(to, &hit.id) {
                        told.extend(teller_layers.tell_lore(&hit, &teller, now.seconds));
                    }
                }
                told
            }
            About::Fact(key) => {
                let Some(fact) = teller_layers.tell_fact(key, &teller) else {
                    return (Vec::new(), Vec::new());
                };
                self.ensure_memory(to);
                let Some(mut layers) = self.core.layers.get_mut(to) else {
                    return (Vec::new(), Vec::new());
                };
                return (Vec::new(), vec![layers.hear_fact(fact, now)]);
            }
        };
        told.retain(|told| !self.core.layers.private_at_source(told));
        if told.is_empty() {
            return (Vec::new(), Vec::new());
        }
        self.ensure_memory(to);
        let mut learned = Vec::new();
        for told in told {
            let Some(mut layers) = self.core.layers.get_mut(to) else {
                break;
            };
            if let Some(noted) = layers.hear(told, now.clone()) {
                learned.push(noted.index);
                self.core.report_overflow(to, noted.overflow);
                self.core.send_summary(to, noted.summary);
            }
        }
        (learned, Vec::new())
    }

    /// Makes a player line already said private; returns whether it now is.
    fn mark_private(&mut self, npc: &NpcId, index: LogIndex) -> bool {
        let private = self
            .core
            .layers
            .get_mut(npc)
            .is_some_and(|mut layers| layers.mark_private(index));
        if private {
            self.core.layers.mark_changed(npc);
            self.core.layers.withhold_told(npc, index);
        }
        private
    }

    fn now_at(&self, at: Option<f64>) -> crate::memory::Now {
        let mut now = self.clock.now();
        if let Some(seconds) = at {
            now.seconds = seconds;
        }
        now
    }

    /// An NPC that learns something before it is spawned gets a memory under its
    /// id, with its id as a stand-in persona until its own arrives.
    fn ensure_memory(&mut self, npc: &NpcId) {
        if self.core.layers.contains(npc) {
            return;
        }
        let persona = PersonaPrompt {
            name: npc.to_string(),
            text: "".into(),
            style: Default::default(),
        };
        let memory = NpcMemory::new(persona, &self.settings.memory);
        self.core.layers.insert(npc.clone(), memory);
    }
}
