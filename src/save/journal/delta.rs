//! One NPC's changes between two autosaves: the tails of its append-only lists and
//! the values that changed.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::memory::{
    ChatMessage, Degradation, LogIndex, MemoryConfig, MemoryParts, NpcId, PersonaPrompt,
    PinnedFacts, RecallState, Segments, SpeakerId, SummaryRecord,
};
use crate::save::format::NpcSave;

/// The end of a list from `from` on; everything before `from` is unchanged.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Tail<T> {
    from: u64,
    #[serde(default = "Vec::new")]
    items: Vec<T>,
}

/// One NPC's changes. `None` is "unchanged".
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NpcDelta {
    pub(super) id: NpcId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log: Option<Tail<ChatMessage>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    history: Option<Tail<SummaryRecord>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    degradations: Option<Tail<Degradation>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    persona: Option<PersonaPrompt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    config: Option<MemoryConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    window_start: Option<LogIndex>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    summary: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    covered_until: Option<LogIndex>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    segments: Option<Segments>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    facts: Option<PinnedFacts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    recall: Option<RecallState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    queued: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    private_queued: Option<Vec<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    queued_speakers: Option<Vec<(u32, SpeakerId)>>,
}

fn tail<T: Clone + PartialEq>(old: &[T], new: &[T]) -> Option<Tail<T>> {
    let common = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    (common != old.len() || common != new.len()).then(|| Tail {
        from: common as u64,
        items: new[common..].to_vec(),
    })
}

fn changed<T: Clone + PartialEq>(old: &T, new: &T) -> Option<T> {
    (old != new).then(|| new.clone())
}

fn apply_tail<T>(list: &mut Vec<T>, tail: Option<Tail<T>>, field: &str) -> Result<(), String> {
    let Some(tail) = tail else { return Ok(()) };
    match usize::try_from(tail.from) {
        Ok(from) if from <= list.len() => {
            list.truncate(from);
            list.extend(tail.items);
            Ok(())
        }
        _ => Err(format!(
            "{field} continues from entry {} of {}",
            tail.from,
            list.len()
        )),
    }
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *slot = value;
    }
}

impl NpcDelta {
    /// What turns `old` into `new` (the same NPC), or `None` if they are equal.
    pub(super) fn between(old: &NpcSave, new: &NpcSave) -> Option<Self> {
        // Named field by field, without `..`: a field added to the save and not to
        // the delta would be lost on every journaled load, so it must not compile.
        let NpcSave {
            id: _,
            memory: _,
            queued: _,
            private_queued: _,
            queued_speakers: _,
        } = new;
        let MemoryParts {
            persona: _,
            config: _,
            log: _,
            window_start: _,
            summary: _,
            covered_until: _,
            history: _,
            degradations: _,
            segments: _,
            facts: _,
            recall: _,
        } = &new.memory;
        let (a, b) = (&old.memory, &new.memory);
        let delta = Self {
            id: new.id.clone(),
            log: tail(&a.log, &b.log),
            history: tail(&a.history, &b.history),
            degradations: tail(&a.degradations, &b.degradations),
            persona: changed(&a.persona, &b.persona),
            config: changed(&a.config, &b.config),
            window_start: changed(&a.window_start, &b.window_start),
            summary: changed(&a.summary, &b.summary),
            covered_until: changed(&a.covered_until, &b.covered_until),
            segments: changed(&a.segments, &b.segments),
            facts: changed(&a.facts, &b.facts),
            recall: changed(&a.recall, &b.recall),
            queued: changed(&old.queued, &new.queued),
            private_queued: changed(&old.private_queued, &new.private_queued),
            queued_speakers: changed(&old.queued_speakers, &new.queued_speakers),
        };
        let empty = delta.log.is_none()
            && delta.history.is_none()
            && delta.degradations.is_none()
            && delta.persona.is_none()
            && delta.config.is_none()
            && delta.window_start.is_none()
            && delta.summary.is_none()
            && delta.covered_until.is_none()
            && delta.segments.is_none()
            && delta.facts.is_none()
            && delta.recall.is_none()
            && delta.queued.is_none()
            && delta.private_queued.is_none()
            && delta.queued_speakers.is_none();
        (!empty).then_some(delta)
    }

    pub(super) fn apply(self, npc: &mut NpcSave) -> Result<(), String> {
        let memory = &mut npc.memory;
        apply_tail(&mut memory.log, self.log, "log")?;
        apply_tail(&mut memory.history, self.history, "history")?;
        apply_tail(&mut memory.degradations, self.degradations, "degradations")?;
        set(&mut memory.persona, self.persona);
        set(&mut memory.config, self.config);
        set(&mut memory.window_start, self.window_start);
        set(&mut memory.summary, self.summary);
        set(&mut memory.covered_until, self.covered_until);
        set(&mut memory.segments, self.segments);
        set(&mut memory.facts, self.facts);
        set(&mut memory.recall, self.recall);
        set(&mut npc.queued, self.queued);
        set(&mut npc.private_queued, self.private_queued);
        set(&mut npc.queued_speakers, self.queued_speakers);
        Ok(())
    }
}
