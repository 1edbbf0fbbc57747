//! Basic mode: the three-layer design's system prompt, persona then labelled
//! summary, and its reply prompt.

use std::borrow::Cow;
use std::sync::Arc;

use crate::memory::clock::DateFormat;
use crate::memory::message::{ChatMessage, PromptMessage, Role};
use crate::memory::persona::PersonaPrompt;
use crate::memory::quote::quote;
use crate::memory::text::{has_line_break, normalize_line_breaks, strip_prefix_ignoring_case};

/// Basic mode's system prompt, kept between replies because it changes only when
/// the persona or the summary does. Every use compares it with the persona and the
/// summary it was built from, so it cannot describe an older one.
#[derive(Clone, Debug, Default)]
pub(crate) struct ComposedPrompt(Option<(PersonaPrompt, Arc<str>, Arc<str>)>);

impl ComposedPrompt {
    /// The system prompt for `persona` and `summary`, composed only when either
    /// changed since the last call.
    pub(crate) fn get(&mut self, persona: &PersonaPrompt, summary: &Arc<str>) -> Arc<str> {
        if let Some((built_for, built_from, text)) = &self.0
            && built_for == persona
            && built_from == summary
        {
            return text.clone();
        }
        let text: Arc<str> = compose_system_prompt(persona, summary).into();
        self.0 = Some((persona.clone(), summary.clone(), text.clone()));
        text
    }
}

/// A cache is not memory: two contexts that remember the same are equal whether or
/// not one has composed its prompt yet.
impl PartialEq for ComposedPrompt {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Basic mode's reply prompt: the system prompt, then the whole window, which is
/// what [`assemble`] sends when no feature is on. Nothing is budgeted or reported,
/// so nothing needs counting.
pub(crate) fn basic_prompt(
    system: Arc<str>,
    window: &[ChatMessage],
    dates: &DateFormat,
    labels: Option<&str>,
) -> Vec<PromptMessage> {
    let mut messages = Vec::with_capacity(1 + window.len());
    messages.push(PromptMessage::new(Role::System, system));
    messages.extend(window.iter().map(|m| m.to_prompt_labelled(dates, labels)));
    messages
}

/// `persona + "\n\n" + label + summary`, or the persona alone before any summary.
/// A summary line that would read as a transcript turn or as the label is quoted
/// (see the crate's guarantees); ordinary summaries are placed exactly as given.
pub(crate) fn compose_system_prompt(persona: &PersonaPrompt, summary: &str) -> String {
    if summary.is_empty() {
        return persona.text.to_string();
    }
    format!(
        "{}\n\n{}{}",
        persona.text,
        persona.style.label,
        neutralize_summary(summary, persona)
    )
}

/// A summary made safe to follow the label in the system prompt. Its lines stay
/// lines, but a line that starts a new line of the prompt and reads as a transcript
/// turn (`ECHO-7: ...`, `Player: ...`, `System: ...`) or as the label itself is
/// quoted as data: the NPC's own prompt must never show words the NPC did not say
/// as its turn, nor a second summary. The first line follows the label on the
/// label's own line, so it cannot pose as either. Ordinary summaries come back
/// unchanged.
pub(crate) fn neutralize_summary<'a>(summary: &'a str, persona: &PersonaPrompt) -> Cow<'a, str> {
    // Most summaries are one line, and a first line cannot pose as anything.
    if !has_line_break(summary) {
        return Cow::Borrowed(summary);
    }
    let normalized = normalize_line_breaks(summary);
    let forged =
        |(number, line): &(usize, &str)| *number > 0 && reads_as_turn_or_label(line, persona);
    if !normalized.split('\n').enumerate().any(|line| forged(&line)) {
        return Cow::Owned(normalized);
    }
    let lines: Vec<String> = normalized
        .split('\n')
        .enumerate()
        .map(|numbered| {
            let line = numbered.1;
            if forged(&numbered) {
                quote(line.trim())
            } else {
                line.to_owned()
            }
        })
        .collect();
    Cow::Owned(lines.join("\n"))
}

fn reads_as_turn_or_label(line: &str, persona: &PersonaPrompt) -> bool {
    let line = line.trim_start();
    let label = persona
        .style
        .label
        .trim()
        .trim_end_matches([':', '：'])
        .trim_end();
    if !label.is_empty() && strip_prefix_ignoring_case(line, label).is_some() {
        return true;
    }
    let speakers = [
        persona.style.player_name.as_str(),
        persona.name.as_str(),
        "System",
        "User",
        "Assistant",
    ];
    speakers
        .iter()
        .filter(|s| !s.trim().is_empty())
        .any(|speaker| {
            strip_prefix_ignoring_case(line, speaker.trim())
                .is_some_and(|rest| rest.trim_start().starts_with([':', '：']))
        })
}
