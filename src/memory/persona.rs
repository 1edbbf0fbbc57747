//! What an NPC is before any memory is added, and the wording its memory is asked
//! for and shown in: the persona text, the summary label, the summarizer's
//! instructions, in English or Chinese.

use std::sync::Arc;

use bevy::reflect::{Reflect, std_traits::ReflectDefault};
use serde::{Deserialize, Serialize};

/// What an NPC is, before any memory is added: its name and its system prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonaPrompt {
    /// The NPC's display name, used in summary transcripts.
    pub name: String,
    /// The persona text. Memory is appended to it; it is never overwritten.
    pub text: Arc<str>,
    /// The wording of summary requests and of the summary label.
    pub style: SummaryStyle,
}

/// Language of the built-in wording for summaries and labels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
pub enum PromptLanguage {
    /// English wording.
    #[default]
    English,
    /// Chinese wording, as in the original ECHO-7 game.
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

    /// Chinese wording, as in the original ECHO-7 game.
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
