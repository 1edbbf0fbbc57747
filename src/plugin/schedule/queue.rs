//! The order work is sent in, in plain Rust: replies before summaries, then
//! summaries whose NPC's window is close to its hard cap, then by the NPC's tier,
//! then first come first served; work may also wait for a moment to
//! come before it competes at all. Pushing and taking cost O(log n); nothing here
//! looks at work that is neither due nor on top.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::time::Duration;

use crate::plugin::npc::MemoryTier;

/// What kind of work an entry is; replies outrank everything, and NPCs talking
/// among themselves outrank summaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Class {
    /// Background memory work.
    Summary,
    /// A turn of a conversation among NPCs: background work the player may
    /// overhear.
    Chatter,
    /// A reply the player waits for.
    Reply,
}

impl Class {
    /// The class of a reply: a turn of a conversation among NPCs is background
    /// work, any other reply is one the player waits for.
    pub(crate) fn of_reply(background: bool) -> Self {
        if background {
            Self::Chatter
        } else {
            Self::Reply
        }
    }
}

/// An entry's rank among the ready ones: the greater goes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Rank {
    class: Class,
    /// A summary that must go before its window reaches the hard cap.
    pressing: bool,
    urgency: u8,
    /// Earlier pushes first among equals.
    order: Reverse<u64>,
}

/// One piece of queued work.
#[derive(Debug)]
pub(crate) struct Entry<W> {
    /// Unique per push: a new push for the same work makes older entries stale.
    pub(crate) seq: u64,
    /// When it was pushed.
    pub(crate) queued_at: Duration,
    /// Estimated tokens it will spend.
    pub(crate) tokens: u64,
    pub(crate) work: W,
    rank: Rank,
    not_before: Duration,
}

impl<W> Entry<W> {
    /// The share of the budget it may use. A pressing summary of the NPC the
    /// player is talking to may use the replies' reserve: under a spent summary
    /// share, that conversation would otherwise lose lines from its prompt while
    /// its replies kept coming. Other pressing summaries keep to the summaries'
    /// share, so they never delay the player's reply.
    pub(crate) fn budget_class(&self) -> Class {
        let talking = self.rank.urgency == MemoryTier::Foreground.urgency();
        if self.rank.pressing && talking {
            Class::Reply
        } else {
            self.rank.class
        }
    }
}

/// Ordered by rank in `ready`, by (reversed) due time in `later`.
struct ByRank<W>(Entry<W>);
struct ByDue<W>(Entry<W>);

impl<W> PartialEq for ByRank<W> {
    fn eq(&self, other: &Self) -> bool {
        self.0.rank == other.0.rank
    }
}
impl<W> Eq for ByRank<W> {}
impl<W> PartialOrd for ByRank<W> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<W> Ord for ByRank<W> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.rank.cmp(&other.0.rank)
    }
}
impl<W> PartialEq for ByDue<W> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<W> Eq for ByDue<W> {}
impl<W> PartialOrd for ByDue<W> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<W> Ord for ByDue<W> {
    fn cmp(&self, other: &Self) -> Ordering {
        // The earliest due is the greatest, so it tops the max-heap.
        (other.0.not_before, other.0.seq).cmp(&(self.0.not_before, self.0.seq))
    }
}

/// Work waiting to be sent.
pub(crate) struct WorkQueue<W> {
    ready: BinaryHeap<ByRank<W>>,
    later: BinaryHeap<ByDue<W>>,
    next_seq: u64,
}

impl<W> Default for WorkQueue<W> {
    fn default() -> Self {
        Self {
            ready: BinaryHeap::new(),
            later: BinaryHeap::new(),
            next_seq: 0,
        }
    }
}

impl<W> WorkQueue<W> {
    /// Queues `work`, to compete from `not_before` on; returns its entry's `seq`.
    pub(crate) fn push(
        &mut self,
        now: Duration,
        class: Class,
        tier: MemoryTier,
        not_before: Duration,
        tokens: u64,
        work: W,
    ) -> u64 {
        self.push_ranked(now, (class, false), tier, not_before, tokens, work)
    }

    /// [`push`](Self::push), for a summary that is `pressing` when its NPC's
    /// window is close to the hard cap: it goes before every other summary.
    pub(crate) fn push_ranked(
        &mut self,
        now: Duration,
        (class, pressing): (Class, bool),
        tier: MemoryTier,
        not_before: Duration,
        tokens: u64,
        work: W,
    ) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let entry = Entry {
            seq,
            queued_at: now,
            tokens,
            work,
            rank: Rank {
                class,
                pressing,
                urgency: tier.urgency(),
                order: Reverse(seq),
            },
            not_before,
        };
        if not_before <= now {
            self.ready.push(ByRank(entry));
        } else {
            self.later.push(ByDue(entry));
        }
        seq
    }

    /// Moves work whose moment has come among the ready; O(k log n) for k moved.
    pub(crate) fn release(&mut self, now: Duration) {
        while self.later.peek().is_some_and(|e| e.0.not_before <= now) {
            let ByDue(entry) = self.later.pop().expect("peeked");
            self.ready.push(ByRank(entry));
        }
    }

    /// The ready entry that goes next.
    pub(crate) fn peek(&self) -> Option<&Entry<W>> {
        self.ready.peek().map(|e| &e.0)
    }

    /// Takes the ready entry that goes next.
    pub(crate) fn pop(&mut self) -> Option<Entry<W>> {
        self.ready.pop().map(|e| e.0)
    }

    /// Entries queued, ready or not, stale ones included until they are reached.
    pub(crate) fn len(&self) -> usize {
        self.ready.len() + self.later.len()
    }

    /// Drops everything.
    pub(crate) fn clear(&mut self) {
        self.ready.clear();
        self.later.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn drain(queue: &mut WorkQueue<&'static str>) -> Vec<&'static str> {
        std::iter::from_fn(|| queue.pop().map(|e| e.work)).collect()
    }

    #[test]
    fn replies_go_first_then_tiers_then_arrival() {
        let mut q = WorkQueue::default();
        let now = secs(1);
        q.push(
            now,
            Class::Summary,
            MemoryTier::Background,
            now,
            10,
            "bg summary 1",
        );
        q.push(
            now,
            Class::Summary,
            MemoryTier::Foreground,
            now,
            10,
            "fg summary",
        );
        q.push(
            now,
            Class::Summary,
            MemoryTier::Background,
            now,
            10,
            "bg summary 2",
        );
        q.push(
            now,
            Class::Reply,
            MemoryTier::Background,
            now,
            10,
            "bg reply",
        );
        q.push(
            now,
            Class::Summary,
            MemoryTier::Nearby,
            now,
            10,
            "near summary",
        );
        q.push(
            now,
            Class::Reply,
            MemoryTier::Foreground,
            now,
            10,
            "fg reply",
        );
        assert_eq!(
            drain(&mut q),
            [
                "fg reply",
                "bg reply",
                "fg summary",
                "near summary",
                "bg summary 1",
                "bg summary 2"
            ]
        );
    }

    #[test]
    fn held_work_competes_only_from_its_moment_on() {
        let mut q = WorkQueue::default();
        q.push(
            secs(0),
            Class::Summary,
            MemoryTier::Background,
            secs(30),
            1,
            "held",
        );
        q.push(
            secs(0),
            Class::Summary,
            MemoryTier::Background,
            secs(10),
            1,
            "sooner",
        );
        q.push(
            secs(0),
            Class::Summary,
            MemoryTier::Background,
            secs(0),
            1,
            "now",
        );
        assert_eq!(q.len(), 3);
        q.release(secs(5));
        assert_eq!(drain(&mut q), ["now"]);
        q.release(secs(10));
        assert_eq!(q.peek().map(|e| e.work), Some("sooner"));
        q.release(secs(30));
        // Once both compete, the one queued first goes first.
        assert_eq!(drain(&mut q), ["held", "sooner"]);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn a_pressing_summary_overtakes_every_other_summary_but_no_reply() {
        let mut q = WorkQueue::default();
        let now = secs(1);
        let summary = (Class::Summary, false);
        q.push_ranked(now, summary, MemoryTier::Foreground, now, 1, "fg summary");
        q.push_ranked(now, summary, MemoryTier::Background, now, 1, "bg summary");
        let pressing = (Class::Summary, true);
        q.push_ranked(
            now,
            pressing,
            MemoryTier::Background,
            now,
            1,
            "bg, full window",
        );
        q.push_ranked(
            now,
            (Class::Reply, false),
            MemoryTier::Background,
            now,
            1,
            "bg reply",
        );
        assert_eq!(
            drain(&mut q),
            ["bg reply", "bg, full window", "fg summary", "bg summary"]
        );
    }
}
