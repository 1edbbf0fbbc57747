//! The plugin's system sets: the public pipeline, and the steps inside its intake
//! that let each feature order its systems without naming another's.

use bevy::prelude::*;

/// The plugin's systems, in pipeline order. They run in `Update`; order your own
/// systems against these sets, e.g. `.after(NpcMemorySystems::Collect)` to see
/// replies the frame they arrive.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NpcMemorySystems {
    /// Loads asked for and memory snapshots the game put in start (their memory is
    /// built off the main thread), finished ones are swapped in; personas that were
    /// spawned, loaded or edited reach their NPC's memory.
    Personas,
    /// Player lines, clears, reconfigurations and summary requests are taken;
    /// requests start.
    Intake,
    /// Finished requests come back: replies and summaries enter memory; actions
    /// the replies call run (their handlers are exclusive systems of this set),
    /// enter memory, and their follow-ups start.
    Collect,
    /// Saves, loads and autosave: snapshots go to the IO task pool, results come
    /// back. Last, [`NpcMemorySnapshot`](crate::saves::NpcMemorySnapshot) is brought up to date.
    Persist,
}

/// The steps of [`NpcMemorySystems::Personas`], in order: loads and restores
/// swap memory in (saves), the turn pipeline settles what they left (requests of
/// the replaced memory, held lines), personas are resolved per NPC, memory, lore
/// and actions each take their part, then lines the NPCs can now answer are.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum LoadStep {
    /// Loads and restores start, and finished ones are swapped in.
    Swap,
    /// What a swap left for turns is done.
    Settle,
    /// Personas spawned, loaded or edited are resolved per NPC.
    Personas,
    /// Memory, lore and actions take their part of each NPC's persona.
    Bind,
    /// Lines that a load or a persona freed are answered.
    Answer,
}

/// The steps of [`NpcMemorySystems::Persist`], in order: saves, autosave and
/// finished IO (saves), then what a failed load or an import left for turns, then
/// the snapshot resource is brought up to date with all of it.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PersistStep {
    /// Saves and autosave start; finished writes, reads and imports come back.
    Io,
    /// What a failed load or an import left for turns is done.
    Settle,
    /// `NpcMemorySnapshot` shows the memory in use.
    Snapshot,
}

/// The steps of [`NpcMemorySystems::Intake`], in order: what changed in the world
/// (tiers asked for, lore edited) is taken before tiers apply, tiers before
/// knowledge enters memory, and knowledge before the frame's player lines, so a
/// line said right after an event or a lore change is answered knowing it.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum IntakeStep {
    /// Messages that change tiers or lore.
    Changes,
    /// Tier changes reach memory.
    Tiers,
    /// Events, tellings and privacy marks enter memory.
    Knowledge,
    /// Player lines, clears, reconfigurations and summary requests are taken.
    Lines,
}

/// The steps of [`NpcMemorySystems::Collect`], in order: replies and summaries
/// come back, the actions they call run (the game's handlers are exclusive
/// systems), the answered calls enter memory, conversations among NPCs take
/// their next turns, then requests go out, follow-ups among them, in the same
/// frame.
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CollectStep {
    /// Requests started before `Collect` join the scheduler's queue (cancelled
    /// turns leave it, their action rounds too); finished requests come back and
    /// enter memory, and NPCs they freed answer their next lines.
    Results,
    /// Called actions run.
    Actions,
    /// Answered calls enter memory.
    Record,
    /// Lines said in conversations among NPCs go round; next speakers answer.
    Converse,
    /// Requests started in `Collect` join the queue, and queued requests go out.
    Dispatch,
}
