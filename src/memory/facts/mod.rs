//! Pinned facts, the working memory: a few named fields (the player's name, the
//! current goal, hard constraints, preferences, promises) that are never summarized
//! away and always go into the system prompt.
//!
//! - [`PinnedFacts`] keeps one active value per [`FactKey`], updated field by field,
//!   with a short history of outdated and contradicted values.
//! - [`parse_summary_reply`] reads the summarizer's strict JSON reply, which carries
//!   the new summary and [`FactUpdate`]s; [`facts_instruction`] asks for it and
//!   [`indexed_transcript`] gives it log indices to cite.
//! - [`PinnedFacts::render`] writes the prompt section, values quoted as data.
//!
//! The game's word wins: [`PinnedFacts::set_by_game`] replaces anything, and the
//! model cannot replace or retire a value the game set. Facts other NPCs tell
//! ([`PinnedFacts::hear`]) rank below first-hand ones, nearer hearsay above
//! farther ([`FactSource::precedence`]); a value that loses is kept in history.

mod config;
mod error;
mod fact;
mod key;
mod prompt;
mod render;
mod store;
mod update;

#[cfg(test)]
mod tests;

pub use config::{FactLimits, FactsConfig};
pub use error::FactsError;
pub use fact::{Fact, FactChange, FactChangeKind, FactSource, FactStatus, HeardFact};
pub use key::{FactCategory, FactKey, FactKeyError};
pub use store::PinnedFacts;

pub(crate) use prompt::{
    facts_instruction, indexed_transcript, notes_instruction, speakers_instruction,
};
#[cfg(test)]
use render::{FACTS_CLOSE, FACTS_OPEN, facts_header};
pub(crate) use store::{MAX_EVIDENCE, check_saved_fact};
#[cfg(test)]
use update::FactAction;
#[cfg(test)]
use update::SummaryReply;
pub(crate) use update::{FactUpdate, parse_summary_reply};
