//! Game events in, memory changes and requests out: each event is one call into
//! the memory core, whose answer says which requests to send and what to report.
//!
//! - `turns.rs`: the [`Dialogue`] system parameter; a player line is said, queued
//!   or answered; NPC-wide changes.
//! - `dispatch.rs`: requests leave; `results.rs`: replies and summaries come back.
//! - `actions.rs`: the actions a reply called enter memory; `interrupt.rs`: a turn
//!   is cut short.
//! - `knowledge.rs`: events, tellings and privacy marks enter memory.
//! - `settle.rs`: what a load, restore or import leaves for turns.
//! - `outbox.rs`: what the game hears, as messages and entity events.

mod actions;
mod dispatch;
mod interrupt;
mod knowledge;
mod outbox;
mod results;
mod settle;
mod turns;

pub(crate) use knowledge::take_knowledge;
pub(crate) use settle::{hand_back_on_exit, settle_io, settle_loads};
pub(crate) use turns::Dialogue;
