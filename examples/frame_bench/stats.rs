//! Percentiles of frame times, and the number formats the reports share.

use std::time::Duration;

use serde_json::{Value, json};

use crate::sampling::percentile;
use crate::{FRAME_BUDGET, SET_NAMES};

/// Percentiles of one series of samples.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stats {
    samples: usize,
    pub(crate) median_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) max_us: f64,
    pub(crate) over_budget: usize,
}

impl Stats {
    pub(crate) fn of(samples: &[Duration]) -> Self {
        assert!(!samples.is_empty(), "no samples were recorded");
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        Self {
            samples: sorted.len(),
            median_us: micros(percentile(&sorted, 50.0)),
            p99_us: micros(percentile(&sorted, 99.0)),
            max_us: micros(*sorted.last().expect("not empty")),
            over_budget: sorted.iter().filter(|d| **d > FRAME_BUDGET).count(),
        }
    }

    pub(crate) fn json(&self) -> Value {
        json!({
            "samples": self.samples,
            "median_us": round2(self.median_us),
            "p99_us": round2(self.p99_us),
            "max_us": round2(self.max_us),
            "over_1ms": self.over_budget,
        })
    }
}

pub(crate) fn sets_json(sets: &Option<[Stats; 4]>) -> Value {
    match sets {
        Some(sets) => SET_NAMES
            .iter()
            .zip(sets)
            .map(|(name, stats)| ((*name).to_owned(), stats.json()))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        None => Value::Null,
    }
}

pub(crate) fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

pub(crate) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
