//! Saves, loads, snapshots and kills as the state machine plays them: each must
//! bring back exactly the memory that was saved.

use std::path::{Path, PathBuf};

use bevy::prelude::*;
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::saves::{ResumeAutosave, SaveFormat, SaveGame, backup_path, journal_path};

use super::play::Play;
use super::steps::{Damage, NPCS, Target};
use crate::support::Inbox;
use bevy_npc_memory::saves::MemoryRestoreFailed;
use bevy_npc_memory::saves::MemoryRestored;
use bevy_npc_memory::saves::NpcMemorySnapshot;

impl Play {
    pub(super) fn file(&mut self, name: &str) -> PathBuf {
        self.files += 1;
        let folder = self.dir.join(format!("{name}-{}", self.files));
        std::fs::create_dir_all(&folder).unwrap();
        folder.join("memory.json")
    }

    pub(super) fn save(&mut self) {
        let path = self.file("save");
        let ended = |world: &World| {
            let saved = world.resource::<Inbox<MemorySaved>>().0.iter();
            let failed = world.resource::<Inbox<MemorySaveFailed>>().0.iter();
            saved.filter(|s| s.path == path).count() + failed.filter(|f| f.path == path).count()
        };
        self.write(SaveMemory::new(path.clone()));
        self.h.run_until("the save ends", |world| ended(world) > 0);
        let (_, read) = SaveGame::read_from(&path, u64::MAX).expect("the save reads back");
        assert_eq!(read.npcs, self.current().npcs, "the save holds the memory");
        self.saves.push((path, read));
    }

    pub(super) fn load(&mut self) {
        let Some((path, saved)) = self.saves.pop() else {
            let missing = self.dir.join("never-saved.json");
            let failed = self.count::<MemoryLoadFailed>();
            self.h.load_from(&missing);
            assert_eq!(
                self.count::<MemoryLoadFailed>(),
                failed + 1,
                "nothing to load"
            );
            return;
        };
        let loaded = self.count::<MemoryLoaded>();
        self.h.load_from(&path);
        assert_eq!(self.count::<MemoryLoaded>(), loaded + 1, "the save loads");
        self.may_shrink = vec![true; NPCS];
        self.private_as_loaded();
        self.slot = path;
        // As loaded: the live personas apply again, and a summary they make due
        // may follow.
        assert_same_memory(&saved, &self.current());
    }

    pub(super) fn restore(&mut self) {
        let Some(snapshot) = self.snapshot.clone() else {
            return;
        };
        let restored = self.count::<MemoryRestored>();
        self.h
            .app
            .insert_resource(NpcMemorySnapshot::restore(snapshot.clone()));
        self.h.run_until("the snapshot is restored", |world| {
            world.resource::<Inbox<MemoryRestored>>().0.len()
                + world.resource::<Inbox<MemoryRestoreFailed>>().0.len()
                > restored
        });
        assert!(
            self.h.inbox::<MemoryRestoreFailed>().is_empty(),
            "{:?}",
            self.h.inbox::<MemoryRestoreFailed>()
        );
        self.may_shrink = vec![true; NPCS];
        self.private_as_loaded();
        // As loaded: the live personas apply again, and a summary they make due
        // may follow.
        assert_same_memory(&snapshot, &self.current());
    }

    /// The slot as a kill would leave it: the files as they are this instant, the
    /// journal cut at any byte; then the next start loads it.
    pub(super) fn kill(&mut self, cut: f64) {
        let slot = self.slot.clone();
        let copy = self.file("killed");
        for (from, to) in [
            (slot.clone(), copy.clone()),
            (journal_path(&slot), journal_path(&copy)),
            (backup_path(&slot), backup_path(&copy)),
            (
                journal_path(&backup_path(&slot)),
                journal_path(&backup_path(&copy)),
            ),
        ] {
            let _ = std::fs::copy(from, to);
        }
        if !copy.exists() {
            return;
        }
        cut_file(&journal_path(&copy), cut);
        let loaded = self.count::<MemoryLoaded>();
        self.h.load_from(&copy);
        assert_eq!(
            self.count::<MemoryLoaded>(),
            loaded + 1,
            "a killed slot loads: {:?}",
            self.h.inbox::<MemoryLoadFailed>().last()
        );
        self.may_shrink = vec![true; NPCS];
        self.private_as_loaded();
        self.slot = copy;
    }
}

impl Play {
    /// The game loads a damaged file: a fresh one, or its autosave slot damaged on
    /// disk, with or without its backup. What has no backup fails and changes
    /// nothing (and pauses autosave on that path); the slot loads its backup
    /// instead. Either way the game then resumes autosave on that path, and the
    /// slot comes to hold the memory in use.
    pub(super) fn load_damaged(&mut self, target: Target, damage: &Damage) {
        let slot = target != Target::Fresh;
        let path = if slot {
            self.slot.clone()
        } else {
            self.file("damaged")
        };
        if target == Target::SlotAndBackup {
            let backup = backup_path(&path);
            for file in [journal_path(&backup), backup] {
                let _ = std::fs::remove_file(file);
            }
        }
        let whole = self.current().to_bytes(SaveFormat::Json).unwrap();
        std::fs::write(&path, damage.applied_to(whole)).unwrap();
        let loaded = self.count::<MemoryLoaded>();
        self.h.load_from(&path);
        if self.count::<MemoryLoaded>() > loaded {
            assert!(slot, "a damaged file with no backup loaded: {path:?}");
            self.may_shrink = vec![true; NPCS];
            self.private_as_loaded();
        } else {
            for npc in 0..NPCS {
                assert_eq!(
                    self.log(npc),
                    self.before[npc],
                    "a failed load changed NPC {npc}'s log"
                );
            }
        }
        self.write(ResumeAutosave::new(path));
        self.wait_for_slot_to_hold_memory_in_use();
    }

    /// Waits until the autosave slot on disk holds the memory in use. That memory
    /// may still change after a load (a summary the loaded memory makes due), so
    /// the slot is compared with it as it is each frame.
    pub(super) fn wait_for_slot_to_hold_memory_in_use(&mut self) {
        let slot = self.slot.clone();
        self.h
            .run_until("the autosave slot holds the memory in use", |world| {
                let in_use = world.resource::<NpcMemorySnapshot>();
                !in_use.is_pending()
                    && in_use.save().is_ok_and(|in_use| {
                        SaveGame::read_from(&slot, u64::MAX)
                            .is_ok_and(|(_, save)| save.npcs == in_use.npcs)
                    })
            });
    }
}

fn cut_file(path: &Path, share: f64) {
    if let Ok(bytes) = std::fs::read(path) {
        let keep = (bytes.len() as f64 * share) as usize;
        std::fs::write(path, &bytes[..keep.min(bytes.len())]).unwrap();
    }
}

/// Two saves hold the same memory: every log, summary and fact (personas and
/// settings are the live ones after a load).
fn assert_same_memory(expected: &SaveGame, actual: &SaveGame) {
    assert_eq!(expected.npcs.len(), actual.npcs.len(), "the same NPCs");
    for (e, a) in expected.npcs.iter().zip(&actual.npcs) {
        assert_eq!(e.id, a.id);
        assert_eq!(e.memory.log, a.memory.log, "{}'s log", e.id);
        assert_eq!(e.memory.summary, a.memory.summary, "{}'s summary", e.id);
        assert_eq!(e.memory.facts, a.memory.facts, "{}'s facts", e.id);
    }
}
