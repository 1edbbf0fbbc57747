//! The lines: LoCoMo turns (or synthetic ones) and the seeded schedule of who
//! hears which line when, the same in every mode.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use crate::args::Args;
use crate::sampling::Lcg;
use crate::{PLAYER_EVERY, PLAYER_FIRST, PLAYER_QUIET_END, SEED};

// Every mode hears the same schedule: it is drawn from a seeded `Lcg`.
impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Every turn of the LoCoMo file, or synthetic lines when it cannot be read.
pub(crate) fn load_lines(path: &str) -> (Vec<String>, &'static str) {
    let turns = std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .map(|data| {
            let mut turns = Vec::new();
            for sample in data.as_array().into_iter().flatten() {
                let Some(conversation) = sample["conversation"].as_object() else {
                    continue;
                };
                // Sessions in order: session_1, session_2, ...
                for n in 1.. {
                    let Some(session) = conversation.get(&format!("session_{n}")) else {
                        break;
                    };
                    for turn in session.as_array().into_iter().flatten() {
                        if let Some(text) = turn["text"].as_str().map(str::trim)
                            && !text.is_empty()
                        {
                            turns.push(text.to_owned());
                        }
                    }
                }
            }
            turns
        })
        .unwrap_or_default();
    if !turns.is_empty() {
        return (turns, "locomo");
    }
    let mut rng = Lcg(SEED);
    let subjects = ["The cook", "A guard", "Someone", "The mechanic", "Old Tam"];
    let verbs = ["says", "mutters that", "swears", "heard that", "claims"];
    let rests = [
        "the east door sticks again",
        "the water filters need changing before the storm",
        "the radio picked up voices last night",
        "rations will be cut next week",
        "the kids found a way onto the roof",
    ];
    let lines = (0..500)
        .map(|_| {
            format!(
                "{} {} {}.",
                subjects[rng.below(subjects.len())],
                verbs[rng.below(verbs.len())],
                rests[rng.below(rests.len())]
            )
        })
        .collect();
    (lines, "synthetic")
}

/// What happens when, the same in every mode.
pub(crate) struct Schedule {
    /// (time from start, background NPC index, line).
    pub(crate) chatter: Vec<(Duration, usize, String)>,
    /// (time from start, line).
    pub(crate) player: Vec<(Duration, String)>,
}

pub(crate) fn schedule(args: &Args, lines: &[String]) -> Schedule {
    let mut rng = Lcg(SEED);
    let run = Duration::from_secs(args.seconds);
    let background = args.npcs - 1;
    let mut chatter = Vec::new();
    if background > 0 && args.chatter > 0.0 {
        let every = Duration::from_secs_f64(1.0 / args.chatter);
        let mut at = Duration::ZERO;
        while at < run {
            let npc = rng.below(background);
            chatter.push((at, npc, lines[rng.below(lines.len())].clone()));
            at += every;
        }
    }
    let mut player = Vec::new();
    let mut at = PLAYER_FIRST;
    let mut seen = HashMap::new();
    while at + PLAYER_QUIET_END <= run {
        // Lines are matched to their replies by text, so each is made unique.
        let line = &lines[rng.below(lines.len())];
        let n = seen.entry(line.clone()).or_insert(0);
        *n += 1;
        let line = if *n == 1 {
            line.clone()
        } else {
            format!("{line} ({n})")
        };
        player.push((at, line));
        at += PLAYER_EVERY;
    }
    Schedule { chatter, player }
}
