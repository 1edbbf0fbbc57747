//! The lore store: every entry once, for every NPC, with a small term index so a
//! reply's lookup touches only the entries that share a word with it. Scope is
//! checked in the lookup itself, before an entry scores, so an entry outside the
//! reader's scope can never be returned.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use bevy::reflect::{Reflect, std_traits::ReflectDefault};
use serde::{Deserialize, Serialize};

use super::entry::{LoreEntry, LoreScope, MAX_LORE_ENTRIES};
use crate::memory::invalid_field::InvalidField;
use crate::memory::npc_id::NpcId;
use crate::memory::recall::for_each_term;
use crate::memory::tokens::estimate_tokens;

/// Query terms beyond this many are dropped: a pasted wall of text costs no more
/// than a long question.
const MAX_QUERY_TERMS: usize = 64;
/// Weight of the recent conversation's terms against the player's new line.
const CONTEXT_WEIGHT: f32 = 0.3;
/// What a term found among an entry's keys adds, on top of its place in the text:
/// keys are the author's word for "this is what the entry is about".
const KEY_TERM_BOOST: f32 = 2.0;
/// What a key found whole in the player's line adds. Term matching alone misses
/// one-character Chinese keys and can split multi-word keys apart.
const KEY_PHRASE_SCORE: f32 = 4.0;
/// An entry scoring below this share of the best one is left out: a word shared
/// in passing ("door" in a note about doors) should not spend prompt tokens next
/// to the entry the player asked about.
const MIN_SHARE_OF_BEST: f32 = 0.2;
/// BM25's usual parameters, as recall uses them.
const BM25_K1: f32 = 1.2;
const BM25_B: f32 = 0.75;

/// Who is asking: an NPC and the groups its persona names.
#[derive(Clone, Copy, Debug)]
pub struct LoreReader<'a> {
    /// The NPC.
    pub npc: &'a NpcId,
    /// The groups it belongs to.
    pub groups: &'a [String],
}

impl<'a> LoreReader<'a> {
    /// An NPC in these groups.
    pub fn new(npc: &'a NpcId, groups: &'a [String]) -> Self {
        Self { npc, groups }
    }

    /// Whether this NPC may know lore of `scope`.
    pub fn sees(&self, scope: &LoreScope) -> bool {
        match scope {
            LoreScope::World => true,
            LoreScope::Group(group) => self.groups.iter().any(|g| g == group),
            LoreScope::Npc(npc) => npc == self.npc,
        }
    }
}

/// A lore entry found for a reply, and how well it matched.
#[derive(Clone, Debug, PartialEq)]
pub struct LoreHit {
    /// The entry's id.
    pub id: String,
    /// Its relevance; only comparable within one query.
    pub score: f32,
    /// Its text as it is now.
    pub text: Arc<str>,
}

/// How much lore one reply may carry. Under a prompt budget the lore section is
/// also held to its share ([`SectionShares::lore`](crate::memory::SectionShares::lore)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Reflect)]
#[type_path = "bevy_npc_memory::memory"]
#[reflect(Debug, PartialEq, Default, Clone)]
#[serde(default)]
pub struct LoreLimits {
    /// Most entries per reply.
    pub max_entries: usize,
    /// Most estimated tokens of lore text per reply.
    pub max_tokens: usize,
}

impl Default for LoreLimits {
    fn default() -> Self {
        Self {
            max_entries: 4,
            max_tokens: 300,
        }
    }
}

/// Every lore entry, indexed for lookup by the words of a conversation.
///
/// One store serves every NPC: lore is never copied into an NPC's memory, so an
/// update reaches every later prompt at once, and [`query`](Self::query) checks
/// each entry's scope against the reader.
///
/// ```
/// use bevy_npc_memory::memory::{LoreEntry, LoreLimits, LoreReader, LoreScope, LoreStore, NpcId};
///
/// let mut store = LoreStore::new();
/// store.insert(LoreEntry::new("code", "The door code is 4711.")
///     .with_scope(LoreScope::group("crew"))
///     .with_keys(["door code"]))?;
/// let (echo, guest) = (NpcId::new("echo7"), NpcId::new("guest"));
/// let crew = ["crew".to_owned()];
/// let line = "What is the door code?";
/// let limits = LoreLimits::default();
/// assert_eq!(store.query(&LoreReader::new(&echo, &crew), line, &[], &limits)[0].id, "code");
/// assert!(store.query(&LoreReader::new(&guest, &[]), line, &[], &limits).is_empty());
/// # Ok::<(), bevy_npc_memory::memory::InvalidField>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct LoreStore {
    slots: Vec<Option<Indexed>>,
    free: Vec<u32>,
    by_id: HashMap<String, u32>,
    /// Term to the slots of the entries that have it in their text or keys.
    postings: HashMap<Box<str>, Vec<u32>>,
    /// Keys, lower-cased, by their first character, so that finding the keys in a
    /// line looks only at keys that could start at each of its characters.
    phrases: HashMap<char, Vec<Phrase>>,
    /// Terms of every entry's text, for BM25's average length.
    total_length: u64,
}

#[derive(Clone, Debug)]
struct Indexed {
    entry: LoreEntry,
    /// Sorted by term, for binary search.
    terms: Vec<TermStat>,
    length: u32,
}

#[derive(Clone, Debug)]
struct TermStat {
    term: Box<str>,
    /// Times in the text.
    in_text: u32,
    /// Whether a key has it.
    in_keys: bool,
}

#[derive(Clone, Debug)]
struct Phrase {
    slot: u32,
    key: Box<str>,
}

impl LoreStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The entry with this id.
    pub fn get(&self, id: &str) -> Option<&LoreEntry> {
        let slot = *self.by_id.get(id)?;
        self.slots[slot as usize].as_ref().map(|i| &i.entry)
    }

    /// Every entry, in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = &LoreEntry> {
        self.slots.iter().flatten().map(|i| &i.entry)
    }

    /// Adds an entry, or replaces the one with its id; returns the replaced one.
    /// Fails, changing nothing, when the entry breaks a limit
    /// ([`LoreEntry::check`]) or the store already holds [`MAX_LORE_ENTRIES`].
    pub fn insert(&mut self, entry: LoreEntry) -> Result<Option<LoreEntry>, InvalidField> {
        entry.check()?;
        if !self.by_id.contains_key(&entry.id) && self.len() >= MAX_LORE_ENTRIES {
            return Err(InvalidField {
                field: "lore".into(),
                problem: format!("already holds {MAX_LORE_ENTRIES} entries"),
            });
        }
        let old = self.remove(&entry.id);
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
        };
        self.by_id.insert(entry.id.clone(), slot);
        let indexed = self.index(slot, entry);
        self.slots[slot as usize] = Some(indexed);
        Ok(old)
    }

    /// Gives the entry `id` a new text from now on, keeping its keys and scope;
    /// returns the entry as it was, or `None` (changing nothing) when no entry has
    /// this id. Fails, changing nothing, when the text is too long.
    pub fn update(
        &mut self,
        id: &str,
        text: impl Into<Arc<str>>,
    ) -> Result<Option<LoreEntry>, InvalidField> {
        let Some(mut entry) = self.get(id).cloned() else {
            return Ok(None);
        };
        entry.text = text.into();
        self.insert(entry)
    }

    /// Removes the entry `id`, returning it.
    pub fn remove(&mut self, id: &str) -> Option<LoreEntry> {
        let slot = self.by_id.remove(id)?;
        let indexed = self.slots[slot as usize].take()?;
        for stat in &indexed.terms {
            if let Some(slots) = self.postings.get_mut(&stat.term) {
                slots.retain(|&s| s != slot);
                if slots.is_empty() {
                    self.postings.remove(&stat.term);
                }
            }
        }
        for first in phrase_starts(&indexed.entry) {
            if let Some(phrases) = self.phrases.get_mut(&first) {
                phrases.retain(|p| p.slot != slot);
                if phrases.is_empty() {
                    self.phrases.remove(&first);
                }
            }
        }
        self.total_length -= u64::from(indexed.length);
        self.free.push(slot);
        Some(indexed.entry)
    }

    fn index(&mut self, slot: u32, entry: LoreEntry) -> Indexed {
        let mut stats: HashMap<String, TermStat> = HashMap::new();
        let mut length = 0u32;
        fn stat<'a>(stats: &'a mut HashMap<String, TermStat>, term: &str) -> &'a mut TermStat {
            stats.entry(term.to_owned()).or_insert_with(|| TermStat {
                term: term.into(),
                in_text: 0,
                in_keys: false,
            })
        }
        for_each_term(&entry.text, |term| {
            length = length.saturating_add(1);
            stat(&mut stats, term).in_text += 1;
        });
        for key in &entry.keys {
            for_each_term(key, |term| stat(&mut stats, term).in_keys = true);
        }
        for phrase in distinct_phrases(&entry) {
            if let Some(first) = phrase.chars().next() {
                self.phrases.entry(first).or_default().push(Phrase {
                    slot,
                    key: phrase.into(),
                });
            }
        }
        let mut terms: Vec<TermStat> = stats.into_values().collect();
        terms.sort_unstable_by(|a, b| a.term.cmp(&b.term));
        for stat in &terms {
            self.postings
                .entry(stat.term.clone())
                .or_default()
                .push(slot);
        }
        self.total_length += u64::from(length);
        Indexed {
            entry,
            terms,
            length,
        }
    }

    /// The entries `reader` may know that match the player's `line` and, at a lower
    /// weight, the `recent` messages before it; best first, within `limits`.
    ///
    /// Terms are made as recall makes them (English words folded to a stem, Chinese
    /// in character pairs) and scored with BM25; a term among an entry's keys counts
    /// more, and a key found whole in the line (ignoring case) counts most. Entries
    /// scoring under a fifth of the best are left out as passing mentions. Entries
    /// outside the reader's scope are skipped before they score, so none is ever
    /// returned, whatever the text. Equal scores come out by id.
    pub fn query(
        &self,
        reader: &LoreReader<'_>,
        line: &str,
        recent: &[&str],
        limits: &LoreLimits,
    ) -> Vec<LoreHit> {
        if self.is_empty() || limits.max_entries == 0 {
            return Vec::new();
        }
        let mut scores: HashMap<u32, f32> = HashMap::new();
        let documents = self.len() as f32;
        let average = (self.total_length as f32 / documents).max(1.0);
        for (term, weight) in query_terms(line, recent) {
            let Some(slots) = self.postings.get(term.as_str()) else {
                continue;
            };
            let doc_freq = slots.len() as f32;
            let idf = (1.0 + (documents - doc_freq + 0.5) / (doc_freq + 0.5)).ln();
            for &slot in slots {
                let Some(indexed) = self.visible(slot, reader) else {
                    continue;
                };
                let Some(stat) = indexed.stat(&term) else {
                    continue;
                };
                let tf = stat.in_text as f32;
                let norm = 1.0 - BM25_B + BM25_B * indexed.length as f32 / average;
                let text = tf * (BM25_K1 + 1.0) / (tf + BM25_K1 * norm);
                let key = if stat.in_keys { KEY_TERM_BOOST } else { 0.0 };
                *scores.entry(slot).or_default() += weight * idf * (text + key);
            }
        }
        for slot in self.phrases_in(line, reader) {
            *scores.entry(slot).or_default() += KEY_PHRASE_SCORE;
        }
        self.best(scores, reader, limits)
    }

    fn visible(&self, slot: u32, reader: &LoreReader<'_>) -> Option<&Indexed> {
        self.slots
            .get(slot as usize)?
            .as_ref()
            .filter(|indexed| reader.sees(&indexed.entry.scope))
    }

    /// Slots of the visible entries with a key in `line`, once per key found.
    fn phrases_in(&self, line: &str, reader: &LoreReader<'_>) -> Vec<u32> {
        if self.phrases.is_empty() {
            return Vec::new();
        }
        let lowered = line.to_lowercase();
        let mut found: HashSet<(u32, &str)> = HashSet::new();
        for (at, ch) in lowered.char_indices() {
            let Some(phrases) = self.phrases.get(&ch) else {
                continue;
            };
            for phrase in phrases {
                if lowered[at..].starts_with(&*phrase.key)
                    && self.visible(phrase.slot, reader).is_some()
                {
                    found.insert((phrase.slot, &phrase.key));
                }
            }
        }
        found.into_iter().map(|(slot, _)| slot).collect()
    }

    fn best(
        &self,
        scores: HashMap<u32, f32>,
        reader: &LoreReader<'_>,
        limits: &LoreLimits,
    ) -> Vec<LoreHit> {
        let mut ranked: Vec<(f32, &LoreEntry)> = scores
            .into_iter()
            .filter(|(_, score)| score.is_finite() && *score > 0.0)
            .filter_map(|(slot, score)| Some((score, &self.visible(slot, reader)?.entry)))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
        let floor = ranked
            .first()
            .map_or(0.0, |best| best.0 * MIN_SHARE_OF_BEST);
        ranked.retain(|(score, _)| *score >= floor);
        let mut tokens = 0usize;
        let mut hits = Vec::new();
        for (score, entry) in ranked {
            if hits.len() >= limits.max_entries {
                break;
            }
            let cost = estimate_tokens(&entry.text);
            // A long entry that does not fit leaves room for shorter, lesser ones.
            if tokens + cost > limits.max_tokens {
                continue;
            }
            tokens += cost;
            hits.push(LoreHit {
                id: entry.id.clone(),
                score,
                text: entry.text.clone(),
            });
        }
        hits
    }
}

impl Indexed {
    fn stat(&self, term: &str) -> Option<&TermStat> {
        self.terms
            .binary_search_by(|stat| (*stat.term).cmp(term))
            .ok()
            .map(|at| &self.terms[at])
    }
}

/// The distinct terms of the line (weight 1) and the recent messages (lower
/// weight), each at its highest weight, line terms first, at most
/// [`MAX_QUERY_TERMS`].
fn query_terms(line: &str, recent: &[&str]) -> Vec<(String, f32)> {
    let mut terms: Vec<(String, f32)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut collect = |text: &str, weight: f32| {
        for_each_term(text, |term| {
            if terms.len() < MAX_QUERY_TERMS && seen.insert(term.to_owned()) {
                terms.push((term.to_owned(), weight));
            }
        });
    };
    collect(line, 1.0);
    for text in recent {
        collect(text, CONTEXT_WEIGHT);
    }
    terms
}

/// The entry's keys as matched inside a line: trimmed, lower-cased, each once.
fn distinct_phrases(entry: &LoreEntry) -> Vec<String> {
    let mut phrases: Vec<String> = entry
        .keys
        .iter()
        .map(|key| key.trim().to_lowercase())
        .filter(|key| !key.is_empty())
        .collect();
    phrases.sort_unstable();
    phrases.dedup();
    phrases
}

fn phrase_starts(entry: &LoreEntry) -> Vec<char> {
    distinct_phrases(entry)
        .iter()
        .filter_map(|p| p.chars().next())
        .collect()
}
