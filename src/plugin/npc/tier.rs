//! How urgent an NPC's memory work is: set by the game per NPC, used by the
//! scheduler to order summaries when requests are scarce.

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

/// How urgent an NPC's background memory work (summaries) is, when requests are
/// scarce. Replies the player waits for always go before any summary, whatever the
/// tier.
///
/// Put it on an NPC entity next to [`Npc`](crate::prelude::Npc), or send
/// [`SetMemoryTier`](crate::schedule::SetMemoryTier) (memory outlives entities), or
/// give the persona a default (`tier: Some(Background)` in a `*.npc.ron`). Without
/// any, the NPC is [`Nearby`](Self::Nearby) (see
/// [`ScheduleSettings::default_tier`](crate::schedule::ScheduleSettings::default_tier)).
///
/// The component is immutable, so a change is an insert and costs nothing per frame
/// for NPCs whose tier stays the same: `commands.entity(npc).insert(MemoryTier::Foreground)`.
///
/// A persona can also size memory per tier ([`TierMemory`](crate::schedule::TierMemory)):
/// `tiers: (background: (summary_threshold: 16, features: (pinned_facts: false)))`
/// makes the NPC summarize less often and keep no facts while it is in the
/// background. The NPC is reconfigured once whenever its tier changes to one whose
/// settings differ; nothing unsummarized leaves its window.
#[derive(
    Component, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Reflect, Serialize, Deserialize,
)]
#[component(immutable)]
#[type_path = "bevy_npc_memory"]
#[reflect(Component, Debug, PartialEq, Default, Clone)]
pub enum MemoryTier {
    /// The NPC the player is talking to now: its summaries go first.
    Foreground,
    /// Recently talked to, or close by.
    #[default]
    Nearby,
    /// Everyone else: summaries wait (see
    /// [`ScheduleSettings::background_delay`](crate::schedule::ScheduleSettings::background_delay))
    /// and then cover everything that piled up meanwhile, in one request.
    Background,
}

impl MemoryTier {
    /// Greater is more urgent.
    pub(crate) fn urgency(self) -> u8 {
        match self {
            MemoryTier::Foreground => 2,
            MemoryTier::Nearby => 1,
            MemoryTier::Background => 0,
        }
    }
}
