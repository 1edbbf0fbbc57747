#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod llm;
mod memory;
mod plugin;

pub use llm::*;
pub use memory::*;
pub use plugin::*;

/// The types most games need.
pub mod prelude {
    pub use crate::llm::{
        BackendError, ChatBackend, ChatRequest, ChatResponse, OfflineBackend, Purpose,
        ScriptedBackend,
    };
    pub use crate::memory::{MemoryConfig, NpcId, PromptLanguage, Role};
    pub use crate::plugin::{
        ChatLogs, ClearNpcMemory, ContextMemoryManager, Conversations, Npc, NpcMemoryDegraded,
        NpcMemoryPlugin, NpcMemorySettings, NpcMemorySystems, NpcReplied, NpcReplyDelta,
        NpcReplyFailed, NpcSummaryUpdated, Persona, ReplyError, RollingWindows, SummarizeNow,
        TalkToNpc,
    };
}
