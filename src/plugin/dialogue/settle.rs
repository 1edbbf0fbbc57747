//! What a load or a restore leaves for turns. The save systems put memory in
//! place and hand the rest over; here the replaced memory's requests are
//! cancelled, live personas are applied again (they win over saved ones), and
//! lines that waited for the load are queued to be answered. Imports are the
//! tiers' part (`settle_imports`).

use std::sync::Arc;

use bevy::prelude::*;

use bevy::ecs::system::SystemParam;

use super::core::TurnCore;
use super::outbox::Outbox;
use crate::memory::NpcId;
use crate::plugin::lore::NpcLore;
use crate::plugin::messages::{NpcReplyFailed, ReplyError};
use crate::plugin::persona::PersonaBindings;
use crate::plugin::rebuild::{BuiltRecall, Handover, NpcMemoryLoads};
use crate::plugin::requests::Readiness;
use crate::save::WaitingLine;

/// What settling a load borrows.
#[derive(SystemParam)]
pub(crate) struct Settle<'w, 's> {
    core: TurnCore<'w, 's>,
    loads: ResMut<'w, NpcMemoryLoads>,
    lore: ResMut<'w, NpcLore>,
    bindings: ResMut<'w, PersonaBindings>,
}

/// Runs right after the systems that swap loaded memory in, before the frame's
/// personas and lines: finished recall indexes reach their NPCs, and what the
/// loads left for turns is done.
pub(crate) fn settle_loads(mut settle: Settle) {
    settle.install_recall();
    settle.settle();
}

/// Runs right after the save IO finishes: a failed load's held lines are dealt
/// with before the snapshot is brought up to date.
pub(crate) fn settle_io(mut settle: Settle) {
    settle.settle();
}

/// A load still in flight when the app exits never lands: the lines held for it
/// are handed back in the last frame.
pub(crate) fn hand_back_on_exit(
    mut exits: MessageReader<AppExit>,
    mut out: Outbox,
    mut loads: ResMut<NpcMemoryLoads>,
) {
    if exits.read().next().is_none() {
        return;
    }
    // The app is closing with a load in flight: its memory will never be in
    // place, so the lines held for it are handed back (`ReplyError::Cancelled`,
    // the text in `unrecorded_line`) rather than dropped with the app.
    for (npc, line) in loads.take_all_held() {
        tracing::warn!("{npc}: a line held for a load was not answered: the app closed");
        out.failed(NpcReplyFailed {
            npc,
            turn: None,
            error: ReplyError::Cancelled,
            unrecorded_line: Some(line.text),
        });
    }
}

impl Settle<'_, '_> {
    /// Does what the loads left for turns, in the order it was left.
    fn settle(&mut self) {
        for handover in self.loads.take_handovers() {
            match handover {
                Handover::Replaced { told_lore, waiting } => {
                    // Results of the replaced memory's requests belong to it.
                    self.core.cancel_all();
                    // Just loaded, so nothing needs saving yet; a live persona that
                    // differs from the saved one marks its NPC changed again.
                    self.core.layers.take_changed();
                    self.retract_loaded_lore(&told_lore);
                    self.bindings.reapply_all();
                    for (npc, lines) in waiting {
                        self.requeue(&npc, lines);
                    }
                }
                Handover::Released(lines) => self.release_held(lines),
            }
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
            let Some(mut layers) = self.core.layers.get_mut(&npc) else {
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
            match self.core.readiness(&self.bindings, &npc) {
                Readiness::Ready | Readiness::Loading => {
                    self.core.requests.restore(&npc, line);
                    self.core.layers.mark_changed(&npc);
                    if !touched.contains(&npc) {
                        touched.push(npc);
                    }
                }
                Readiness::Failed(reason) => {
                    let error = ReplyError::PersonaUnavailable {
                        npc: npc.clone(),
                        reason,
                    };
                    self.core.reject(&npc, error, None, line.text);
                }
                Readiness::Unknown => {
                    self.core
                        .reject(&npc, ReplyError::UnknownNpc(npc.clone()), None, line.text)
                }
            }
        }
        for npc in touched {
            self.core.next_line(&npc);
        }
    }

    /// A load's memory was just swapped in, with lore restored from its save: the
    /// lore told to `told` (the NPCs the rebuild found holding any) is checked
    /// against the lore now in force, instead of the lore system walking every
    /// message of every log on the next frame.
    fn retract_loaded_lore(&mut self, told: &[NpcId]) {
        self.lore.take_texts_changed();
        let lore = &self.lore;
        self.core
            .layers
            .retract_lore_in(told, |id| lore.get(id).map(|entry| entry.text.clone()));
    }

    /// Puts lines restored from a save back in the NPC's queue and starts the first
    /// if the NPC is free. A restored line is held to the rules of a new one: a save
    /// is data from outside, and a line unfit now is handed back instead.
    fn requeue(&mut self, npc: &NpcId, lines: Vec<WaitingLine>) {
        let rules = self.core.requests.rules();
        for line in lines {
            match crate::plugin::requests::unfit_line(&line.text, rules) {
                Some(error) => self.core.reject(npc, error, None, line.text),
                None => {
                    self.core.requests.restore(npc, line);
                }
            }
        }
        self.core.next_line(npc);
    }
}
