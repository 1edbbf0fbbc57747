//! Maps terms to dense ids without storing their text.
//!
//! A term is known by a 64-bit hash of its text. Two different terms share a hash
//! with odds around 10⁻⁹ even for a million-term vocabulary, and the cost of that
//! would only be two rare words matching each other. In exchange the dictionary
//! holds no strings: recall reasons quote the query's own terms, which are at hand.
//! Chinese bigrams make vocabularies large (tens of thousands of terms for a long
//! log), so this is where most of the index's per-term memory would otherwise go.

/// Dense id of a term: its position in [`TermDictionary`].
pub(super) type TermId = u32;

const EMPTY_SLOT: u32 = u32::MAX;

/// The hash that identifies a term. Fixed (FNV-1a, then a mixer for the low bits
/// the table uses) so that the index is the same on every run.
pub(super) fn term_hash(term: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in term.as_bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // SplitMix64's finalizer: FNV's low bits are weak for short keys.
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

/// Open-addressing table from term hash to [`TermId`].
///
/// Slots hold only ids (4 bytes); the hashes live once, in id order. A general
/// `HashMap<u64, u32>` would spend 16 bytes per slot.
#[derive(Clone, Debug, Default)]
pub(super) struct TermDictionary {
    hashes: Vec<u64>,
    /// At most 80% full, growing by half; linear probing.
    slots: Vec<u32>,
}

impl TermDictionary {
    /// Number of distinct terms.
    pub(super) fn len(&self) -> usize {
        self.hashes.len()
    }

    /// The id of a known term.
    pub(super) fn get(&self, hash: u64) -> Option<TermId> {
        if self.slots.is_empty() {
            return None;
        }
        let mut slot = self.home_slot(hash);
        loop {
            let id = self.slots[slot];
            if id == EMPTY_SLOT {
                return None;
            }
            if self.hashes[id as usize] == hash {
                return Some(id);
            }
            slot = self.next_slot(slot);
        }
    }

    /// The id of a term, and whether it was new.
    pub(super) fn get_or_insert(&mut self, hash: u64) -> (TermId, bool) {
        if let Some(id) = self.get(hash) {
            return (id, false);
        }
        if (self.hashes.len() + 1) * 5 > self.slots.len() * 4 {
            self.grow();
        }
        let id = self.hashes.len() as TermId;
        super::reserve_gently(&mut self.hashes, 1);
        self.hashes.push(hash);
        self.place(id, hash);
        (id, true)
    }

    /// Heap bytes held, by capacity.
    pub(super) fn memory_bytes(&self) -> usize {
        self.hashes.capacity() * size_of::<u64>() + self.slots.capacity() * size_of::<u32>()
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.hashes.shrink_to_fit();
    }

    fn grow(&mut self) {
        let size = (self.slots.len() + self.slots.len() / 2).max(64);
        self.slots = vec![EMPTY_SLOT; size];
        for (id, &hash) in self.hashes.iter().enumerate() {
            let slot = self.free_slot(hash);
            self.slots[slot] = id as TermId;
        }
    }

    fn place(&mut self, id: TermId, hash: u64) {
        let slot = self.free_slot(hash);
        self.slots[slot] = id;
    }

    fn free_slot(&self, hash: u64) -> usize {
        let mut slot = self.home_slot(hash);
        while self.slots[slot] != EMPTY_SLOT {
            slot = self.next_slot(slot);
        }
        slot
    }

    /// Maps the hash's high half onto the table by multiplication, so the table
    /// can grow by half instead of doubling.
    fn home_slot(&self, hash: u64) -> usize {
        (((hash >> 32) * self.slots.len() as u64) >> 32) as usize
    }

    fn next_slot(&self, slot: usize) -> usize {
        if slot + 1 == self.slots.len() {
            0
        } else {
            slot + 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_and_stable_across_growth() {
        let mut dictionary = TermDictionary::default();
        for i in 0..1000u32 {
            let hash = term_hash(&i.to_string());
            assert_eq!(dictionary.get_or_insert(hash), (i, true));
        }
        for i in 0..1000u32 {
            let hash = term_hash(&i.to_string());
            assert_eq!(dictionary.get_or_insert(hash), (i, false));
            assert_eq!(dictionary.get(hash), Some(i));
        }
        assert_eq!(dictionary.len(), 1000);
        assert_eq!(dictionary.get(term_hash("unknown")), None);
    }

    #[test]
    fn hashes_are_fixed() {
        // Changing the hash is harmless (postings are never saved) but should be deliberate.
        assert_eq!(term_hash("妹妹"), term_hash("妹妹"));
        assert_ne!(term_hash("ab"), term_hash("ba"));
    }
}
