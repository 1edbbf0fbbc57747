//! The engine-agnostic memory core: plain Rust, no Bevy.
//!
//! - [`ChatLog`] is L2, the full log.
//! - [`RollingWindow`] is L1, the recent messages sent with each request.
//! - [`ContextMemory`] is L3, the summary folded into the system prompt.
//!
//! Beyond basic mode, each switched on in [`MemoryFeatures`]: recall of raw old
//! messages from L2, pinned facts, segmented summaries, a prompt budget, and
//! forgetting. One function assembles every reply prompt from these sections.
//! [`LoreStore`] holds world lore shared by every NPC, scoped to the world, a
//! group or one NPC, which reaches a prompt as [`SharedKnowledge`].
//!
//! [`LayersMut`] is the only way to change them, so they never disagree. A line
//! said to the NPC is a [`Line`]: plain text from the player, or words with their
//! speaker, privacy and the lore found for them, all passed to one call,
//! [`LayersMut::say`].

mod action;
mod assembly;
mod calendar;
mod clock;
mod config;
mod context;
mod conversation;
mod facts;
mod forgetting;
mod invalid_field;
mod line;
mod log;
mod lore;
mod message;
mod notes;
mod npc;
mod npc_id;
mod origin;
mod parts;
mod persona;
mod privacy;
mod quote;
pub(crate) mod recall;
mod reply_fields;
pub(crate) use quote::quote;
mod segments;
mod speaker;
mod summary;
mod text;
mod tokens;
mod validation;
mod window;

#[cfg(test)]
mod tests;

/// The limits memory keeps to: longest ids, names and texts, most entries, largest
/// settings. Anything the game or a save gives past them is shortened where that
/// is safe, or refused with a clear error; the docs of each say which.
pub mod limits {
    pub use super::action::{MAX_ACTION_NAME_CHARS, MAX_ARGUMENTS_CHARS, MAX_CALL_ID_CHARS};
    pub use super::context::MAX_STORED_REASON_CHARS;
    pub use super::conversation::MAX_CONVERSATION_TURNS;
    pub use super::lore::{
        MAX_LORE_ENTRIES, MAX_LORE_ID_CHARS, MAX_LORE_KEY_CHARS, MAX_LORE_KEYS, MAX_LORE_TEXT_CHARS,
    };
    pub use super::npc::MAX_TOLD_PER_QUERY;
    pub use super::npc_id::MAX_NPC_ID_CHARS;
    pub use super::origin::MAX_CHAIN;
    pub use super::recall::{MAX_NOTE_CHARS, MAX_NOTE_LINES, MAX_NOTES, MAX_NOTES_PER_SUMMARY};
    pub use super::reply_fields::{
        MAX_REPLY_FIELD_CHARS, MAX_REPLY_FIELD_VALUES, MAX_REPLY_FIELDS, MAX_REPLY_TAG_CHARS,
    };
    pub use super::speaker::{MAX_SPEAKER_ID_CHARS, MAX_SPEAKER_NAME_CHARS};
    pub use super::validation::{
        MAX_BUDGET_TOKENS, MAX_FACT_SETTING, MAX_FOLLOW_UP_GROWTH, MAX_RECALL_MESSAGES,
        MAX_SEGMENT_LEVEL, MAX_SUMMARY_CHARS_LIMIT, MAX_WINDOW_MESSAGES,
    };
}

pub use action::{
    ActionCall, ActionNote, ActionOutcome, ActionReply, ActionSpec, ActionStep, NpcAction,
    is_action_name,
};
pub use assembly::{AssembledPrompt, RecalledMessage, SectionKind, SectionReport};
pub use calendar::Calendar;
pub use clock::{DateFormat, Now};
pub use config::{
    FollowUps, MemoryConfig, MemoryFeatures, PromptBudget, SectionShares, SharingPolicy, ShortLogs,
};
pub use context::{
    ContextMemory, Degradation, SummaryJobId, SummaryKind, SummaryRecord, SummaryTrigger,
};
pub use conversation::{
    ConversationRules, ConversationStop, TurnTaking, line_similarity, opening_cue,
};
pub use facts::{
    Fact, FactCategory, FactChange, FactChangeKind, FactKey, FactKeyError, FactLimits, FactSource,
    FactStatus, FactsConfig, FactsError, HeardFact, PinnedFacts,
};
pub use forgetting::{ForgettingPolicy, ForgettingReport};
pub use invalid_field::InvalidField;
pub use line::Line;
pub use log::ChatLog;
pub use lore::{
    LoreChanges, LoreEntry, LoreHit, LoreLimits, LoreReader, LoreScope, LoreStore, SharedKnowledge,
};
pub use message::{ChatMessage, LogIndex, PromptMessage, Role};
pub use npc::{
    ActionRecord, ActionsRecorded, LayersMut, Noted, NpcMemory, Reconfigured, Recorded, ReplyInput,
    ReplyRecorded, Told, ToldFact, Turn, preview_prompt,
};
pub use npc_id::NpcId;
pub use origin::{Hearsay, Origin, Source, Teller};
pub use parts::MemoryParts;
pub use persona::{PersonaPrompt, PromptLanguage, SummaryStyle};
pub use recall::{
    LineNote, NoteError, RecallConfig, RecallHit, RecallIndex, RecallQuery, RecallReason,
    RecallState,
};
pub use reply_fields::{ReplyFieldSet, ReplyFields, ReplyTagStream, check_reply_field};
pub use segments::{SegmentConfig, SegmentPriority, Segments, SummarySegment};
pub use speaker::{SpeakerError, SpeakerId};
pub use summary::{SummaryInput, SummaryJob, SummaryOutcome, SummaryUpdate};
pub use tokens::{estimate_prompt_tokens, estimate_tokens};
pub use window::RollingWindow;

pub(crate) use action::ArgumentSchema;
pub(crate) use assembly::player_label_if_mixed;
#[cfg(test)]
pub(crate) use facts::parse_summary_reply;
pub(crate) use text::{CaselessPrefix, first_chars, shorten_to_chars};
