//! Lore in prompts: every lore text carries a marker (`⟦l7⟧`, a new one for each
//! text the game sets), so which text of which entry a prompt quotes can be read
//! off it. The stage never repeats a marker, so none reaches memory through it.
//! Every entry is about the reactor, and some player lines and queries ask about
//! it, so entries are found often.

use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::lore::NpcLore;

use super::backend::{bracketed, numbered};
use super::play::Play;

/// The lore markers (`l7`) in `text`.
fn markers(text: &str) -> Vec<&str> {
    bracketed(text, |mark| numbered(mark, ['l']))
}

impl Play {
    /// A lore text, marked as the game's newest; every entry is about the
    /// reactor, which some player lines ask about.
    pub(super) fn lore_text(&mut self, text: &str) -> String {
        format!("⟦{}⟧ The reactor: {text}", self.tag('l'))
    }

    /// A prompt quotes an entry's text only while the entry says it, and only to
    /// an NPC that may see the entry or was told it.
    pub(super) fn check_lore(&self) {
        let lore = self.h.app.world().resource::<NpcLore>();
        for request in &self.requests {
            let npc = self
                .ids
                .iter()
                .position(|id| *id == request.npc)
                .expect("ours");
            for message in &request.messages {
                for marker in markers(&message.content) {
                    let needle = format!("⟦{marker}⟧");
                    let entry = lore.entries().find(|e| e.text.contains(&needle));
                    let Some(entry) = entry else {
                        panic!(
                            "NPC {npc}'s {:?} prompt quotes lore no entry says now: {needle}",
                            request.purpose()
                        );
                    };
                    let sees = request.purpose() == Purpose::Reply
                        && lore.can_see(&request.npc, &entry.id);
                    assert!(
                        sees || self.holds(npc, marker),
                        "NPC {npc}'s {:?} prompt quotes lore {} it may not see and was never told",
                        request.purpose(),
                        entry.id
                    );
                }
            }
        }
    }
}
