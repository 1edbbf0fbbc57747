//! Turning messages into prompt text, the compact summary form, and stop sequences.
//!
//! Everything here is plain text work, independent of llama.cpp, so it is tested
//! without a model.

use crate::llm::RequestKind;
use crate::memory::{PromptMessage, Role, SummaryInput};

/// ChatML, the format many instruct models were tuned on. Used when a GGUF carries
/// no chat template, or one llama.cpp cannot apply.
pub(crate) fn chatml(messages: &[PromptMessage]) -> String {
    let mut out = String::new();
    for message in messages {
        out.push_str("<|im_start|>");
        out.push_str(message.role.as_str());
        out.push('\n');
        out.push_str(&message.content);
        out.push_str("<|im_end|>\n");
    }
    out.push_str("<|im_start|>assistant\n");
    out
}

/// The three lines of the compact summary form, in order.
const FIELDS: [&str; 3] = ["Name:", "Goal:", "Facts:"];

/// What the model is asked and what its answer starts with.
pub(crate) struct Prompt {
    pub(crate) messages: Vec<PromptMessage>,
    /// Text put at the start of the model's answer, so a small model continues a
    /// form instead of choosing its own format. It is part of the returned text.
    pub(crate) prefill: String,
}

/// The request as the model should see it: unchanged, or for a summary in the
/// compact form.
pub(crate) fn prompt_for(
    kind: &RequestKind,
    messages: &[PromptMessage],
    compact: bool,
) -> Prompt {
    match kind {
        RequestKind::Summary(input) if compact => compact_summary(input),
        _ => Prompt {
            messages: messages.to_vec(),
            prefill: String::new(),
        },
    }
}

fn compact_summary(input: &SummaryInput) -> Prompt {
    let previous = if input.previous_summary.trim().is_empty() {
        "Name: unknown\nGoal: unknown\nFacts: none".to_owned()
    } else {
        input.previous_summary.trim().to_owned()
    };
    let mut lines = String::new();
    for message in &input.transcript {
        let speaker = match message.role {
            Role::User => input.player_name.as_str(),
            Role::Assistant => input.npc_name.as_str(),
            Role::System => continue,
        };
        lines.push_str(speaker);
        lines.push_str(": ");
        lines.push_str(message.content.trim());
        lines.push('\n');
    }
    // Short sentences and a form to fill in: 135M-parameter models drift on open
    // instructions but copy a visible pattern well.
    let user = format!(
        "Notes so far:\n{previous}\n\nNew lines:\n{lines}\n\
         Update the notes about {player}. Keep exactly three lines:\n\
         Name: {player}'s name\nGoal: what {player} wants to do\n\
         Facts: other facts about {player}, separated by semicolons",
        player = input.player_name,
    );
    Prompt {
        messages: vec![
            PromptMessage::new(
                Role::System,
                "You keep short notes about a player in a game. You only fill in the form.",
            ),
            PromptMessage::new(Role::User, user),
        ],
        prefill: "Name:".to_owned(),
    }
}

/// Cleans a compact-form answer: only the three form lines survive, in order, and a
/// field the model left out or marked unknown keeps its previous value, so one
/// weak answer does not erase what earlier summaries knew.
pub(crate) fn tidy_compact(raw: &str, previous: &str) -> String {
    let fresh = fields(raw);
    let old = fields(previous);
    let mut out = Vec::new();
    for (index, field) in FIELDS.iter().enumerate() {
        let value = match (&fresh[index], &old[index]) {
            (Some(new), _) if !is_unknown(new) => Some(new.clone()),
            (_, Some(old)) if !is_unknown(old) => Some(old.clone()),
            (Some(new), _) => Some(new.clone()),
            _ => None,
        };
        if let Some(value) = value {
            out.push(format!("{field} {value}"));
        }
    }
    out.join("\n")
}

fn fields(text: &str) -> [Option<String>; 3] {
    let mut found: [Option<String>; 3] = Default::default();
    for line in text.lines() {
        let line = line.trim().trim_start_matches(['-', '*', ' ']);
        for (index, field) in FIELDS.iter().enumerate() {
            if found[index].is_none()
                && let Some(value) = strip_prefix_ignore_case(line, field)
            {
                let value = value.trim();
                if !value.is_empty() {
                    found[index] = Some(value.to_owned());
                }
            }
        }
    }
    found
}

fn strip_prefix_ignore_case<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    let head = line.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &line[prefix.len()..])
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

    #[test]
    fn chatml_ends_with_an_open_assistant_turn() {
        let prompt = chatml(&[
            PromptMessage::new(Role::System, "Be brief."),
            PromptMessage::new(Role::User, "Hi"),
        ]);
        assert_eq!(
            prompt,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    fn message(index: u64, role: Role, content: &str) -> ChatMessage {
        ChatMessage {
            role,
            content: content.into(),
            index,
            timestamp: 0.0,
        }
    }

    #[test]
    fn the_compact_form_shows_the_transcript_and_starts_the_answer() {
        let input = SummaryInput {
            previous_summary: Arc::from(""),
            transcript: vec![
                message(0, Role::User, "I'm Alex."),
                message(1, Role::Assistant, "Welcome."),
            ],
            player_name: "Player".into(),
            npc_name: "ECHO-7".into(),
        };
        let prompt = prompt_for(&RequestKind::Summary(input), &[], true);
        assert_eq!(prompt.prefill, "Name:");
        let user = &prompt.messages[1].content;
        assert!(user.contains("Player: I'm Alex.\nECHO-7: Welcome."));
        assert!(user.contains("Name: unknown"));
    }

    #[test]
    fn tidy_keeps_the_form_and_earlier_knowledge() {
        let previous = "Name: Alex\nGoal: fix the power\nFacts: none";
        let raw = "Name: unknown\nGoal: reach storage.\nFacts: is in the storage area\nECHO-7: hi";
        assert_eq!(
            tidy_compact(raw, previous),
            "Name: Alex\nGoal: reach storage.\nFacts: is in the storage area"
        );
        assert_eq!(tidy_compact("Name: Bo", ""), "Name: Bo");
        assert_eq!(tidy_compact("nonsense", ""), "");
    }
}
