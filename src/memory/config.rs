//! The numbers and wording that shape one NPC's memory.

use bevy::reflect::{Reflect, std_traits::ReflectDefault};
use serde::{Deserialize, Serialize};

use super::facts::FactsConfig;
use super::forgetting::ForgettingPolicy;
use super::recall::RecallConfig;
use super::segments::SegmentConfig;

/// Sizes and limits of one NPC's memory.
///
/// The defaults are the three-layer design's: a 20-message window (system prompt
/// included) and a summary every half window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(default)]
pub struct MemoryConfig {
    /// Messages in the rolling window (L1), the system prompt included. At least 2.
    pub max_context_window: usize,
    /// Messages between two summaries. `None` means `max(1, max_context_window / 2)`.
    pub summary_threshold: Option<usize>,
    /// Most messages the window may hold while summaries are late or failing.
    /// `None` means twice the window.
    pub hard_cap: Option<usize>,
    /// Longest summary accepted, in characters. Longer replies are rejected as malformed.
    pub max_summary_chars: usize,
    /// What this memory adds to basic mode. All off by default.
    pub features: MemoryFeatures,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            max_context_window: 20,
            summary_threshold: None,
            hard_cap: None,
            max_summary_chars: 4000,
            features: MemoryFeatures::default(),
        }
    }
}

/// The parts of memory beyond basic mode's window and rolling summary. Each can be
/// switched on alone; [`MemoryFeatures::layered`] switches on all of them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(default)]
pub struct MemoryFeatures {
    /// Recall of raw old messages from the full log.
    pub recall: RecallConfig,
    /// Pinned facts, never compressed, updated field by field.
    pub facts: FactsConfig,
    /// One summary segment per fold instead of one rolling summary.
    pub segments: SegmentConfig,
    /// A token budget for reply prompts.
    pub budget: PromptBudget,
    /// Forgetting of old, unimportant and unused memories.
    pub forgetting: ForgettingPolicy,
    /// What the NPC passes on when another NPC is told what it knows.
    pub sharing: SharingPolicy,
}

/// What an NPC passes on when the game has it tell another NPC what it knows
/// (private lines never, whatever this says). Everything by default; a
/// tight-lipped guard might pass on what it saw but not what it heard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(default, deny_unknown_fields)]
pub struct SharingPolicy {
    /// Lines of its conversations, the player's and its own.
    pub said: bool,
    /// Events it saw.
    pub seen: bool,
    /// What other NPCs told it.
    pub heard: bool,
}

impl Default for SharingPolicy {
    fn default() -> Self {
        Self {
            said: true,
            seen: true,
            heard: true,
        }
    }
}

impl SharingPolicy {
    /// Whether an entry of this origin may be passed on.
    pub fn allows(&self, origin: &super::origin::Origin) -> bool {
        use super::origin::Origin;
        match origin {
            Origin::Said => self.said,
            Origin::SaidPrivately => false,
            Origin::Witnessed { .. } => self.seen,
            Origin::Heard(_) => self.heard,
            // What an NPC did is told by the game, as a witnessed event, if at all.
            Origin::Acted(_) => false,
        }
    }
}

impl MemoryFeatures {
    /// Everything on: recall with neighbours, pinned facts, segmented summaries and
    /// a prompt budget of `budget_tokens`. Forgetting stays off; it is for games
    /// that run for thousands of messages.
    pub fn layered(budget_tokens: usize) -> Self {
        let mut features = Self::default();
        features.recall.enabled = true;
        features.facts.enabled = true;
        features.segments.enabled = true;
        features.budget.max_tokens = Some(budget_tokens);
        features
    }

    /// Whether any feature changes how prompts are built. When none does, prompts
    /// are exactly the original design's: the persona, the labelled summary, the window.
    pub fn any(&self) -> bool {
        self.recall.enabled
            || self.facts.enabled
            || self.segments.enabled
            || self.budget.max_tokens.is_some()
    }
}

impl MemoryConfig {
    /// A config with the given window and the default threshold.
    pub fn with_window(max_context_window: usize) -> Self {
        Self {
            max_context_window,
            ..Self::default()
        }
    }

    /// The window size in force (never below 2: the system prompt and one message).
    pub fn window(&self) -> usize {
        self.max_context_window.max(2)
    }

    /// The summary threshold in force.
    pub fn threshold(&self) -> usize {
        self.summary_threshold.unwrap_or(self.window() / 2).max(1)
    }

    /// The hard cap in force (never below the window).
    pub fn hard_cap(&self) -> usize {
        self.hard_cap
            .unwrap_or(self.window().saturating_mul(2))
            .max(self.window())
    }
}

/// The token budget of a reply prompt and how its flexible part is shared.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(default)]
pub struct PromptBudget {
    /// Most estimated tokens per reply prompt. `None` sends every section whole.
    pub max_tokens: Option<usize>,
    /// How the room left after the persona, the facts and the uncovered messages is
    /// shared before leftovers are handed on.
    pub shares: SectionShares,
    /// How the lines after the first of a conversation reuse the prompt before
    /// them, so a provider's prompt cache and a local model's KV cache can.
    pub follow_ups: FollowUps,
    /// What a log that still fits `max_tokens` is sent as.
    pub short_logs: ShortLogs,
}

/// How a layered NPC treats a log short enough to fit its whole prompt budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
pub enum ShortLogs {
    /// While the persona, the pinned facts and every message fit the budget, the
    /// log is sent as it is, without summaries or recalled lines (they could only
    /// repeat it). Until the first fold it is sent whole a little further, to
    /// half of [`FollowUps::growth`] past the budget (2,500 tokens of a 2,000
    /// budget growing to 3,000), as a conversation's prompt would grow anyway.
    /// Folds wait until then, saving their requests, and start half the growth
    /// before the conversation's rebuild that needs them; the window's hard cap
    /// waits too, while the prompt holds every message and while those first
    /// folds cover what was sent whole. Without follow-ups (no growth) the next
    /// prompt past the budget is layered at once, so folds also start once the
    /// lines no summary covers near the window's hard cap. Pinned facts the
    /// summarizer would find, and gossip about them, wait as well.
    #[default]
    SentWhole,
    /// Every prompt is layered and summaries fold every threshold from the first
    /// lines: for games that need pinned facts, and gossip about them, at once.
    Layered,
}

/// Follow-up lines: within a conversation, each reply prompt is the last one with
/// what came since appended (the NPC's reply, then lines found for the newest
/// line, then the line itself), so all of the last prompt is a cached prefix. A
/// prompt is built afresh, within [`PromptBudget::max_tokens`], for an NPC's first
/// line and the first after a load or a clear, when the persona, the settings or a
/// logged entry changed, and when appending would pass the budget plus its growth.
/// A prompt rebuilt because the conversation outgrew it is built within
/// [`refill`](Self::refill) of the budget, so it can grow again for a while before
/// the next rebuild, which a cache cannot serve. Pinned facts that changed are
/// appended under a heading that says they replace the ones above. Summaries that arrive meanwhile wait for the next fresh prompt:
/// the lines they cover are still in the prompt word for word.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(default)]
pub struct FollowUps {
    /// How far a follow-up's prompt may grow past `max_tokens`, as a share of it
    /// (0.5: a 2,000-token budget lets follow-ups reach 3,000). Zero builds every
    /// prompt afresh and holds each to the budget.
    pub growth: f32,
    /// The share of the recall room a follow-up line's own recalled lines may
    /// take; what earlier lines recalled stays in the prompt as well.
    pub recall: f32,
    /// A line this many game seconds after the NPC's last message is the first of
    /// a new conversation: it recalls with the whole recall share, as a fresh
    /// prompt would, appended when that fits and afresh when it does not.
    pub pause_secs: f64,
    /// The share of `max_tokens` a prompt rebuilt mid-conversation is built
    /// within, after appending would have passed the cap (0.6: 1,200 of 2,000
    /// tokens). A rebuild is a cache miss of the whole prompt; a smaller one grows
    /// for longer before the next. The first line of a conversation, and a line
    /// after a pause that cannot be appended, are built within the whole budget.
    pub refill: f32,
}

impl Default for FollowUps {
    fn default() -> Self {
        Self {
            growth: 0.5,
            recall: 0.1,
            pause_secs: 300.0,
            refill: 0.6,
        }
    }
}

impl PromptBudget {
    /// The most a follow-up prompt may hold: the budget plus its growth; `None`
    /// when follow-ups are off or there is no budget.
    pub fn follow_up_cap(&self) -> Option<usize> {
        let max = self.max_tokens?;
        let growth = self.follow_ups.growth;
        (growth > 0.0).then(|| max.saturating_add((max as f64 * f64::from(growth)) as usize))
    }
}

/// Shares of the flexible room. They need not add up to one: each is a first claim,
/// and leftovers go to the recalled messages, then the window, then the summaries.
/// Lore is served first and is held to its share: what it leaves is shared by the
/// others, but it never takes their leftovers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(default)]
pub struct SectionShares {
    /// The covered, most recent messages of the window.
    pub window: f32,
    /// Summaries.
    pub summaries: f32,
    /// Recalled messages.
    pub recall: f32,
    /// Lore entries that match the conversation (at most this share, never more).
    pub lore: f32,
}

impl Default for SectionShares {
    fn default() -> Self {
        Self {
            window: 0.2,
            summaries: 0.1,
            recall: 0.7,
            lore: 0.15,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_defaults_to_half_the_window() {
        assert_eq!(MemoryConfig::with_window(20).threshold(), 10);
        assert_eq!(MemoryConfig::with_window(4).threshold(), 2);
        assert_eq!(MemoryConfig::with_window(3).threshold(), 1);
        assert_eq!(MemoryConfig::with_window(0).threshold(), 1);
    }

    #[test]
    fn explicit_threshold_wins() {
        let config = MemoryConfig {
            summary_threshold: Some(7),
            ..MemoryConfig::with_window(4)
        };
        assert_eq!(config.threshold(), 7);
    }

    #[test]
    fn hard_cap_defaults_to_twice_the_window_and_never_undercuts_it() {
        assert_eq!(MemoryConfig::with_window(4).hard_cap(), 8);
        let config = MemoryConfig {
            hard_cap: Some(2),
            ..MemoryConfig::with_window(4)
        };
        assert_eq!(config.hard_cap(), 4);
    }
}
