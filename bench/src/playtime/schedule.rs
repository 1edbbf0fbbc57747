//! The player's path through the NPCs, and what each NPC says.

use std::path::Path;

use bevy_npc_memory::memory::PersonaPrompt;
use serde_json::Value;

use super::Settings;
use crate::locomo::{Conversation, turn_text};

/// One player line of the schedule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlannedLine {
    /// The hour of play it falls in, from 0.
    pub hour: usize,
    /// Game time in seconds since the session started.
    pub seconds: f64,
    /// Which NPC it is said to.
    pub npc: usize,
}

/// A small deterministic generator (SplitMix64), so runs repeat exactly.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A whole number in `lo..=hi`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi.saturating_sub(lo) as u64 + 1)) as usize
    }
}

/// The player's path: every line, which hour it falls in and which NPC hears it.
/// Conversations of `conversation_lines` lines with one NPC follow each other; the
/// next NPC is drawn by the Zipf law, never the one just left (with two or more).
pub fn schedule(settings: &Settings) -> Vec<PlannedLine> {
    let npcs = settings.npcs.max(1);
    let weights: Vec<f64> = (1..=npcs)
        .map(|k| 1.0 / (k as f64).powf(settings.zipf))
        .collect();
    let total: f64 = weights.iter().sum();
    let mut rng = Rng::new(settings.seed);
    let pick = |rng: &mut Rng, current: Option<usize>| loop {
        let mut target = rng.unit() * total;
        let mut chosen = npcs - 1;
        for (npc, weight) in weights.iter().enumerate() {
            if target < *weight {
                chosen = npc;
                break;
            }
            target -= weight;
        }
        if npcs == 1 || Some(chosen) != current {
            return chosen;
        }
    };
    let lines = settings.hours * settings.lines_per_hour;
    let step = 3600.0 / settings.lines_per_hour.max(1) as f64;
    let (lo, hi) = settings.conversation_lines;
    let mut plan = Vec::with_capacity(lines);
    let (mut npc, mut left) = (pick(&mut rng, None), rng.between(lo.max(1), hi.max(lo)));
    for k in 0..lines {
        if left == 0 {
            npc = pick(&mut rng, Some(npc));
            left = rng.between(lo.max(1), hi.max(lo));
        }
        left -= 1;
        plan.push(PlannedLine {
            hour: k / settings.lines_per_hour,
            seconds: (k as f64 + 0.5) * step,
            npc,
        });
    }
    plan
}

/// What one NPC says: its persona, and (player line, reply) pairs to go through.
#[derive(Clone, Debug)]
pub struct Script {
    /// The NPC's persona, from its conversation's speakers.
    pub persona: PersonaPrompt,
    /// The player's turns, each with the NPC's turns that follow it.
    pub pairs: Vec<(String, String)>,
    /// Where this NPC starts in `pairs` (NPCs sharing a conversation start apart).
    pub start: usize,
}

/// One [`Script`] per NPC: NPC `i` speaks conversation `i mod conversations`.
pub fn scripts(records: &[Value], npcs: usize, file: &Path) -> Result<Vec<Script>, String> {
    let mut by_conversation = Vec::new();
    for record in records {
        let conversation = Conversation::parse(record, file)?;
        let mut pairs: Vec<(String, String)> = Vec::new();
        let mut open = false;
        for turn in conversation.turns() {
            let text = turn_text(turn);
            if conversation.is_player(turn) {
                match pairs.last_mut() {
                    // The player spoke twice in a row: one line.
                    Some((line, reply)) if open && reply.is_empty() => {
                        line.push(' ');
                        line.push_str(&text);
                    }
                    _ => pairs.push((text, String::new())),
                }
                open = true;
            } else if open && let Some((_, reply)) = pairs.last_mut() {
                if !reply.is_empty() {
                    reply.push(' ');
                }
                reply.push_str(&text);
            }
        }
        pairs.retain(|(_, reply)| !reply.is_empty());
        if pairs.is_empty() {
            return Err(format!(
                "{}: conversation {}: no player line with a reply",
                file.display(),
                conversation.sample_id
            ));
        }
        by_conversation.push((conversation.persona(), pairs));
    }
    if by_conversation.is_empty() {
        return Err(format!("{}: no conversations", file.display()));
    }
    let count = by_conversation.len();
    Ok((0..npcs)
        .map(|npc| {
            let (persona, pairs) = &by_conversation[npc % count];
            Script {
                persona: persona.clone(),
                pairs: pairs.clone(),
                start: (npc / count * 53) % pairs.len(),
            }
        })
        .collect())
}
