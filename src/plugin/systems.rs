//! The dialogue's systems: each reads the game's messages and hands every event to
//! [`Dialogue`](super::dialogue::Dialogue), which makes one call into the memory core.

use bevy::asset::AssetLoadFailedEvent;
use bevy::ecs::message::MessageCursor;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::dialogue::Dialogue;
use super::messages::{
    ClearNpcMemory, InterruptNpc, ReconfigureNpcMemory, RemovePinnedFact, SetPinnedFact,
    SummarizeNow, SwitchBackend, TalkToNpc,
};
use super::persona::Persona;
use crate::save::WaitingLine;

/// Personas that were spawned, loaded, edited or failed reach their NPCs.
pub(crate) fn apply_personas(
    mut dialogue: Dialogue,
    mut events: MessageReader<AssetEvent<Persona>>,
    mut failures: MessageReader<AssetLoadFailedEvent<Persona>>,
    personas: Res<Assets<Persona>>,
) {
    for failure in failures.read() {
        dialogue.persona_failed(failure.id, format!("{}: {}", failure.path, failure.error));
    }
    let mut changed = dialogue.take_spawned();
    changed.extend(events.read().filter_map(|event| match event {
        AssetEvent::Added { id }
        | AssetEvent::Modified { id }
        | AssetEvent::LoadedWithDependencies { id } => Some(*id),
        _ => None,
    }));
    if changed.is_empty() {
        return;
    }
    changed.sort_unstable();
    changed.dedup();
    for id in changed {
        if let Some(persona) = personas.get(id) {
            dialogue.persona_ready(id, persona);
        }
    }
}

/// NPCs whose tier changed get their tier's memory settings, before this frame's
/// lines are taken.
pub(crate) fn apply_tiers(mut dialogue: Dialogue) {
    dialogue.retier();
}

/// The game's requests: backend switches, facts, reconfigurations, clears,
/// interrupts, player lines, summaries.
#[allow(
    clippy::too_many_arguments,
    reason = "one reader per message the game sends"
)]
pub(crate) fn take_requests(
    mut dialogue: Dialogue,
    mut switch: MessageReader<SwitchBackend>,
    mut talk: MessageReader<TalkToNpc>,
    mut interrupt: MessageReader<InterruptNpc>,
    mut clear: MessageReader<ClearNpcMemory>,
    mut summarize: MessageReader<SummarizeNow>,
    mut reconfigure: MessageReader<ReconfigureNpcMemory>,
    mut facts: PinnedFactMessages,
) {
    // A switch first: the lines of this frame go to the backend the game chose.
    for switch in switch.read() {
        dialogue.switch_backend(switch);
    }
    // Facts next: a quest update in the same frame as a line should shape its reply.
    facts.apply(&mut dialogue);
    for change in reconfigure.read() {
        dialogue.reconfigure(&change.npc, &change.config);
    }
    for request in clear.read() {
        dialogue.clear(&request.npc);
    }
    // Interrupts before lines: "stop, and hear this instead" in one frame must not
    // drop or cut off the new line.
    for request in interrupt.read() {
        dialogue.interrupt(&request.npc, request.clear_queue);
    }
    for line in talk.read() {
        dialogue.say(
            &line.npc,
            WaitingLine {
                text: line.text.clone(),
                private: line.private,
                speaker: line.speaker.clone(),
            },
        );
    }
    for request in summarize.read() {
        dialogue.summarize_now(&request.npc);
    }
}

/// Finished requests come back into memory.
pub(crate) fn collect_results(mut dialogue: Dialogue) {
    dialogue.collect();
}

/// Queued requests go out, in the scheduler's order, within its budget.
pub(crate) fn dispatch_requests(mut dialogue: Dialogue) {
    dialogue.dispatch();
}

/// Rounds of actions the game answered enter memory, and their follow-ups start.
/// Facts the game pinned since the requests were taken (an action handler's
/// [`SetPinnedFact`], e.g. `promise:open_door` fulfilled) apply first, so the
/// follow-up of the same turn already knows them.
pub(crate) fn record_actions(mut dialogue: Dialogue, mut facts: PinnedFactMessages) {
    facts.apply(&mut dialogue);
    dialogue.record_actions();
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
    fn apply(&mut self, dialogue: &mut Dialogue) {
        let cursors = &mut *self.cursors;
        for fact in cursors.set.read(&self.set) {
            dialogue.set_fact(&fact.npc, &fact.key, &fact.value);
        }
        for fact in cursors.remove.read(&self.remove) {
            dialogue.remove_fact(&fact.npc, &fact.key);
        }
    }
}
