//! [`Turns`]: a player line enters memory, and its reply request (and any summary
//! due) is handed to the scheduler. Lines are answered here only: every stage that
//! frees an NPC marks it ready, and [`start_lines`] answers the ready NPCs'
//! next lines right after.

use std::sync::Arc;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::core::TurnCore;
use crate::memory::{Line, NpcId};
use crate::plugin::clock::NpcMemoryClock;
use crate::plugin::lore::NpcLore;
use crate::plugin::messages::NpcReplyStarted;
use crate::plugin::requests::{NpcRequests, QueuedLine};
use crate::plugin::settings::NpcMemorySettings;

/// What answering a line and taking in knowledge borrow.
#[derive(SystemParam)]
pub(crate) struct Turns<'w, 's> {
    pub(super) core: TurnCore<'w, 's>,
    pub(super) lore: Res<'w, NpcLore>,
    pub(super) clock: Res<'w, NpcMemoryClock>,
    pub(super) settings: Res<'w, NpcMemorySettings>,
}

/// NPCs marked ready answer their next line, if they are free and one waits.
pub(crate) fn start_lines(mut turns: Turns) {
    for npc in turns.core.requests.take_ready() {
        turns.next_line(&npc);
    }
}

/// Whether any NPC was marked ready since [`start_lines`] last ran.
pub(crate) fn lines_ready(requests: Res<NpcRequests>) -> bool {
    requests.has_ready()
}

impl Turns<'_, '_> {
    fn next_line(&mut self, npc: &NpcId) {
        if !self.core.layers.contains(npc) {
            return;
        }
        if let Some(line) = self.core.requests.next_line(npc) {
            // Waiting lines are saved with the NPC's memory.
            self.core.layers.mark_changed(npc);
            self.answer(npc, line);
        }
    }

    /// The line enters memory, and its reply request (and any summary due) starts.
    fn answer(&mut self, npc: &NpcId, line: QueuedLine) {
        let now = self.clock.now();
        let Some(mut layers) = self.core.layers.get_mut(npc) else {
            return;
        };
        let text: Arc<str> = line.text.into();
        // Looked up before the line enters the log, so the line is the query and
        // the messages before it are its context.
        let knowledge = self
            .lore
            .knowledge(npc, &text, layers.log(), &self.settings.lore);
        let mut said_line = Line::new(text.clone()).by(&line.speaker).knowing(knowledge);
        if line.private {
            said_line = said_line.privately();
        }
        let said = layers.say(said_line, now);
        self.core.out.started(NpcReplyStarted {
            npc: npc.clone(),
            turn: line.turn,
            line: text,
        });
        self.core.report_overflow(npc, said.overflow);
        self.core
            .send_reply(npc, line.turn, said.messages, said.reply);
        self.core.send_summary(npc, said.summary);
    }
}
