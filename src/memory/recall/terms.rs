//! Turns text into the terms the index matches on, the same way for messages and queries.
//!
//! - Runs of Chinese, Japanese or Korean characters have no spaces, so a word
//!   segmenter would be needed to find words. Overlapping character bigrams need
//!   none and match most two-character words, the commonest kind. A run of a
//!   single character also yields that character, so one-character words between
//!   punctuation are not lost. Longer runs yield no unigrams here: the index adds
//!   their characters apart ([`for_each_cjk_unigram`]), as terms of their own
//!   that a query weighs lower and BM25's length leaves out.
//! - Everything else that is alphanumeric forms words, lower-cased, with English
//!   stopwords (question words included) dropped and plurals, possessives, the
//!   commonest verb endings and one derivational suffix ("-ation", "-ly", ...)
//!   folded by a few fixed rules (no dictionary, so the result never depends on
//!   anything but the word).
//! - Full-width Latin letters and digits count as their ASCII forms.

/// Longest word kept, in bytes; longer words are cut. A hostile megabyte without a
/// space becomes one short term instead of one huge one.
const MAX_WORD_BYTES: usize = 48;

/// Calls `emit` with each term of `text`, in order, repeats included.
pub(crate) fn for_each_term(text: &str, mut emit: impl FnMut(&str)) {
    let mut word = String::new();
    let mut pair = String::new();
    // The previous character of the current CJK run, and the run's length.
    let mut previous_cjk: Option<char> = None;
    let mut cjk_run = 0usize;
    let mut chars = text.chars().map(fold_full_width).peekable();
    while let Some(ch) = chars.next() {
        if is_cjk_letter(ch) {
            flush_word(&mut word, &mut emit);
            if let Some(previous) = previous_cjk {
                pair.clear();
                pair.push(previous);
                pair.push(ch);
                emit(&pair);
            }
            previous_cjk = Some(ch);
            cjk_run += 1;
            continue;
        }
        flush_lone_cjk(&mut previous_cjk, &mut cjk_run, &mut pair, &mut emit);
        if ch.is_alphanumeric() {
            if word.len() < MAX_WORD_BYTES {
                word.extend(ch.to_lowercase());
            }
        } else if is_apostrophe(ch)
            && !word.is_empty()
            && chars
                .peek()
                .is_some_and(|&next| next.is_alphanumeric() && !is_cjk_letter(next))
        {
            // Kept for now so that a possessive "'s" can be told from a plural "s".
            word.push('\'');
        } else {
            flush_word(&mut word, &mut emit);
        }
    }
    flush_lone_cjk(&mut previous_cjk, &mut cjk_run, &mut pair, &mut emit);
    flush_word(&mut word, &mut emit);
}

/// The prefix that keeps a character of a longer CJK run (see
/// [`for_each_cjk_unigram`]) apart from the term a lone character makes: a lone
/// character is a word, one inside a run is only part of one. Terms never hold ':'.
pub(crate) const CJK_UNIGRAM_PREFIX: &str = "u:";

/// Calls `emit` with each character of the CJK runs of two or more characters
/// in `text`, prefixed with [`CJK_UNIGRAM_PREFIX`], function characters left out.
/// A bigram needs both characters in order; a question often words a thing with
/// one character in common ("药箱" asked as "药品"), which only these can match.
pub(crate) fn for_each_cjk_unigram(text: &str, mut emit: impl FnMut(&str)) {
    let mut term = String::new();
    let mut run: Vec<char> = Vec::new();
    let mut flush = |run: &mut Vec<char>, emit: &mut dyn FnMut(&str)| {
        if run.len() > 1 {
            for &ch in run.iter().filter(|&&ch| !is_function_char(ch)) {
                term.clear();
                term.push_str(CJK_UNIGRAM_PREFIX);
                term.push(ch);
                emit(&term);
            }
        }
        run.clear();
    };
    for ch in text.chars().map(fold_full_width) {
        if is_cjk_letter(ch) {
            run.push(ch);
        } else {
            flush(&mut run, &mut emit);
        }
    }
    flush(&mut run, &mut emit);
}

/// How many of a term's characters are Chinese function characters, and how
/// many characters it has. English terms have none.
pub(crate) fn function_chars(term: &str) -> (usize, usize) {
    let (mut function, mut all) = (0, 0);
    for ch in term.chars() {
        all += 1;
        function += usize::from(is_function_char(ch));
    }
    (function, all)
}

/// Chinese particles, pronouns, question words and the commonest adverbs and
/// measure word: characters that carry grammar, not topic. A bigram such as
/// "我的" or "了吗" matches lines on any topic, and one such as "在北" (from
/// "在北方") matches only by the accident of what stood next to the word.
/// Sorted, for binary search.
const FUNCTION_CHARS: &[char] = &[
    '个', '么', '也', '了', '什', '他', '们', '你', '又', '吗', '吧', '呀', '呢', '和', '哈', '哦',
    '哪', '啊', '啦', '嗯', '嘛', '在', '地', '她', '它', '就', '很', '得', '怎', '我', '把', '是',
    '的', '着', '给', '被', '谁', '过', '还', '这', '那', '都',
];

/// Whether `ch` is one of [`FUNCTION_CHARS`].
pub(crate) fn is_function_char(ch: char) -> bool {
    FUNCTION_CHARS.binary_search(&ch).is_ok()
}

fn flush_lone_cjk(
    previous: &mut Option<char>,
    run: &mut usize,
    buffer: &mut String,
    emit: &mut impl FnMut(&str),
) {
    if let (Some(ch), 1) = (*previous, *run) {
        buffer.clear();
        buffer.push(ch);
        emit(buffer);
    }
    *previous = None;
    *run = 0;
}

fn flush_word(word: &mut String, emit: &mut impl FnMut(&str)) {
    if word.is_empty() {
        return;
    }
    let mut end = word.len().min(MAX_WORD_BYTES);
    while !word.is_char_boundary(end) {
        end -= 1;
    }
    word.truncate(end);
    normalize_word(word);
    if keeps(word) {
        emit(word);
    }
    word.clear();
}

/// Folds possessives, contractions, plurals and verb endings, so "sister's",
/// "sisters" and "sister" meet, as do "paint", "painted" and "painting".
fn normalize_word(word: &mut String) {
    if word.ends_with("'s") {
        word.truncate(word.len() - 2);
    }
    word.retain(|ch| ch != '\'');
    if !is_stopword(word) {
        strip_plural(word);
        strip_derivation(word);
        strip_verb_ending(word);
    }
}

/// Harman's "S" stemmer: plural rules, nothing more aggressive. (Its "-es → -e"
/// rule is the same as dropping the "s", so it needs no branch of its own.)
fn strip_plural(word: &mut String) {
    // Suffixes first: they rule out most words without counting letters.
    if word.ends_with("ies")
        && !word.ends_with("eies")
        && !word.ends_with("aies")
        && has_letters(word, 4)
    {
        word.truncate(word.len() - 3);
        word.push('y');
    } else if word.ends_with('s')
        && !word.ends_with("us")
        && !word.ends_with("ss")
        && has_letters(word, 4)
    {
        word.truncate(word.len() - 1);
    }
}

/// Strips "-ing" and "-ed" from words long enough to keep a stem of three letters,
/// undoubles the consonant that "-ing" and "-ed" double ("planned" → "plan"), and
/// drops a final "e" so "make" and "making" meet. Questions ask "did you paint"
/// about a line that said "I painted"; plural folding alone misses that. Irregular
/// forms ("went", "go") stay apart: only a dictionary could join them.
///
/// Lengths count letters, not bytes, and only an ASCII consonant is undoubled: the
/// UTF-8 of many letters ends in two equal bytes ("त" is E0 A4 A4), which must never
/// look like "tt".
fn strip_verb_ending(word: &mut String) {
    for ending in ["ing", "ed"] {
        if word.ends_with(ending) && has_letters(word, ending.len() + 3) {
            word.truncate(word.len() - ending.len());
            let mut tail = word.chars().rev();
            if let (Some(last), Some(before)) = (tail.next(), tail.next())
                && last == before
                && last.is_ascii()
                && !matches!(last, 'l' | 's' | 'z')
            {
                word.pop();
            }
            break;
        }
    }
    if word.ends_with('e') && has_letters(word, 4) {
        word.pop();
    }
}

/// Whether `word` has at least `count` letters. A word has no more letters than
/// bytes, so only a long non-ASCII word needs counting.
fn has_letters(word: &str, count: usize) -> bool {
    word.len() >= count && (word.is_ascii() || word.chars().count() >= count)
}

/// Porter-like derivational suffixes, longest first, stripped when a stem of at
/// least four letters remains, so "adoption" meets "adopt" and "musical"
/// "music". One suffix at most: stacking them conflates too much. No "-er": it
/// would join "brother" with "broth" and "mother" with "moth".
fn strip_derivation(word: &mut String) {
    const SUFFIXES: [&str; 10] = [
        "ation", "ness", "ment", "ity", "ful", "ous", "ive", "ion", "al", "ly",
    ];
    for suffix in SUFFIXES {
        if word.ends_with(suffix) && has_letters(word, suffix.len() + 4) {
            word.truncate(word.len() - suffix.len());
            return;
        }
    }
}

fn keeps(word: &str) -> bool {
    let single_letter = word.len() == 1 && word.as_bytes()[0].is_ascii_alphabetic();
    !word.is_empty() && !single_letter && !is_stopword(word)
}

fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// Function words of English and chat filler, after apostrophes are removed
/// ("don't" is "dont"). Sorted, for binary search.
const STOPWORDS: &[&str] = &[
    "about",
    "after",
    "again",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "anything",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "both",
    "but",
    "by",
    "can",
    "cant",
    "could",
    "did",
    "didnt",
    "do",
    "does",
    "doesnt",
    "doing",
    "dont",
    "down",
    "each",
    "ever",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "hey",
    "him",
    "himself",
    "his",
    "how",
    "if",
    "im",
    "in",
    "into",
    "is",
    "isnt",
    "it",
    "its",
    "itself",
    "ive",
    "just",
    "kind",
    "likely",
    "many",
    "me",
    "more",
    "most",
    "much",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "oh",
    "ok",
    "okay",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "something",
    "such",
    "than",
    "that",
    "thats",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "this",
    "those",
    "through",
    "to",
    "too",
    "type",
    "under",
    "until",
    "up",
    "very",
    "was",
    "wasnt",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "would",
    "yeah",
    "you",
    "youll",
    "your",
    "youre",
    "yours",
    "yourself",
    "yourselves",
    "youve",
];

fn is_apostrophe(ch: char) -> bool {
    ch == '\'' || ch == '\u{2019}'
}

/// Full-width ASCII variants ("ＡＢＣ１２３") as plain ASCII.
fn fold_full_width(ch: char) -> char {
    match ch as u32 {
        code @ 0xFF01..=0xFF5E => char::from_u32(code - 0xFEE0).unwrap_or(ch),
        _ => ch,
    }
}

/// Letters of scripts written without spaces between words: ideographs, kana and
/// hangul. Their punctuation is not included: it separates terms like any other.
fn is_cjk_letter(ch: char) -> bool {
    matches!(ch as u32,
        0x3040..=0x309F // hiragana
        | 0x30A0..=0x30FF // katakana
        | 0x3400..=0x4DBF // extension A
        | 0x4E00..=0x9FFF // unified ideographs
        | 0xAC00..=0xD7AF // hangul syllables
        | 0xF900..=0xFAFF // compatibility ideographs
        | 0x20000..=0x2FA1F // supplementary ideographs
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_term(text, |term| out.push(term.to_owned()));
        out
    }

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn english_words_are_lowercased_and_stopwords_dropped() {
        assert_eq!(
            terms("The Generator is in the BASEMENT."),
            ["generator", "bas"]
        );
    }

    #[test]
    fn derivational_suffixes_fold_once() {
        assert_eq!(terms("adopt adoption"), ["adopt", "adopt"]);
        assert_eq!(terms("music musical"), ["music", "music"]);
        // Too short a stem, or a suffix not stripped.
        assert_eq!(terms("lion brother"), ["lion", "brother"]);
    }

    #[test]
    fn question_words_are_stopwords() {
        assert_eq!(
            terms("What kind of music does she likely enjoy?"),
            ["music", "enjoy"]
        );
    }

    #[test]
    fn possessives_plurals_and_contractions_fold() {
        assert_eq!(terms("my sister's room"), ["sister", "room"]);
        assert_eq!(terms("sisters"), ["sister"]);
        assert_eq!(
            terms("batteries boxes bus glass"),
            ["battery", "box", "bus", "glass"]
        );
        assert_eq!(terms("I don't know, it’s Alex's"), ["know", "alex"]);
    }

    #[test]
    fn verb_endings_fold() {
        assert_eq!(terms("paint painted painting"), ["paint", "paint", "paint"]);
        assert_eq!(terms("plan planned planning"), ["plan", "plan", "plan"]);
        assert_eq!(terms("make making"), ["mak", "mak"]);
        assert_eq!(terms("called calling"), ["call", "call"]);
        // Too short to have an ending.
        assert_eq!(terms("red bed sing"), ["red", "bed", "sing"]);
    }

    #[test]
    fn chinese_runs_become_bigrams() {
        assert_eq!(terms("妹妹在北方"), ["妹妹", "妹在", "在北", "北方"]);
        // A lone character between punctuation is kept as a unigram.
        assert_eq!(terms("猫，狗"), ["猫", "狗"]);
    }

    fn unigrams(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_cjk_unigram(text, |term| out.push(term.to_owned()));
        out
    }

    #[test]
    fn function_characters_are_sorted_for_binary_search() {
        assert!(FUNCTION_CHARS.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn cjk_unigrams_come_from_longer_runs_without_function_characters() {
        // "我" and "的" carry grammar; the lone "猫" is already a term of its own.
        assert_eq!(unigrams("我的药箱，猫"), ["u:药", "u:箱"]);
        assert_eq!(unigrams("ＡＢ药箱 box"), ["u:药", "u:箱"]);
        assert!(unigrams("the generator").is_empty());
        // Never the same term as a lone character, which is a word.
        assert_ne!(unigrams("猫狗")[0], terms("猫")[0]);
    }

    #[test]
    fn function_characters_are_counted_per_term() {
        assert_eq!(function_chars("了吗"), (2, 2));
        assert_eq!(function_chars("住的"), (1, 2));
        assert_eq!(function_chars("药箱"), (0, 2));
        assert_eq!(function_chars("generator").0, 0);
    }

    #[test]
    fn mixed_text_splits_at_script_changes() {
        assert_eq!(
            terms("我是Alex，来自Vault7"),
            ["我是", "alex", "来自", "vault7"]
        );
    }

    #[test]
    fn full_width_latin_is_ascii() {
        assert_eq!(terms("ＡＢＣ１２３"), ["abc123"]);
    }

    #[test]
    fn letters_ending_in_two_equal_bytes_keep_their_verb_ending_safely() {
        // "त" is E0 A4 A4 and "ம" E0 AE AE in UTF-8: their last two bytes are equal,
        // which once looked like a doubled consonant and cut the letter in half.
        assert_eq!(terms("तed"), ["तed"]);
        assert_eq!(terms("मing"), ["मing"]);
        assert_eq!(terms("कततed"), ["कतत"]);
        assert_eq!(terms("மமமing ᄀᄀᄀed"), ["மமம", "ᄀᄀᄀ"]);
        // A doubled non-ASCII letter is not an English doubled consonant.
        assert_eq!(terms("éééed"), ["ééé"]);
    }

    proptest::proptest! {
        #[test]
        fn any_text_yields_short_terms_without_panicking(text in "\\PC{0,64}") {
            for_each_term(&text, |term| {
                assert!(!term.is_empty());
                assert!(term.len() <= MAX_WORD_BYTES, "{term:?}");
            });
        }

        #[test]
        fn any_word_with_an_english_ending_is_safe(
            stem in "\\PC{1,6}",
            ending in proptest::sample::select(vec!["ed", "ing", "s", "es", "ies", "'s", "ation", "ly", "e"]),
        ) {
            for_each_term(&format!("{stem}{ending} {stem}{stem}{ending}"), |_| {});
        }
    }

    #[test]
    fn hostile_text_yields_bounded_or_no_terms() {
        assert!(terms("?!... ,,, 🙂🙂🔥 ---").is_empty());
        assert!(terms("").is_empty());
        let huge = "a".repeat(1 << 20);
        let out = terms(&huge);
        assert_eq!(out.len(), 1);
        assert!(out[0].len() <= MAX_WORD_BYTES);
        assert!(terms("''''s'").is_empty());
    }
}
