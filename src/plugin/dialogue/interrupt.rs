//! Interrupting a reply: the request stops, memory keeps what the player saw.

use bevy::prelude::*;

use super::core::TurnCore;
use crate::memory::{LogIndex, NpcId};
use crate::plugin::clock::NpcMemoryClock;
use crate::plugin::messages::{InterruptNpc, NpcReplyFailed, ReplyError};
use crate::plugin::rebuild::NpcMemoryLoads;

/// The game's interrupts, before the frame's lines: "stop, and hear this
/// instead" in one frame must not drop or cut off the new line.
pub(crate) fn interrupt_npcs(
    mut core: TurnCore,
    mut loads: ResMut<NpcMemoryLoads>,
    clock: Res<NpcMemoryClock>,
    mut interrupts: MessageReader<InterruptNpc>,
) {
    for request in interrupts.read() {
        interrupt(
            &mut core,
            &mut loads,
            &clock,
            &request.npc,
            request.clear_queue,
        );
    }
}

/// Stops the NPC's reply in flight, and its waiting lines if `clear_queue`
/// (lines held for a load in flight included).
///
/// The player's line stays in memory. The part of the reply already passed on
/// as deltas is recorded as the NPC's reply, through the same core call a whole
/// reply takes: the player saw it, and memory should match the screen. Pieces
/// still in the channel belong to a request that no longer holds the NPC's
/// slot, so they are dropped when collected, as is its result.
fn interrupt(
    core: &mut TurnCore,
    loads: &mut NpcMemoryLoads,
    clock: &NpcMemoryClock,
    npc: &NpcId,
    clear_queue: bool,
) {
    if let Some(stopped) = core.requests.interrupt(npc) {
        let kept = if stopped.streamed.trim().is_empty() {
            None
        } else {
            record_cut_off(core, clock, npc, stopped.streamed)
        };
        core.out.failed(NpcReplyFailed {
            npc: npc.clone(),
            turn: Some(stopped.turn),
            error: ReplyError::Interrupted { kept },
            unrecorded_line: None,
        });
    }
    if clear_queue {
        let dropped = core.requests.drain(npc);
        if !dropped.is_empty() {
            core.layers.mark_changed(npc);
        }
        for line in dropped {
            let error = ReplyError::Interrupted { kept: None };
            core.reject(npc, error, Some(line.turn), line.text);
        }
        // Lines held for a load in flight are waiting lines too: handed back
        // the same way, after the older ones, never answered later.
        for line in loads.take_held(npc) {
            let error = ReplyError::Interrupted { kept: None };
            core.reject(npc, error, None, line.text);
        }
    }
    core.next_line(npc);
}

/// Records a cut-off reply; returns its log index.
fn record_cut_off(
    core: &mut TurnCore,
    clock: &NpcMemoryClock,
    npc: &NpcId,
    text: String,
) -> Option<LogIndex> {
    let replied = core.layers.get_mut(npc)?.reply(text, clock.now());
    core.report_overflow(npc, replied.overflow);
    core.send_summary(npc, replied.summary);
    Some(replied.index)
}
