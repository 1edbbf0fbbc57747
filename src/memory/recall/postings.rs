//! Posting lists: for each term, the messages that contain it and how often.
//!
//! All lists share one byte arena, so a term costs no allocation of its own;
//! with Chinese bigrams most terms occur in only a handful of messages, and a
//! `Vec` per term would cost more than its postings. A list is a chain of slices
//! that double in size (8 bytes first, up to 256), each ending in the arena
//! offset of the next, so rare terms waste little and common ones chain rarely.
//!
//! A term seen once (most Chinese bigrams, at first) keeps its single posting in
//! its head and gets its first slice only with its second posting.
//!
//! Slices are carved from 256-byte chunks that each hold one slice size, aligned
//! to it, so the slice around any offset is found from the chunk's size alone and
//! a list's head needs only four numbers.
//!
//! A posting is a varint of `(doc delta << 1) | (tf > 1)`, followed by a varint
//! of the term frequency only when it is above one, which in chat lines is rare.
//! Messages arrive in log order, so deltas are positive and mostly one byte for
//! common terms.

use super::dictionary::TermId;

/// Bytes per chunk, and the largest slice.
const CHUNK_BYTES: u32 = 256;
/// Slice sizes are `8 << level`, up to a whole chunk.
const LEVELS: usize = 6;
/// The 4-byte offset of the next slice at each slice's end.
const LINK_BYTES: u32 = 4;
const NOT_CARVING: u32 = u32::MAX;
/// `ListHead::start` of a list that has no slice yet.
const NO_SLICE: u32 = u32::MAX;

/// Where one term's list starts, where it is written, and what it holds.
#[derive(Clone, Copy, Debug)]
struct ListHead {
    /// The first slice, or [`NO_SLICE`] while the list holds one posting.
    start: u32,
    /// Where the next byte goes; while there is no slice, the term frequency of
    /// the one posting, whose doc is `last_doc`.
    write: u32,
    last_doc: u32,
    doc_freq: u32,
}

/// Every term's posting list.
#[derive(Clone, Debug)]
pub(super) struct PostingLists {
    arena: Vec<u8>,
    /// The slice level of each chunk of the arena.
    chunk_levels: Vec<u8>,
    /// For each level, the next free slice in its current chunk.
    carving: [u32; LEVELS],
    heads: Vec<ListHead>,
}

impl Default for PostingLists {
    fn default() -> Self {
        Self {
            arena: Vec::new(),
            chunk_levels: Vec::new(),
            carving: [NOT_CARVING; LEVELS],
            heads: Vec::new(),
        }
    }
}

impl PostingLists {
    /// Opens an empty list for the next term id, which must be `heads.len()`.
    pub(super) fn open_list(&mut self) -> TermId {
        super::reserve_gently(&mut self.heads, 1);
        self.heads.push(ListHead {
            start: NO_SLICE,
            write: 0,
            last_doc: 0,
            doc_freq: 0,
        });
        (self.heads.len() - 1) as TermId
    }

    /// Appends a message to a term's list. Messages must come in increasing order.
    pub(super) fn append(&mut self, term: TermId, doc: u32, term_freq: u32) {
        let head = self.heads[term as usize];
        debug_assert!(head.doc_freq == 0 || doc > head.last_doc);
        if head.doc_freq == 0 {
            self.heads[term as usize] = ListHead {
                write: term_freq,
                last_doc: doc,
                doc_freq: 1,
                ..head
            };
            return;
        }
        if head.start == NO_SLICE {
            let start = self.allocate_slice(0);
            self.heads[term as usize].start = start;
            self.heads[term as usize].write = start;
            self.write_posting(term, head.last_doc, head.write);
        }
        self.write_posting(term, doc - head.last_doc, term_freq);
        let head = &mut self.heads[term as usize];
        head.last_doc = doc;
        head.doc_freq += 1;
    }

    fn write_posting(&mut self, term: TermId, delta: u32, term_freq: u32) {
        let repeated = term_freq > 1;
        self.write_varint(term, (u64::from(delta) << 1) | u64::from(repeated));
        if repeated {
            self.write_varint(term, u64::from(term_freq));
        }
    }

    /// Messages containing the term.
    pub(super) fn doc_freq(&self, term: TermId) -> u32 {
        self.heads[term as usize].doc_freq
    }

    /// The term's postings as `(doc, term frequency)`, in doc order.
    pub(super) fn postings(&self, term: TermId) -> Postings<'_> {
        let head = self.heads[term as usize];
        if head.start == NO_SLICE {
            return Postings {
                lists: self,
                read: 0,
                slice_end: 0,
                remaining: 0,
                doc: 0,
                inline: (head.doc_freq == 1).then_some((head.last_doc, head.write)),
            };
        }
        Postings {
            lists: self,
            read: head.start,
            slice_end: self.slice_end(head.start),
            remaining: head.doc_freq,
            doc: 0,
            inline: None,
        }
    }

    /// Heap bytes held, by capacity.
    pub(super) fn memory_bytes(&self) -> usize {
        self.arena.capacity()
            + self.chunk_levels.capacity()
            + self.heads.capacity() * size_of::<ListHead>()
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.arena.shrink_to_fit();
        self.chunk_levels.shrink_to_fit();
        self.heads.shrink_to_fit();
    }

    fn level_at(&self, offset: u32) -> u8 {
        self.chunk_levels[(offset / CHUNK_BYTES) as usize]
    }

    /// End of the writable part of the slice holding `offset`: its link comes next.
    fn slice_end(&self, offset: u32) -> u32 {
        let size = slice_size(self.level_at(offset));
        (offset & !(size - 1)) + size - LINK_BYTES
    }

    fn write_varint(&mut self, term: TermId, mut value: u64) {
        loop {
            let low = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                self.write_byte(term, low);
                return;
            }
            self.write_byte(term, low | 0x80);
        }
    }

    fn write_byte(&mut self, term: TermId, byte: u8) {
        let mut write = self.heads[term as usize].write;
        let slice_end = self.slice_end(write);
        if write == slice_end {
            let level = (self.level_at(write) + 1).min(LEVELS as u8 - 1);
            let next = self.allocate_slice(level);
            let link = slice_end as usize;
            self.arena[link..link + LINK_BYTES as usize].copy_from_slice(&next.to_le_bytes());
            write = next;
        }
        self.arena[write as usize] = byte;
        self.heads[term as usize].write = write + 1;
    }

    fn allocate_slice(&mut self, level: u8) -> u32 {
        let size = slice_size(level);
        let carving = &mut self.carving[usize::from(level)];
        let start = if *carving == NOT_CARVING {
            let chunk = self.arena.len();
            super::reserve_gently(&mut self.arena, CHUNK_BYTES as usize);
            self.arena.resize(chunk + CHUNK_BYTES as usize, 0);
            super::reserve_gently(&mut self.chunk_levels, 1);
            self.chunk_levels.push(level);
            u32::try_from(chunk).expect("posting arena beyond 4 GiB")
        } else {
            *carving
        };
        let next = start + size;
        *carving = if next.is_multiple_of(CHUNK_BYTES) {
            NOT_CARVING
        } else {
            next
        };
        start
    }
}

fn slice_size(level: u8) -> u32 {
    8 << level
}

/// Reads one posting list, following its slice links.
pub(super) struct Postings<'a> {
    lists: &'a PostingLists,
    read: u32,
    slice_end: u32,
    remaining: u32,
    doc: u32,
    /// The one posting of a list that has no slice yet.
    inline: Option<(u32, u32)>,
}

impl Postings<'_> {
    fn read_byte(&mut self) -> u8 {
        let arena = &self.lists.arena;
        if self.read == self.slice_end {
            let link = self.slice_end as usize;
            let mut next = [0u8; LINK_BYTES as usize];
            next.copy_from_slice(&arena[link..link + LINK_BYTES as usize]);
            self.read = u32::from_le_bytes(next);
            self.slice_end = self.lists.slice_end(self.read);
        }
        let byte = arena[self.read as usize];
        self.read += 1;
        byte
    }

    fn read_varint(&mut self) -> u64 {
        let mut value = 0u64;
        let mut shift = 0;
        loop {
            let byte = self.read_byte();
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return value;
            }
            shift += 7;
        }
    }
}

impl Iterator for Postings<'_> {
    type Item = (u32, u32);

    fn next(&mut self) -> Option<(u32, u32)> {
        if self.remaining == 0 {
            return self.inline.take();
        }
        self.remaining -= 1;
        let code = self.read_varint();
        self.doc += (code >> 1) as u32;
        let term_freq = if code & 1 == 1 {
            self.read_varint() as u32
        } else {
            1
        };
        Some((self.doc, term_freq))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.remaining as usize + usize::from(self.inline.is_some());
        (left, Some(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_round_trip_across_slices_and_interleaving() {
        let mut lists = PostingLists::default();
        let rare = lists.open_list();
        let common = lists.open_list();
        let mut expected_common = Vec::new();
        for doc in 0..5000u32 {
            let term_freq = 1 + doc % 3 / 2 * 300;
            lists.append(common, doc * 7, term_freq);
            expected_common.push((doc * 7, term_freq));
            if doc % 1000 == 0 {
                lists.append(rare, doc * 7, 1);
            }
        }
        assert_eq!(lists.postings(common).collect::<Vec<_>>(), expected_common);
        // Many lists interleaved: every slice size is carved and chained.
        let many: Vec<TermId> = (0..300).map(|_| lists.open_list()).collect();
        for doc in 0..400u32 {
            for &term in &many[..(doc as usize % 300) + 1] {
                lists.append(term, doc, 1 + doc % 2);
            }
        }
        for (i, &term) in many.iter().enumerate() {
            let docs: Vec<(u32, u32)> = lists.postings(term).collect();
            let expected: Vec<(u32, u32)> = (0..400u32)
                .filter(|doc| i <= *doc as usize % 300)
                .map(|doc| (doc, 1 + doc % 2))
                .collect();
            assert_eq!(docs, expected);
        }
        assert_eq!(lists.doc_freq(rare), 5);
        let once = lists.open_list();
        assert_eq!(lists.postings(once).next(), None);
        lists.append(once, 42, 3);
        assert_eq!(lists.postings(once).collect::<Vec<_>>(), [(42, 3)]);
        let rare_docs: Vec<u32> = lists.postings(rare).map(|(doc, _)| doc).collect();
        assert_eq!(rare_docs, [0, 7000, 14000, 21000, 28000]);
    }

    #[test]
    fn large_gaps_and_first_doc_zero() {
        let mut lists = PostingLists::default();
        let term = lists.open_list();
        lists.append(term, 0, 1);
        lists.append(term, u32::MAX - 1, 2);
        assert_eq!(
            lists.postings(term).collect::<Vec<_>>(),
            [(0, 1), (u32::MAX - 1, 2)]
        );
    }
}
