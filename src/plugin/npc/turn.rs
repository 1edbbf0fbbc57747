//! Turn ids: one per player line the plugin accepted, so a game can tell which
//! started, streamed and finished messages belong to which line.

use std::fmt;

use bevy::reflect::{Reflect, ReflectDeserialize, ReflectSerialize};
use serde::{Deserialize, Serialize};

/// Identifies one accepted player line and everything the NPC does to answer it:
/// its [`NpcReplyStarted`](crate::dialogue::NpcReplyStarted), every
/// [`NpcReplyDelta`](crate::dialogue::NpcReplyDelta), and the
/// [`NpcReplied`](crate::prelude::NpcReplied) or
/// [`NpcReplyFailed`](crate::prelude::NpcReplyFailed) that ends it.
///
/// Ids are unique within one app and count up in the order lines are accepted.
/// A line that waits in an NPC's queue keeps the id it got when it was accepted.
/// They are not stored in saves: lines restored from a save get new ids.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Reflect,
)]
#[type_path = "bevy_npc_memory"]
#[reflect(Debug, PartialEq, Hash, Clone, Serialize, Deserialize)]
pub struct TurnId(u64);

impl TurnId {
    /// The id as a number, e.g. for a log line.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for TurnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "turn {}", self.0)
    }
}

/// Hands out turn ids, each once.
#[derive(Debug, Default)]
pub(crate) struct TurnCounter {
    next: u64,
}

impl TurnCounter {
    /// The id the next accepted line will get, without using it up.
    pub(crate) fn peek(&self) -> TurnId {
        TurnId(self.next)
    }

    /// Uses up the id [`peek`](Self::peek) returned.
    pub(crate) fn advance(&mut self) {
        self.next += 1;
    }

    /// A fresh id.
    pub(crate) fn take(&mut self) -> TurnId {
        let id = self.peek();
        self.advance();
        id
    }
}
