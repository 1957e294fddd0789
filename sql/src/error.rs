//! What is wrong with a SQL text, and where.

use std::ops::Range;

/// Something wrong with a SQL text, at a byte range of it: a token its database cannot
/// read, a statement the parser could not follow, a construct a check refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SqlError {
    /// What is wrong, lowercase; where it is known, what to write instead.
    pub message: String,
    /// Where, in bytes of the input.
    pub range: Range<usize>,
}

impl SqlError {
    /// `message` about the bytes `range`.
    pub fn new(range: Range<usize>, message: impl Into<String>) -> SqlError {
        SqlError {
            message: message.into(),
            range,
        }
    }
}
