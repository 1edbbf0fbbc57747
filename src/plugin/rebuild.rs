//! Memory rebuilt off the main thread: a load or a restored snapshot (every NPC's
//! memory, recall indexes included), and recall switched on live for a long log.
//!
//! Rebuilding runs on Bevy's `AsyncComputeTaskPool`; the main thread only swaps in
//! what is finished. While a load is in flight, player lines are held here and
//! given to the loaded memory once it is in place.

use std::collections::HashMap;
use std::sync::Arc;

use bevy::prelude::*;
use bevy::tasks::futures_lite::future;
use bevy::tasks::{AsyncComputeTaskPool, Task};

use crate::memory::{ChatMessage, NpcId, NpcMemory, RecallConfig, RecallIndex};
use crate::save::{SaveGame, WaitingLine};

/// Switching recall on live for a log with at least this many messages not yet
/// indexed builds the index off the main thread (about 5 ms per 1,000 English
/// messages); a shorter backlog is indexed at once.
pub const RECALL_BUILD_OFF_THREAD: usize = 1_000;

/// Memory being rebuilt off the main thread, and the lines waiting for it.
///
/// Read it to show that memory is loading: [`is_loading`](Self::is_loading) holds
/// from the frame a [`LoadMemory`](crate::prelude::LoadMemory) is taken or a snapshot is put
/// into [`NpcMemorySnapshot`](crate::saves::NpcMemorySnapshot) until the loaded memory is
/// in place (or the load failed).
///
/// Lines said while a load is in flight are held here, never lost:
/// - once the loaded memory is in place it answers them, oldest first; when the
///   load fails, the memory in use does;
/// - a newer load that replaces one in flight keeps them, and its memory answers
///   them (the older load is reported with [`LoadError::Superseded`](crate::saves::LoadError::Superseded));
/// - [`InterruptNpc::clearing_queue`](crate::dialogue::InterruptNpc::clearing_queue)
///   hands the NPC's held lines back ([`NpcReplyFailed`](crate::prelude::NpcReplyFailed)
///   with [`ReplyError::Interrupted`](crate::prelude::ReplyError::Interrupted) and the
///   text in `unrecorded_line`), a plain interrupt keeps them, and
///   [`ClearNpcMemory`](crate::prelude::ClearNpcMemory) hands them back as
///   [`ReplyError::Cancelled`](crate::prelude::ReplyError::Cancelled);
/// - when the app exits mid-load they are handed back as `Cancelled` in the last
///   frame, since no memory will answer them.
#[derive(Resource, Default)]
pub struct NpcMemoryLoads {
    /// Counts loads and restores asked for; the newest wins.
    generation: u64,
    /// The newest load or restore, until it is swapped in or fails.
    outstanding: Option<u64>,
    /// The file the newest load reads; `None` for a restore.
    newest_path: Option<std::path::PathBuf>,
    /// Its memory being built, once its save is read.
    pub(crate) building: Option<PendingLoad>,
    /// Player lines said while a load was in flight, oldest first.
    held: Vec<(NpcId, WaitingLine)>,
    /// Loads and restores a newer one replaced, still to be reported.
    pub(crate) superseded: Vec<LoadSource>,
    /// Recall indexes being built for NPCs that switched recall on.
    recall: HashMap<NpcId, PendingRecall>,
    /// The snapshot put in that is being (or was last) restored.
    pub(crate) taken_snapshot: Option<Arc<SaveGame>>,
    /// What the save systems left for the turn pipeline this frame, in order.
    handovers: Vec<Handover>,
    /// NPCs whose memory was imported this frame: they get their tier's settings.
    imports: Vec<NpcId>,
}

/// What swapping memory in leaves for the turn pipeline. The save systems only
/// put memory in place; dialogue's `settle_loads` runs right after them and deals
/// with the turns: requests, waiting lines and personas. (An import leaves only
/// its NPC, for its tier: [`NpcMemoryLoads::imported`].)
#[derive(Debug)]
pub(crate) enum Handover {
    /// Every NPC's memory became a save's. The replaced memory's requests and
    /// lines are cancelled, lore told to `told_lore` is checked against the lore
    /// now in force, live personas win over saved ones, and the save's waiting
    /// lines wait again.
    Replaced {
        told_lore: Vec<NpcId>,
        waiting: Vec<(NpcId, Vec<WaitingLine>)>,
    },
    /// A load ended (swapped in or failed): the lines held for it go to the
    /// memory now in use.
    Released(Vec<(NpcId, WaitingLine)>),
}

/// Where a load came from.
// One per load, moved a few times: boxing the file's details would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum LoadSource {
    /// `LoadMemory`: the path asked for, the file read, why a backup was used and
    /// what stopped its journal's replay.
    File {
        path: std::path::PathBuf,
        read: std::path::PathBuf,
        recovered_from: Option<crate::save::UnusableSave>,
        /// The slot's journal, when it could not be replayed whole.
        journal: Option<crate::save::JournalReport>,
    },
    /// A snapshot the game put into `NpcMemorySnapshot`.
    Snapshot,
}

/// A save whose memory is being built.
pub(crate) struct PendingLoad {
    pub(crate) generation: u64,
    pub(crate) source: LoadSource,
    pub(crate) save: Arc<SaveGame>,
    task: Task<Built>,
}

/// A load's memory, built off the main thread.
pub(crate) struct Built {
    /// Every NPC's memory, recall index included.
    pub(crate) memories: Vec<(NpcId, NpcMemory)>,
    /// The NPCs whose log holds lore they were told and that is not retracted:
    /// only theirs need checking against the lore now in force, so the swap frame
    /// does not walk every message of every log looking for them.
    pub(crate) told_lore: Vec<NpcId>,
}

/// A recall index being built for one NPC.
struct PendingRecall {
    /// The log's length and last text when the copy was taken, to check the log it
    /// is handed to is the same one grown, not a cleared one.
    covers: (usize, Option<Arc<str>>),
    config: RecallConfig,
    task: Task<RecallIndex>,
}

/// A finished recall index, ready to be handed to its NPC.
pub(crate) struct BuiltRecall {
    pub(crate) npc: NpcId,
    pub(crate) covers: (usize, Option<Arc<str>>),
    pub(crate) config: RecallConfig,
    pub(crate) index: RecallIndex,
}

#[cfg(test)]
pub(crate) static REBUILT_ON: std::sync::Mutex<Vec<std::thread::ThreadId>> =
    std::sync::Mutex::new(Vec::new());

/// Builds every NPC's memory from `save`, recall indexes included, yielding between
/// NPCs so other work on the pool (and a cancellation) gets a turn.
fn build(save: Arc<SaveGame>) -> Task<Built> {
    AsyncComputeTaskPool::get().spawn(async move {
        #[cfg(test)]
        REBUILT_ON.lock().unwrap().push(std::thread::current().id());
        let mut built = Vec::with_capacity(save.npcs.len());
        let mut told_lore = Vec::new();
        for npc in &save.npcs {
            // Checked when the save was read, so this cannot fail.
            if let Ok(memory) = npc.memory.clone().into_memory() {
                if crate::plugin::layers::holds_told_lore(&memory.log) {
                    told_lore.push(npc.id.clone());
                }
                built.push((npc.id.clone(), memory));
            }
            future::yield_now().await;
        }
        // Logged from the thread that did the work, which shows where that was.
        tracing::debug!(
            npcs = built.len(),
            messages = save
                .npcs
                .iter()
                .map(|npc| npc.memory.log.len())
                .sum::<usize>(),
            "memory for a load rebuilt off the main thread"
        );
        Built {
            memories: built,
            told_lore,
        }
    })
}

impl NpcMemoryLoads {
    /// Whether a load or restore is in flight: lines said now wait for its memory.
    pub fn is_loading(&self) -> bool {
        self.outstanding.is_some()
    }

    /// Whether the save being loaded has been read and its memory is being built.
    pub fn is_building(&self) -> bool {
        self.building.is_some()
    }

    /// Player lines held for the memory being loaded.
    pub fn held_lines(&self) -> usize {
        self.held.len()
    }

    /// Whether a recall index is being built for the NPC, which answers without
    /// recall until it is in place.
    pub fn building_recall(&self, npc: &NpcId) -> bool {
        self.recall.contains_key(npc)
    }

    /// A new load (of the file at `path`) or restore (`None`): it replaces any in
    /// flight, whose result is dropped. Returns its generation.
    pub(crate) fn begin(&mut self, path: Option<&std::path::Path>) -> u64 {
        self.generation += 1;
        self.newest_path = path.map(std::path::Path::to_path_buf);
        if let Some(older) = self.building.take() {
            self.replaced(older.source);
        }
        self.outstanding = Some(self.generation);
        self.generation
    }

    /// An older load a newer one replaced is reported, unless the newer one reads
    /// the same file: then the newer load's outcome answers both.
    pub(crate) fn replaced(&mut self, source: LoadSource) {
        if let LoadSource::File { path, .. } = &source
            && self.newest_path.as_ref() == Some(path)
        {
            return;
        }
        self.superseded.push(source);
    }

    /// Whether `generation` is the newest load asked for.
    pub(crate) fn is_newest(&self, generation: u64) -> bool {
        self.outstanding == Some(generation)
    }

    /// The save of the newest load was read: its memory is built off the main
    /// thread.
    pub(crate) fn build(&mut self, generation: u64, source: LoadSource, save: Arc<SaveGame>) {
        let task = build(save.clone());
        self.building = Some(PendingLoad {
            generation,
            source,
            save,
            task,
        });
    }

    /// The load being built, once its memory is ready.
    pub(crate) fn poll(&mut self) -> Option<(PendingLoad, Built)> {
        let mut pending = self.building.take()?;
        match future::block_on(future::poll_once(&mut pending.task)) {
            Some(built) => Some((pending, built)),
            None => {
                self.building = Some(pending);
                None
            }
        }
    }

    /// The newest load is over (swapped in or failed): the held lines, to be
    /// answered now. Recall builds for the memory it replaced are dropped when it
    /// was swapped in.
    pub(crate) fn end(&mut self, generation: u64, swapped: bool) -> Vec<(NpcId, WaitingLine)> {
        if self.outstanding != Some(generation) {
            return Vec::new();
        }
        self.outstanding = None;
        if swapped {
            self.recall.clear();
        }
        std::mem::take(&mut self.held)
    }

    /// Holds a line for the memory being loaded; `false` if `npc` already has
    /// `max` lines held.
    pub(crate) fn hold(&mut self, npc: &NpcId, line: WaitingLine, max: usize) -> bool {
        if self.held.iter().filter(|(held, _)| held == npc).count() >= max {
            return false;
        }
        self.held.push((npc.clone(), line));
        true
    }

    /// Takes the lines held for `npc` out, oldest first (an interrupt clearing its
    /// queue, or a clear, hands them back).
    pub(crate) fn take_held(&mut self, npc: &NpcId) -> Vec<WaitingLine> {
        let (taken, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|(held, _)| held == npc);
        self.held = kept;
        taken.into_iter().map(|(_, line)| line).collect()
    }

    /// Leaves `handover` for the turn pipeline, after those left before it.
    pub(crate) fn hand_over(&mut self, handover: Handover) {
        self.handovers.push(handover);
    }

    /// What the save systems left for the turn pipeline, oldest first.
    pub(crate) fn take_handovers(&mut self) -> Vec<Handover> {
        std::mem::take(&mut self.handovers)
    }

    /// `npc`'s memory was imported: it gets its tier's settings next.
    pub(crate) fn imported(&mut self, npc: NpcId) {
        self.imports.push(npc);
    }

    /// The NPCs whose memory was imported since the last call, oldest first.
    pub(crate) fn take_imports(&mut self) -> Vec<NpcId> {
        std::mem::take(&mut self.imports)
    }

    /// Takes every held line out (the app is closing mid-load: nothing will
    /// answer them).
    pub(crate) fn take_all_held(&mut self) -> Vec<(NpcId, WaitingLine)> {
        std::mem::take(&mut self.held)
    }

    /// Starts building a recall index over a copy of `messages`, replacing one in
    /// flight for the NPC.
    pub(crate) fn build_recall(
        &mut self,
        npc: &NpcId,
        messages: Vec<ChatMessage>,
        config: RecallConfig,
    ) {
        let covers = (messages.len(), messages.last().map(|m| m.content.clone()));
        let calendar = config.calendar;
        let task = AsyncComputeTaskPool::get().spawn(async move {
            #[cfg(test)]
            REBUILT_ON.lock().unwrap().push(std::thread::current().id());
            RecallIndex::from_log_with_calendar(&messages, calendar)
        });
        self.recall.insert(
            npc.clone(),
            PendingRecall {
                covers,
                config,
                task,
            },
        );
    }

    /// Drops the NPC's recall build, if any (its memory changed under it).
    pub(crate) fn cancel_recall(&mut self, npc: &NpcId) {
        self.recall.remove(npc);
    }

    /// Recall indexes that are ready.
    pub(crate) fn finished_recall(&mut self) -> Vec<BuiltRecall> {
        if self.recall.is_empty() {
            return Vec::new();
        }
        let ready: Vec<NpcId> = self
            .recall
            .iter()
            .filter(|(_, pending)| pending.task.is_finished())
            .map(|(npc, _)| npc.clone())
            .collect();
        ready
            .into_iter()
            .filter_map(|npc| {
                let pending = self.recall.remove(&npc)?;
                let index = future::block_on(pending.task);
                Some(BuiltRecall {
                    npc,
                    covers: pending.covers,
                    config: pending.config,
                    index,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use bevy::tasks::TaskPool;

    use super::*;
    use crate::memory::{MemoryConfig, MemoryParts, PersonaPrompt, Role};
    use crate::save::NpcSave;

    fn save_with_recall(messages: usize) -> SaveGame {
        let mut config = MemoryConfig::default();
        config.features.recall.enabled = true;
        let persona = PersonaPrompt {
            name: "Guard".into(),
            text: "You guard.".into(),
            style: Default::default(),
        };
        let mut memory = NpcMemory::new(persona, &config);
        for i in 0..messages {
            memory
                .layers()
                .record(Role::User, format!("the lantern {i} is lit"), i as f64);
        }
        let parts = MemoryParts::of(&memory.log, &memory.window, &memory.context);
        SaveGame::new(vec![Arc::new(NpcSave::new("guard".into(), parts))])
    }

    #[test]
    fn a_save_is_rebuilt_on_a_pool_thread_not_the_caller_s() {
        AsyncComputeTaskPool::get_or_init(TaskPool::new);
        let mut loads = NpcMemoryLoads::default();
        let generation = loads.begin(None);
        assert!(loads.is_loading() && !loads.is_building());
        loads.build(
            generation,
            LoadSource::Snapshot,
            Arc::new(save_with_recall(200)),
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        let (pending, built) = loop {
            if let Some(done) = loads.poll() {
                break done;
            }
            assert!(Instant::now() < deadline, "the rebuild never finished");
            std::thread::sleep(Duration::from_millis(1));
        };
        assert_eq!(pending.generation, generation);
        assert_eq!(built.memories.len(), 1);
        assert_eq!(
            built.memories[0].1.context.recall().len(),
            200,
            "recall rebuilt"
        );
        assert!(built.told_lore.is_empty());
        let here = std::thread::current().id();
        let threads = REBUILT_ON.lock().unwrap();
        assert!(!threads.is_empty());
        assert!(
            threads.iter().all(|thread| *thread != here),
            "rebuilt on a pool thread"
        );
        drop(threads);
        assert!(loads.end(generation, true).is_empty());
        assert!(!loads.is_loading());
    }

    #[test]
    fn a_newer_load_replaces_one_being_built_and_held_lines_are_capped() {
        AsyncComputeTaskPool::get_or_init(TaskPool::new);
        let mut loads = NpcMemoryLoads::default();
        let first = loads.begin(None);
        loads.build(first, LoadSource::Snapshot, Arc::new(save_with_recall(10)));
        let npc = NpcId::new("guard");
        assert!(loads.hold(&npc, WaitingLine::new("one"), 2));
        assert!(loads.hold(&npc, WaitingLine::new("two"), 2));
        assert!(!loads.hold(&npc, WaitingLine::new("three"), 2), "full");
        let second = loads.begin(None);
        assert_eq!(
            loads.superseded.len(),
            1,
            "the first is reported as replaced"
        );
        assert!(!loads.is_newest(first) && loads.is_newest(second));
        assert!(
            loads.end(first, true).is_empty(),
            "an older load ends nothing"
        );
        let held: Vec<_> = loads
            .end(second, false)
            .into_iter()
            .map(|(_, line)| line.text)
            .collect();
        assert_eq!(held, ["one", "two"]);
    }
}
