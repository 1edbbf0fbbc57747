//! The memory debug panel: a report per NPC (always available, engine data only)
//! and, with the `debug-ui` feature, an egui window that shows it live.

#[cfg(feature = "debug-ui")]
mod layered;
#[cfg(feature = "debug-ui")]
mod panel;
mod report;

#[cfg(feature = "debug-ui")]
pub use panel::{NpcMemoryDebugPlugin, NpcMemoryDebugState};
pub use report::{
    FactRow, MessageRow, NpcMemoryReport, RecalledRow, SectionRow, SegmentRow, SummaryRow,
};
