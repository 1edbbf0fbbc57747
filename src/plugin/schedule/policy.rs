//! The scheduling policy as a whole, in plain Rust: the work queue, the rolling
//! budgets and the rate-limit pause decide together what may be sent at `now`.

use std::time::Duration;

use super::budget::{Backoff, BackoffRules, MinuteWindow};
use super::queue::{Class, Entry, WorkQueue};

/// Per-minute limits, `None` for none.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Limits {
    pub(crate) requests: Option<u64>,
    pub(crate) tokens: Option<u64>,
    /// The share of each limit summaries leave to replies (0 to 1).
    pub(crate) reply_reserve: f64,
}

impl Limits {
    /// The limits `class` is held to. Summaries and NPCs' talk among themselves
    /// get what the reserve leaves, at least 1, so a small budget still lets
    /// them through.
    fn of(self, class: Class) -> (Option<u64>, Option<u64>) {
        match class {
            Class::Reply => (self.requests, self.tokens),
            Class::Summary | Class::Chatter => {
                let share = self.reply_reserve.clamp(0.0, 1.0);
                let cap = |limit: u64| {
                    let reserved = (limit as f64 * share).floor() as u64;
                    limit.saturating_sub(reserved).max(1)
                };
                (self.requests.map(cap), self.tokens.map(cap))
            }
        }
    }
}

/// Why the next piece of work waits, and until when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    /// A provider rate-limited a request; nothing goes until then.
    RateLimited(Duration),
    /// The requests-per-minute budget is spent.
    Requests(Duration),
    /// The tokens-per-minute budget is spent.
    Tokens(Duration),
}

/// The queue and the budgets.
pub(crate) struct Policy<W> {
    pub(crate) queue: WorkQueue<W>,
    requests: MinuteWindow,
    tokens: MinuteWindow,
    backoff: Backoff,
    /// Why the last call to [`next`](Self::next) sent nothing, if it did not.
    held: Option<Held>,
}

impl<W> Default for Policy<W> {
    fn default() -> Self {
        Self {
            queue: WorkQueue::default(),
            requests: MinuteWindow::default(),
            tokens: MinuteWindow::default(),
            backoff: Backoff::default(),
            held: None,
        }
    }
}

impl<W> Policy<W> {
    /// The next piece of work to send now, counted against the request budget, or
    /// `None` when nothing is ready or the budget or a rate limit holds the top
    /// entry back. Entries `live` rejects (cancelled meanwhile) are dropped on the
    /// way and cost nothing. Lower entries never overtake a held top entry: that
    /// is what keeps a reply first once the budget frees.
    pub(crate) fn next(
        &mut self,
        now: Duration,
        limits: Limits,
        mut live: impl FnMut(&Entry<W>) -> bool,
    ) -> Option<Entry<W>> {
        self.queue.release(now);
        self.held = None;
        loop {
            let top = self.queue.peek()?;
            if !live(top) {
                self.queue.pop();
                continue;
            }
            let tokens = top.tokens;
            if let Some(held) = self.hold(now, tokens, limits.of(top.budget_class())) {
                self.held = Some(held);
                return None;
            }
            self.requests.spend(now, 1);
            return self.queue.pop();
        }
    }

    /// Why work of `tokens` may not go now under `(requests, tokens)` limits.
    fn hold(
        &mut self,
        now: Duration,
        tokens: u64,
        (request_limit, token_limit): (Option<u64>, Option<u64>),
    ) -> Option<Held> {
        if let Some(until) = self.backoff.paused_until(now) {
            return Some(Held::RateLimited(until));
        }
        let free = self.requests.free_at(now, 1, request_limit);
        if free > now {
            return Some(Held::Requests(free));
        }
        let free = self.tokens.free_at(now, tokens, token_limit);
        (free > now).then_some(Held::Tokens(free))
    }

    /// Counts tokens a sent request cost against the token budget, correctable
    /// by `key` once the provider says what it really counted.
    pub(crate) fn spend_tokens(&mut self, now: Duration, tokens: u64, key: Option<u64>) {
        self.tokens.spend_as(now, tokens, key);
    }

    /// The provider counted `tokens` for the request spent under `key`.
    pub(crate) fn correct_tokens(&mut self, key: u64, tokens: u64) {
        self.tokens.correct(key, tokens);
    }

    /// A request was rate limited; returns how long dispatch pauses from `now`.
    pub(crate) fn rate_limited(
        &mut self,
        now: Duration,
        retry_after: Option<Duration>,
        rules: BackoffRules,
    ) -> Duration {
        self.backoff.rate_limited(now, retry_after, rules)
    }

    /// A request succeeded.
    pub(crate) fn succeeded(&mut self) {
        self.backoff.succeeded();
    }

    /// A request sent after a rate limit succeeded: dispatch resumes at `now`.
    pub(crate) fn lift_pause(&mut self, now: Duration) {
        self.backoff.lift(now);
    }

    /// Why the last [`next`](Self::next) sent nothing, if something was ready.
    pub(crate) fn held(&self) -> Option<Held> {
        self.held
    }

    /// When dispatch resumes, if a rate limit pauses it at `now`.
    pub(crate) fn paused_until(&self, now: Duration) -> Option<Duration> {
        self.backoff.paused_until(now)
    }

    /// Requests and tokens spent in the minute up to `now`.
    pub(crate) fn used(&mut self, now: Duration) -> (u64, u64) {
        (self.requests.used(now), self.tokens.used(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::npc::MemoryTier;
    use crate::plugin::schedule::queue::Class;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// Background summaries of 50 tokens each, all ready at 0 s, in this order.
    fn queue_background_summaries(policy: &mut Policy<&'static str>, names: &[&'static str]) {
        for &name in names {
            let (class, tier) = (Class::Summary, MemoryTier::Background);
            policy.queue.push(secs(0), class, tier, secs(0), 50, name);
        }
    }

    const RULES: BackoffRules = BackoffRules {
        first: Duration::from_secs(1),
        max: Duration::from_secs(30),
    };

    #[test]
    fn a_reply_queued_behind_spent_budget_goes_before_older_summaries() {
        let limits = Limits {
            requests: Some(1),
            tokens: None,
            reply_reserve: 0.0,
        };
        let mut policy = Policy::default();
        queue_background_summaries(&mut policy, &["bg 1", "bg 2", "bg 3"]);
        let first = policy.next(secs(0), limits, |_| true).map(|e| e.work);
        assert_eq!(first, Some("bg 1"));
        assert_eq!(policy.next(secs(1), limits, |_| true).map(|e| e.work), None);
        assert_eq!(policy.held(), Some(Held::Requests(secs(60))));
        policy.queue.push(
            secs(20),
            Class::Reply,
            MemoryTier::Foreground,
            secs(20),
            50,
            "reply",
        );
        let sent: Vec<_> = (60..=240)
            .step_by(60)
            .filter_map(|t| policy.next(secs(t), limits, |_| true).map(|e| e.work))
            .collect();
        assert_eq!(sent, ["reply", "bg 2", "bg 3"]);
    }

    #[test]
    fn summaries_leave_the_reserve_to_replies() {
        let limits = Limits {
            requests: Some(4),
            tokens: None,
            reply_reserve: 0.25,
        };
        let mut policy = Policy::default();
        queue_background_summaries(&mut policy, &["bg 1", "bg 2", "bg 3", "bg 4"]);
        let sent: Vec<_> = std::iter::from_fn(|| policy.next(secs(0), limits, |_| true))
            .map(|e| e.work)
            .collect();
        assert_eq!(sent, ["bg 1", "bg 2", "bg 3"], "one of four is reserved");
        assert_eq!(policy.held(), Some(Held::Requests(secs(60))));
        policy.queue.push(
            secs(5),
            Class::Reply,
            MemoryTier::Foreground,
            secs(5),
            50,
            "reply",
        );
        let reply = policy.next(secs(5), limits, |_| true).map(|e| e.work);
        assert_eq!(reply, Some("reply"), "the reply finds room at once");
        assert!(policy.next(secs(5), limits, |_| true).is_none());
        // The smallest budgets cannot spare a reserve and stay usable.
        let one = Limits {
            requests: Some(1),
            ..limits
        };
        assert_eq!(one.of(Class::Summary), (Some(1), None));
        assert_eq!(limits.of(Class::Summary), (Some(3), None));
        assert_eq!(limits.of(Class::Reply), (Some(4), None));
    }

    #[test]
    fn only_the_foreground_summary_near_its_hard_cap_may_use_the_reserve() {
        let limits = Limits {
            requests: Some(4),
            tokens: None,
            reply_reserve: 0.25,
        };
        let mut policy = Policy::default();
        queue_background_summaries(&mut policy, &["bg 1", "bg 2", "bg 3"]);
        let spent = std::iter::from_fn(|| policy.next(secs(0), limits, |_| true)).count();
        assert_eq!(spent, 3, "the summaries' share is spent");
        let pressing = (Class::Summary, true);
        for (tier, name) in [
            (MemoryTier::Nearby, "near, full window"),
            (MemoryTier::Foreground, "fg, full window"),
        ] {
            policy
                .queue
                .push_ranked(secs(1), pressing, tier, secs(1), 50, name);
        }
        let next = policy.next(secs(1), limits, |_| true).map(|e| e.work);
        assert_eq!(next, Some("fg, full window"), "it takes the reserve");
        assert!(policy.next(secs(1), limits, |_| true).is_none());
        assert_eq!(policy.held(), Some(Held::Requests(secs(60))));
    }

    #[test]
    fn tokens_are_budgeted_with_what_requests_really_cost() {
        let limits = Limits {
            requests: None,
            tokens: Some(1000),
            reply_reserve: 0.0,
        };
        let mut policy = Policy::default();
        for name in ["a", "b"] {
            policy.queue.push(
                secs(0),
                Class::Summary,
                MemoryTier::Nearby,
                secs(0),
                100,
                name,
            );
        }
        assert!(policy.next(secs(0), limits, |_| true).is_some());
        // The request grew when it was built (a deferred summary covers more).
        policy.spend_tokens(secs(0), 950, None);
        assert!(policy.next(secs(1), limits, |_| true).is_none());
        assert_eq!(policy.held(), Some(Held::Tokens(secs(60))));
        assert!(policy.next(secs(60), limits, |_| true).is_some());
        assert_eq!(policy.used(secs(60)), (1, 0));
    }

    #[test]
    fn a_rate_limit_pauses_everything_and_stale_entries_cost_nothing() {
        let mut policy = Policy::default();
        for name in ["stale", "reply"] {
            policy
                .queue
                .push(secs(0), Class::Reply, MemoryTier::Nearby, secs(0), 1, name);
        }
        assert_eq!(policy.rate_limited(secs(0), Some(secs(5)), RULES), secs(5));
        assert!(policy.next(secs(4), Limits::default(), |_| true).is_none());
        assert_eq!(policy.held(), Some(Held::RateLimited(secs(5))));
        let sent = policy.next(secs(5), Limits::default(), |e| e.work != "stale");
        assert_eq!(sent.map(|e| e.work), Some("reply"));
        assert_eq!(
            policy.used(secs(5)),
            (1, 0),
            "the stale entry was not counted"
        );
        assert_eq!(policy.queue.len(), 0);
    }
}
