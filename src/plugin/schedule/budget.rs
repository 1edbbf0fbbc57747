//! Global pacing, in plain Rust: a rolling one-minute budget and the pause after a
//! provider said "too many requests". Time is passed in, so tests drive it.

use std::collections::VecDeque;
use std::time::Duration;

use crate::plugin::settings::ScheduleSettings;

/// The span a per-minute limit counts over.
pub(crate) const MINUTE: Duration = Duration::from_secs(60);

/// What was spent in the last minute, against an optional per-minute limit.
///
/// A rolling window rather than a token bucket: a bucket refilled at the limit's
/// rate lets a full bucket plus a minute's refill (twice the limit) through in the
/// minute after an idle spell, and a provider counting per minute answers that
/// with 429s. Here no 60-second span ever holds more than the limit.
#[derive(Debug, Default)]
pub(crate) struct MinuteWindow {
    spent: VecDeque<Spent>,
    total: u64,
}

/// One spending: when, how much, and the key it can be corrected by.
#[derive(Clone, Copy, Debug)]
struct Spent {
    at: Duration,
    amount: u64,
    key: Option<u64>,
}

impl MinuteWindow {
    fn expire(&mut self, now: Duration) {
        while let Some(&Spent { at, amount, .. }) = self.spent.front() {
            if at + MINUTE > now {
                break;
            }
            self.spent.pop_front();
            self.total -= amount;
        }
    }

    /// The earliest time `amount` more fits under `limit`: `now` when it fits now.
    /// An amount over the whole limit fits once the window is empty, so one large
    /// request is never held back forever.
    pub(crate) fn free_at(&mut self, now: Duration, amount: u64, limit: Option<u64>) -> Duration {
        let Some(limit) = limit else {
            return now;
        };
        self.expire(now);
        let amount = amount.min(limit);
        if self.total + amount <= limit {
            return now;
        }
        let mut left = self.total;
        for &Spent {
            at, amount: spent, ..
        } in &self.spent
        {
            left -= spent;
            if left + amount <= limit {
                return at + MINUTE;
            }
        }
        now
    }

    /// Records `amount` spent at `now`.
    pub(crate) fn spend(&mut self, now: Duration, amount: u64) {
        self.spend_as(now, amount, None);
    }

    /// Records `amount` spent at `now`, correctable later by `key`.
    pub(crate) fn spend_as(&mut self, now: Duration, amount: u64, key: Option<u64>) {
        self.expire(now);
        self.spent.push_back(Spent {
            at: now,
            amount,
            key,
        });
        self.total += amount;
    }

    /// What the spending last recorded under `key` really cost, once known. It
    /// stays dated when it was spent; one that has left the window is past caring.
    pub(crate) fn correct(&mut self, key: u64, amount: u64) {
        if let Some(spent) = self.spent.iter_mut().rev().find(|s| s.key == Some(key)) {
            self.total = self.total - spent.amount + amount;
            spent.amount = amount;
        }
    }

    /// What was spent in the minute up to `now`.
    pub(crate) fn used(&mut self, now: Duration) -> u64 {
        self.expire(now);
        self.total
    }
}

/// The pause after a rate limit: the provider's `Retry-After` when it gave one,
/// else a wait that doubles with each 429 in a row, up to a cap.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    /// 429s since the last success, counting one per pause.
    streak: u32,
    until: Duration,
}

/// How long pauses after rate limits are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BackoffRules {
    /// The first pause without a `Retry-After`.
    pub(crate) first: Duration,
    /// The longest pause, `Retry-After` included.
    pub(crate) max: Duration,
}

impl Backoff {
    /// A request was rate limited at `now`; returns the pause from `now`.
    ///
    /// Several requests in flight usually hit the same limit together: a 429 that
    /// arrives during a pause extends it (to its own `Retry-After`) but does not
    /// double it again, or one burst would push the wait to the cap.
    pub(crate) fn rate_limited(
        &mut self,
        now: Duration,
        retry_after: Option<Duration>,
        rules: BackoffRules,
    ) -> Duration {
        let paused = now < self.until;
        if !paused {
            self.streak = self.streak.saturating_add(1);
        }
        let doubled = rules
            .first
            .saturating_mul(1u32 << (self.streak.saturating_sub(1)).min(20));
        let pause = retry_after.unwrap_or(doubled).min(rules.max);
        self.until = self.until.max(now + pause);
        self.until - now
    }

    /// A request succeeded: the next 429 starts from the first pause again.
    pub(crate) fn succeeded(&mut self) {
        self.streak = 0;
    }

    /// The provider took a request sent after the limit: the pause ends at `now`.
    pub(crate) fn lift(&mut self, now: Duration) {
        self.until = self.until.min(now);
        self.streak = 0;
    }

    /// When dispatch may resume, if it is paused at `now`.
    pub(crate) fn paused_until(&self, now: Duration) -> Option<Duration> {
        (now < self.until).then_some(self.until)
    }
}

impl ScheduleSettings {
    pub(crate) fn backoff(&self) -> BackoffRules {
        BackoffRules {
            first: self.first_backoff,
            max: self.max_backoff,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn no_sixty_seconds_hold_more_than_the_limit() {
        let mut window = MinuteWindow::default();
        let limit = Some(3);
        let mut sent = Vec::new();
        let mut now = Duration::ZERO;
        while now < secs(300) {
            if window.free_at(now, 1, limit) <= now {
                window.spend(now, 1);
                sent.push(now);
            }
            now += Duration::from_millis(500);
        }
        for (i, &at) in sent.iter().enumerate() {
            let within = sent[i..].iter().take_while(|&&t| t < at + MINUTE).count();
            assert!(within <= 3, "{within} sends in the minute from {at:?}");
        }
        assert_eq!(sent.len(), 15, "three per minute over five minutes");
    }

    #[test]
    fn free_at_names_the_moment_enough_leaves_the_window() {
        let mut window = MinuteWindow::default();
        window.spend(secs(0), 600);
        window.spend(secs(10), 300);
        assert_eq!(window.free_at(secs(20), 100, Some(1000)), secs(20));
        assert_eq!(window.free_at(secs(20), 200, Some(1000)), secs(60));
        assert_eq!(window.free_at(secs(20), 800, Some(1000)), secs(70));
        // Larger than the limit: waits for an empty window, not forever.
        assert_eq!(window.free_at(secs(20), 5000, Some(1000)), secs(70));
        assert_eq!(window.used(secs(65)), 300);
        assert_eq!(window.free_at(secs(20), 5000, None), secs(20), "no limit");
    }

    #[test]
    fn backoff_doubles_to_its_cap_honours_retry_after_and_resets() {
        let rules = BackoffRules {
            first: secs(1),
            max: secs(8),
        };
        let mut backoff = Backoff::default();
        let mut now = secs(100);
        let mut pauses = Vec::new();
        for _ in 0..5 {
            let pause = backoff.rate_limited(now, None, rules);
            pauses.push(pause.as_secs());
            now += pause;
        }
        assert_eq!(pauses, [1, 2, 4, 8, 8]);
        assert_eq!(backoff.rate_limited(now, Some(secs(3)), rules), secs(3));
        assert_eq!(backoff.paused_until(now), Some(now + secs(3)));
        assert_eq!(backoff.paused_until(now + secs(3)), None);
        assert_eq!(
            backoff.rate_limited(now, Some(secs(3600)), rules),
            secs(8),
            "a huge Retry-After is capped"
        );
        backoff.succeeded();
        now += secs(8);
        assert_eq!(backoff.rate_limited(now, None, rules), secs(1));
    }

    #[test]
    fn a_burst_of_429s_during_a_pause_does_not_double_it_again() {
        let rules = BackoffRules {
            first: secs(2),
            max: secs(60),
        };
        let mut backoff = Backoff::default();
        let now = secs(10);
        assert_eq!(backoff.rate_limited(now, None, rules), secs(2));
        for _ in 0..5 {
            assert_eq!(backoff.rate_limited(now, None, rules), secs(2));
        }
        assert_eq!(backoff.rate_limited(now + secs(2), None, rules), secs(4));
    }

    #[test]
    fn lifting_ends_the_pause_now_and_restarts_the_doubling() {
        let rules = BackoffRules {
            first: secs(2),
            max: secs(60),
        };
        let mut backoff = Backoff::default();
        assert_eq!(backoff.rate_limited(secs(10), None, rules), secs(2));
        assert_eq!(backoff.rate_limited(secs(12), None, rules), secs(4));
        backoff.lift(secs(13));
        assert_eq!(backoff.paused_until(secs(13)), None);
        assert_eq!(backoff.rate_limited(secs(20), None, rules), secs(2));
    }

    #[test]
    fn a_correction_replaces_the_latest_spending_under_its_key_while_it_counts() {
        let mut window = MinuteWindow::default();
        window.spend_as(secs(0), 100, Some(7));
        window.spend_as(secs(5), 100, Some(7)); // sent again after a 429
        window.spend_as(secs(10), 50, None);
        window.correct(7, 900);
        assert_eq!(window.used(secs(10)), 1050);
        assert_eq!(
            window.free_at(secs(10), 100, Some(1000)),
            secs(65),
            "the corrected spending holds the budget until it is a minute old"
        );
        window.correct(8, 5000);
        assert_eq!(
            window.used(secs(10)),
            1050,
            "an unknown key changes nothing"
        );
        assert_eq!(window.used(secs(61)), 950);
        window.correct(7, 0);
        assert_eq!(window.used(secs(61)), 50);
        assert_eq!(window.used(secs(66)), 50);
        window.correct(7, 10_000);
        assert_eq!(window.used(secs(66)), 50, "expired: past caring");
    }
}
