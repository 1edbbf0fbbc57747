//! Imports of the original game's Unity save into one NPC, as the state machine
//! plays them: a whole file replaces that NPC's memory and no other, and what was
//! asked of the memory it replaced ends there; a damaged file changes nothing.

use bevy_npc_memory::dialogue::SummarizeNow;
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::saves::ImportUnitySave;
use serde_json::json;

use super::backend::{Answer, tags};
use super::play::{Log, Play};
use super::steps::{Import, NPCS};
use crate::support::Inbox;

/// The Unity layout: each value is itself JSON text.
fn unity_save(lines: &[String], (summary, counter): (&str, u8)) -> Vec<u8> {
    let logs: Vec<_> = lines
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let role = if role(i) == Role::User {
                "user"
            } else {
                "assistant"
            };
            json!({ "role": role, "content": text })
        })
        .collect();
    let chat = json!({ "logs": logs }).to_string();
    let context = json!({ "summary": summary, "counter": counter }).to_string();
    json!({ "keys": ["ChatSystem", "ContextMemory"], "values": [chat, context] })
        .to_string()
        .into_bytes()
}

/// Imported lines alternate, the player first.
fn role(i: usize) -> Role {
    if i.is_multiple_of(2) {
        Role::User
    } else {
        Role::Assistant
    }
}

impl Play {
    pub(super) fn import_unity(&mut self, import: &Import) {
        let (npc, damage) = (import.npc, import.damage.as_ref());
        let (during, summarize) = (import.during, import.summarize);
        let id = self.ids[npc].clone();
        let path = self.file("unity");
        let whole = unity_save(&import.lines, (&import.summary, import.counter));
        let bytes = match damage {
            None => whole,
            Some(damage) => damage.applied_to(whole),
        };
        std::fs::write(&path, bytes).unwrap();
        // What the memory being replaced holds, by tag: none of it may reach the
        // imported memory.
        let replaced: Vec<String> = self.before[npc]
            .iter()
            .flat_map(|(_, text)| tags(text).into_iter().map(str::to_owned))
            .collect();
        let (loaded, failed) = (self.count::<MemoryLoaded>(), self.count::<NpcReplyFailed>());
        let load_failed = self.count::<MemoryLoadFailed>();
        let world = self.h.app.world_mut();
        if summarize {
            world.write_message(SummarizeNow::new(id.clone()));
        }
        // Lines said in the frame of the import, to the memory it replaces; the
        // first is in flight when the import lands (the model never answers it),
        // the rest wait behind it.
        let mut said = Vec::new();
        if damage.is_none() && during > 0 {
            self.stage.answer(&id, vec![Answer::Hang]);
            for _ in 0..during {
                let tag = self.tag('s');
                let line = format!("⟦{tag}⟧ said while importing");
                said.push(line.clone());
                let npc_said = super::turns::Said {
                    npc,
                    line: line.clone(),
                };
                self.said.insert(tag, npc_said);
                let world = self.h.app.world_mut();
                world.write_message(TalkToNpc::new(id.clone(), line));
            }
        }
        let world = self.h.app.world_mut();
        world.write_message(ImportUnitySave::new(path.clone(), id.clone()));
        self.h.run_until("the import ends", |world| {
            world.resource::<Inbox<MemoryLoaded>>().0.len()
                + world.resource::<Inbox<MemoryLoadFailed>>().0.len()
                > loaded + load_failed
        });
        // The prompts sent so far were built by the memory replaced, which the
        // step's checks no longer see.
        self.stage.take_requests();
        self.others_kept(npc);
        if self.count::<MemoryLoaded>() == loaded {
            let failure = self.h.inbox::<MemoryLoadFailed>().last().cloned();
            assert!(damage.is_some(), "a whole Unity save failed: {failure:?}");
            assert_eq!(
                self.log(npc),
                self.before[npc],
                "a failed import changed the log"
            );
            return;
        }
        assert!(damage.is_none(), "a damaged Unity save imported: {path:?}");
        let imported: Log = import
            .lines
            .iter()
            .enumerate()
            .map(|(i, text)| (role(i), text.clone()))
            .collect();
        assert_eq!(self.log(npc), imported, "the import is NPC {npc}'s log");
        self.may_shrink[npc] = true;
        self.private_as_loaded();
        // Nothing asked of the replaced memory lands on the imported one: the line
        // in flight fails as cancelled (the memory that heard it is gone), the
        // waiting ones are handed back.
        self.h.settle();
        assert_eq!(
            self.log(npc),
            imported,
            "what was asked before the import landed"
        );
        let memory = self.current();
        let memory = &memory.npcs.iter().find(|n| n.id == id).unwrap().memory;
        for tag in replaced
            .iter()
            .map(String::as_str)
            .chain(said.iter().flat_map(|l| tags(l)))
        {
            assert!(
                !memory.summary.contains(&format!("⟦{tag}⟧")),
                "the replaced memory's {tag} reached the imported summary"
            );
        }
        let handed_back: Vec<_> = self.h.inbox::<NpcReplyFailed>()[failed..]
            .iter()
            .filter(|f| f.npc == id)
            .map(|f| (f.error.clone(), f.unrecorded_line.clone()))
            .collect();
        let ended: Vec<_> = said
            .iter()
            .enumerate()
            .map(|(i, line)| (ReplyError::Cancelled, (i > 0).then(|| line.clone())))
            .collect();
        assert_eq!(
            handed_back, ended,
            "the line in flight ends, the lines waiting are handed back"
        );
        self.talks += ended.len();
    }

    fn others_kept(&self, npc: usize) {
        for other in (0..NPCS).filter(|&other| other != npc) {
            assert_eq!(
                self.log(other),
                self.before[other],
                "an import into NPC {npc} changed NPC {other}'s log"
            );
        }
    }
}
