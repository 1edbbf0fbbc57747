//! The save scenario L loads: NPCs with long logs of LoCoMo-like synthetic
//! English, drawn from a seeded generator.

use bevy_npc_memory::prelude::*;

use crate::sampling::Lcg;

// Every run loads the same save: its lines come from a seeded `Lcg`.
impl Lcg {
    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.next() as usize % words.len()]
    }
}

const WHEN: [&str; 8] = [
    "Yesterday",
    "Last weekend",
    "This morning",
    "Two weeks ago",
    "On Saturday",
    "Last summer",
    "A few days ago",
    "Back in May",
];
const DID: [&str; 16] = [
    "went hiking",
    "painted a sunset",
    "signed up for a pottery class",
    "adopted a puppy",
    "ran a charity race",
    "visited an art museum",
    "started volunteering at the shelter",
    "baked bread for the neighbours",
    "went camping by the river",
    "joined a book club",
    "played guitar at an open mic",
    "planted tomatoes in the garden",
    "took a photography workshop",
    "went to a pride parade",
    "learned to surf",
    "cooked dinner for my parents",
];
const WITH: [&str; 10] = [
    "my sister",
    "my mentor",
    "the kids",
    "my best friend",
    "my grandmother",
    "some coworkers",
    "my partner",
    "an old classmate",
    "my neighbour",
    "the support group",
];
const WHERE: [&str; 10] = [
    "near the lake",
    "downtown",
    "at the community centre",
    "in the mountains",
    "at the beach",
    "in the park",
    "at the library",
    "by the old bridge",
    "at the farmers market",
    "in the city",
];
const FELT: [&str; 10] = [
    "so relaxed",
    "really proud",
    "a bit nervous",
    "grateful",
    "inspired",
    "exhausted but happy",
    "closer to them",
    "like myself again",
    "hopeful about the future",
    "surprisingly calm",
];

/// One line of a LoCoMo-like chat between two friends catching up.
fn locomo_line(rng: &mut Lcg, player: bool) -> String {
    match (rng.next() % 4, player) {
        (0, _) => format!(
            "{} I {} with {} {}, and it made me feel {}.",
            rng.pick(&WHEN),
            rng.pick(&DID),
            rng.pick(&WITH),
            rng.pick(&WHERE),
            rng.pick(&FELT)
        ),
        (1, true) => format!(
            "Do you remember when you {} {}? How did {} like it?",
            rng.pick(&DID),
            rng.pick(&WHERE),
            rng.pick(&WITH)
        ),
        (1, false) => format!(
            "That sounds wonderful! I have been meaning to try that since I {}.",
            rng.pick(&DID)
        ),
        (2, _) => format!(
            "I've been thinking about what {} said {}; I felt {} afterwards.",
            rng.pick(&WITH),
            rng.pick(&WHEN).to_lowercase(),
            rng.pick(&FELT)
        ),
        _ => format!(
            "Next month I want to go back {} and maybe bring {} along.",
            rng.pick(&WHERE),
            rng.pick(&WITH)
        ),
    }
}

/// A save of `npcs` NPCs (the ids the bench spawns) with `messages` lines each,
/// recall on, the window at the end of the log.
pub(crate) fn big_save(
    npcs: usize,
    messages: usize,
    seed: u64,
) -> bevy_npc_memory::saves::SaveGame {
    use bevy_npc_memory::memory::{ChatMessage, MemoryParts, NpcMemory, Origin, PersonaPrompt};
    use bevy_npc_memory::saves::{NpcSave, SaveGame};
    use std::sync::Arc;

    let mut config = MemoryConfig::default();
    config.features.recall.enabled = true;
    let persona = PersonaPrompt {
        name: "Guard".into(),
        text: "You are a guard in an underground bunker. Answer in one or two sentences.".into(),
        style: Default::default(),
    };
    let empty = NpcMemory::new(persona, &config);
    let template = MemoryParts::of(&empty.log, &empty.window, &empty.context);
    let mut rng = Lcg(seed);
    let saves = (0..npcs)
        .map(|i| {
            let mut parts = template.clone();
            parts.log = (0..messages)
                .map(|m| ChatMessage {
                    role: if m % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    },
                    content: locomo_line(&mut rng, m % 2 == 0).into(),
                    index: m as u64,
                    timestamp: m as f64 * 30.0,
                    origin: Origin::default(),
                    speaker: None,
                })
                .collect();
            parts.window_start = messages.saturating_sub(4) as u64;
            Arc::new(NpcSave::new(NpcId::new(format!("npc{i}")), parts))
        })
        .collect();
    SaveGame::new(saves)
}
