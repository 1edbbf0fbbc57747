//! The numbers and wording that shape one NPC's memory.

use serde::{Deserialize, Serialize};

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
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            max_context_window: 20,
            summary_threshold: None,
            hard_cap: None,
            max_summary_chars: 4000,
        }
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
            .unwrap_or(2 * self.window())
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
