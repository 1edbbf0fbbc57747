//! The ends of a streamed reply. Its recorded text is trimmed, so the pieces
//! shown as it streams leave out the whitespace that trimming removes, and add
//! up to that text.

/// What has been shown of a reply's words, and the whitespace held back after
/// the last of them.
#[derive(Debug, Default)]
pub(super) struct TrimmedStream {
    /// Whitespace after the last word shown: shown only once a word follows it.
    blank: String,
    /// Whether a word has been shown: whitespace before the first never is.
    started: bool,
}

impl TrimmedStream {
    /// The part of the reply to show now, given its next `piece` (possibly empty).
    pub(super) fn push(&mut self, piece: &str) -> String {
        let mut text = std::mem::take(&mut self.blank);
        text.push_str(piece);
        let text = if self.started {
            text.as_str()
        } else {
            text.trim_start()
        };
        let words = text.trim_end();
        // `words` is `text` without its trailing whitespace, so what follows it is
        // exactly that whitespace.
        self.blank = text[words.len()..].to_owned();
        self.started |= !words.is_empty();
        words.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn shown(pieces: &[&str]) -> Vec<String> {
        let mut stream = TrimmedStream::default();
        pieces.iter().map(|piece| stream.push(piece)).collect()
    }

    #[test]
    fn whitespace_at_the_ends_is_never_shown_and_inside_is_shown_with_the_next_word() {
        assert_eq!(
            shown(&["\n ", " Hello ", "\u{3000}", "world", "!  \n"]),
            ["", "Hello", "", " \u{3000}world", "!"]
        );
        assert_eq!(shown(&[" ", "\t"]), ["", ""], "a blank reply shows nothing");
    }

    proptest! {
        /// However a reply is cut into pieces, in any script, the pieces shown
        /// add up to the trimmed reply.
        #[test]
        fn the_pieces_add_up_to_the_trimmed_reply(
            reply in "\\PC*|[ \t\n\u{a0}\u{3000}a-zक्षि👩‍🚀]{0,40}",
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let bounds: Vec<usize> = reply.char_indices().map(|(at, _)| at).collect();
            let mut at: Vec<usize> = cuts
                .iter()
                .filter(|_| !bounds.is_empty())
                .map(|cut| bounds[cut.index(bounds.len())])
                .collect();
            at.extend([0, reply.len()]);
            at.sort_unstable();
            at.dedup();
            let pieces: Vec<&str> = at.windows(2).map(|w| &reply[w[0]..w[1]]).collect();
            prop_assert_eq!(shown(&pieces).concat(), reply.trim());
        }
    }
}
