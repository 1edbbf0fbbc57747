//! The error every loaded part of memory reports: which field, and what is wrong.

/// Why saved memory was refused: the field (a path such as `recall.forgotten[2]`)
/// and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct InvalidField {
    /// Where in the memory.
    pub field: String,
    /// What is wrong.
    pub problem: String,
}
