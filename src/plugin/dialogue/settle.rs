//! What a load, a restore or an import leaves for turns. The save systems put
//! memory in place and hand the rest over; here the replaced memory's requests
//! are cancelled, live personas and tiers win over saved ones, and lines that
//! waited for the load are answered.

use std::sync::Arc;

use bevy::prelude::*;

use super::Dialogue;
use crate::memory::NpcId;
use crate::plugin::messages::ReplyError;
use crate::plugin::persona::Persona;
use crate::plugin::rebuild::{BuiltRecall, Handover};
use crate::plugin::requests::Readiness;
use crate::save::WaitingLine;

/// Runs right after the systems that swap loaded memory in, before the frame's
/// personas and lines: finished recall indexes reach their NPCs, and what the
/// loads left for turns is done.
pub(crate) fn settle_loads(mut dialogue: Dialogue, personas: Res<Assets<Persona>>) {
    dialogue.install_recall();
    dialogue.settle(&personas);
}

/// Runs right after the save IO finishes: a failed load's held lines and an
/// imported memory are dealt with before the snapshot is brought up to date.
pub(crate) fn settle_io(mut dialogue: Dialogue, personas: Res<Assets<Persona>>) {
    dialogue.settle(&personas);
}

/// A load still in flight when the app exits never lands: the lines held for it
/// are handed back in the last frame.
pub(crate) fn hand_back_on_exit(mut exits: MessageReader<AppExit>, mut dialogue: Dialogue) {
    if exits.read().next().is_some() {
        dialogue.hand_back_held();
    }
}

impl Dialogue<'_, '_> {
    /// Does what the loads left for turns, in the order it was left.
    fn settle(&mut self, personas: &Assets<Persona>) {
        for handover in self.loads.take_handovers() {
            match handover {
                Handover::Replaced { told_lore, waiting } => {
                    // Results of the replaced memory's requests belong to it.
                    self.cancel_all();
                    // Just loaded, so nothing needs saving yet; a live persona that
                    // differs from the saved one marks its NPC changed again below.
                    self.layers.take_changed();
                    self.retract_loaded_lore(&told_lore);
                    self.reapply_personas(personas);
                    for (npc, lines) in waiting {
                        self.requeue(&npc, lines);
                    }
                }
                Handover::Imported(npc) => self.retier_inserted(&npc),
                Handover::Released(lines) => self.release_held(lines),
            }
        }
    }

    /// A memory was put in place from outside (imported): if its persona sets
    /// memory per tier, it gets the settings of the NPC's tier now, not those it
    /// was saved with.
    fn retier_inserted(&mut self, npc: &NpcId) {
        let tier = self.scheduler.tier(npc);
        if let Some(config) = self.tier_bindings.current(npc, tier) {
            self.reconfigure(npc, &config);
        }
    }

    /// Hands finished recall indexes to their NPCs. One whose log was cleared or
    /// replaced meanwhile is dropped.
    fn install_recall(&mut self) {
        for BuiltRecall {
            npc,
            covers: (len, last),
            config,
            index,
        } in self.loads.finished_recall()
        {
            let Some(mut layers) = self.layers.get_mut(&npc) else {
                continue;
            };
            let same_log = match (&last, len.checked_sub(1)) {
                (Some(text), Some(at)) => layers
                    .log
                    .messages()
                    .get(at)
                    .is_some_and(|m| Arc::ptr_eq(&m.content, text)),
                _ => true,
            };
            if same_log {
                layers.switch_recall_on(index, config);
            }
        }
    }

    /// A load in flight ended: the lines held for it go to the memory now in use
    /// (the loaded one, or the old one when the load failed), after any lines the
    /// save brought back. They were accepted when said, so only a line for an NPC
    /// that cannot answer at all is handed back.
    fn release_held(&mut self, lines: Vec<(NpcId, WaitingLine)>) {
        let mut touched = Vec::new();
        for (npc, line) in lines {
            match self.readiness(&npc) {
                Readiness::Ready | Readiness::Loading => {
                    self.requests.restore(&npc, line);
                    self.layers.mark_changed(&npc);
                    if !touched.contains(&npc) {
                        touched.push(npc);
                    }
                }
                Readiness::Failed(reason) => {
                    let error = ReplyError::PersonaUnavailable {
                        npc: npc.clone(),
                        reason,
                    };
                    self.reject(&npc, error, None, line.text);
                }
                Readiness::Unknown => {
                    self.reject(&npc, ReplyError::UnknownNpc(npc.clone()), None, line.text)
                }
            }
        }
        for npc in touched {
            self.next_line(&npc);
        }
    }

    /// The app is closing with a load in flight: its memory will never be in place,
    /// so the lines held for it are handed back ([`ReplyError::Cancelled`], the
    /// text in `unrecorded_line`) rather than dropped with the app.
    fn hand_back_held(&mut self) {
        for (npc, line) in self.loads.take_all_held() {
            tracing::warn!("{npc}: a line held for a load was not answered: the app closed");
            self.reject(&npc, ReplyError::Cancelled, None, line.text);
        }
    }

    /// A load's memory was just swapped in, with lore restored from its save: the
    /// lore told to `told` (the NPCs the rebuild found holding any) is checked
    /// against the lore now in force, instead of the lore system walking every
    /// message of every log on the next frame.
    fn retract_loaded_lore(&mut self, told: &[NpcId]) {
        self.lore.take_texts_changed();
        let lore = &self.lore;
        self.layers
            .retract_lore_in(told, |id| lore.get(id).map(|entry| entry.text.clone()));
    }

    /// Puts lines restored from a save back in the NPC's queue and starts the first
    /// if the NPC is free. A restored line is held to the rules of a new one: a save
    /// is data from outside, and a line unfit now is handed back instead.
    fn requeue(&mut self, npc: &NpcId, lines: Vec<WaitingLine>) {
        let rules = self.rules();
        for line in lines {
            match crate::plugin::requests::unfit_line(&line.text, rules) {
                Some(error) => self.reject(npc, error, None, line.text),
                None => {
                    self.requests.restore(npc, line);
                }
            }
        }
        self.next_line(npc);
    }

    /// Gives every NPC whose persona asset has loaded that persona again, since the
    /// live asset wins over the one stored in a save. A spawned NPC the save does
    /// not hold (its id changed between builds, or the slot is from another layout)
    /// starts with a fresh memory, so lines sent to it are answered, not kept
    /// waiting for a memory that will never come.
    fn reapply_personas(&mut self, personas: &Assets<Persona>) {
        for (id, npcs) in self.bindings.all() {
            let Some(persona) = personas.get(id) else {
                continue;
            };
            for npc in npcs {
                self.apply_persona(&npc, persona);
            }
        }
    }
}
