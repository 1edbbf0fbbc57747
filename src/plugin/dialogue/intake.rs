//! The game's requests, one system per kind, run in this order each frame:
//! backend switches, pinned facts, reconfigurations, clears, interrupts, player
//! lines (answered by [`start_lines`](super::turns::start_lines) right after),
//! summaries asked for.

use bevy::ecs::message::MessageCursor;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::core::TurnCore;
use super::reconfigure::Reconfigure;
use crate::memory::NpcId;
use crate::plugin::bridge::LlmBridge;
use crate::plugin::clock::NpcMemoryClock;
use crate::plugin::layers::Layers;
use crate::plugin::messages::{
    ClearNpcMemory, ReconfigureNpcMemory, RemovePinnedFact, ReplyError, SetPinnedFact,
    SummarizeNow, SwitchBackend, TalkToNpc,
};
use crate::plugin::persona::PersonaBindings;
use crate::plugin::rebuild::NpcMemoryLoads;
use crate::plugin::requests::{LineRules, NpcRequests, Offer};
use crate::plugin::settings::NpcMemorySettings;
use crate::save::WaitingLine;

/// Later requests go to the backends the game switched to. First, so that the
/// lines of this frame go to the backend the game chose.
pub(crate) fn switch_backends(
    mut bridge: ResMut<LlmBridge>,
    mut switch: MessageReader<SwitchBackend>,
) {
    for switch in switch.read() {
        bridge.switch(switch);
    }
}

/// Pinned facts the game set or removed. Before lines: a quest update in the
/// same frame as a line should shape its reply.
pub(crate) fn apply_facts(
    mut layers: Layers,
    clock: Res<NpcMemoryClock>,
    mut facts: PinnedFactMessages,
) {
    facts.apply(&mut layers, &clock);
}

pub(crate) fn reconfigure_npcs(
    mut changes: Reconfigure,
    mut reconfigure: MessageReader<ReconfigureNpcMemory>,
) {
    for change in reconfigure.read() {
        changes.reconfigure(&change.npc, &change.config);
    }
}

pub(crate) fn clear_npcs(mut changes: Reconfigure, mut clear: MessageReader<ClearNpcMemory>) {
    for request in clear.read() {
        changes.clear(&request.npc);
    }
}

/// Player lines: each is taken to be answered now, queued, or handed back.
pub(crate) fn take_lines(
    mut core: TurnCore,
    mut loads: ResMut<NpcMemoryLoads>,
    bindings: Res<PersonaBindings>,
    mut talk: MessageReader<TalkToNpc>,
) {
    for line in talk.read() {
        let waiting = WaitingLine {
            text: line.text.clone(),
            private: line.private,
            speaker: line.speaker.clone(),
        };
        take_line(&mut core, &mut loads, &bindings, &line.npc, waiting);
    }
}

/// A player line: answered as soon as the NPC is free, queued, or handed back. A
/// private line is never passed on to another NPC; the line keeps its speaker
/// while it waits.
///
/// While a load is in flight the line is held for the loaded memory (see
/// `settle_loads`): answering it from the memory about to be replaced would lose
/// it with that memory.
fn take_line(
    core: &mut TurnCore,
    loads: &mut NpcMemoryLoads,
    bindings: &PersonaBindings,
    npc: &NpcId,
    line: WaitingLine,
) {
    let rules = core.requests.rules();
    if loads.is_loading() {
        if let Some(error) = crate::plugin::requests::unfit_line(&line.text, rules) {
            return core.reject(npc, error, None, line.text);
        }
        let text = line.text.clone();
        if !loads.hold(npc, line, rules.max_queued_lines) {
            let error = ReplyError::Busy {
                npc: npc.clone(),
                queued: rules.max_queued_lines,
            };
            core.reject(npc, error, None, text);
        }
        return;
    }
    let readiness = core.readiness(bindings, npc);
    match core.requests.offer(npc, line, &readiness, rules) {
        Offer::Start(line) => core.requests.start_line(npc, line),
        // Waiting lines are saved with the NPC's memory.
        Offer::Queued(_) => core.layers.mark_changed(npc),
        Offer::Refused(error, line) => core.reject(npc, error, None, line),
    }
}

/// Summaries the game asked for: a new one, or the one held back, which goes at
/// once. After the frame's lines, which they cover.
pub(crate) fn summarize_npcs(mut core: TurnCore, mut summarize: MessageReader<SummarizeNow>) {
    for request in summarize.read() {
        let npc = &request.npc;
        let job = core.layers.get_mut(npc).and_then(|mut l| l.summarize_now());
        if job.is_none() {
            core.requests.hurry(npc);
        }
        core.send_summary(npc, job);
    }
}

/// The limits lines are held to follow the plugin's settings.
pub(crate) fn sync_line_rules(mut requests: ResMut<NpcRequests>, settings: Res<NpcMemorySettings>) {
    requests.set_rules(LineRules::from_settings(&settings));
}

/// How far the game's pinned-fact messages have been applied. One cursor for
/// both systems that apply them, so each message applies once, at the first.
#[derive(Resource, Default)]
pub(crate) struct FactCursors {
    set: MessageCursor<SetPinnedFact>,
    remove: MessageCursor<RemovePinnedFact>,
}

/// The game's [`SetPinnedFact`] and [`RemovePinnedFact`] messages not applied yet.
#[derive(SystemParam)]
pub(crate) struct PinnedFactMessages<'w> {
    cursors: ResMut<'w, FactCursors>,
    set: Res<'w, Messages<SetPinnedFact>>,
    remove: Res<'w, Messages<RemovePinnedFact>>,
}

impl PinnedFactMessages<'_> {
    /// Applies every fact message not applied yet, sets first.
    fn apply(&mut self, layers: &mut Layers, clock: &NpcMemoryClock) {
        let cursors = &mut *self.cursors;
        for fact in cursors.set.read(&self.set) {
            if let Some(mut memory) = layers.get_mut(&fact.npc)
                && let Err(error) =
                    memory.set_fact_at(fact.key.clone(), &fact.value, Vec::new(), clock.seconds())
            {
                tracing::warn!(
                    "pinned fact {} for NPC {} was not set: {error}",
                    fact.key,
                    fact.npc
                );
            }
        }
        for fact in cursors.remove.read(&self.remove) {
            if let Some(mut memory) = layers.get_mut(&fact.npc) {
                memory.remove_fact_at(&fact.key, clock.seconds());
            }
        }
    }
}
