//! The numbers and wording that shape one NPC's memory.

use serde::{Deserialize, Serialize};

use super::assembly::PromptBudget;
use super::facts::FactsConfig;
use super::forgetting::ForgettingPolicy;
use super::recall::RecallConfig;
use super::segments::SegmentConfig;

/// Sizes and limits of one NPC's memory.
///
/// The defaults follow the seed: a 20-message window (system prompt included) and a
/// summary every half window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// What this memory adds to the seed's design. All off by default.
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

/// The parts of memory beyond the seed's window and rolling summary. Each can be
/// switched on alone; [`MemoryFeatures::layered`] switches on all of them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// are exactly the seed's: the persona, the labelled summary, the window.
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

/// Language of the built-in wording for summaries and labels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PromptLanguage {
    /// English wording.
    #[default]
    English,
    /// Chinese wording, as in the seed.
    Chinese,
}

/// The wording used to ask for a summary and to inject it into the system prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SummaryStyle {
    /// Put before the summary in the system prompt, e.g. `"[Previously]: "`.
    pub label: String,
    /// The summarizer's instruction, sent as the summary request's system message.
    pub instruction: String,
    /// Heading of the previous summary inside the summary request.
    pub previous_heading: String,
    /// Shown instead of the previous summary when there is none yet.
    pub no_previous: String,
    /// Heading of the transcript inside the summary request.
    pub transcript_heading: String,
    /// How the player is named in transcripts.
    pub player_name: String,
    /// The language of the built-in section headings and instructions for segments,
    /// compaction and facts.
    #[serde(default)]
    pub language: PromptLanguage,
}

impl SummaryStyle {
    /// The built-in wording for a language.
    pub fn for_language(language: PromptLanguage) -> Self {
        match language {
            PromptLanguage::English => Self::english(),
            PromptLanguage::Chinese => Self::chinese(),
        }
    }

    /// English wording.
    pub fn english() -> Self {
        Self {
            label: "[Previously]: ".into(),
            instruction: "Condense the conversation below into the key information needed to \
                continue it later. Write in the third person, keep it short, and keep only \
                stable facts and the current goals: names, goals, promises and advice given. \
                Merge it with the previous summary. Reply with the summary only."
                .into(),
            previous_heading: "Previous summary:".into(),
            no_previous: "(none)".into(),
            transcript_heading: "Conversation:".into(),
            player_name: "Player".into(),
            language: PromptLanguage::English,
        }
    }

    /// Chinese wording, taken from the seed.
    pub fn chinese() -> Self {
        Self {
            label: "[前情提要]: ".into(),
            instruction: "请将以下对话提炼为可用于后续对话的关键信息，要求：用第三人称、尽量短、\
                只保留稳定事实与当前目标。请与之前的总结合并，只输出总结本身。"
                .into(),
            previous_heading: "之前的总结：".into(),
            no_previous: "（无）".into(),
            transcript_heading: "对话：".into(),
            player_name: "玩家".into(),
            language: PromptLanguage::Chinese,
        }
    }
}

impl SummaryStyle {
    /// The instruction for one summary segment: only the new messages, no merging.
    pub fn segment_instruction(&self) -> &'static str {
        match self.language {
            PromptLanguage::English => {
                "Summarize only the conversation below in the third person, in \
                at most three short sentences. Keep names, goals, promises, constraints and \
                numbers exactly. Reply with the summary only."
            }
            PromptLanguage::Chinese => {
                "请只总结下面这段对话，用第三人称，不超过三句短句。\
                名字、目标、承诺、限制和数字必须原样保留。只输出总结本身。"
            }
        }
    }

    /// The instruction for compacting several old segments into one.
    pub fn compaction_instruction(&self) -> &'static str {
        match self.language {
            PromptLanguage::English => {
                "Merge the summaries below, oldest first, into one shorter \
                summary in the third person. Keep names, goals, promises, constraints and \
                numbers; drop small talk. Reply with the summary only."
            }
            PromptLanguage::Chinese => {
                "请把下面按时间排列的几段总结合并成一段更短的总结，用第三人称。\
                保留名字、目标、承诺、限制和数字，删去闲聊。只输出总结本身。"
            }
        }
    }

    /// The heading of the summaries inside a compaction request.
    pub fn segments_heading(&self) -> &'static str {
        match self.language {
            PromptLanguage::English => "Summaries:",
            PromptLanguage::Chinese => "总结：",
        }
    }
}

impl Default for SummaryStyle {
    fn default() -> Self {
        Self::english()
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
