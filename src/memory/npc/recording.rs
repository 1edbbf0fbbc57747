//! Recording: every entry enters the full log (L2) here, stamped no earlier than
//! the one before it, with its origin and speaker; recall learns it and the window
//! (L1) trims. Lines, replies, events, hearsay and actions all pass through it.

use std::sync::Arc;

use super::super::clock::{Now, stamp};
use super::super::message::Role;
use super::super::origin::Origin;
use super::super::speaker::SpeakerId;
use super::{LayersMut, Noted, Recorded};

impl LayersMut<'_> {
    pub(super) fn note(&mut self, text: impl Into<Arc<str>>, origin: Origin, now: Now) -> Noted {
        self.context.dates = now.format;
        let recorded = self.record_from(Role::System, text, now.seconds, origin);
        Noted {
            index: recorded.index,
            overflow: recorded.overflow,
            summary: self.start_summary(),
        }
    }

    pub(super) fn record_from(
        &mut self,
        role: Role,
        content: impl Into<Arc<str>>,
        timestamp: f64,
        origin: Origin,
    ) -> Recorded {
        self.record_by(role, content, timestamp, origin, None)
    }

    pub(super) fn record_by(
        &mut self,
        role: Role,
        content: impl Into<Arc<str>>,
        timestamp: f64,
        origin: Origin,
        speaker: Option<SpeakerId>,
    ) -> Recorded {
        let timestamp = stamp(timestamp, self.last_stamp());
        let index = self
            .log
            .append_from(role, content, timestamp, origin, speaker);
        self.sync_recall();
        let overflow = self.trim();
        Recorded { index, overflow }
    }
}
