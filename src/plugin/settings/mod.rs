//! Plugin-wide settings that games may change at run time.

use std::time::Duration;

use bevy::prelude::*;

mod schedule;

pub use schedule::ScheduleSettings;

use super::npc::TierMemory;
use crate::memory::{LoreLimits, MemoryConfig};

/// Settings of the whole plugin. Change the resource at run time to affect NPCs
/// whose memory is created afterwards; personas may override the memory sizes.
#[derive(Resource, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Resource, Debug, PartialEq, Default, Clone)]
pub struct NpcMemorySettings {
    /// Window, threshold and limits for NPCs whose persona does not set them.
    pub memory: MemoryConfig,
    /// Player lines that may wait while an NPC is still answering. One more gets a
    /// [`ReplyError::Busy`](crate::prelude::ReplyError::Busy) failure. At most
    /// [`MAX_SAVED_QUEUED_LINES`](crate::saves::MAX_SAVED_QUEUED_LINES), what a save
    /// holds; a larger value acts as that.
    pub max_queued_lines: usize,
    /// Longest player line accepted, in characters.
    pub max_line_chars: usize,
    /// Longest reply kept, in characters. A runaway reply is cut here before it
    /// enters memory, where it would be resent with every later prompt and saved
    /// forever; streamed pieces stop at the same point, and telemetry reports the
    /// cut (`TelemetryEvent::ReplyCut`).
    pub max_reply_chars: usize,
    /// How long a backend request may take, retries included, before it fails with
    /// a timeout. Time spent waiting for a concurrency slot does not count.
    pub request_timeout: Duration,
    /// Requests that may run at once over all NPCs; more wait their turn in the
    /// scheduler's order (replies first).
    pub max_concurrent_requests: usize,
    /// Most main-thread time per frame spent applying finished requests. A burst of
    /// replies beyond it is applied over the next frames, so it never stalls one.
    pub collect_budget: Duration,
    /// How much lore one reply may carry when the NPC has no prompt budget; under
    /// a budget, lore is also held to its share of it.
    pub lore: LoreLimits,
    /// When requests go: a per-minute budget, the pause after rate limits, and
    /// how long background NPCs' summaries wait. Unlimited by default.
    pub schedule: ScheduleSettings,
    /// Memory per tier for every NPC, e.g. a larger summary threshold and no
    /// pinned facts in the background, so a crowd costs less without editing each
    /// persona. A persona's own `tiers` entry replaces the plugin's for that tier.
    /// A tier that does not fit a persona (a threshold above its window's hard
    /// cap) is left out for that persona, with a warning.
    pub tiers: TierMemory,
    /// Rounds of actions one turn may take: each round is a reply that calls
    /// actions and the follow-up request that tells the model what came of them.
    /// Past it, requests offer no actions, so the NPC has to answer in words.
    pub max_action_rounds: u32,
    /// How long the game may take to answer an action whose handler answers
    /// later ([`ActionReply::Later`](crate::memory::ActionReply::Later)); past it
    /// the action failed, "timed out", and the NPC goes on.
    pub action_timeout: Duration,
}

impl Default for NpcMemorySettings {
    fn default() -> Self {
        Self {
            memory: MemoryConfig::default(),
            max_queued_lines: 4,
            max_line_chars: 4000,
            max_reply_chars: 4000,
            request_timeout: Duration::from_secs(60),
            max_concurrent_requests: 4,
            collect_budget: Duration::from_micros(500),
            lore: LoreLimits::default(),
            schedule: ScheduleSettings::default(),
            tiers: TierMemory::default(),
            max_action_rounds: 2,
            action_timeout: Duration::from_secs(10),
        }
    }
}
