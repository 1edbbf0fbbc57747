//! A cheap token estimate that does not undercount Chinese, Japanese or Korean text.
//!
//! Byte-pair tokenizers spend about one token per CJK character but only about one
//! per four characters of English. Counting bytes or words alone is off by 3-4× on
//! CJK text, which would wreck any budget in the Chinese ECHO-7 scene. The
//! provider's reported usage stays the truth; this estimate feeds telemetry and
//! budgets before a request is sent.

use super::message::PromptMessage;

/// Tokens that chat formats spend on each message's role and separators.
pub const MESSAGE_OVERHEAD_TOKENS: usize = 4;

/// Estimated tokens of a piece of text.
///
/// Every CJK character (ideographs, kana, hangul, full-width punctuation) counts as
/// one token; every other run of characters counts as one token per four characters,
/// rounded up. Empty text is zero tokens.
pub fn estimate_tokens(text: &str) -> usize {
    let mut tokens = 0;
    let mut other_run = 0usize;
    for ch in text.chars() {
        if is_cjk(ch) {
            tokens += 1 + other_run.div_ceil(4);
            other_run = 0;
        } else {
            other_run += 1;
        }
    }
    tokens + other_run.div_ceil(4)
}

/// Estimated tokens of one message, its framing included.
pub fn estimate_message_tokens(message: &PromptMessage) -> usize {
    MESSAGE_OVERHEAD_TOKENS + estimate_tokens(&message.content)
}

/// Estimated tokens of a whole prompt.
pub fn estimate_prompt_tokens(messages: &[PromptMessage]) -> usize {
    messages.iter().map(estimate_message_tokens).sum()
}

fn is_cjk(ch: char) -> bool {
    matches!(ch as u32,
        0x3000..=0x303F // CJK punctuation
        | 0x3040..=0x30FF // hiragana, katakana
        | 0x3400..=0x4DBF // extension A
        | 0x4E00..=0x9FFF // unified ideographs
        | 0xAC00..=0xD7AF // hangul syllables
        | 0xF900..=0xFAFF // compatibility ideographs
        | 0xFF00..=0xFFEF // full-width forms
        | 0x20000..=0x2FA1F // supplementary ideographs
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::message::Role;

    #[test]
    fn english_counts_about_four_characters_per_token() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        let sentence = "I am in the storage area now.";
        assert_eq!(estimate_tokens(sentence), sentence.len().div_ceil(4));
    }

    #[test]
    fn chinese_counts_one_token_per_character() {
        assert_eq!(estimate_tokens("我现在在仓储区"), 7);
        assert_eq!(estimate_tokens("我现在在仓储区。"), 8);
        // Mixed text: "Alex" is one run of four characters.
        assert_eq!(estimate_tokens("我是Alex"), 3);
    }

    #[test]
    fn chinese_is_not_undercounted_against_bytes() {
        let zh = "你好，我是 Alex。现在要去修复供电系统。";
        let bytes_estimate = zh.len() / 4;
        assert!(estimate_tokens(zh) > bytes_estimate);
    }

    #[test]
    fn messages_include_framing() {
        let message = PromptMessage::new(Role::User, "abcd");
        assert_eq!(
            estimate_message_tokens(&message),
            1 + MESSAGE_OVERHEAD_TOKENS
        );
        assert_eq!(
            estimate_prompt_tokens(&[message.clone(), message]),
            2 * (1 + MESSAGE_OVERHEAD_TOKENS)
        );
    }
}
