//! Interrupting a reply: the request stops, memory keeps what the player saw.

use super::Dialogue;
use crate::memory::{LogIndex, NpcId};
use crate::plugin::messages::{NpcReplyFailed, ReplyError};

impl Dialogue<'_, '_> {
    /// Stops the NPC's reply in flight, and its waiting lines if `clear_queue`
    /// (lines held for a load in flight included).
    ///
    /// The player's line stays in memory. The part of the reply already passed on
    /// as deltas is recorded as the NPC's reply, through the same core call a whole
    /// reply takes: the player saw it, and memory should match the screen. Pieces
    /// still in the channel belong to a request that no longer holds the NPC's
    /// slot, so they are dropped when collected, as is its result.
    pub(crate) fn interrupt(&mut self, npc: &NpcId, clear_queue: bool) {
        if let Some(stopped) = self.requests.interrupt(npc) {
            let kept = if stopped.streamed.trim().is_empty() {
                None
            } else {
                self.record_cut_off(npc, stopped.streamed)
            };
            self.out.failed(NpcReplyFailed {
                npc: npc.clone(),
                turn: Some(stopped.turn),
                error: ReplyError::Interrupted { kept },
                unrecorded_line: None,
            });
        }
        if clear_queue {
            let dropped = self.requests.drain(npc);
            if !dropped.is_empty() {
                self.layers.mark_changed(npc);
            }
            for line in dropped {
                let error = ReplyError::Interrupted { kept: None };
                self.reject(npc, error, Some(line.turn), line.text);
            }
            // Lines held for a load in flight are waiting lines too: handed back
            // the same way, after the older ones, never answered later.
            for line in self.loads.take_held(npc) {
                let error = ReplyError::Interrupted { kept: None };
                self.reject(npc, error, None, line.text);
            }
        }
        self.next_line(npc);
    }

    /// Records a cut-off reply; returns its log index.
    fn record_cut_off(&mut self, npc: &NpcId, text: String) -> Option<LogIndex> {
        let now = self.clock.now();
        let replied = self.layers.get_mut(npc)?.reply(text, now);
        self.report_overflow(npc, replied.overflow);
        self.send_summary(npc, replied.summary);
        Some(replied.index)
    }
}
