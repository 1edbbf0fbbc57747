//! Character-safe text helpers shared by the core and the backends: every cut and
//! every comparison here works on whole characters, never on byte offsets found in
//! another string.

/// Whether `ch` ends a line for a reader: the ASCII breaks and Unicode's next-line,
/// line and paragraph separators.
pub(crate) fn is_line_break(ch: char) -> bool {
    matches!(
        ch,
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Appends `text` to `out` on one line: every line break becomes a space, so a
/// message cannot start a line (and pose as a speaker) of its own inside a
/// transcript. Copied whole when it has no line break, as almost every message.
pub(crate) fn push_one_line(out: &mut String, text: &str) {
    if has_line_break(text) {
        out.extend(
            text.chars()
                .map(|ch| if is_line_break(ch) { ' ' } else { ch }),
        );
    } else {
        out.push_str(text);
    }
}

/// Whether `text` holds a line break. Transcripts ask this of every message, so
/// ASCII text, the common case, is checked eight bytes at a time for a byte below
/// 0x0e (the ASCII breaks are 0x0a to 0x0d); other text by its characters.
pub(crate) fn has_line_break(text: &str) -> bool {
    let bytes = text.as_bytes();
    if !bytes.is_ascii() {
        return text.contains(is_line_break);
    }
    const ONES: u64 = 0x0101_0101_0101_0101;
    const TOPS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    // For ASCII bytes, `(x - 0x0e..) & !x & 0x80..` is non-zero exactly when one
    // of the eight is below 0x0e.
    let low = chunks.any(|chunk| {
        let x = u64::from_ne_bytes(chunk.try_into().expect("eight bytes"));
        x.wrapping_sub(ONES * 0x0e) & !x & TOPS != 0
    });
    (low || chunks.remainder().iter().any(|&b| b < 0x0e)) && text.contains(is_line_break)
}

/// `text` with `\r\n` and every other line break as `\n`, so that the lines a
/// model would see are exactly the lines `str::lines` yields.
pub(crate) fn normalize_line_breaks(text: &str) -> String {
    text.replace("\r\n", "\n")
        .chars()
        .map(|ch| if is_line_break(ch) { '\n' } else { ch })
        .collect()
}

/// The rest of `text` after `prefix`, compared without regard to case. Compared a
/// character at a time: lower-casing a whole string changes byte lengths ("ẞ" is
/// three bytes, "ß" two), so an offset found in a lower-cased copy is not an offset
/// in the original.
pub(crate) fn strip_prefix_ignoring_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    CaselessPrefix::new(prefix).strip(text)
}

/// A prefix lower-cased once, for matching at many places: searching a line for a
/// cue tries it at every character, and lower-casing the cue at each one cost a
/// replayed 10,000-message log most of its rebuild time.
pub(crate) struct CaselessPrefix(Vec<char>);

impl CaselessPrefix {
    pub(crate) fn new(prefix: &str) -> Self {
        Self(prefix.chars().flat_map(char::to_lowercase).collect())
    }

    /// The rest of `text` after this prefix, as [`strip_prefix_ignoring_case`].
    pub(crate) fn strip<'a>(&self, text: &'a str) -> Option<&'a str> {
        let wanted = &self.0;
        if wanted.is_empty() {
            return Some(text);
        }
        let mut matched = 0;
        for (at, ch) in text.char_indices() {
            for lower in ch.to_lowercase() {
                if wanted.get(matched) != Some(&lower) {
                    return None;
                }
                matched += 1;
            }
            if matched == wanted.len() {
                return Some(&text[at + ch.len_utf8()..]);
            }
        }
        None
    }

    /// The rest of `text` after the first place this prefix starts, trying every
    /// character boundary in order.
    pub(crate) fn after_first<'a>(&self, text: &'a str) -> Option<&'a str> {
        text.char_indices()
            .find_map(|(start, _)| self.strip(&text[start..]))
    }
}

/// The first `max` characters of `text`, cut at a character boundary.
pub(crate) fn first_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

/// `text` cut to at most `max_chars` characters, with `…` marking a cut. Text from
/// outside (error messages, model output kept in a save) goes through this before
/// it is stored, so nothing a server sends can grow a save without bound.
pub(crate) fn shorten_to_chars(text: &str, max_chars: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        None => std::borrow::Cow::Borrowed(text),
        Some((cut, _)) => {
            let keep = text[..cut].char_indices().nth(max_chars.saturating_sub(1));
            let end = keep.map_or(0, |(at, _)| at);
            std::borrow::Cow::Owned(format!("{}…", &text[..end]))
        }
    }
}

/// What two lines share when they differ only in case, spacing, punctuation or
/// invisible characters ("Halt! Who goes there?" and "halt, who goes there"):
/// lower-cased, with every run of whitespace, punctuation and format characters
/// (zero-width and bidi controls) as one space, trimmed. A line made only of such
/// characters ("...", "?!") is its own key, so it never equals a different one.
pub(crate) fn sameness_key(text: &str) -> String {
    let mut key = String::with_capacity(text.len());
    let mut gap = false;
    for ch in text.chars() {
        if ch.is_whitespace() || is_punctuation_or_format(ch) {
            gap = !key.is_empty();
            continue;
        }
        if gap {
            key.push(' ');
            gap = false;
        }
        key.extend(ch.to_lowercase());
    }
    if key.is_empty() { text.to_owned() } else { key }
}

/// ASCII punctuation, Unicode's general punctuation block (dashes, quotes,
/// zero-width and bidi controls), CJK and full-width punctuation, and the few
/// Latin-1 marks players type. Not letters, digits, symbols or emoji.
fn is_punctuation_or_format(ch: char) -> bool {
    ch.is_ascii_punctuation()
        || matches!(
            ch,
            '¡' | '¿'
                | '«'
                | '»'
                | '·'
                | '\u{2000}'..='\u{206F}'
                | '\u{3000}'..='\u{3004}'
                | '\u{3008}'..='\u{3011}'
                | '\u{3014}'..='\u{301F}'
                | '\u{FE10}'..='\u{FE19}'
                | '\u{FE30}'..='\u{FE4F}'
                | '\u{FEFF}'
                | '\u{FF01}'..='\u{FF0F}'
                | '\u{FF1A}'..='\u{FF20}'
                | '\u{FF3B}'..='\u{FF40}'
                | '\u{FF5B}'..='\u{FF65}'
        )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn prefixes_match_across_case_changes_that_change_byte_lengths() {
        assert_eq!(strip_prefix_ignoring_case("ẞig", "ß"), Some("ig"));
        assert_eq!(
            strip_prefix_ignoring_case("ECHO-7: hi", "echo-7"),
            Some(": hi")
        );
        assert_eq!(strip_prefix_ignoring_case("Ⱥb", "ⱥ"), Some("b"));
        assert_eq!(strip_prefix_ignoring_case("ab", "abc"), None);
        // "İ" lower-cases to two characters; half of it is no match.
        assert_eq!(strip_prefix_ignoring_case("İx", "i"), None);
        assert_eq!(strip_prefix_ignoring_case("İx", "i\u{307}"), Some("x"));
    }

    #[test]
    fn line_breaks_are_found_at_any_position_and_tabs_are_not_breaks() {
        for at in 0..20 {
            let mut text = "x".repeat(20);
            text.insert(at, '\u{b}');
            assert!(has_line_break(&text), "{at}");
            let tabbed = text.replace('\u{b}', "\t");
            assert!(!has_line_break(&tabbed), "{at}");
        }
        assert!(has_line_break("café\u{2028}"));
        assert!(!has_line_break("café 我"));
    }

    #[test]
    fn shortening_counts_characters_and_marks_the_cut() {
        assert_eq!(shorten_to_chars("héllo", 10), "héllo");
        assert_eq!(shorten_to_chars("héllo", 5), "héllo");
        assert_eq!(shorten_to_chars("héllo", 3), "hé…");
        assert_eq!(shorten_to_chars("👩‍👩‍👧", 2), "👩…");
        assert_eq!(shorten_to_chars("abc", 0), "…");
        assert_eq!(first_chars("héllo", 2), "hé");
    }

    #[test]
    fn lines_that_differ_only_in_case_spacing_or_punctuation_share_a_key() {
        let same = [
            "Halt! Who goes there?",
            "halt, who goes there",
            "  HALT!!  Who\tgoes there…",
            "Halt\u{200b}! Who goes \u{202e}there?",
        ];
        for line in same {
            assert_eq!(sameness_key(line), "halt who goes there", "{line:?}");
        }
        assert_eq!(sameness_key("我是谁？"), sameness_key("我是谁"));
        assert_eq!(sameness_key("ΣΟΦΊΑ!"), sameness_key("σοφία"));
        assert_ne!(
            sameness_key("Halt! Who goes there?"),
            sameness_key("Halt! Who went there?")
        );
        assert_ne!(sameness_key("👍"), sameness_key("👎"));
        assert_ne!(sameness_key("..."), sameness_key("?!"));
        assert_ne!(sameness_key("I have 3 keys"), sameness_key("I have 4 keys"));
    }

    proptest! {
        #[test]
        fn helpers_never_panic_and_keep_their_promises(text in "\\PC{0,40}", prefix in "\\PC{0,4}", max in 0usize..50) {
            let stripped = strip_prefix_ignoring_case(&text, &prefix);
            prop_assert!(stripped.is_none_or(|rest| text.ends_with(rest)));
            // The search returns what stripping at the first matching boundary does.
            let search = CaselessPrefix::new(&prefix).after_first(&text);
            let first = text
                .char_indices()
                .find_map(|(at, _)| strip_prefix_ignoring_case(&text[at..], &prefix));
            prop_assert_eq!(search, first);
            prop_assert_eq!(has_line_break(&text), text.chars().any(is_line_break));
            let short = shorten_to_chars(&text, max);
            prop_assert!(short.chars().count() <= max.max(1));
            let head = first_chars(&text, max);
            prop_assert!(text.starts_with(head));
            prop_assert_eq!(head.chars().count(), text.chars().count().min(max));
            let mut flat = String::new();
            push_one_line(&mut flat, &text);
            prop_assert!(!flat.chars().any(is_line_break));
            let key = sameness_key(&text);
            prop_assert_eq!(sameness_key(&key), key.clone(), "a key is its own key");
            if key != text {
                prop_assert!(!key.starts_with(' ') && !key.ends_with(' ') && !key.contains("  "));
                prop_assert_eq!(sameness_key(&format!(" ¡{text}?! ")), key);
            }
            let normalized = normalize_line_breaks(&text);
            prop_assert!(!normalized.chars().any(|c| c != '\n' && is_line_break(c)));
        }
    }
}
