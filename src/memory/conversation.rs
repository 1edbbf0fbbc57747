//! Conversations among NPCs, in plain Rust: whose turn it is, and when a
//! conversation has gone on long enough. The Bevy side
//! ([`StartConversation`](crate::conversations::StartConversation)) records the
//! lines and sends the requests; this decides what comes next.
//!
//! A conversation stops at its turn limit, at its token budget, or as soon as a
//! line repeats an earlier one. Repetition is judged on the terms recall
//! indexes (stopwords out, plurals and verb endings folded, any script), so
//! "The door is locked." and "the doors are locked!" are one line said twice.

use std::collections::HashSet;

use bevy::reflect::{Reflect, std_traits::ReflectDefault};
use serde::{Deserialize, Serialize};

use super::recall::terms::for_each_term;

/// Most lines a conversation may take, whatever its rules ask.
pub const MAX_CONVERSATION_TURNS: u32 = 200;

/// When a conversation among NPCs ends by itself.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Reflect)]
#[reflect(Debug, PartialEq, Clone, Default)]
#[type_path = "bevy_npc_memory::memory"]
#[serde(default, deny_unknown_fields)]
pub struct ConversationRules {
    /// Lines the NPCs say in all, the opening line included: at least one, at
    /// most [`MAX_CONVERSATION_TURNS`]. 6 by default.
    pub max_turns: u32,
    /// Tokens the conversation's replies may spend, prompts and completions (as
    /// the backend reports them, estimated when it reports none); no limit when
    /// `None`. The line that crosses it is the last.
    pub max_tokens: Option<u64>,
    /// How alike two lines must be, from 0 to 1, for the later one to count as a
    /// repetition that ends the conversation: the share of their terms they
    /// have in common (Jaccard). 0.8 by default; 1 or more never stops.
    pub repeat_similarity: f32,
}

impl Default for ConversationRules {
    fn default() -> Self {
        Self {
            max_turns: 6,
            max_tokens: None,
            repeat_similarity: 0.8,
        }
    }
}

/// Why a conversation among NPCs ended by itself.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum ConversationStop {
    /// Its NPCs said as many lines as its rules allow.
    TurnLimit,
    /// Its replies spent its token budget.
    TokenBudget {
        /// Tokens spent.
        spent: u64,
    },
    /// A line repeated an earlier one: the conversation was going in circles.
    Repetition {
        /// The repeating line's number in the conversation, from 0.
        line: u32,
        /// The number of the earlier line it repeats.
        repeats: u32,
        /// How alike they are, from 0 to 1.
        similarity: f32,
    },
}

/// How alike two lines are, from 0 (nothing in common) to 1 (the same): the share
/// of their recall terms they have in common. Two lines without any term (only
/// stopwords or punctuation) are alike when their trimmed, lower-cased text is
/// the same.
pub fn line_similarity(a: &str, b: &str) -> f32 {
    similarity(&Terms::of(a), &Terms::of(b))
}

/// The terms of one line, for comparing it with the others.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Terms {
    terms: HashSet<String>,
    /// The text itself, lower-cased, for lines without terms.
    bare: String,
}

impl Terms {
    fn of(text: &str) -> Self {
        let mut terms = HashSet::new();
        for_each_term(text, |term| {
            terms.insert(term.to_owned());
        });
        let bare = if terms.is_empty() {
            text.trim().to_lowercase()
        } else {
            String::new()
        };
        Self { terms, bare }
    }
}

fn similarity(a: &Terms, b: &Terms) -> f32 {
    if a.terms.is_empty() || b.terms.is_empty() {
        let same = a.terms.is_empty() && b.terms.is_empty() && a.bare == b.bare;
        return if same { 1.0 } else { 0.0 };
    }
    let shared = a.terms.intersection(&b.terms).count();
    let all = a.terms.len() + b.terms.len() - shared;
    shared as f32 / all as f32
}

/// Whose turn it is in a conversation among `speakers` NPCs (by their place in
/// the conversation, from 0), and whether the next line may come at all.
#[derive(Clone, Debug)]
pub struct TurnTaking {
    speakers: usize,
    rules: ConversationRules,
    lines: u32,
    tokens: u64,
    said: Vec<Terms>,
}

impl TurnTaking {
    /// A conversation among `speakers` NPCs (at least one), held to `rules`.
    pub fn new(speakers: usize, rules: ConversationRules) -> Self {
        Self {
            speakers: speakers.max(1),
            rules,
            lines: 0,
            tokens: 0,
            said: Vec::new(),
        }
    }

    /// Lines said so far.
    pub fn lines(&self) -> u32 {
        self.lines
    }

    /// Tokens spent so far.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Speaker `speaker` said `text`, which cost `tokens`. Returns who speaks
    /// next (the following speaker, round the circle), or why the conversation
    /// ends here. A repetition is checked before the limits, so the reason says
    /// the conversation went in circles when both hold.
    pub fn said(
        &mut self,
        speaker: usize,
        text: &str,
        tokens: u64,
    ) -> Result<usize, ConversationStop> {
        let line = self.lines;
        self.lines += 1;
        self.tokens = self.tokens.saturating_add(tokens);
        let terms = Terms::of(text);
        let repeated = self.said.iter().enumerate().find_map(|(earlier, said)| {
            let alike = similarity(said, &terms);
            (alike >= self.rules.repeat_similarity).then_some((earlier, alike))
        });
        self.said.push(terms);
        if let Some((earlier, similarity)) = repeated {
            return Err(ConversationStop::Repetition {
                line,
                repeats: earlier as u32,
                similarity,
            });
        }
        if self.lines >= self.rules.max_turns.min(MAX_CONVERSATION_TURNS) {
            return Err(ConversationStop::TurnLimit);
        }
        if let Some(budget) = self.rules.max_tokens
            && self.tokens >= budget
        {
            return Err(ConversationStop::TokenBudget { spent: self.tokens });
        }
        Ok((speaker + 1) % self.speakers)
    }
}

/// What the NPC who opens a conversation is told, as a line from the scene:
/// who it is with, and the topic if there is one. `others` are the display
/// names of the other participants.
pub fn opening_cue(others: &[&str], topic: Option<&str>) -> String {
    let with = match others {
        [] => String::from("nobody"),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    match topic.map(str::trim).filter(|t| !t.is_empty()) {
        Some(topic) => format!(
            "(You are with {with}. Start a conversation with them about: {topic}. Say only your own line.)"
        ),
        None => format!(
            "(You are with {with}. Start a conversation with them. Say only your own line.)"
        ),
    }
}

#[cfg(test)]
mod tests;
