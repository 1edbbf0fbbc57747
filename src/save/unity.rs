//! Imports the original ECHO-7 game's Unity `savegame.json` layout into one NPC's memory.
//!
//! That layout is `{"keys": ["ChatSystem", "ContextMemory"], "values": [..]}` where
//! each value is itself a JSON string: `{"logs": [{"role", "content"}, ..]}` and
//! `{"summary": .., "counter": N}`, `counter` being the messages since the last
//! summary.

use std::time::Duration;

use serde::Deserialize;

use super::error::LoadError;
use crate::memory::{
    ChatMessage, MemoryConfig, MemoryParts, PersonaPrompt, Role, SummaryRecord, SummaryTrigger,
};

#[derive(Deserialize)]
struct KeyValues {
    keys: Vec<String>,
    values: Vec<String>,
}

#[derive(Deserialize)]
struct ChatSystem {
    logs: Vec<LogEntry>,
}

#[derive(Deserialize)]
struct LogEntry {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct ContextMemory {
    #[serde(default)]
    summary: String,
    #[serde(default)]
    counter: u64,
}

/// Builds one NPC's memory from the Unity layout's text. `//` comments, as in the
/// original game's documented example, are tolerated.
pub fn import_unity_save(
    text: &str,
    persona: PersonaPrompt,
    config: MemoryConfig,
) -> Result<MemoryParts, LoadError> {
    let malformed = |what: &str, e: serde_json::Error| LoadError::Malformed(format!("{what}: {e}"));
    let outer: KeyValues = serde_json::from_str(&strip_line_comments(text))
        .map_err(|e| malformed("not the Unity save layout", e))?;
    if outer.keys.len() != outer.values.len() {
        return Err(LoadError::Malformed(format!(
            "{} keys but {} values",
            outer.keys.len(),
            outer.values.len()
        )));
    }
    let value_of = |key: &str| {
        outer
            .keys
            .iter()
            .position(|k| k == key)
            .map(|i| outer.values[i].as_str())
    };
    let chat: ChatSystem = match value_of("ChatSystem") {
        Some(value) => serde_json::from_str(value).map_err(|e| malformed("ChatSystem", e))?,
        None => return Err(LoadError::Malformed("there is no ChatSystem entry".into())),
    };
    let context: ContextMemory = match value_of("ContextMemory") {
        Some(value) => serde_json::from_str(value).map_err(|e| malformed("ContextMemory", e))?,
        None => ContextMemory {
            summary: String::new(),
            counter: chat.logs.len() as u64,
        },
    };

    let mut log = Vec::with_capacity(chat.logs.len());
    for entry in chat.logs {
        let role = match entry.role.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            // The system prompt belongs to the persona, not to the log.
            "system" => continue,
            other => return Err(LoadError::Malformed(format!("unknown role {other:?}"))),
        };
        log.push(ChatMessage {
            role,
            content: entry.content.into(),
            index: log.len() as u64,
            timestamp: 0.0,
            origin: Default::default(),
            speaker: None,
        });
    }
    let len = log.len() as u64;
    let covered_until = if context.summary.is_empty() {
        0
    } else {
        len.saturating_sub(context.counter)
    };
    let history = if covered_until > 0 {
        vec![SummaryRecord {
            covered: 0..covered_until,
            summary: context.summary.as_str().into(),
            trigger: SummaryTrigger::Threshold,
            latency: Duration::ZERO,
            attempts: 1,
        }]
    } else {
        Vec::new()
    };
    let parts = MemoryParts {
        persona,
        config,
        log,
        window_start: 0,
        summary: context.summary.into(),
        covered_until,
        history,
        degradations: Vec::new(),
        segments: Default::default(),
        facts: Default::default(),
        recall: Default::default(),
    };
    // Let the window rule place L1 as it would have been trimmed in play.
    let mut memory = parts
        .into_memory()
        .map_err(|invalid| LoadError::Inconsistent(invalid.to_string()))?;
    let _ = memory
        .window
        .trim(&memory.log, memory.context.covered_until(), false);
    Ok(MemoryParts::of(
        &memory.log,
        &memory.window,
        &memory.context,
    ))
}

/// Removes `//` comments that stand outside strings.
fn strip_line_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_string = false;
        let mut escaped = false;
        let mut cut = line.len();
        let bytes = line.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                _ if escaped => escaped = false,
                b'\\' if in_string => escaped = true,
                b'"' => in_string = !in_string,
                b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => {
                    cut = i;
                    break;
                }
                _ => {}
            }
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_go_but_strings_stay() {
        assert_eq!(
            strip_line_comments("{\"a\": \"http://x\"} // note"),
            "{\"a\": \"http://x\"} \n"
        );
        assert_eq!(strip_line_comments("\"q\\\"//\" // c"), "\"q\\\"//\" \n");
    }
}
