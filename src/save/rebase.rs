//! Moving the timestamps of saves made before format 4 onto one clock.
//!
//! Those saves were stamped with the session's play time, which restarted at zero
//! with every launch, so a log could run 0..900 s, then 0..300 s again. Recall would
//! take the old lines for new ones and prompt dates would run backwards. Each drop
//! in a log marks a restart: the run after it is shifted to continue from the stamp
//! before it, so every gap within a session is kept and order is restored.

use std::sync::Arc;

use super::format::SaveGame;

/// Each stamp of `raw`, shifted so that the sequence never decreases: a stamp lower
/// than the one before starts a new session, which (with everything after it)
/// continues from the previous rebased stamp. Stamps within a session keep their
/// gaps, and a log that never restarted is returned unchanged. Stamps that are not
/// finite numbers are left as they are (validation refuses them), and a shift that
/// would overflow holds at the previous stamp instead.
pub(crate) fn rebase(raw: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(raw.len());
    let mut offset = 0.0;
    let mut previous: Option<(f64, f64)> = None;
    for &stamp in raw {
        if !stamp.is_finite() {
            out.push(stamp);
            continue;
        }
        let rebased = match previous {
            None => stamp,
            Some((before, rebased_before)) => {
                let shifted = if stamp < before {
                    // A restart: this session starts where the last one ended.
                    offset = rebased_before - stamp;
                    rebased_before
                } else {
                    stamp + offset
                };
                // Rounding must not undo the order the shift restores.
                if shifted.is_finite() {
                    shifted.max(rebased_before)
                } else {
                    rebased_before
                }
            }
        };
        previous = Some((stamp, rebased));
        out.push(rebased);
    }
    out
}

/// Rebases every NPC's log (see [`rebase`]), shifts its summary segments' time
/// spans with the messages they cover, clamps pinned-fact change times to the new
/// clock, and sets the save's clock to the newest rebased stamp.
///
/// NPCs are rebased one by one: a save does not record when sessions began, so an
/// NPC first met in a later session keeps that session's own stamps.
pub(super) fn rebase_sessions(save: &mut SaveGame) {
    for npc in &mut save.npcs {
        let memory = &mut Arc::make_mut(npc).memory;
        let raw: Vec<f64> = memory.log.iter().map(|m| m.timestamp).collect();
        let rebased = rebase(&raw);
        let shift = |index: u64| -> f64 {
            usize::try_from(index)
                .ok()
                .and_then(|i| Some(rebased.get(i)? - raw.get(i)?))
                .filter(|shift| shift.is_finite())
                .unwrap_or(0.0)
        };
        for (covered, from_time, to_time) in memory.segments.times_mut() {
            let last = covered.end.saturating_sub(1).max(covered.start);
            *from_time += shift(covered.start);
            *to_time += shift(last);
        }
        for (message, stamp) in memory.log.iter_mut().zip(rebased) {
            message.timestamp = stamp;
        }
    }
    save.clock = save.newest_stamp().unwrap_or(0.0);
    let clock = save.clock;
    for npc in &mut save.npcs {
        let facts = &mut Arc::make_mut(npc).memory.facts;
        for changed_at in facts.change_times_mut() {
            if changed_at.is_finite() && *changed_at > clock {
                *changed_at = clock;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn each_restart_continues_from_the_stamp_before_it() {
        let raw = [0.0, 10.0, 900.0, 5.0, 65.0, 3.0, 4.0];
        assert_eq!(rebase(&raw), [0.0, 10.0, 900.0, 900.0, 960.0, 960.0, 961.0]);
    }

    #[test]
    fn an_ordered_log_is_left_alone_and_odd_values_do_not_panic() {
        let raw = [1.5, 1.5, 7.25, 1e9];
        assert_eq!(rebase(&raw), raw);
        assert_eq!(rebase(&[]), Vec::<f64>::new());
        let odd = rebase(&[f64::MAX, -f64::MAX, f64::NAN, 1.0]);
        assert_eq!(odd[0], f64::MAX);
        assert_eq!(odd[1], f64::MAX, "an overflowing shift holds");
        assert!(odd[2].is_nan(), "left for validation to refuse");
        assert_eq!(odd[3], f64::MAX);
    }

    proptest! {
        #[test]
        fn rebased_stamps_never_decrease_and_keep_each_sessions_gaps(
            raw in proptest::collection::vec(-1.0e6..1.0e9_f64, 0..64)
        ) {
            let rebased = rebase(&raw);
            prop_assert_eq!(rebased.len(), raw.len());
            if let (Some(a), Some(b)) = (raw.first(), rebased.first()) {
                prop_assert_eq!(a, b, "the first session stays put");
            }
            // Rounding at the magnitude of the stamps is all that may differ.
            let magnitude = raw.iter().chain(&rebased).fold(1.0_f64, |m, t| m.max(t.abs()));
            let tolerance = 1e-12 * magnitude;
            let mut gaps = Vec::new();
            for i in 1..raw.len() {
                prop_assert!(rebased[i] >= rebased[i - 1], "{:?} -> {:?}", raw, rebased);
                let gap = rebased[i] - rebased[i - 1];
                if raw[i] >= raw[i - 1] {
                    let expected = raw[i] - raw[i - 1];
                    prop_assert!((gap - expected).abs() <= tolerance, "gap {} vs {}", gap, expected);
                    gaps.push((expected, gap));
                } else {
                    prop_assert_eq!(gap, 0.0, "a restart continues from the stamp before");
                }
            }
            // Gaps within sessions keep their order: a longer pause stays longer.
            for (a, a_new) in &gaps {
                for (b, b_new) in &gaps {
                    if a + 2.0 * tolerance < *b {
                        prop_assert!(a_new < b_new, "{} < {} but {} >= {}", a, b, a_new, b_new);
                    }
                }
            }
        }
    }
}
