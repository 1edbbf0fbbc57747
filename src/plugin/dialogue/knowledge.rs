//! Knowledge from outside the conversation enters memory: events NPCs saw, what
//! one NPC tells another, and player lines made private afterwards.

use super::Dialogue;
use crate::memory::{LogIndex, NpcId, NpcMemory, PersonaPrompt, Teller};
use crate::plugin::knowledge::About;

impl Dialogue<'_, '_> {
    /// `npc` saw `text` happen at game time `at` (the memory clock if `None`).
    /// An NPC not spawned yet gets a memory of its own for it, which its persona
    /// joins when it spawns.
    pub(crate) fn witness(&mut self, npc: &NpcId, text: &str, importance: f32, at: Option<f64>) {
        let now = self.now_at(at);
        self.ensure_memory(npc);
        let Some(mut layers) = self.layers.get_mut(npc) else {
            return;
        };
        let noted = layers.witness(text, importance, now);
        self.report_overflow(npc, noted.overflow);
        self.send_summary(npc, noted.summary);
    }

    /// `from` tells `to` what it knows `about`. Returns the entries `to` learned:
    /// none when `from` does not know it, it is private, or `to` knew it already.
    pub(crate) fn share(&mut self, from: &NpcId, to: &NpcId, about: &About) -> Vec<LogIndex> {
        if from == to {
            return Vec::new();
        }
        let Some(mut teller_layers) = self.layers.get_mut(from) else {
            return Vec::new();
        };
        let teller = Teller {
            id: from.clone(),
            name: teller_layers.context().persona().name.clone(),
        };
        let told = match about {
            About::Entry(index) => teller_layers.tell(*index, &teller).into_iter().collect(),
            About::Query { text, max } => teller_layers.tell_about(text, *max, &teller),
        };
        if told.is_empty() {
            return Vec::new();
        }
        let now = self.clock.now();
        self.ensure_memory(to);
        let mut learned = Vec::new();
        for told in told {
            let Some(mut layers) = self.layers.get_mut(to) else {
                break;
            };
            if let Some(noted) = layers.hear(told, now.clone()) {
                learned.push(noted.index);
                self.report_overflow(to, noted.overflow);
                self.send_summary(to, noted.summary);
            }
        }
        learned
    }

    /// Makes a player line already said private; returns whether it now is.
    pub(crate) fn mark_private(&mut self, npc: &NpcId, index: LogIndex) -> bool {
        let private = self
            .layers
            .get_mut(npc)
            .is_some_and(|mut layers| layers.mark_private(index));
        if private {
            self.layers.mark_changed(npc);
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
        if self.layers.contains(npc) {
            return;
        }
        let persona = PersonaPrompt {
            name: npc.to_string(),
            text: "".into(),
            style: Default::default(),
        };
        let memory = NpcMemory::new(persona, &self.settings.memory);
        self.layers.insert(npc.clone(), memory);
    }
}
