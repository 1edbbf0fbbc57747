//! The index itself: what it stores per term and per message, and how it grows.

use std::fmt;

use super::dates::{Span, for_each_date_term};
use super::dictionary::{TermDictionary, term_hash};
use super::postings::PostingLists;
use super::scratch::QueryScratch;
use super::terms::{for_each_cjk_unigram, for_each_term};
use crate::memory::calendar::Calendar;
use crate::memory::message::{ChatMessage, LogIndex, Role};

/// What the index knows about one message of the log.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct DocEntry {
    /// Terms in the message (BM25's document length), saturating.
    pub(super) terms: u16,
    /// Whether the message's terms are in the postings. System messages and
    /// messages without terms are not.
    pub(super) indexed: bool,
    /// Excluded from recall by the forgetting policy.
    pub(super) forgotten: bool,
    /// How many times recall has returned the message.
    pub(super) hits: u32,
}

/// A lexical (BM25) index over one NPC's full chat log (L2), for recalling old
/// messages that are no longer in the window.
///
/// Feed it every message in log order with [`add`](Self::add), or rebuild it from
/// a loaded log with [`from_log`](Self::from_log); query it before each reply with
/// [`query`](Self::query). It never changes the log: [`forget`](Self::forget) only
/// hides a message from recall. Only [`RecallState`](super::RecallState) needs
/// saving; the postings are rebuilt from the log.
#[derive(Clone, Default)]
pub struct RecallIndex {
    pub(super) dictionary: TermDictionary,
    pub(super) postings: PostingLists,
    /// By log index. May run past `seen` when state was restored before the log.
    pub(super) docs: Vec<DocEntry>,
    /// Messages added so far: the next index `add` expects.
    pub(super) seen: LogIndex,
    pub(super) indexed_docs: u32,
    pub(super) total_terms: u64,
    pub(super) scratch: QueryScratch,
    /// Reused by `add`, so indexing a message allocates nothing in steady state.
    term_buffer: Vec<u64>,
    /// How timestamps read as dates; `None`: no date terms (see [`dates`](super::dates)).
    pub(super) calendar: Option<Calendar>,
    /// The newest timestamp added: "today" for a query that gives no time.
    pub(super) newest_stamp: f64,
    /// Reused for the text of date terms.
    date_buffer: String,
    /// The summarizer's notes on lines, and their terms.
    pub(super) notes: super::notes::NoteIndex,
}

impl RecallIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty index that reads timestamps as dates of `calendar`: each message
    /// is also found by the day it was said and by the days its words name
    /// ("yesterday", "last week", "1 May"), resolved against that day. `None` is
    /// [`new`](Self::new). The calendar must be the one the index's
    /// [`RecallConfig::calendar`](super::RecallConfig::calendar) names; a memory
    /// rebuilds an index whose calendar differs.
    pub fn with_calendar(calendar: Option<Calendar>) -> Self {
        Self {
            calendar,
            ..Self::default()
        }
    }

    /// The calendar the index reads dates with, if any.
    pub fn calendar(&self) -> Option<Calendar> {
        self.calendar
    }

    /// An index over a whole log, such as one just loaded from a save.
    pub fn from_log(messages: &[ChatMessage]) -> Self {
        Self::from_log_with_calendar(messages, None)
    }

    /// [`from_log`](Self::from_log) reading dates with `calendar`, as
    /// [`with_calendar`](Self::with_calendar) does.
    pub fn from_log_with_calendar(messages: &[ChatMessage], calendar: Option<Calendar>) -> Self {
        let mut index = Self::with_calendar(calendar);
        for message in messages {
            index.add(message);
        }
        index.dictionary.shrink_to_fit();
        index.postings.shrink_to_fit();
        index.docs.shrink_to_fit();
        index.term_buffer = Vec::new();
        index.date_buffer = String::new();
        index
    }

    /// Indexes the next message of the log.
    ///
    /// Messages must come in log order. A message at an index already added is
    /// ignored, so adding twice is harmless. System messages take their place in
    /// the log but are never recalled.
    pub fn add(&mut self, message: &ChatMessage) {
        if message.index < self.seen {
            return;
        }
        // Doc ids are u32 to halve the postings; four billion messages is no limit.
        let Ok(doc) = u32::try_from(message.index) else {
            return;
        };
        self.seen = message.index + 1;
        self.ensure_doc(doc);
        // A plain system message holds instructions, not memories; events and
        // hearsay are memories like the conversation.
        if message.role == Role::System && message.origin.is_said() {
            return;
        }
        let mut hashes = std::mem::take(&mut self.term_buffer);
        hashes.clear();
        for_each_term(&message.content, |term| hashes.push(term_hash(term)));
        // An answer heard from another NPC is found by the question it answered.
        if let crate::memory::Origin::Heard(hearsay) = &message.origin
            && let Some(asked) = &hearsay.asked
        {
            for_each_term(asked, |term| hashes.push(term_hash(term)));
        }
        // Length counts words only: dates say when, not how wordy a line is, and
        // the CJK characters below repeat what the bigrams already count.
        let words = hashes.len();
        for_each_cjk_unigram(&message.content, |term| hashes.push(term_hash(term)));
        if message.timestamp.is_finite() {
            self.newest_stamp = message.timestamp;
        }
        // A line with no words ("ok!") is not indexed by its date alone: every line
        // of its day would match a question about that day as well as it does.
        if words > 0
            && let Some(day) = self.calendar.and_then(|c| c.day(message.timestamp))
        {
            let mut buffer = std::mem::take(&mut self.date_buffer);
            let mut push = |term: &str| hashes.push(term_hash(term));
            Span::Day(day).for_each_term(&mut buffer, &mut push);
            for_each_date_term(&message.content, day, &mut buffer, &mut push);
            self.date_buffer = buffer;
        }
        if words > 0 {
            hashes.sort_unstable();
            self.index_terms(doc, &hashes, words);
        }
        self.term_buffer = hashes;
        self.index_waiting_notes(doc);
    }

    /// Number of log messages added, system messages included.
    pub fn len(&self) -> usize {
        self.seen as usize
    }

    /// Whether no message has been added.
    pub fn is_empty(&self) -> bool {
        self.seen == 0
    }

    /// Hides a message from recall for good. The log keeps it; only recall forgets.
    pub fn forget(&mut self, index: LogIndex) {
        if let Ok(doc) = u32::try_from(index) {
            self.ensure_doc(doc);
            self.docs[doc as usize].forgotten = true;
        }
    }

    /// Whether [`forget`](Self::forget) hid the message.
    pub fn is_forgotten(&self, index: LogIndex) -> bool {
        self.doc(index).is_some_and(|doc| doc.forgotten)
    }

    /// How many times the message was recalled, as a neighbour or a match: sent
    /// in a reply prompt (a line the budget left out does not count), or returned
    /// by [`query`](Self::query). With the message's age and importance, this is
    /// what a forgetting policy weighs.
    pub fn access_count(&self, index: LogIndex) -> u32 {
        self.doc(index).map_or(0, |doc| doc.hits)
    }

    /// Distinct terms in the index.
    pub fn term_count(&self) -> usize {
        self.dictionary.len()
    }

    /// An estimate of the heap bytes the index holds, counting the capacity of every
    /// buffer (not the allocator's own overhead), query scratch space included.
    pub fn memory_bytes(&self) -> usize {
        self.dictionary.memory_bytes()
            + self.postings.memory_bytes()
            + self.docs.capacity() * size_of::<DocEntry>()
            + self.scratch.memory_bytes()
            + self.term_buffer.capacity() * size_of::<u64>()
            + self.date_buffer.capacity()
            + self.notes.memory_bytes()
    }

    pub(super) fn doc(&self, index: LogIndex) -> Option<&DocEntry> {
        self.docs.get(usize::try_from(index).ok()?)
    }

    pub(super) fn ensure_doc(&mut self, doc: u32) {
        let needed = doc as usize + 1;
        if let Some(missing) = needed.checked_sub(self.docs.len()) {
            super::reserve_gently(&mut self.docs, missing);
            self.docs.resize(needed, DocEntry::default());
        }
    }

    /// Adds one message's sorted term hashes (repeats adjacent) to the postings;
    /// `words` of them are words, the length BM25 normalizes by.
    fn index_terms(&mut self, doc: u32, sorted_hashes: &[u64], words: usize) {
        for run in sorted_hashes.chunk_by(|a, b| a == b) {
            let (term, new) = self.dictionary.get_or_insert(run[0]);
            if new {
                let opened = self.postings.open_list();
                debug_assert_eq!(opened, term);
            }
            let term_freq = u32::try_from(run.len()).unwrap_or(u32::MAX);
            self.postings.append(term, doc, term_freq);
        }
        let length = u16::try_from(words).unwrap_or(u16::MAX);
        let entry = &mut self.docs[doc as usize];
        entry.terms = length;
        entry.indexed = true;
        self.indexed_docs += 1;
        self.total_terms += u64::from(length);
    }
}

impl fmt::Debug for RecallIndex {
    // The postings are megabytes of bytes; their shape is what a reader wants.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecallIndex")
            .field("messages", &self.seen)
            .field("indexed_messages", &self.indexed_docs)
            .field("terms", &self.dictionary.len())
            .field("memory_bytes", &self.memory_bytes())
            .finish_non_exhaustive()
    }
}

/// Two indices are equal when they index the same number of messages and learned
/// the same things about them (access counts, forgotten messages): the postings
/// follow from the log, which the owners compare themselves.
impl PartialEq for RecallIndex {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.state() == other.state()
    }
}
