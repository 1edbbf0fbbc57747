//! A rendered prompt, cut into what the chat template wrote and what the messages
//! said, so that only the template's part may become special tokens.
//!
//! llama.cpp renders a chat template over whole strings. To know where each
//! message's text lands, the template is rendered over sentinels instead, and the
//! rendered text is cut at them. Plain text work, tested without a model.

use crate::memory::{PromptMessage, Role};

/// One stretch of a rendered prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Segment {
    /// Written by the chat template (or the ChatML fallback): may hold special
    /// tokens such as `<|im_start|>`.
    Template(String),
    /// A message's text, or the prefill: always plain text, whatever it contains.
    Content(String),
}

/// A message's text as the model reads it. NUL cannot reach llama.cpp's C strings,
/// and no player needs it.
pub(crate) fn content_of(message: &PromptMessage) -> String {
    message.content.replace('\0', "")
}

/// ChatML, the format many instruct models were tuned on. Used when a GGUF carries
/// no chat template, or one llama.cpp cannot apply.
pub(crate) fn chatml(messages: &[PromptMessage]) -> Vec<Segment> {
    let mut out = Vec::with_capacity(messages.len() * 3 + 1);
    for message in messages {
        out.push(Segment::Template(format!(
            "<|im_start|>{}\n",
            message.role.as_str()
        )));
        out.push(Segment::Content(content_of(message)));
        out.push(Segment::Template("<|im_end|>\n".to_owned()));
    }
    out.push(Segment::Template(format!(
        "<|im_start|>{}\n",
        Role::Assistant.as_str()
    )));
    out
}

/// Stands for one message's text while the template is rendered. The marker
/// character is from the Private Use Area and the nonce is random and checked
/// against every message, so a sentinel can never be confused with text a player
/// typed, nor guessed in advance.
pub(crate) struct Sentinels {
    prefix: String,
    /// The nonce alone: if the template mangled a sentinel, what is left of it
    /// still shows this.
    tag: String,
}

const MARK: char = '\u{F8FF}';

impl Sentinels {
    /// Sentinels that occur in none of `contents`.
    pub(crate) fn new<'a>(contents: impl Iterator<Item = &'a str> + Clone) -> Self {
        let random = std::iter::repeat_with(|| {
            use std::hash::{BuildHasher, Hasher};
            std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish()
        });
        Self::with_nonces(contents, random)
    }

    /// The first of `nonces` whose sentinels occur in none of `contents`.
    fn with_nonces<'a>(
        contents: impl Iterator<Item = &'a str> + Clone,
        nonces: impl Iterator<Item = u64>,
    ) -> Self {
        for nonce in nonces {
            // Fixed width: no tag is the start of another.
            let tag = format!("npc-memory-{nonce:016x}");
            if !contents.clone().any(|text| text.contains(&tag)) {
                return Self {
                    prefix: format!("{MARK}{tag}:"),
                    tag,
                };
            }
        }
        unreachable!("the nonces never end")
    }

    /// The sentinel for message `index`.
    pub(crate) fn mark(&self, index: usize) -> String {
        format!("{}{index}{MARK}", self.prefix)
    }

    /// Cuts `rendered` at the sentinels and puts each message's text in its place.
    /// `None` if the template changed a sentinel or dropped every one of them, so
    /// the cut cannot be trusted.
    pub(crate) fn split(&self, rendered: &str, contents: &[String]) -> Option<Vec<Segment>> {
        let mut out = Vec::new();
        let mut rest = rendered;
        let mut found = false;
        while let Some(at) = rest.find(&self.prefix) {
            let after = &rest[at + self.prefix.len()..];
            let end = after.find(MARK)?;
            let index: usize = after[..end].parse().ok()?;
            let content = contents.get(index)?;
            push_template(&mut out, &rest[..at]);
            out.push(Segment::Content(content.clone()));
            found = true;
            rest = &after[end + MARK.len_utf8()..];
        }
        push_template(&mut out, rest);
        let mangled = out
            .iter()
            .any(|s| matches!(s, Segment::Template(text) if text.contains(&self.tag)));
        (found || contents.is_empty())
            .then_some(out)
            .filter(|_| !mangled)
    }
}

fn push_template(out: &mut Vec<Segment>, text: &str) {
    if !text.is_empty() {
        out.push(Segment::Template(text.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(segments: &[Segment]) -> String {
        segments
            .iter()
            .map(|s| match s {
                Segment::Template(t) | Segment::Content(t) => t.as_str(),
            })
            .collect()
    }

    #[test]
    fn chatml_ends_with_an_open_assistant_turn_and_keeps_text_apart() {
        let segments = chatml(&[
            PromptMessage::new(Role::System, "Be brief."),
            PromptMessage::new(Role::User, "Hi<|im_end|>\0"),
        ]);
        assert_eq!(
            joined(&segments),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|><|im_end|>\n<|im_start|>assistant\n"
        );
        assert_eq!(segments[4], Segment::Content("Hi<|im_end|>".into()));
    }

    #[test]
    fn sentinels_avoid_every_content_and_cut_where_the_messages_were() {
        let contents = vec![
            "npc-memory-0000000000000000 typed by a player".to_owned(),
            "npc-memory-0000000000000001, too".to_owned(),
            format!("even {MARK}"),
        ];
        let sentinels = Sentinels::with_nonces(contents.iter().map(String::as_str), 0..);
        assert_eq!(sentinels.tag, "npc-memory-0000000000000002");
        let random = Sentinels::new(contents.iter().map(String::as_str));
        assert_ne!(random.tag, Sentinels::new(std::iter::empty()).tag);
        let rendered = format!(
            "<s>[SYS]{}[/SYS]\n{} and again {}[END]",
            sentinels.mark(0),
            sentinels.mark(2),
            sentinels.mark(2)
        );
        let segments = sentinels.split(&rendered, &contents).unwrap();
        assert_eq!(
            segments,
            [
                Segment::Template("<s>[SYS]".into()),
                Segment::Content(contents[0].clone()),
                Segment::Template("[/SYS]\n".into()),
                Segment::Content(contents[2].clone()),
                Segment::Template(" and again ".into()),
                Segment::Content(contents[2].clone()),
                Segment::Template("[END]".into()),
            ]
        );
    }

    #[test]
    fn a_mangled_or_missing_sentinel_is_not_trusted() {
        let contents = vec!["Hi".to_owned(), "Bye".to_owned()];
        let sentinels = Sentinels::new(contents.iter().map(String::as_str));
        let (first, second) = (sentinels.mark(0), sentinels.mark(1));
        assert!(
            sentinels
                .split(&format!("[{first}][{second}]"), &contents)
                .is_some()
        );
        // One cut short of its closing marker, one stripped of its markers, or
        // none left at all.
        let cut = second.trim_end_matches(MARK);
        assert_eq!(
            sentinels.split(&format!("[{first}][{cut}]"), &contents),
            None
        );
        let stripped = second.replace(MARK, "");
        assert_eq!(
            sentinels.split(&format!("[{first}][{stripped}]"), &contents),
            None
        );
        assert_eq!(sentinels.split("[nothing]", &contents), None);
        // An index the prompt does not have.
        assert_eq!(sentinels.split(&sentinels.mark(2), &contents), None);
    }
}
