//! A failed sequence, kept and played again. Proptest prints the sequence it shrank
//! to as Rust debug output, which nothing reads back; so every sequence that fails
//! is also written as JSON, and the one proptest ends on (its smallest) is the last
//! written. `scripts/state-machine-cut.py` plays it again with steps left out, to
//! cut it down further than proptest can, and prints what is left for a named test.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::play::Play;
use super::steps::Step;

/// The NPCs' ids and the steps a run played, in order.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Played {
    pub ids: Vec<String>,
    pub steps: Vec<Step>,
}

/// Where a failed sequence of the test `test` is written: cargo's scratch folder
/// for integration tests, which outlives the run.
pub fn failed_path(test: &str) -> PathBuf {
    let name = test.replace("::", "-");
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.failed.json"))
}

impl Played {
    /// Writes the sequence for the test running on this thread. Called while a
    /// failure unwinds, so it reports problems instead of panicking.
    pub fn keep(&self) {
        let test = std::thread::current()
            .name()
            .unwrap_or("state_machine")
            .to_owned();
        let path = failed_path(&test);
        let written = serde_json::to_vec_pretty(self)
            .map_err(|e| e.to_string())
            .and_then(|json| std::fs::write(&path, json).map_err(|e| e.to_string()));
        match written {
            Ok(()) => eprintln!("the failed sequence is kept in {}", path.display()),
            Err(error) => eprintln!("could not keep the failed sequence: {error}"),
        }
    }
}

/// Plays a kept sequence again: `STATE_MACHINE_SEQUENCE` names the file,
/// `STATE_MACHINE_KEEP` (indices, comma-separated) the steps to play, all by
/// default, and `STATE_MACHINE_WAIT_SECS` how long a wait may take before it
/// fails (30 s by default).
#[test]
#[ignore = "plays a kept failed sequence again; see scripts/state-machine-cut.py"]
fn replay_a_kept_sequence() {
    let path = std::env::var("STATE_MACHINE_SEQUENCE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| failed_path("state_machine::state_machine_long"));
    let json = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let played: Played = serde_json::from_slice(&json).expect("a kept sequence");
    let keep: Option<Vec<usize>> = std::env::var("STATE_MACHINE_KEEP").ok().map(|keep| {
        keep.split(',')
            .filter(|index| !index.is_empty())
            .map(|index| index.parse().expect("step indices"))
            .collect()
    });
    let mut play = Play::new(&played.ids);
    if let Ok(secs) = std::env::var("STATE_MACHINE_WAIT_SECS") {
        play.h.wait_secs = secs.parse().expect("seconds");
    }
    for (index, step) in played.steps.iter().enumerate() {
        if keep.as_ref().is_some_and(|keep| !keep.contains(&index)) {
            continue;
        }
        eprintln!("step {index}: {step:?}");
        play.run(step);
        play.check();
    }
}

/// A run that fails keeps its ids and steps where `failed_path` says, and they
/// read back as they were played.
#[test]
fn a_failed_run_keeps_its_sequence() {
    let test = "state_machine::keep_probe";
    let _ = std::fs::remove_file(failed_path(test));
    let step = Step::Talk {
        npc: 0,
        text: "नमस्ते ⟦the door⟧ \u{202E}".into(),
        private: true,
        by_entity: false,
        reply: super::steps::Reply::Say("Noted.".into()),
        co_op: false,
    };
    let ids = ["a", "b", "c"].map(str::to_owned);
    let played = step.clone();
    let run = std::thread::Builder::new()
        .name(test.into())
        .spawn(move || {
            let mut play = Play::new(&ids);
            play.run(&played);
            panic!("a check fails");
        })
        .unwrap()
        .join();
    assert!(run.is_err());
    let kept: Played =
        serde_json::from_slice(&std::fs::read(failed_path(test)).expect("kept")).unwrap();
    assert_eq!(kept.ids, ["a", "b", "c"]);
    assert_eq!(format!("{:?}", kept.steps), format!("{:?}", [step]));
    std::fs::remove_file(failed_path(test)).unwrap();
}
