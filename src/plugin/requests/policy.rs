//! Which player lines an NPC takes, and in what order: plain Rust, no Bevy.
//!
//! One NPC answers one line at a time. A line it cannot take now waits in a short
//! queue; a line it can never take (empty, too long, for an NPC that does not
//! exist) is handed back at once with the reason.

use std::collections::VecDeque;

use crate::memory::{NpcId, SpeakerId};
use crate::plugin::messages::ReplyError;
use crate::plugin::npc::TurnId;
use crate::plugin::settings::NpcMemorySettings;
use crate::save::WaitingLine;

/// The limits a line is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineRules {
    /// Longest line taken, in characters.
    pub(crate) max_line_chars: usize,
    /// Lines that may wait while the NPC answers.
    pub(crate) max_queued_lines: usize,
}

impl LineRules {
    /// The limits the plugin's settings set.
    pub(crate) fn from_settings(settings: &NpcMemorySettings) -> Self {
        Self {
            max_line_chars: settings.max_line_chars,
            // More waiting lines than a save holds would make every save fail.
            max_queued_lines: settings
                .max_queued_lines
                .min(crate::save::MAX_SAVED_QUEUED_LINES),
        }
    }
}

impl Default for LineRules {
    fn default() -> Self {
        Self::from_settings(&NpcMemorySettings::default())
    }
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

/// An accepted player line and the turn id it got when it was accepted, which it
/// keeps while it waits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct QueuedLine {
    pub(crate) turn: TurnId,
    pub(crate) text: String,
    /// The player asked the NPC to keep it to itself.
    pub(crate) private: bool,
    /// Who said it.
    pub(crate) speaker: SpeakerId,
}

/// What to do with a line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Offer {
    /// Answer it now.
    Start(QueuedLine),
    /// It waits its turn, under this id.
    Queued(TurnId),
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
    waiting: VecDeque<QueuedLine>,
}

impl LineQueue {
    /// Decides what happens to a new line for `npc`, which is `answering` a line or
    /// not. An accepted line (started or queued) is `turn`; a refused one has none.
    pub(crate) fn offer(
        &mut self,
        npc: &NpcId,
        WaitingLine {
            text: line,
            private,
            speaker,
        }: WaitingLine,
        turn: TurnId,
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
                return Offer::Start(QueuedLine {
                    turn,
                    text: line,
                    private,
                    speaker,
                });
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
        self.waiting.push_back(QueuedLine {
            turn,
            text: line,
            private,
            speaker,
        });
        Offer::Queued(turn)
    }

    /// Puts a line back in the queue without checks of readiness or room: lines
    /// restored from a save were taken once already.
    pub(crate) fn restore(&mut self, line: QueuedLine) {
        self.waiting.push_back(line);
    }

    /// The next line to answer, if the NPC is free (not `answering`) and one waits.
    pub(crate) fn next(&mut self, answering: bool) -> Option<QueuedLine> {
        if answering {
            return None;
        }
        self.waiting.pop_front()
    }

    /// Every waiting line, oldest first, taken out of the queue.
    pub(crate) fn drain(&mut self) -> VecDeque<QueuedLine> {
        std::mem::take(&mut self.waiting)
    }

    /// The waiting lines, oldest first.
    pub(crate) fn waiting(&self) -> impl Iterator<Item = &QueuedLine> {
        self.waiting.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::npc::TurnCounter;

    const RULES: LineRules = LineRules {
        max_line_chars: 10,
        max_queued_lines: 2,
    };

    fn npc() -> NpcId {
        NpcId::new("echo7")
    }

    /// Offers `line` under the counter's next id, using the id up only when the
    /// line is accepted, as `NpcRequests::offer` does.
    fn offer(
        queue: &mut LineQueue,
        turns: &mut TurnCounter,
        line: &str,
        readiness: &Readiness,
        answering: bool,
    ) -> Offer {
        let offer = queue.offer(
            &npc(),
            WaitingLine::new(line),
            turns.peek(),
            readiness,
            answering,
            RULES,
        );
        if !matches!(offer, Offer::Refused(..)) {
            turns.advance();
        }
        offer
    }

    fn next_text(queue: &mut LineQueue) -> Option<String> {
        queue.next(false).map(|line| line.text)
    }

    #[test]
    fn a_free_ready_npc_answers_at_once_and_later_lines_wait_in_order() {
        let mut queue = LineQueue::default();
        let mut turns = TurnCounter::default();
        let ready = Readiness::Ready;
        let started = offer(&mut queue, &mut turns, "one", &ready, false);
        assert!(matches!(started, Offer::Start(QueuedLine { ref text, .. }) if text == "one"));
        assert!(matches!(
            offer(&mut queue, &mut turns, "two", &ready, true),
            Offer::Queued(_)
        ));
        assert!(matches!(
            offer(&mut queue, &mut turns, "three", &ready, true),
            Offer::Queued(_)
        ));
        assert_eq!(queue.next(true), None, "still answering the first");
        assert_eq!(next_text(&mut queue).as_deref(), Some("two"));
        assert_eq!(next_text(&mut queue).as_deref(), Some("three"));
        assert_eq!(queue.next(false), None);
        // A free NPC with lines waiting takes the oldest first, not the new one.
        assert!(matches!(
            offer(&mut queue, &mut turns, "four", &ready, true),
            Offer::Queued(_)
        ));
        assert!(matches!(
            offer(&mut queue, &mut turns, "five", &ready, false),
            Offer::Queued(_)
        ));
        assert_eq!(next_text(&mut queue).as_deref(), Some("four"));
    }

    #[test]
    fn queued_lines_keep_the_turn_id_they_were_accepted_with() {
        let mut queue = LineQueue::default();
        let mut turns = TurnCounter::default();
        let ready = Readiness::Ready;
        let Offer::Start(first) = offer(&mut queue, &mut turns, "one", &ready, false) else {
            panic!("a free NPC answers at once");
        };
        let Offer::Queued(second) = offer(&mut queue, &mut turns, "two", &ready, true) else {
            panic!("a busy NPC queues");
        };
        // A refused line uses up no id.
        assert!(matches!(
            offer(&mut queue, &mut turns, "  ", &ready, true),
            Offer::Refused(ReplyError::EmptyLine, _)
        ));
        let Offer::Queued(third) = offer(&mut queue, &mut turns, "three", &ready, true) else {
            panic!("a busy NPC queues");
        };
        assert!(first.turn < second && second < third, "ids count up");
        assert_eq!(third.get(), second.get() + 1, "the refused line took none");
        // Waiting does not change a line's id, and neither does draining.
        assert_eq!(
            queue.waiting().map(|l| l.turn).collect::<Vec<_>>(),
            [second, third]
        );
        assert_eq!(
            queue.next(false),
            Some(QueuedLine {
                turn: second,
                text: "two".into(),
                private: false,
                speaker: SpeakerId::player(),
            })
        );
        let drained = queue.drain();
        assert_eq!(
            drained.into_iter().collect::<Vec<_>>(),
            [QueuedLine {
                turn: third,
                text: "three".into(),
                private: false,
                speaker: SpeakerId::player(),
            }]
        );
    }

    #[test]
    fn a_full_queue_hands_the_line_back_as_busy() {
        let mut queue = LineQueue::default();
        let mut turns = TurnCounter::default();
        let ready = Readiness::Ready;
        offer(&mut queue, &mut turns, "two", &ready, true);
        offer(&mut queue, &mut turns, "three", &ready, true);
        assert_eq!(
            offer(&mut queue, &mut turns, "four", &ready, true),
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
        let mut turns = TurnCounter::default();
        let mut offer =
            |line: &str, readiness| offer(&mut queue, &mut turns, line, &readiness, false);
        assert!(matches!(
            offer(" \n", Readiness::Ready),
            Offer::Refused(ReplyError::EmptyLine, _)
        ));
        assert!(matches!(
            offer("ééééééééééé", Readiness::Ready),
            Offer::Refused(ReplyError::LineTooLong { chars: 11, max: 10 }, _)
        ));
        assert!(matches!(
            offer("hi", Readiness::Unknown),
            Offer::Refused(ReplyError::UnknownNpc(_), _)
        ));
        assert!(matches!(
            offer("hi", Readiness::Failed("no file".into())),
            Offer::Refused(ReplyError::PersonaUnavailable { .. }, _)
        ));
        assert_eq!(queue.waiting().count(), 0);
        assert_eq!(turns.peek().get(), 0, "no refused line took an id");
    }

    #[test]
    fn lines_for_a_loading_npc_wait_until_it_is_ready() {
        let mut queue = LineQueue::default();
        let mut turns = TurnCounter::default();
        assert!(matches!(
            offer(&mut queue, &mut turns, "early", &Readiness::Loading, false),
            Offer::Queued(_)
        ));
        assert_eq!(next_text(&mut queue).as_deref(), Some("early"));
    }
}
