//! Reply fields: values from a game-defined set, such as a mood or an animation
//! tag, that the model puts in a tag at the start of its reply,
//! `[mood: alarmed] Who goes there?`. The tag is parsed out and never shown as
//! text; only the words after it are the NPC's line.
//!
//! Only the start of the model's own reply is read: a player's line is never
//! parsed, and a bracket later in the reply is left alone, so nobody can set a
//! field by typing a tag.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{PromptLanguage, shorten_to_chars};

/// Longest tag, in characters from `[` to `]`: a reply that opens a bracket and
/// does not close it by then is plain text, and streams on.
pub const MAX_REPLY_TAG_CHARS: usize = 200;

/// Most fields one NPC may declare.
pub const MAX_REPLY_FIELDS: usize = 8;

/// Most values one field may allow.
pub const MAX_REPLY_FIELD_VALUES: usize = 64;

/// Longest field name or value, in characters.
pub const MAX_REPLY_FIELD_CHARS: usize = 32;

/// The reply fields an NPC declares, each with the values it may take, e.g.
/// `mood` with `calm`, `alarmed`, `angry`. Built from a persona's `reply_fields`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplyFieldSet {
    fields: BTreeMap<String, Vec<String>>,
}

/// The fields a reply set: each declared field whose tag value was one of its
/// allowed values, spelled as declared. Fields the model left out, misspelled or
/// gave a value outside the set are absent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplyFields(BTreeMap<String, String>);

impl ReplyFields {
    /// The value of field `name`, if the reply set it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Whether the reply set no field.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every field set, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Adds the fields of `later` over these: a later value wins.
    pub fn merge(&mut self, later: ReplyFields) {
        self.0.extend(later.0);
    }
}

/// Why a declaration of reply fields was refused.
pub fn check_reply_field(name: &str, values: &[String]) -> Result<(), String> {
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars().count() <= MAX_REPLY_FIELD_CHARS
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    };
    // What a file wrote is quoted short: a refusal names it, it does not repeat it.
    let quoted = |s: &str| format!("{:?}", shorten_to_chars(s, 2 * MAX_REPLY_FIELD_CHARS));
    if !plain(name) {
        return Err(format!(
            "reply field {}: names are 1 to {MAX_REPLY_FIELD_CHARS} letters, digits, '_' or '-'",
            quoted(name)
        ));
    }
    if values.is_empty() || values.len() > MAX_REPLY_FIELD_VALUES {
        return Err(format!(
            "reply field {name:?}: between 1 and {MAX_REPLY_FIELD_VALUES} values"
        ));
    }
    match values.iter().find(|v| !plain(v)) {
        Some(bad) => Err(format!(
            "reply field {name:?}: value {} is not 1 to {MAX_REPLY_FIELD_CHARS} letters, digits, '_' or '-'",
            quoted(bad)
        )),
        None => Ok(()),
    }
}

/// How far the start of a reply decides whether it is a tag.
#[derive(Debug, PartialEq)]
enum Start {
    /// Not a tag: the text stays as it is.
    Text,
    /// A tag, parsed; the words start after `end` and any whitespace after it.
    Tag { fields: ReplyFields, end: usize },
    /// Too little has arrived to tell.
    Undecided,
}

impl ReplyFieldSet {
    /// Declares `fields`, each a name and its allowed values. Declarations that
    /// [`check_reply_field`] refuses, and those past [`MAX_REPLY_FIELDS`], are left
    /// out (a persona file refuses them when it loads).
    pub fn new<N, V>(fields: impl IntoIterator<Item = (N, V)>) -> Self
    where
        N: Into<String>,
        V: IntoIterator,
        V::Item: Into<String>,
    {
        let fields = fields
            .into_iter()
            .map(|(name, values)| (name.into(), values.into_iter().map(Into::into).collect()))
            .filter(|(name, values): &(String, Vec<String>)| {
                check_reply_field(name, values).is_ok()
            })
            .take(MAX_REPLY_FIELDS)
            .collect();
        Self { fields }
    }

    /// Whether no field is declared: replies are then never parsed.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The instruction the system prompt carries so the model writes the tag, or
    /// `None` when no field is declared.
    pub fn instruction(&self, language: PromptLanguage) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let example = self
            .fields
            .iter()
            .map(|(name, values)| format!("{name}: {}", values[0]))
            .collect::<Vec<_>>()
            .join(", ");
        let (list_sep, field_sep) = match language {
            PromptLanguage::English => (", ", "; "),
            PromptLanguage::Chinese => ("、", "；"),
        };
        let allowed = self
            .fields
            .iter()
            .map(|(name, values)| format!("{name}: {}", values.join(list_sep)))
            .collect::<Vec<_>>()
            .join(field_sep);
        Some(match language {
            PromptLanguage::English => format!(
                "Start every reply with one tag in square brackets, then your words, \
                 e.g. \"[{example}] ...\". Allowed values: {allowed}. The player never \
                 sees the tag."
            ),
            PromptLanguage::Chinese => format!(
                "每次回复都先写一个方括号标签，再说话，例如“[{example}] ……”。\
                 可选值：{allowed}。玩家看不到这个标签。"
            ),
        })
    }

    /// Splits a whole reply into the fields its leading tag sets and the words
    /// after the tag. A reply that does not start with a tag naming a declared
    /// field comes back unchanged, with no fields.
    ///
    /// ```
    /// use bevy_npc_memory::memory::ReplyFieldSet;
    ///
    /// let set = ReplyFieldSet::new([("mood", ["calm", "alarmed"])]);
    /// let (fields, words) = set.split("[mood: alarmed] Who goes there?");
    /// assert_eq!((fields.get("mood"), words), (Some("alarmed"), "Who goes there?"));
    /// // A value outside the set is dropped; the words still arrive.
    /// let (fields, words) = set.split("[mood: smug] Hello.");
    /// assert_eq!((fields.get("mood"), words), (None, "Hello."));
    /// ```
    pub fn split<'a>(&self, reply: &'a str) -> (ReplyFields, &'a str) {
        match self.start(reply, true) {
            Start::Tag { fields, end } => (fields, reply[end..].trim_start()),
            Start::Text | Start::Undecided => (ReplyFields::default(), reply),
        }
    }

    /// Reads the start of `text`. `complete`: no more text will come.
    fn start(&self, text: &str, complete: bool) -> Start {
        if self.is_empty() {
            return Start::Text;
        }
        let rest = text.trim_start();
        let offset = text.len() - rest.len();
        if rest.is_empty() {
            return if complete {
                Start::Text
            } else {
                Start::Undecided
            };
        }
        if !rest.starts_with('[') {
            return Start::Text;
        }
        for (count, (at, c)) in rest.char_indices().enumerate() {
            if count >= MAX_REPLY_TAG_CHARS || c == '\n' {
                return Start::Text;
            }
            if c == ']' {
                return match self.parse(&rest[1..at]) {
                    Some(fields) => Start::Tag {
                        fields,
                        end: offset + at + 1,
                    },
                    None => Start::Text,
                };
            }
        }
        if complete {
            Start::Text
        } else {
            Start::Undecided
        }
    }

    /// The fields a tag's inside sets, or `None` when it names no declared field
    /// (`[sighs]`, `[Note: ...]`): then it is text.
    fn parse(&self, inside: &str) -> Option<ReplyFields> {
        let mut named = false;
        let mut fields = ReplyFields::default();
        for pair in inside.split([',', ';']) {
            let Some((key, value)) = pair.split_once([':', '=', '：']) else {
                continue;
            };
            let Some((name, values)) = self.field(key.trim()) else {
                continue;
            };
            named = true;
            let value = value.trim().trim_matches(['"', '\'']);
            let known = values
                .iter()
                .find(|v| v.to_lowercase() == value.to_lowercase());
            if let Some(known) = known
                && !fields.0.contains_key(name)
            {
                fields.0.insert(name.to_owned(), known.clone());
            }
        }
        named.then_some(fields)
    }

    /// The declared field called `key`, whatever its case.
    fn field(&self, key: &str) -> Option<(&str, &[String])> {
        self.fields
            .iter()
            .find(|(name, _)| name.to_lowercase() == key.to_lowercase())
            .map(|(name, values)| (name.as_str(), values.as_slice()))
    }
}

/// Takes the tag off the start of a reply that arrives in pieces: only a possible
/// tag at the start is held back, until its `]` (or until it turns out not to be
/// a tag, which is then passed on whole). The pieces it lets through, with
/// [`finish`](Self::finish), add up to the words [`ReplyFieldSet::split`] gives
/// for the whole reply.
#[derive(Clone, Debug)]
pub struct ReplyTagStream {
    set: Arc<ReplyFieldSet>,
    state: StreamState,
}

#[derive(Clone, Debug)]
enum StreamState {
    /// The start so far, held back, and how many of its bytes are known to be
    /// leading whitespace, so that each piece is looked at once however long a
    /// server streams whitespace.
    Holding { held: String, blank: usize },
    /// After a tag: whitespace before the words is dropped.
    Trimming,
    /// Everything passes.
    Passing,
}

impl StreamState {
    fn holding() -> Self {
        StreamState::Holding {
            held: String::new(),
            blank: 0,
        }
    }
}

impl ReplyTagStream {
    /// A stream for a reply of an NPC that declares `set`.
    pub fn new(set: Arc<ReplyFieldSet>) -> Self {
        Self {
            set,
            state: StreamState::holding(),
        }
    }

    /// The part of `piece` that may be shown now (possibly empty).
    pub fn push(&mut self, piece: &str) -> String {
        match &mut self.state {
            StreamState::Passing => piece.to_owned(),
            StreamState::Trimming => {
                let words = piece.trim_start();
                if !words.is_empty() {
                    self.state = StreamState::Passing;
                }
                words.to_owned()
            }
            StreamState::Holding { held, blank } => {
                held.push_str(piece);
                let unseen = &held[*blank..];
                *blank += unseen.len() - unseen.trim_start().len();
                if *blank == held.len() && !self.set.is_empty() {
                    return String::new();
                }
                // A tag's start is at most MAX_REPLY_TAG_CHARS long, so this looks
                // at a bounded part of what is held.
                match self.set.start(&held[*blank..], false) {
                    Start::Undecided => String::new(),
                    Start::Text => {
                        let held = std::mem::take(held);
                        self.state = StreamState::Passing;
                        held
                    }
                    Start::Tag { end, .. } => {
                        let after = held.split_off(*blank + end);
                        self.state = StreamState::Trimming;
                        self.push(&after)
                    }
                }
            }
        }
    }

    /// Forgets what was held back, for a reply sent again from the start (after a
    /// rate limit): nothing held was shown, so nothing is lost.
    pub fn restart(&mut self) {
        self.state = StreamState::holding();
    }

    /// What is still held back once the reply is complete: the start of a reply
    /// that never became a tag.
    pub fn finish(&mut self) -> String {
        match std::mem::replace(&mut self.state, StreamState::Passing) {
            StreamState::Holding { held, .. } => match self.set.start(&held, true) {
                Start::Tag { end, .. } => held[end..].trim_start().to_owned(),
                Start::Text | Start::Undecided => held,
            },
            StreamState::Trimming | StreamState::Passing => String::new(),
        }
    }
}

#[cfg(test)]
mod tests;
