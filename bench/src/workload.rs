//! The synthetic chat the recall benchmarks query: made-up English lines, half
//! function words and half Zipf-distributed content words, from a fixed seed, so
//! every benchmark that uses it times the same index.

/// English function words; real chat lines are about half these.
pub const FUNCTION_WORDS: &[&str] = &[
    "the", "a", "to", "and", "I", "you", "it", "is", "of", "in", "that", "we", "my", "on", "for",
    "was", "with", "do", "what", "have", "be", "this", "are", "so", "there", "me", "at", "not",
];

/// SplitMix64: a fixed, dependency-free source of pseudo-random numbers.
pub struct Random(pub u64);

impl Random {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }

    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Draws ranks with probability proportional to 1 / rank.
pub struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    pub fn new(size: usize) -> Self {
        let mut total = 0.0;
        let cumulative = (1..=size)
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        Self { cumulative }
    }

    pub fn draw(&self, random: &mut Random) -> usize {
        let target = random.unit() * self.cumulative.last().unwrap();
        self.cumulative
            .partition_point(|&c| c < target)
            .min(self.cumulative.len() - 1)
    }
}

/// Lines of 10-30 words: half function words, half content words drawn from a
/// Zipf-distributed vocabulary of made-up words.
pub struct EnglishLines {
    /// The made-up words, by Zipf rank.
    pub vocabulary: Vec<String>,
    /// How often each rank is drawn.
    pub zipf: Zipf,
}

impl EnglishLines {
    pub fn new(random: &mut Random) -> Self {
        // Distinct made-up words: each rank spelled in base 20 with syllables.
        // None ends in "s", so plural folding never merges two of them.
        const SYLLABLES: &[&str] = &[
            "ka", "lo", "mi", "ter", "bun", "gen", "ra", "tor", "shel", "ven", "pa", "dor", "fi",
            "lan", "cor", "ro", "sta", "ble", "na", "wen",
        ];
        let mut order: Vec<usize> = (0..5_000).collect();
        // Shuffle so that frequent words are not all the short ones.
        for i in (1..order.len()).rev() {
            order.swap(i, random.below(i + 1));
        }
        let vocabulary = order
            .into_iter()
            .map(|rank| {
                let mut word = String::new();
                let mut rest = rank + 20;
                while rest > 0 {
                    word.push_str(SYLLABLES[rest % 20]);
                    rest /= 20;
                }
                word
            })
            .collect();
        Self {
            vocabulary,
            zipf: Zipf::new(5_000),
        }
    }

    pub fn line(&self, random: &mut Random, words: usize) -> String {
        let mut line = String::new();
        for i in 0..words {
            if i > 0 {
                line.push(' ');
            }
            if random.below(2) == 0 {
                line.push_str(FUNCTION_WORDS[random.below(FUNCTION_WORDS.len())]);
            } else {
                line.push_str(&self.vocabulary[self.zipf.draw(random)]);
            }
        }
        line.push('.');
        line
    }
}

/// Messages in a 10k-message log, and queries timed against it.
pub const LOG_MESSAGES: usize = 10_000;
/// Queries timed one by one.
pub const LATENCY_QUERIES: usize = 2_000;

/// The benchmark chat: [`LOG_MESSAGES`] lines of 10-30 words (player and NPC
/// in turn, 5 seconds apart), then [`LATENCY_QUERIES`] queries of 6-15 words,
/// all from `line` and one seed, so every benchmark times the same index.
pub fn chat(
    mut line: impl FnMut(&mut Random, usize) -> String,
) -> (Vec<bevy_npc_memory::memory::ChatMessage>, Vec<String>) {
    use bevy_npc_memory::memory::{ChatMessage, LogIndex, Role};
    let mut random = Random(0x5eed);
    let log = (0..LOG_MESSAGES)
        .map(|i| {
            let words = 10 + random.below(21);
            ChatMessage {
                role: if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                },
                content: std::sync::Arc::from(line(&mut random, words)),
                index: i as LogIndex,
                timestamp: i as f64 * 5.0,
                origin: Default::default(),
                speaker: None,
            }
        })
        .collect();
    let queries = (0..LATENCY_QUERIES)
        .map(|_| {
            let words = 6 + random.below(10);
            line(&mut random, words)
        })
        .collect();
    (log, queries)
}
