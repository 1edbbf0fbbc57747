//! L1: the rolling window of recent messages sent with every reply request.
//!
//! # Trimming rule
//!
//! The window is the system prompt followed by a suffix of the chat log, and its
//! size counts the system prompt, as in the three-layer design (1 system + 4
//! messages = 5 > 4, so trim). The system prompt itself is not stored here: the
//! prompt builder writes it from the persona and L3 for every request. When it is too big, the oldest messages leave first, with two refinements:
//!
//! 1. **Nothing leaves before a summary covers it.** A message the summaries do not
//!    cover yet stays, even past the window size, so a late or failing summary never
//!    makes the NPC forget. Only past the hard cap are such messages dropped, and
//!    the drop is reported as a degradation.
//! 2. **The window starts with the player.** After a trim, covered NPC replies at the
//!    front are removed too, so the first message after the system prompt is a player
//!    line. A reply the summaries do not cover yet is never removed for this rule.

use std::ops::Range;

use super::log::ChatLog;
use super::message::{ChatMessage, LogIndex, Role};

/// The recent messages an NPC sends with each reply request (L1).
#[derive(Clone, Debug, PartialEq)]
pub struct RollingWindow {
    start: LogIndex,
    max_context_window: usize,
    hard_cap: usize,
}

impl RollingWindow {
    /// A window of `max_context_window` messages (system prompt included) that may
    /// grow to `hard_cap` while summaries lag behind.
    pub fn new(max_context_window: usize, hard_cap: usize) -> Self {
        let max_context_window = max_context_window.max(2);
        Self {
            start: 0,
            max_context_window,
            hard_cap: hard_cap.max(max_context_window),
        }
    }

    /// Index of the oldest log message still in the window.
    pub fn start(&self) -> LogIndex {
        self.start
    }

    /// The window size, system prompt included.
    pub fn max_context_window(&self) -> usize {
        self.max_context_window
    }

    /// The most messages the window holds while summaries lag behind.
    pub fn hard_cap(&self) -> usize {
        self.hard_cap
    }

    /// The log messages in the window, oldest first.
    pub fn messages<'a>(&self, log: &'a ChatLog) -> &'a [ChatMessage] {
        log.tail_from(self.start)
    }

    /// Messages in the window, the system prompt included.
    pub fn len(&self, log: &ChatLog) -> usize {
        1 + self.messages(log).len()
    }

    /// The oldest message the hard cap lets the window hold.
    pub(crate) fn cap_start(&self, log: &ChatLog) -> LogIndex {
        log.next_index()
            .saturating_sub((self.hard_cap - 1) as LogIndex)
    }

    pub(crate) fn resize(&mut self, max_context_window: usize, hard_cap: usize) {
        self.max_context_window = max_context_window.max(2);
        self.hard_cap = hard_cap.max(self.max_context_window);
    }

    pub(crate) fn reset(&mut self, start: LogIndex) {
        self.start = start;
    }

    /// Applies the trimming rule. `covered_until` is the first index no summary
    /// covers. Returns the uncovered messages the hard cap forced out, if any.
    /// While `cap_waits`, the hard cap drops nothing: the prompt holds those
    /// messages whole, or the folds that waited for the log to outgrow it are
    /// covering them.
    pub(crate) fn trim(
        &mut self,
        log: &ChatLog,
        covered_until: LogIndex,
        cap_waits: bool,
    ) -> Option<Range<LogIndex>> {
        let end = log.next_index();
        let body_limit = (self.max_context_window - 1) as LogIndex;
        let wanted = end.saturating_sub(body_limit).max(self.start);
        let free_until = covered_until.clamp(self.start, end);
        let mut start = wanted.min(free_until);
        if start > self.start {
            start = skip_replies(log, start, free_until);
        }

        let cap_start = self.cap_start(log);
        let mut dropped = None;
        if start < cap_start && !cap_waits {
            let first_uncovered = start.max(free_until);
            dropped = Some(first_uncovered..cap_start);
            start = cap_start;
        }
        self.start = start;
        dropped.filter(|range| !range.is_empty())
    }
}

/// Moves `start` past NPC replies, but not past `limit`.
fn skip_replies(log: &ChatLog, mut start: LogIndex, limit: LogIndex) -> LogIndex {
    while start < limit && log.get(start).is_some_and(|m| m.role != Role::User) {
        start += 1;
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(roles: &[Role]) -> ChatLog {
        let mut log = ChatLog::new();
        for (i, role) in roles.iter().enumerate() {
            log.append(*role, format!("m{i}"), i as f64);
        }
        log
    }

    const U: Role = Role::User;
    const A: Role = Role::Assistant;

    #[test]
    fn seed_walkthrough_trims_the_introduction_and_its_reply() {
        let mut window = RollingWindow::new(4, 8);
        let log = log_of(&[U, A, U, A]);
        // Messages 0 and 1 are covered by the first summary.
        assert_eq!(window.trim(&log, 2, false), None);
        assert_eq!(window.start(), 2);
        assert_eq!(window.len(&log), 3);
        assert_eq!(window.messages(&log)[0].content.as_ref(), "m2");
    }

    #[test]
    fn uncovered_messages_stay_past_the_window() {
        let mut window = RollingWindow::new(4, 8);
        let log = log_of(&[U, A, U, A, U, A]);
        assert_eq!(window.trim(&log, 0, false), None);
        assert_eq!(window.start(), 0);
        assert_eq!(window.len(&log), 7);
    }

    #[test]
    fn the_hard_cap_drops_uncovered_messages_and_reports_them() {
        let mut window = RollingWindow::new(4, 5);
        let log = log_of(&[U, A, U, A, U, A]);
        assert_eq!(window.trim(&log, 1, false), Some(1..2));
        assert_eq!(window.start(), 2);
        assert_eq!(window.len(&log), 5);
    }

    #[test]
    fn the_hard_cap_waits_while_the_whole_log_is_sent() {
        let mut window = RollingWindow::new(4, 5);
        let log = log_of(&[U, A, U, A, U, A]);
        assert_eq!(window.trim(&log, 0, true), None);
        assert_eq!(window.start(), 0);
        assert_eq!(window.len(&log), 7);
        // Once the log is no longer sent whole, the cap applies again.
        assert_eq!(window.trim(&log, 0, false), Some(0..2));
        assert_eq!(window.start(), 2);
    }

    #[test]
    fn an_uncovered_reply_is_never_skipped_to_start_with_the_player() {
        let mut window = RollingWindow::new(3, 8);
        let log = log_of(&[U, A, U, A]);
        // Only message 0 is covered: the window may drop it but must keep reply 1.
        assert_eq!(window.trim(&log, 1, false), None);
        assert_eq!(window.start(), 1);
    }

    #[test]
    fn the_window_never_moves_back() {
        let mut window = RollingWindow::new(3, 8);
        let log = log_of(&[U, A, U, A]);
        window.trim(&log, 4, false);
        let start = window.start();
        window.trim(&log, 0, false);
        assert_eq!(window.start(), start);
    }
}
