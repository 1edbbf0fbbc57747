//! A backend that needs no network and no model, so examples and tests always run.

use std::sync::Arc;

use super::backend::{
    BackendFuture, ChatBackend, ChatRequest, ChatResponse, Progress, RequestKind, stream_words,
};
use crate::memory::{ActionStep, Origin, ReplyInput, Role, SummaryInput};

/// Joins the player's statements inside an offline summary.
const STATEMENT_SEPARATOR: &str = " | ";
/// Longest statement kept in a summary, in characters.
const STATEMENT_CHARS: usize = 160;

/// A deterministic backend without a model.
///
/// - Its **replies** say plainly that no model is connected, then repeat what its
///   memory holds, so memory can be watched working offline.
/// - Its **summaries** are an extractive digest: the player's own statements and
///   the results of actions the NPC took (`[ECHO-7 did open_door]: …`), merged
///   with the previous digest, oldest dropped first (but never the very first) once
///   the digest would exceed `max_summary_chars`. A statement of a speaker other
///   than the default player is written `[Name]: text`. Compactions merge the segments'
///   digests the same way. When fact updates are asked for, it answers with the
///   JSON object and the few facts simple patterns find ("my name is …").
/// - It never calls actions: with no model there is nobody to choose one, so
///   [`ChatRequest::actions`] is ignored and every reply is text.
#[derive(Clone, Debug)]
pub struct OfflineBackend {
    max_summary_chars: usize,
}

impl Default for OfflineBackend {
    fn default() -> Self {
        Self {
            max_summary_chars: 1500,
        }
    }
}

impl OfflineBackend {
    /// An offline backend whose digests stay under `max_summary_chars` characters.
    pub fn with_max_summary_chars(max_summary_chars: usize) -> Self {
        Self { max_summary_chars }
    }

    /// The reply the backend gives for a request.
    pub fn reply_text(request: &ChatRequest, input: &ReplyInput) -> String {
        let said = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| shorten(&m.content, STATEMENT_CHARS))
            .unwrap_or_default();
        let memory = if input.summary.is_empty() {
            "nothing is summarized yet.".to_string()
        } else {
            format!("what I remember: {}", input.summary)
        };
        // Notes after the system prompt are what the NPC saw or was told (they are
        // the only other system messages a reply prompt holds); repeating the newest
        // shows offline that it reached the prompt, with its source.
        let note = request.messages[1.min(request.messages.len())..]
            .iter()
            .rev()
            .find(|m| m.role == Role::System)
            .map(|m| {
                format!(
                    " — a note I have: {}",
                    shorten(&m.content, STATEMENT_CHARS * 2)
                )
            })
            .unwrap_or_default();
        format!(
            "[offline] {} has no language model connected, so this is not a real answer. You said: \"{said}\" — {memory}{note}",
            input.npc_name
        )
    }

    /// The backend's answer to any summary request: a digest, a compaction, or the
    /// JSON object with fact updates, as the request asks.
    pub fn summarize(&self, input: &SummaryInput) -> String {
        if !input.segments.is_empty() {
            self.compact(input)
        } else if input.wants_facts {
            super::offline_facts::summary_with_facts(self.digest(input), input)
        } else {
            self.digest(input)
        }
    }

    /// The digest the backend gives for a summary request.
    pub fn digest(&self, input: &SummaryInput) -> String {
        let prefix = format!("{}: ", input.player_name);
        let mut statements: Vec<Arc<str>> = input
            .previous_summary
            .strip_prefix(prefix.as_str())
            .map(|rest| rest.split(STATEMENT_SEPARATOR).map(Arc::from).collect())
            .unwrap_or_default();
        for message in &input.transcript {
            let mut statement = shorten(&message.content, STATEMENT_CHARS);
            match (&message.origin, message.role) {
                // What the NPC did is remembered too, under its own name.
                (Origin::Acted(note), _) if note.step == ActionStep::Done => {
                    statement = format!("[{} did {}]: {statement}", input.npc_name, note.name);
                }
                (_, Role::User) => {
                    // The digest is the player's words; another speaker's carry its
                    // name, so co-op players and NPCs are never merged into the player.
                    if let Some(speaker) = message.speaker.as_ref().filter(|s| !s.is_player()) {
                        statement = format!("[{}]: {statement}", speaker.name());
                    }
                }
                _ => continue,
            }
            let statement: Arc<str> = statement.into();
            if !statement.is_empty() && !statements.contains(&statement) {
                statements.push(statement);
            }
        }
        let length = |s: &[Arc<str>]| {
            s.iter()
                .map(|x| x.chars().count() + STATEMENT_SEPARATOR.len())
                .sum::<usize>()
                + prefix.chars().count()
        };
        while statements.len() > 2 && length(&statements) > self.max_summary_chars {
            statements.remove(1);
        }
        if statements.is_empty() {
            return format!("{prefix}(nothing stated)");
        }
        format!("{prefix}{}", statements.join(STATEMENT_SEPARATOR))
    }
}

impl ChatBackend for OfflineBackend {
    fn name(&self) -> &str {
        "offline"
    }

    fn complete(&self, request: ChatRequest, progress: Progress) -> BackendFuture {
        let text = match &request.kind {
            RequestKind::Reply(input) => {
                let text = Self::reply_text(&request, input);
                stream_words(&text, &progress);
                text
            }
            RequestKind::Summary(input) => self.summarize(input),
        };
        Box::pin(async move { Ok(ChatResponse::text(text)) })
    }
}

impl OfflineBackend {
    /// The merge the backend gives for a compaction: the segments' statements,
    /// deduplicated, cut to size oldest-first like a digest.
    pub fn compact(&self, input: &crate::memory::SummaryInput) -> String {
        let prefix = format!("{}: ", input.player_name);
        let mut merged = input.clone();
        merged.transcript.clear();
        let mut statements: Vec<&str> = Vec::new();
        for segment in &input.segments {
            let body = segment.strip_prefix(prefix.as_str()).unwrap_or(segment);
            for statement in body.split(STATEMENT_SEPARATOR) {
                if !statement.is_empty() && !statements.contains(&statement) {
                    statements.push(statement);
                }
            }
        }
        merged.previous_summary =
            Arc::from(format!("{prefix}{}", statements.join(STATEMENT_SEPARATOR)));
        self.digest(&merged)
    }
}

/// Collapses whitespace and cuts to `max_chars` characters.
fn shorten(text: &str, max_chars: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &collapsed[..cut]),
        None => collapsed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{ChatMessage, NpcId, PromptMessage};

    fn message(role: Role, text: &str, index: u64) -> ChatMessage {
        ChatMessage {
            role,
            content: text.into(),
            index,
            timestamp: 0.0,
            origin: Default::default(),
            speaker: None,
        }
    }

    fn input(previous: &str, transcript: Vec<ChatMessage>) -> SummaryInput {
        SummaryInput {
            previous_summary: previous.into(),
            transcript,
            player_name: "Player".into(),
            npc_name: "ECHO-7".into(),
            segments: Vec::new(),
            wants_facts: false,
            covered: 0..0,
        }
    }

    #[test]
    fn a_compaction_merges_the_segments_statements_once_each() {
        let backend = OfflineBackend::default();
        let mut request = input("", Vec::new());
        request.segments = vec![
            Arc::from("Player: I am Alex | the generator is down"),
            Arc::from("Player: the generator is down | my sister is north"),
        ];
        assert_eq!(
            backend.summarize(&request),
            "Player: I am Alex | the generator is down | my sister is north"
        );
    }

    #[test]
    fn the_digest_keeps_the_players_statements_and_merges_the_previous_one() {
        let backend = OfflineBackend::default();
        let first = backend.digest(&input(
            "",
            vec![
                message(Role::User, "Hi, I'm Alex.  Fixing   the power.", 0),
                message(Role::Assistant, "Logged.", 1),
            ],
        ));
        assert_eq!(first, "Player: Hi, I'm Alex. Fixing the power.");
        let second = backend.digest(&input(
            &first,
            vec![message(Role::User, "I'm in storage.", 2)],
        ));
        assert_eq!(
            second,
            "Player: Hi, I'm Alex. Fixing the power. | I'm in storage."
        );
    }

    #[test]
    fn the_digest_keeps_what_the_npc_did_but_not_its_calls_or_refusals() {
        let note = |step| {
            let note = crate::memory::ActionNote {
                name: "open_door".into(),
                call: "c1".into(),
                step,
            };
            Origin::Acted(Arc::new(note))
        };
        let mut transcript = vec![
            message(Role::User, "Open the reactor door.", 0),
            message(Role::System, r#"{"door":"reactor"}"#, 1),
            message(Role::System, "It slid open.", 2),
            message(Role::System, "The vault stays shut.", 3),
        ];
        transcript[1].origin = note(ActionStep::Called);
        transcript[2].origin = note(ActionStep::Done);
        transcript[3].origin = note(ActionStep::Refused);
        assert_eq!(
            OfflineBackend::default().digest(&input("", transcript)),
            "Player: Open the reactor door. | [ECHO-7 did open_door]: It slid open."
        );
    }

    #[test]
    fn the_digest_stays_bounded_and_keeps_the_first_statement() {
        let backend = OfflineBackend::with_max_summary_chars(120);
        let mut summary = String::new();
        for i in 0..50 {
            let text = format!("statement number {i} with some words");
            summary = backend.digest(&input(&summary, vec![message(Role::User, &text, i)]));
        }
        assert!(summary.chars().count() <= 120, "{summary}");
        assert!(summary.contains("statement number 0 "));
        assert!(summary.contains("statement number 49 "));
    }

    #[test]
    fn replies_say_they_are_offline_and_show_the_memory() {
        let request = ChatRequest {
            npc: NpcId::new("echo7"),
            kind: RequestKind::Reply(ReplyInput {
                npc_name: "ECHO-7".into(),
                summary: "Player: I'm Alex.".into(),
            }),
            messages: vec![PromptMessage::new(Role::User, "What is my name?")],
            actions: Vec::new(),
        };
        let RequestKind::Reply(input) = &request.kind else {
            unreachable!()
        };
        let text = OfflineBackend::reply_text(&request, input);
        assert!(text.starts_with("[offline] ECHO-7 has no language model connected"));
        assert!(text.contains("You said: \"What is my name?\""));
        assert!(
            text.ends_with("— what I remember: Player: I'm Alex."),
            "{text}"
        );
    }
}
