//! The plain per-NPC types the rest of the plugin shares: what an NPC is doing,
//! its tier and what memory each tier gets, what its persona switches on, and the
//! ids of its turns. Nothing here uses another part of the plugin, so every part
//! may use it.

mod features;
mod state;
mod tier;
mod tiers;
mod turn;

pub use features::PersonaFeatures;
pub use state::NpcState;
pub use tier::MemoryTier;
pub use tiers::{TierMemory, TierOverrides};
pub(crate) use turn::TurnCounter;
pub use turn::TurnId;
