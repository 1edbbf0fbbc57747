//! What a telling passed on: `KnowledgeShared` names entries the listener's log
//! now holds, new in this step and heard from the teller.

use bevy_npc_memory::knowledge::KnowledgeShared;
use bevy_npc_memory::memory::Origin;
use bevy_npc_memory::prelude::*;

use super::play::Play;

impl Play {
    pub(super) fn check_shared(&self) {
        let logs = self.h.app.world().resource::<ChatLogs>();
        for told in &self.h.inbox::<KnowledgeShared>()[self.seen_before.shared..] {
            let to = self.ids.iter().position(|id| *id == told.to).expect("ours");
            if self.may_shrink[to] {
                continue;
            }
            let log = logs.get(&told.to).expect("the listener has a log");
            for &index in &told.learned {
                let entry = log
                    .get(index)
                    .unwrap_or_else(|| panic!("NPC {to} learned entry {index}, not in its log"));
                assert!(
                    index >= self.before[to].len() as u64,
                    "NPC {to} learned entry {index}, which it held before the step"
                );
                let teller = match &entry.origin {
                    Origin::Heard(hearsay) => hearsay.teller().map(|t| &t.id),
                    _ => None,
                };
                assert_eq!(
                    teller,
                    Some(&told.from),
                    "NPC {to} learned entry {index}, not heard from its teller: {entry:?}"
                );
            }
        }
    }
}
