//! Keeps `<think>...</think>` reasoning out of replies, even when the tags arrive
//! split across streamed pieces.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// Filters reasoning blocks out of a stream of text pieces.
#[derive(Debug, Default)]
pub(crate) struct ThinkFilter {
    inside: bool,
    pending: String,
}

impl ThinkFilter {
    /// Takes the next piece and returns the text that is safe to show now.
    pub(crate) fn push(&mut self, piece: &str) -> String {
        self.pending.push_str(piece);
        let mut visible = String::new();
        loop {
            let tag = if self.inside { CLOSE } else { OPEN };
            if let Some(at) = self.pending.find(tag) {
                if !self.inside {
                    visible.push_str(&self.pending[..at]);
                }
                self.pending.drain(..at + tag.len());
                self.inside = !self.inside;
                continue;
            }
            // Hold back a tail that may be the start of a tag split across pieces.
            let keep = partial_tag_suffix(&self.pending, tag);
            let cut = self.pending.len() - keep;
            if !self.inside {
                visible.push_str(&self.pending[..cut]);
            }
            self.pending.drain(..cut);
            return visible;
        }
    }

    /// Ends the stream and returns what was held back, unless it is reasoning.
    pub(crate) fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        if self.inside { String::new() } else { rest }
    }
}

/// Removes every reasoning block from a whole text.
pub(crate) fn strip_think(text: &str) -> String {
    let mut filter = ThinkFilter::default();
    let mut out = filter.push(text);
    out.push_str(&filter.finish());
    out
}

/// Length of the longest suffix of `text` that is a proper prefix of `tag`.
fn partial_tag_suffix(text: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&n| {
            text.len() >= n
                && text.is_char_boundary(text.len() - n)
                && tag.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_blocks_are_removed() {
        assert_eq!(strip_think("<think>plan</think>Hello"), "Hello");
        assert_eq!(strip_think("A<think>x</think>B<think>y</think>C"), "ABC");
        assert_eq!(strip_think("no reasoning"), "no reasoning");
        assert_eq!(strip_think("<think>never closed"), "");
    }

    #[test]
    fn tags_split_across_pieces_are_still_caught() {
        let pieces = [
            "Hi <th",
            "ink>secret pla",
            "n</thi",
            "nk> there",
            " <",
            "b>",
        ];
        let mut filter = ThinkFilter::default();
        let mut shown = String::new();
        for piece in pieces {
            let visible = filter.push(piece);
            assert!(!visible.contains("secret"));
            shown.push_str(&visible);
        }
        shown.push_str(&filter.finish());
        assert_eq!(shown, "Hi  there <b>");
    }

    #[test]
    fn multibyte_text_is_safe() {
        assert_eq!(strip_think("你好<think>想</think>世界"), "你好世界");
        let mut filter = ThinkFilter::default();
        let mut shown = filter.push("配电室<");
        shown.push_str(&filter.push("/think>"));
        shown.push_str(&filter.finish());
        assert_eq!(shown, "配电室</think>");
    }
}
