//! Seeing memory work: a report per NPC (always available, engine data only), the
//! egui panel that shows it live (feature `debug-ui`). Telemetry and usage figures
//! are in [`telemetry`](crate::telemetry).

mod action_rows;
#[cfg(feature = "debug-ui")]
mod actions;
#[cfg(feature = "debug-ui")]
mod knowledge;
#[cfg(feature = "debug-ui")]
mod layered;
#[cfg(feature = "debug-ui")]
mod message_row;
#[cfg(feature = "debug-ui")]
mod panel;
mod report;
#[cfg(feature = "debug-ui")]
mod schedule;
#[cfg(feature = "debug-ui")]
mod section;

pub use action_rows::ActionRow;
#[cfg(feature = "debug-ui")]
pub use panel::{NpcMemoryDebugPlugin, NpcMemoryDebugState};
pub use report::{
    FactRow, KnowledgeRows, MessageRow, NpcMemoryReport, RecalledRow, SectionRow, SegmentRow,
    SummaryRow,
};
#[cfg(feature = "debug-ui")]
pub use section::DebugSection;
