//! The buffers a query reuses, owned by the index so they live as long as it.

/// Buffers reused by every query. They are as long as the log, so a query
/// allocates nothing that grows with the log, and only the entries a query touched
/// are cleared afterwards.
#[derive(Clone, Debug, Default)]
pub(super) struct QueryScratch {
    pub(super) scores: Vec<f32>,
    /// Bit `i` set: query term `i` occurs in the message.
    pub(super) matched: Vec<u64>,
    pub(super) touched: Vec<u32>,
    pub(super) ranked: Vec<(f32, u32)>,
}

impl QueryScratch {
    pub(super) fn memory_bytes(&self) -> usize {
        self.scores.capacity() * size_of::<f32>()
            + self.matched.capacity() * size_of::<u64>()
            + self.touched.capacity() * size_of::<u32>()
            + self.ranked.capacity() * size_of::<(f32, u32)>()
    }
}
