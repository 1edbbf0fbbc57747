//! The scheduler's knobs, part of [`NpcMemorySettings`](crate::prelude::NpcMemorySettings).

use std::time::Duration;

use bevy::prelude::*;

use crate::plugin::npc::MemoryTier;

/// When requests are sent: a global budget, the pause after rate limits, and how
/// long background summaries wait. Part of
/// [`NpcMemorySettings::schedule`](crate::prelude::NpcMemorySettings::schedule);
/// changes at run time apply from the next frame.
///
/// ```
/// use std::time::Duration;
/// use bevy_npc_memory::prelude::*;
///
/// let mut settings = NpcMemorySettings::default();
/// // The provider's free tier: 20 requests and 40 000 tokens a minute.
/// settings.schedule.requests_per_minute = Some(20);
/// settings.schedule.tokens_per_minute = Some(40_000);
/// settings.schedule.background_delay = Duration::from_secs(60);
/// let plugin = NpcMemoryPlugin::default().with_settings(settings);
/// # drop(plugin);
/// ```
#[derive(Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
pub struct ScheduleSettings {
    /// Most requests sent in any 60 seconds, over all NPCs. `None`: no limit.
    pub requests_per_minute: Option<u32>,
    /// Most tokens in any 60 seconds. `None`: no limit. A request counts its
    /// estimated prompt when it is sent; when it comes back with the provider's
    /// usage, its prompt and completion tokens replace the estimate, since that is
    /// what providers count against such a limit. A single request larger than
    /// the limit goes alone into an empty minute.
    pub tokens_per_minute: Option<u32>,
    /// The share of each per-minute budget that summaries leave to replies, so a
    /// reply the player waits for finds room even while background summaries have
    /// a backlog. With 40 requests a minute and the default 0.25, summaries send at
    /// most 30 in any 60 seconds and replies may use all 40. At 0, summaries may
    /// spend the whole budget, and a reply then waits until the oldest request of
    /// the minute ages out, up to a minute. Summaries always keep at least one
    /// request (and token) a minute, however small the budget. The one summary
    /// that may use the reserve is a [`Foreground`](MemoryTier::Foreground) NPC's
    /// whose window has used half its room to the hard cap: that conversation
    /// would otherwise lose lines from its prompt while its replies kept coming.
    pub reply_reserve: f32,
    /// How long a [`Background`](MemoryTier::Background) NPC's summary waits before
    /// it competes for a request. Lines that arrive meanwhile join it, so one
    /// request covers them all. It goes at once when the NPC's tier rises, and at
    /// once and before other summaries when the NPC's window has used half the
    /// room between its size and its hard cap.
    pub background_delay: Duration,
    /// The tier of NPCs for which neither the game nor the persona sets one.
    pub default_tier: MemoryTier,
    /// The first pause after a rate limit (HTTP 429) without `Retry-After`; it
    /// doubles with each rate limit in a row. Every request pauses, including
    /// after a 429 the HTTP backend retries itself (it reports it through
    /// `Progress::rate_limited`), so other NPCs do not meet the same limit.
    pub first_backoff: Duration,
    /// The longest pause after a rate limit, `Retry-After` included.
    pub max_backoff: Duration,
    /// How often one request is sent again after a rate limit before it fails.
    /// The HTTP backend also retries a 429 itself first (`RetryPolicy`); this is
    /// for the rate limits that are left, and it paces every request, not one.
    pub rate_limit_retries: u32,
}

impl Default for ScheduleSettings {
    fn default() -> Self {
        Self {
            requests_per_minute: None,
            tokens_per_minute: None,
            reply_reserve: 0.25,
            background_delay: Duration::from_secs(30),
            default_tier: MemoryTier::Nearby,
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            rate_limit_retries: 8,
        }
    }
}
