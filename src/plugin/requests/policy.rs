//! Which player lines an NPC takes, and in what order: plain Rust, no Bevy.
//!
//! One NPC answers one line at a time. A line it cannot take now waits in a short
//! queue; a line it can never take (empty, too long, for an NPC that does not
//! exist) is handed back at once with the reason.

use std::collections::VecDeque;

use crate::memory::NpcId;
use crate::plugin::messages::ReplyError;

/// The limits a line is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineRules {
    /// Longest line taken, in characters.
    pub(crate) max_line_chars: usize,
    /// Lines that may wait while the NPC answers.
    pub(crate) max_queued_lines: usize,
}

/// Whether an NPC can answer at all yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// Its memory exists.
    Ready,
    /// It is spawned and its persona is still loading; lines wait for it.
    Loading,
    /// Its persona failed to load.
    Failed(String),
    /// No NPC with this id was ever spawned.
    Unknown,
}

/// What to do with a line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Offer {
    /// Answer it now.
    Start(String),
    /// It waits its turn.
    Queued,
    /// It is handed back.
    Refused(ReplyError, String),
}

/// Why a line cannot be taken whoever it is for: empty, or too long.
pub(crate) fn unfit_line(text: &str, rules: LineRules) -> Option<ReplyError> {
    if text.trim().is_empty() {
        return Some(ReplyError::EmptyLine);
    }
    let chars = text.chars().count();
    (chars > rules.max_line_chars).then_some(ReplyError::LineTooLong {
        chars,
        max: rules.max_line_chars,
    })
}

/// The lines waiting for one NPC.
#[derive(Debug, Default)]
pub(crate) struct LineQueue {
    waiting: VecDeque<String>,
}

impl LineQueue {
    /// Decides what happens to a new line for `npc`, which is `answering` a line or
    /// not.
    pub(crate) fn offer(
        &mut self,
        npc: &NpcId,
        line: String,
        readiness: &Readiness,
        answering: bool,
        rules: LineRules,
    ) -> Offer {
        if let Some(error) = unfit_line(&line, rules) {
            return Offer::Refused(error, line);
        }
        match readiness {
            Readiness::Failed(reason) => {
                let error = ReplyError::PersonaUnavailable {
                    npc: npc.clone(),
                    reason: reason.clone(),
                };
                return Offer::Refused(error, line);
            }
            Readiness::Unknown => return Offer::Refused(ReplyError::UnknownNpc(npc.clone()), line),
            Readiness::Ready if !answering && self.waiting.is_empty() => {
                return Offer::Start(line);
            }
            Readiness::Ready | Readiness::Loading => {}
        }
        if self.waiting.len() >= rules.max_queued_lines {
            let queued = self.waiting.len();
            return Offer::Refused(
                ReplyError::Busy {
                    npc: npc.clone(),
                    queued,
                },
                line,
            );
        }
        self.waiting.push_back(line);
        Offer::Queued
    }

    /// Puts a line back in the queue without checks of readiness or room: lines
    /// restored from a save were taken once already.
    pub(crate) fn restore(&mut self, line: String) {
        self.waiting.push_back(line);
    }

    /// The next line to answer, if the NPC is free (not `answering`) and one waits.
    pub(crate) fn next(&mut self, answering: bool) -> Option<String> {
        if answering {
            return None;
        }
        self.waiting.pop_front()
    }

    /// Every waiting line, oldest first, taken out of the queue.
    pub(crate) fn drain(&mut self) -> VecDeque<String> {
        std::mem::take(&mut self.waiting)
    }

    /// The waiting lines, oldest first.
    pub(crate) fn waiting(&self) -> impl Iterator<Item = &str> {
        self.waiting.iter().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: LineRules = LineRules {
        max_line_chars: 10,
        max_queued_lines: 2,
    };

    fn npc() -> NpcId {
        NpcId::new("echo7")
    }

    #[test]
    fn a_free_ready_npc_answers_at_once_and_later_lines_wait_in_order() {
        let mut queue = LineQueue::default();
        let ready = Readiness::Ready;
        let offer = |queue: &mut LineQueue, line: &str, answering| {
            queue.offer(&npc(), line.into(), &ready, answering, RULES)
        };
        assert_eq!(offer(&mut queue, "one", false), Offer::Start("one".into()));
        assert_eq!(offer(&mut queue, "two", true), Offer::Queued);
        assert_eq!(offer(&mut queue, "three", true), Offer::Queued);
        assert_eq!(queue.next(true), None, "still answering the first");
        assert_eq!(queue.next(false).as_deref(), Some("two"));
        assert_eq!(queue.next(false).as_deref(), Some("three"));
        assert_eq!(queue.next(false), None);
        // A free NPC with lines waiting takes the oldest first, not the new one.
        assert_eq!(offer(&mut queue, "four", true), Offer::Queued);
        assert_eq!(offer(&mut queue, "five", false), Offer::Queued);
        assert_eq!(queue.next(false).as_deref(), Some("four"));
    }

    #[test]
    fn a_full_queue_hands_the_line_back_as_busy() {
        let mut queue = LineQueue::default();
        let ready = Readiness::Ready;
        queue.offer(&npc(), "two".into(), &ready, true, RULES);
        queue.offer(&npc(), "three".into(), &ready, true, RULES);
        assert_eq!(
            queue.offer(&npc(), "four".into(), &ready, true, RULES),
            Offer::Refused(
                ReplyError::Busy {
                    npc: npc(),
                    queued: 2
                },
                "four".into()
            )
        );
    }

    #[test]
    fn unfit_lines_and_missing_npcs_are_refused_before_anything_waits() {
        let mut queue = LineQueue::default();
        let offer = |queue: &mut LineQueue, line: &str, readiness| {
            queue.offer(&npc(), line.into(), &readiness, false, RULES)
        };
        assert!(matches!(
            offer(&mut queue, " \n", Readiness::Ready),
            Offer::Refused(ReplyError::EmptyLine, _)
        ));
        assert!(matches!(
            offer(&mut queue, "ééééééééééé", Readiness::Ready),
            Offer::Refused(ReplyError::LineTooLong { chars: 11, max: 10 }, _)
        ));
        assert!(matches!(
            offer(&mut queue, "hi", Readiness::Unknown),
            Offer::Refused(ReplyError::UnknownNpc(_), _)
        ));
        assert!(matches!(
            offer(&mut queue, "hi", Readiness::Failed("no file".into())),
            Offer::Refused(ReplyError::PersonaUnavailable { .. }, _)
        ));
        assert_eq!(queue.waiting().count(), 0);
    }

    #[test]
    fn lines_for_a_loading_npc_wait_until_it_is_ready() {
        let mut queue = LineQueue::default();
        assert_eq!(
            queue.offer(&npc(), "early".into(), &Readiness::Loading, false, RULES),
            Offer::Queued
        );
        assert_eq!(queue.next(false).as_deref(), Some("early"));
    }
}
