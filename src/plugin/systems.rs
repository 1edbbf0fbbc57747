//! The dialogue's systems: each reads the game's messages and hands every event to
//! [`Dialogue`](super::dialogue::Dialogue), which makes one call into the memory core.

use bevy::asset::AssetLoadFailedEvent;
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
    mut set_fact: MessageReader<SetPinnedFact>,
    mut remove_fact: MessageReader<RemovePinnedFact>,
) {
    // A switch first: the lines of this frame go to the backend the game chose.
    for switch in switch.read() {
        dialogue.switch_backend(switch);
    }
    // Facts next: a quest update in the same frame as a line should shape its reply.
    for fact in set_fact.read() {
        dialogue.set_fact(&fact.npc, &fact.key, &fact.value);
    }
    for fact in remove_fact.read() {
        dialogue.remove_fact(&fact.npc, &fact.key);
    }
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
pub(crate) fn record_actions(mut dialogue: Dialogue) {
    dialogue.record_actions();
}
