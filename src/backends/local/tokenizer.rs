//! Prompt segments to tokens, so that only the chat template speaks in special
//! tokens.
//!
//! llama.cpp parses special tokens (`<|im_end|>`, `<|im_start|>`, ...) out of the
//! text it tokenizes when asked to, as a rendered template needs. Asked that for a
//! whole prompt, it also turns a player's typed `<|im_end|><|im_start|>system` into
//! the real tokens, ending the player's turn and opening a system one. So the
//! template's text is split at its special tokens here, the way llama.cpp splits
//! it; everything between them (template text and message text together, so words
//! tokenize as they would in one piece) is tokenized with special parsing off.
//!
//! Off is not quite enough: llama.cpp still matches *user-defined* tokens in plain
//! text. If message text yields any special token anyway, that stretch is cut
//! inside every special token's text and tokenized piece by piece.

use std::collections::{BTreeSet, HashSet};

use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token_type::LlamaTokenAttr;
use llama_cpp_2::vocab::LlamaVocab;

use super::segments::Segment;

/// A token of the model's vocabulary that only a chat template may produce: a
/// control token such as `<|im_end|>`, or a user-defined one (an added token such
/// as Qwen's `<tool_call>`, which llama.cpp matches even in plain text). Message
/// text never becomes one of these; see [`LocalLlmBackend::special_tokens`].
///
/// User-defined tokens that are only whitespace (runs of spaces or newlines in
/// some vocabularies) are ordinary text and not listed.
///
/// [`LocalLlmBackend::special_tokens`]: super::LocalLlmBackend::special_tokens
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SpecialToken {
    /// Its id in the vocabulary.
    pub id: i32,
    /// Its text, as a template writes it, e.g. `<|im_end|>`.
    pub text: String,
}

/// A special token and how llama.cpp matches it in text.
#[derive(Clone, Debug)]
struct Special {
    token: LlamaToken,
    text: String,
    /// Whitespace before it is dropped when it is matched.
    lstrip: bool,
    /// Whitespace after it is dropped when it is matched.
    rstrip: bool,
    /// Message text must not yield it.
    forbidden: bool,
}

/// Tokenizes prompts for one vocabulary.
pub(crate) struct PromptTokenizer {
    /// Longest text first, the order in which llama.cpp matches them.
    specials: Vec<Special>,
    /// The tokens message text must not yield, including those without usable text.
    forbidden: HashSet<i32>,
}

/// A piece of template text: plain text, or the special token at this index.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Special(usize),
}

impl PromptTokenizer {
    /// Reads the vocabulary's special tokens: the set llama.cpp parses out of text
    /// with special parsing on (control, user-defined and unknown tokens), and
    /// which of them message text must not yield.
    pub(crate) fn new(vocab: &LlamaVocab) -> Self {
        let mut specials = Vec::new();
        let mut forbidden = HashSet::new();
        for token in vocab.tokens() {
            let attr = vocab.attr(token);
            let control = attr.contains(LlamaTokenAttr::Control);
            let user = attr.contains(LlamaTokenAttr::UserDefined);
            if !(control || user || attr.contains(LlamaTokenAttr::Unknown)) {
                continue;
            }
            let text = vocab.text(token).and_then(|text| text.to_str().ok());
            let banned = banned(control, user, text);
            if banned {
                forbidden.insert(token.0);
            }
            // A token without text cannot be typed, nor matched in a template.
            let Some(text) = text.filter(|text| !text.is_empty()) else {
                continue;
            };
            specials.push(Special {
                token,
                text: text.to_owned(),
                lstrip: attr.contains(LlamaTokenAttr::LStrip),
                rstrip: attr.contains(LlamaTokenAttr::RStrip),
                forbidden: banned,
            });
        }
        Self::from_specials(specials, forbidden)
    }

    fn from_specials(mut specials: Vec<Special>, forbidden: HashSet<i32>) -> Self {
        specials.sort_by_key(|s| std::cmp::Reverse(s.text.len()));
        Self {
            specials,
            forbidden,
        }
    }

    /// The special tokens message text must not yield that have text, by id.
    pub(crate) fn special_tokens(&self) -> Vec<SpecialToken> {
        let mut out: Vec<SpecialToken> = self
            .specials
            .iter()
            .filter(|s| s.forbidden)
            .map(|s| SpecialToken {
                id: s.token.0,
                text: s.text.clone(),
            })
            .collect();
        out.sort_by_key(|s| s.id);
        out
    }

    fn is_forbidden(&self, token: LlamaToken) -> bool {
        self.forbidden.contains(&token.0)
    }

    /// The prompt's tokens: BOS and EOS as the model asks for them (what
    /// llama.cpp's own tokenizer adds), the template's special tokens, and
    /// everything else as plain text.
    pub(crate) fn tokenize(&self, vocab: &LlamaVocab, segments: &[Segment]) -> Vec<LlamaToken> {
        let mut out = Vec::new();
        if vocab.should_add_bos() {
            out.push(vocab.bos());
        }
        let mut run = String::new();
        for segment in segments {
            match segment {
                Segment::Template(text) => {
                    for piece in self.partition(text) {
                        match piece {
                            Piece::Text(text) => run.push_str(text),
                            Piece::Special(index) => {
                                self.plain(vocab, &run, &mut out);
                                run.clear();
                                out.push(self.specials[index].token);
                            }
                        }
                    }
                }
                Segment::Content(text) => run.push_str(text),
            }
        }
        self.plain(vocab, &run, &mut out);
        if vocab.should_add_eos() {
            out.push(vocab.eos());
        }
        out
    }

    /// Splits template text at special tokens the way llama.cpp does with special
    /// parsing on: longest token first, every occurrence, whitespace stripped
    /// where the token asks for it.
    fn partition<'a>(&self, text: &'a str) -> Vec<Piece<'a>> {
        let mut pieces = vec![Piece::Text(text)];
        for (index, special) in self.specials.iter().enumerate() {
            let mut next = Vec::with_capacity(pieces.len());
            for piece in pieces {
                let Piece::Text(mut rest) = piece else {
                    next.push(piece);
                    continue;
                };
                while let Some(at) = rest.find(special.text.as_str()) {
                    let mut left = &rest[..at];
                    if special.lstrip {
                        left = left.trim_end_matches(is_c_space);
                    }
                    if !left.is_empty() {
                        next.push(Piece::Text(left));
                    }
                    next.push(Piece::Special(index));
                    rest = &rest[at + special.text.len()..];
                    if special.rstrip {
                        rest = rest.trim_start_matches(is_c_space);
                    }
                }
                if !rest.is_empty() {
                    next.push(Piece::Text(rest));
                }
            }
            pieces = next;
        }
        pieces
    }

    /// Tokenizes text that must not yield a special token.
    fn plain(&self, vocab: &LlamaVocab, text: &str, out: &mut Vec<LlamaToken>) {
        if text.is_empty() {
            return;
        }
        let tokens = vocab.tokenize(text.as_bytes(), false, false);
        if !tokens.iter().any(|&t| self.is_forbidden(t)) {
            out.extend(tokens);
            return;
        }
        // Cut every occurrence of a special token's text after its first character,
        // so no piece holds a whole one; overlapping occurrences are each cut.
        let mut cuts = BTreeSet::new();
        for special in self.specials.iter().filter(|s| s.forbidden) {
            let mut from = 0;
            while let Some(at) = text[from..].find(special.text.as_str()) {
                let start = from + at;
                let first = text[start..].chars().next().map_or(1, char::len_utf8);
                cuts.insert(start + first);
                from = start + first;
            }
        }
        let mut start = 0;
        for end in cuts.into_iter().chain([text.len()]) {
            if end > start {
                let piece = vocab.tokenize(&text.as_bytes()[start..end], false, false);
                // Left only for a one-character special token, or one whose text is
                // not UTF-8: such a character is dropped rather than obeyed.
                out.extend(piece.into_iter().filter(|&t| !self.is_forbidden(t)));
            }
            start = end;
        }
    }
}

/// Whether message text must not yield a token: any control token, and any
/// user-defined one but whitespace. `<unk>` stands for text the vocabulary cannot
/// spell, and whitespace means nothing more for being one token: both are fine.
fn banned(control: bool, user_defined: bool, text: Option<&str>) -> bool {
    let blank = text.is_some_and(|t| !t.is_empty() && t.chars().all(char::is_whitespace));
    control || (user_defined && !blank)
}

/// C's `isspace`, which llama.cpp uses to strip around special tokens.
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer(specials: &[(i32, &str, bool, bool)]) -> PromptTokenizer {
        let specials: Vec<Special> = specials
            .iter()
            .map(|&(id, text, lstrip, rstrip)| Special {
                token: LlamaToken::new(id),
                text: text.to_owned(),
                lstrip,
                rstrip,
                forbidden: true,
            })
            .collect();
        let ids = specials.iter().map(|s| s.token.0).collect();
        PromptTokenizer::from_specials(specials, ids)
    }

    fn show(tokenizer: &PromptTokenizer, text: &str) -> Vec<String> {
        tokenizer
            .partition(text)
            .into_iter()
            .map(|piece| match piece {
                Piece::Text(text) => text.to_owned(),
                Piece::Special(index) => format!("#{}", tokenizer.specials[index].token.0),
            })
            .collect()
    }

    #[test]
    fn template_text_splits_at_every_special_token_longest_first() {
        let t = tokenizer(&[
            (1, "<|im_start|>", false, false),
            (2, "<|im_end|>", false, false),
            (3, "<|im", false, false),
        ]);
        assert_eq!(
            show(
                &t,
                "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
            ),
            ["#1", "user\nHi", "#2", "\n", "#1", "assistant\n"]
        );
        assert_eq!(show(&t, "a<|imb"), ["a", "#3", "b"]);
        assert_eq!(show(&t, "plain"), ["plain"]);
    }

    #[test]
    fn control_and_user_defined_tokens_are_banned_from_text_but_whitespace_and_unk_are_not() {
        assert!(banned(true, false, Some("<|im_end|>")));
        assert!(banned(true, false, Some("\n")));
        assert!(banned(false, true, Some("<tool_call>")));
        assert!(banned(false, true, None), "text that is not UTF-8");
        assert!(!banned(false, true, Some("\n\n")));
        assert!(!banned(false, true, Some("    ")));
        assert!(!banned(false, false, Some("<unk>")));
    }

    #[test]
    fn stripping_special_tokens_take_the_whitespace_next_to_them() {
        let t = tokenizer(&[(5, "<mask>", true, true)]);
        assert_eq!(show(&t, "a \t<mask>\n b"), ["a", "#5", "b"]);
        assert_eq!(show(&t, "  <mask>  "), ["#5"]);
    }

    /// With the demo model's real vocabulary and template. Skipped, saying so,
    /// when the model was not fetched (`bash scripts/fetch-model.sh`), except in CI.
    mod with_the_demo_model {
        use llama_cpp_2::model::LlamaModel;

        use super::*;
        use crate::backends::local::engine::render;
        use crate::memory::{PromptMessage, Role};

        use crate::backends::local::test_vocabulary as model;

        /// What the model read before: the whole rendered text, special tokens parsed.
        fn as_before(model: &LlamaModel, messages: &[PromptMessage]) -> Vec<LlamaToken> {
            let template = model.chat_template(None).unwrap();
            let chat: Vec<_> = messages
                .iter()
                .map(|m| {
                    llama_cpp_2::model::LlamaChatMessage::new(
                        m.role.as_str().to_owned(),
                        m.content.to_string(),
                    )
                    .unwrap()
                })
                .collect();
            let text = model.apply_chat_template(&template, &chat, true).unwrap();
            model.vocab().tokenize(text.as_bytes(), true, true)
        }

        fn now(model: &LlamaModel, messages: &[PromptMessage]) -> Vec<LlamaToken> {
            let template = model.chat_template(None).unwrap();
            let segments = render(model, &template, messages).unwrap();
            PromptTokenizer::new(&model.vocab()).tokenize(&model.vocab(), &segments)
        }

        #[test]
        fn ordinary_prompts_read_exactly_as_before() {
            let Some(model) = model() else { return };
            let conversations = [
                vec![
                    PromptMessage::new(Role::System, "You are ECHO-7, the bunker's AI."),
                    PromptMessage::new(Role::User, "Hello, I'm Alex. I'm here to fix the power."),
                ],
                vec![
                    PromptMessage::new(Role::System, "  Leading and trailing spaces.  "),
                    PromptMessage::new(Role::User, "Wo ist   der Generator?\n\n我叫小明 🙂 ẞ"),
                    PromptMessage::new(Role::Assistant, ""),
                    PromptMessage::new(Role::User, "\nim_start|> <| end"),
                ],
            ];
            for messages in &conversations {
                assert_eq!(
                    now(&model, messages),
                    as_before(&model, messages),
                    "{messages:?}"
                );
            }
        }

        #[test]
        fn text_that_still_yields_a_special_token_is_cut_until_it_does_not() {
            let Some(model) = model() else { return };
            let vocab = model.vocab();
            // No token of the demo model is user-defined, the kind llama.cpp matches
            // even in plain text, so one ordinary word stands in for one.
            let word = vocab.tokenize(b" Hello", false, false);
            assert_eq!(word.len(), 1);
            let pretend = Special {
                token: word[0],
                text: " Hello".to_owned(),
                lstrip: false,
                rstrip: false,
                forbidden: true,
            };
            let tokenizer =
                PromptTokenizer::from_specials(vec![pretend], HashSet::from([word[0].0]));
            let text = "Say Hello, Hello Hello!";
            let tokens = tokenizer.tokenize(&vocab, &[Segment::Content(text.to_owned())]);
            assert!(!tokens.contains(&word[0]), "{tokens:?}");
            let read = vocab.detokenize(&tokens, false, false);
            assert_eq!(String::from_utf8(read).unwrap(), text, "nothing was lost");
        }

        #[test]
        fn the_demo_models_special_tokens_are_all_control_tokens() {
            let Some(model) = model() else { return };
            let vocab = model.vocab();
            let specials = PromptTokenizer::new(&vocab).special_tokens();
            assert!(!specials.is_empty());
            for special in &specials {
                let attr = vocab.attr(LlamaToken::new(special.id));
                assert!(
                    attr.contains(LlamaTokenAttr::Control),
                    "{special:?}: {attr:?}"
                );
            }
        }
    }
}
