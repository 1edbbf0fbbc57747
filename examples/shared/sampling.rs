//! What the bench examples share: a seeded generator, so every run and mode sees
//! the same lines, and nearest-rank percentiles of timings.

use std::time::Duration;

/// A tiny deterministic generator (a 64-bit LCG, the upper bits kept).
pub struct Lcg(pub u64);

impl Lcg {
    /// The next number, 31 bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

/// The nearest-rank percentile of sorted, non-empty samples.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
