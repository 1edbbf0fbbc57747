//! Prompts, the compact summary form, and stop sequences.
//!
//! Everything here is plain text work, independent of llama.cpp, so it is tested
//! without a model.

use crate::memory::{PromptMessage, Role, SummaryInput};

/// What the model is asked and what its answer starts with.
#[derive(Clone, Debug)]
pub(crate) struct Prompt {
    pub(crate) messages: Vec<PromptMessage>,
    /// Text put at the start of the model's answer, so a small model continues a
    /// sentence instead of choosing its own format. It is not part of the answer.
    pub(crate) prefill: String,
}

impl Prompt {
    pub(crate) fn plain(messages: &[PromptMessage]) -> Self {
        Self {
            messages: messages.to_vec(),
            prefill: String::new(),
        }
    }
}

/// One line of the compact form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    Name,
    Goal,
    Place,
}

/// The compact summary asks one short question per field, about the player's own
/// lines only. Tried on SmolLM2-135M: asked for a whole `Name/Goal/Facts` form at
/// once it copied the form's placeholder text back, and with a worked example it
/// copied the example's values; one question with the answer's first words given
/// ("The player's name is") is answered correctly far more often.
pub(crate) fn compact_questions(input: &SummaryInput) -> Vec<(Field, Prompt)> {
    let said = player_lines(input).join("\n");
    let ask = |question: &str, prefill: &str| Prompt {
        messages: vec![
            PromptMessage::new(
                Role::System,
                "You answer questions about a conversation. Answer briefly.",
            ),
            PromptMessage::new(Role::User, format!("{said}\n\n{question}")),
        ],
        prefill: prefill.to_owned(),
    };
    vec![
        (
            Field::Name,
            ask(
                "What is the player's name? If the player did not say it, reply: unknown. Reply with the name only.",
                "The player's name is",
            ),
        ),
        (
            Field::Goal,
            ask(
                "What does the player want to do? If the player did not say it, reply: unknown. Reply in a few words.",
                "The player wants to",
            ),
        ),
        (
            Field::Place,
            ask(
                "Where is the player now? If the player did not say it, reply: unknown. Reply in a few words.",
                "The player is",
            ),
        ),
    ]
}

fn player_lines(input: &SummaryInput) -> Vec<String> {
    input
        .transcript
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| {
            format!(
                "{}: {}",
                m.speaker_label(&input.player_name),
                m.content.trim()
            )
        })
        .collect()
}

/// The most facts the compact form keeps; older ones give way to newer ones.
const MAX_FACTS: usize = 4;

/// Builds the compact summary from the answers: `Name: ...`, `Goal: ...`,
/// `Facts: a; b`. An answer that is unknown, or that uses words the player never
/// said (small models invent freely), is dropped and the previous value stays.
pub(crate) fn compose_compact(input: &SummaryInput, answers: &[(Field, String)]) -> String {
    let said = player_lines(input).join(" ").to_lowercase();
    let previous = parse_compact(&input.previous_summary);
    let mut name = previous.name;
    let mut goal = previous.goal;
    let mut facts = previous.facts;
    for (field, raw) in answers {
        let Some(answer) = clean(raw) else { continue };
        match field {
            Field::Name => {
                if answer.split_whitespace().count() <= 3 && said.contains(&answer.to_lowercase()) {
                    name = Some(answer);
                }
            }
            Field::Goal => {
                // "wants to know ..." is what the model says when it has no answer.
                if !answer.starts_with("know") && grounded(&answer, &said) {
                    goal = Some(answer);
                }
            }
            Field::Place => {
                let answer = answer.strip_prefix("now ").unwrap_or(&answer);
                let answer = answer.strip_suffix(" now").unwrap_or(answer);
                let located = ["in ", "at ", "near ", "inside ", "on "]
                    .iter()
                    .any(|p| answer.starts_with(p));
                let fact = format!("is {answer}");
                if located && grounded(answer, &said) && !facts.contains(&fact) {
                    // Being somewhere replaces having been somewhere else.
                    facts.retain(|f| !f.starts_with("is in ") && !f.starts_with("is at "));
                    facts.push(fact);
                }
            }
        }
    }
    if facts.len() > MAX_FACTS {
        facts.drain(..facts.len() - MAX_FACTS);
    }
    let facts = if facts.is_empty() {
        "none".to_owned()
    } else {
        facts.join("; ")
    };
    format!(
        "Name: {}\nGoal: {}\nFacts: {facts}",
        name.as_deref().unwrap_or("unknown"),
        goal.as_deref().unwrap_or("unknown"),
    )
}

/// The first clause of an answer, or `None` when it says it does not know.
fn clean(raw: &str) -> Option<String> {
    let first = raw
        .trim()
        .split(['\n', ',', ';'])
        .next()
        .unwrap_or_default()
        .trim()
        .trim_end_matches('.')
        .trim();
    let first = first.strip_prefix("to ").unwrap_or(first);
    (!first.is_empty() && !is_unknown(first)).then(|| first.to_owned())
}

/// Whether most of the answer's content words are words the player used.
fn grounded(answer: &str, said: &str) -> bool {
    const FILLER: [&str; 12] = [
        "the", "a", "an", "to", "in", "at", "on", "of", "and", "is", "near", "inside",
    ];
    let words: Vec<String> = answer
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(str::to_lowercase)
        .filter(|w| !w.is_empty() && !FILLER.contains(&w.as_str()))
        .collect();
    if words.is_empty() {
        return false;
    }
    let known = words.iter().filter(|w| said.contains(w.as_str())).count();
    known * 3 >= words.len() * 2
}

/// The three fields of a compact summary, as far as a text has them.
struct Compact {
    name: Option<String>,
    goal: Option<String>,
    facts: Vec<String>,
}

fn parse_compact(text: &str) -> Compact {
    let mut compact = Compact {
        name: None,
        goal: None,
        facts: Vec::new(),
    };
    for line in text.lines() {
        let line = line.trim();
        let value = |prefix: &str| {
            line.strip_prefix(prefix)
                .map(str::trim)
                .filter(|v| !v.is_empty() && !is_unknown(v))
                .map(str::to_owned)
        };
        if let Some(name) = value("Name:") {
            compact.name = Some(name);
        } else if let Some(goal) = value("Goal:") {
            compact.goal = Some(goal);
        } else if let Some(facts) = value("Facts:") {
            compact.facts = facts.split("; ").map(str::to_owned).collect();
        }
    }
    compact
}

fn is_unknown(value: &str) -> bool {
    let value = value.trim().trim_end_matches('.').to_ascii_lowercase();
    matches!(value.as_str(), "unknown" | "none" | "n/a" | "")
}

/// Watches generated text for stop sequences and holds back whatever could still
/// turn out to be the start of one, so streamed pieces never show a stop sequence.
pub(crate) struct StopScanner {
    stops: Vec<String>,
    text: String,
    /// How much of `text` has been released to the stream.
    released: usize,
    stopped: bool,
}

impl StopScanner {
    pub(crate) fn new(stops: &[String]) -> Self {
        Self {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            text: String::new(),
            released: 0,
            stopped: false,
        }
    }

    /// Adds generated text and returns the part that is now safe to show.
    pub(crate) fn push(&mut self, piece: &str) -> &str {
        if self.stopped {
            return "";
        }
        let start = self.released;
        self.text.push_str(piece);
        let search_from = start.saturating_sub(self.longest_stop());
        let search_from = floor_char_boundary(&self.text, search_from);
        let hit = self
            .stops
            .iter()
            .filter_map(|stop| self.text[search_from..].find(stop.as_str()))
            .min();
        if let Some(at) = hit {
            self.text.truncate(search_from + at);
            self.stopped = true;
            self.released = self.text.len().max(start);
            return &self.text[start.min(self.text.len())..];
        }
        let held = self.held_back();
        self.released = (self.text.len() - held).max(start);
        &self.text[start..self.released]
    }

    /// The longest tail of the text that is a proper prefix of some stop sequence.
    fn held_back(&self) -> usize {
        let mut held = 0;
        for stop in &self.stops {
            for (end, _) in stop.char_indices().skip(1) {
                if end > held && self.text.ends_with(&stop[..end]) {
                    held = end;
                }
            }
        }
        held
    }

    fn longest_stop(&self) -> usize {
        self.stops.iter().map(String::len).max().unwrap_or(0)
    }

    /// Whether a stop sequence was seen.
    pub(crate) fn stopped(&self) -> bool {
        self.stopped
    }

    /// Text held back at the end because it looked like the start of a stop
    /// sequence, released when generation ends without one.
    pub(crate) fn finish(&mut self) -> &str {
        let start = self.released;
        self.released = self.text.len();
        &self.text[start..]
    }

    /// All text before any stop sequence.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// Collects token bytes and releases only complete UTF-8, since one character can
/// be split over several tokens.
#[derive(Default)]
pub(crate) struct Utf8Buffer {
    bytes: Vec<u8>,
}

impl Utf8Buffer {
    pub(crate) fn push(&mut self, bytes: &[u8]) -> String {
        self.bytes.extend_from_slice(bytes);
        match std::str::from_utf8(&self.bytes) {
            Ok(text) => {
                let text = text.to_owned();
                self.bytes.clear();
                text
            }
            Err(error) => {
                let valid = error.valid_up_to();
                let text = String::from_utf8_lossy(&self.bytes[..valid]).into_owned();
                match error.error_len() {
                    // Incomplete at the end: wait for the next token.
                    None => {
                        self.bytes.drain(..valid);
                        text
                    }
                    // Really invalid: show a replacement character and move on.
                    Some(bad) => {
                        self.bytes.drain(..valid + bad);
                        text + "\u{FFFD}" + &self.push(&[])
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::memory::ChatMessage;

    fn scan(stops: &[&str], pieces: &[&str]) -> (String, String, bool) {
        let stops: Vec<String> = stops.iter().map(|s| s.to_string()).collect();
        let mut scanner = StopScanner::new(&stops);
        let mut streamed = String::new();
        for piece in pieces {
            streamed.push_str(scanner.push(piece));
        }
        if !scanner.stopped() {
            streamed.push_str(scanner.finish());
        }
        (streamed, scanner.text().to_owned(), scanner.stopped())
    }

    #[test]
    fn a_stop_split_over_pieces_never_reaches_the_stream() {
        let (streamed, text, stopped) =
            scan(&["\nPlayer:"], &["Hello", " there.", "\nPla", "yer: hi"]);
        assert_eq!(streamed, "Hello there.");
        assert_eq!(text, "Hello there.");
        assert!(stopped);
    }

    #[test]
    fn held_back_text_is_released_when_no_stop_follows() {
        let (streamed, text, stopped) = scan(&["\nPlayer:"], &["Hi", "\nPl", "ants grow."]);
        assert_eq!(streamed, "Hi\nPlants grow.");
        assert_eq!(text, streamed);
        assert!(!stopped);
        let (streamed, _, _) = scan(&["\n\n"], &["Done.", "\n"]);
        assert_eq!(streamed, "Done.\n");
    }

    #[test]
    fn streamed_pieces_always_add_up_to_the_text() {
        let stops = ["\n\n", "END"];
        let pieces = ["a", "E", "N", "x", "\n", "b", "EN", "D", "z"];
        let (streamed, text, stopped) = scan(&stops, &pieces);
        assert_eq!(streamed, text);
        assert_eq!(text, "aENx\nb");
        assert!(stopped);
    }

    #[test]
    fn split_characters_wait_for_their_last_byte() {
        let mut buffer = Utf8Buffer::default();
        let bytes = "é!".as_bytes();
        assert_eq!(buffer.push(&bytes[..1]), "");
        assert_eq!(buffer.push(&bytes[1..]), "é!");
        assert_eq!(buffer.push(&[0xff, b'a']), "\u{FFFD}a");
    }

    fn message(index: u64, role: Role, content: &str) -> ChatMessage {
        ChatMessage {
            role,
            content: content.into(),
            index,
            timestamp: 0.0,
            origin: Default::default(),
            speaker: None,
        }
    }

    fn input(previous: &str, lines: &[(Role, &str)]) -> SummaryInput {
        SummaryInput {
            previous_summary: Arc::from(previous),
            transcript: lines
                .iter()
                .enumerate()
                .map(|(i, (role, text))| message(i as u64, *role, text))
                .collect(),
            player_name: "Player".into(),
            npc_name: "ECHO-7".into(),
            segments: Vec::new(),
            wants_facts: false,
            covered: 0..lines.len() as u64,
        }
    }

    #[test]
    fn the_compact_questions_see_only_the_player_and_start_the_answer() {
        let input = input(
            "",
            &[
                (Role::User, "I'm Alex."),
                (Role::Assistant, "I fixed it already."),
            ],
        );
        let questions = compact_questions(&input);
        assert_eq!(questions.len(), 3);
        let (field, prompt) = &questions[0];
        assert_eq!(*field, Field::Name);
        assert_eq!(prompt.prefill, "The player's name is");
        assert!(
            prompt.messages[1]
                .content
                .starts_with("Player: I'm Alex.\n\n")
        );
        assert!(!prompt.messages[1].content.contains("fixed"));
    }

    #[test]
    fn answers_the_player_never_grounded_are_dropped() {
        let first = input(
            "",
            &[(
                Role::User,
                "Hello, I'm Alex. I'm here to fix the power system.",
            )],
        );
        let summary = compose_compact(
            &first,
            &[
                (Field::Name, " Alex.".into()),
                (Field::Goal, " fix the power system.".into()),
                (Field::Place, " here to fix the power system.".into()),
            ],
        );
        assert_eq!(
            summary,
            "Name: Alex\nGoal: fix the power system\nFacts: none"
        );

        let second = input(&summary, &[(Role::User, "I'm in the storage area now.")]);
        let summary = compose_compact(
            &second,
            &[
                (Field::Name, " unknown.".into()),
                (Field::Goal, " play a game of \"The Last Stand\".".into()),
                (
                    Field::Place,
                    " in the storage area now, and has a box of cookies.".into(),
                ),
            ],
        );
        assert_eq!(
            summary,
            "Name: Alex\nGoal: fix the power system\nFacts: is in the storage area"
        );

        let third = input(&summary, &[(Role::User, "Now I'm at the lab.")]);
        let summary = compose_compact(
            &third,
            &[
                (Field::Goal, " know what they're doing.".into()),
                (Field::Place, " now at the lab.".into()),
            ],
        );
        assert!(summary.ends_with("Facts: is at the lab"), "{summary}");
    }
}
