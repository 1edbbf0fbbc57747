//! Code shared by the benchmark binaries: reading LoCoMo conversations, their
//! tuning split, the evidence-recall rule and the prompt dumps that let anyone
//! check it, the strategies' memory configurations, the play-session simulator,
//! and the synthetic chat the recall benchmarks query.
//!
//! The binaries (`memory_bench`, `playtime_bench`) are thin command lines over these
//! modules, so both replay the same data through the same definitions of `full`,
//! `basic`/`summary` and `layered`.

pub mod billing;
pub mod cli;
pub mod dump;
pub mod evidence;
pub mod locomo;
pub mod notes;
pub mod playtime;
pub mod split;
pub mod strategies;
pub mod summarizer;
pub mod workload;
