//! The order of a reply prompt's sections, as a table. A provider's prompt cache
//! and a local model's KV cache reuse only the part of a prompt that starts
//! exactly as the last one did, so the layered layout puts what changes least
//! first: the persona, then pinned facts and summaries (they change at a fold),
//! then the window, then what is found for each line (lore and recalled lines),
//! right before the newest line. A follow-up line extends the last prompt
//! (`follow_up.rs`), so within a conversation each prompt starts with the whole
//! of the one before it.

use crate::memory::message::{PromptMessage, Role};

use super::SectionKind;

/// Where a section's text goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// The system message that opens the prompt.
    System,
    /// The window's messages, one prompt message each.
    Window,
    /// A system message of its own just before the newest line: what was found
    /// for this line.
    ForThisLine,
}

/// A layout: every section in prompt order, with where it goes.
pub(super) type Layout = [(SectionKind, Place); 6];

/// Every section in the one system message, the window after it. Used when no
/// memory feature is on and the game's lore is the only addition to basic mode.
pub(super) const ONE_SYSTEM_MESSAGE: Layout = [
    (SectionKind::Persona, Place::System),
    (SectionKind::PinnedFacts, Place::System),
    (SectionKind::Lore, Place::System),
    (SectionKind::Summaries, Place::System),
    (SectionKind::Recalled, Place::System),
    (SectionKind::Window, Place::Window),
];

/// Layered memory: least changing first, what is found for this line last.
pub(super) const CACHEABLE: Layout = [
    (SectionKind::Persona, Place::System),
    (SectionKind::PinnedFacts, Place::System),
    (SectionKind::Summaries, Place::System),
    (SectionKind::Window, Place::Window),
    (SectionKind::Lore, Place::ForThisLine),
    (SectionKind::Recalled, Place::ForThisLine),
];

/// The prompt's messages: the sections placed as `layout` says, each system
/// message's sections joined by a blank line. `text` gives a section's text, or
/// `None` when it sends nothing.
pub(super) fn messages<'t>(
    layout: &Layout,
    text: impl Fn(SectionKind) -> Option<&'t str>,
    window: Vec<PromptMessage>,
) -> Vec<PromptMessage> {
    let joined = |place: Place| {
        layout
            .iter()
            .filter(|(_, at)| *at == place)
            .filter_map(|(kind, _)| text(*kind).filter(|t| !t.is_empty()))
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    let mut messages = Vec::with_capacity(window.len() + 2);
    messages.push(PromptMessage::new(Role::System, joined(Place::System)));
    let for_this_line = joined(Place::ForThisLine);
    if for_this_line.is_empty() {
        messages.extend(window);
        return messages;
    }
    let newest_is_a_line = window.last().is_some_and(|m| m.role == Role::User);
    let mut window = window.into_iter();
    let newest = if newest_is_a_line {
        window.next_back()
    } else {
        None
    };
    messages.extend(window);
    messages.push(PromptMessage::new(Role::System, for_this_line));
    messages.extend(newest);
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(kind: SectionKind) -> Option<&'static str> {
        match kind {
            SectionKind::Persona => Some("persona"),
            SectionKind::Summaries => Some("summaries"),
            SectionKind::Recalled => Some("recalled"),
            SectionKind::Lore => Some(""),
            _ => None,
        }
    }

    fn window() -> Vec<PromptMessage> {
        vec![
            PromptMessage::new(Role::User, "old line"),
            PromptMessage::new(Role::Assistant, "old reply"),
            PromptMessage::new(Role::User, "newest line"),
        ]
    }

    #[test]
    fn what_is_found_for_a_line_comes_right_before_it() {
        let sent = messages(&CACHEABLE, text, window());
        let contents: Vec<&str> = sent.iter().map(|m| &*m.content).collect();
        assert_eq!(
            contents,
            [
                "persona\n\nsummaries",
                "old line",
                "old reply",
                "recalled",
                "newest line"
            ]
        );
        assert_eq!(sent[3].role, Role::System);
        let one = messages(&ONE_SYSTEM_MESSAGE, text, window());
        assert_eq!(one[0].content.as_ref(), "persona\n\nsummaries\n\nrecalled");
        assert_eq!(one.len(), 4);
    }
}
