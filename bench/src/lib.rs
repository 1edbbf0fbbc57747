//! Code shared by the benchmark binaries: reading LoCoMo conversations, the
//! strategies' memory configurations, and the play-session simulator.
//!
//! The binaries (`memory_bench`, `playtime_bench`) are thin command lines over these
//! modules, so both replay the same data through the same definitions of `full`,
//! `basic`/`summary` and `layered`.

pub mod locomo;
pub mod playtime;
pub mod strategies;
