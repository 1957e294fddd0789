//! The tokens the analysis looks for, noted by the tolerant reading while it lexes so
//! that the analysis need not look at every token again.

use super::{Token, TokenKind, executes};
use crate::words::STATEMENT_WORDS;

/// Indices of tokens the analysis looks for, each list in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Marks {
    /// The bare words that are statement keywords (`UPDATE`, `DELETE`, `MERGE`,
    /// `INSERT`, `REPLACE`, `GRANT`, `TRUNCATE`).
    pub(crate) statement_words: Vec<usize>,
    /// The tokens `EXEC`, `EXECUTE` and `sp_executesql` (quoted or not).
    pub(crate) executing: Vec<usize>,
    /// The string tokens right after the bare word `AS` or `DO`.
    pub(crate) bodies: Vec<usize>,
    /// The operators `=` and `+=`, which may assign executed SQL to a variable.
    pub(crate) assignments: Vec<usize>,
}

impl Marks {
    /// Empties every list, keeping the buffers.
    pub(super) fn clear(&mut self) {
        self.statement_words.clear();
        self.executing.clear();
        self.bodies.clear();
        self.assignments.clear();
    }

    /// Notes `token`, about to be pushed at index `index`; `raw` is its text and
    /// `previous` the token before it, with its text.
    #[inline(always)]
    pub(super) fn note(
        &mut self,
        index: usize,
        token: &Token,
        raw: &[u8],
        previous: Option<(&Token, &[u8])>,
    ) {
        match token.kind {
            TokenKind::Word => {
                if STATEMENT_WORDS.contains(raw) {
                    self.statement_words.push(index);
                } else if executes(token.kind, raw) {
                    self.executing.push(index);
                }
            }
            TokenKind::QuotedIdent if executes(token.kind, raw) => {
                self.executing.push(index);
            }
            TokenKind::Operator if matches!(raw, b"=" | b"+=") => {
                self.assignments.push(index);
            }
            TokenKind::String
                if previous.is_some_and(|(t, raw)| {
                    t.kind == TokenKind::Word
                        && (raw.eq_ignore_ascii_case(b"AS") || raw.eq_ignore_ascii_case(b"DO"))
                }) =>
            {
                self.bodies.push(index);
            }
            _ => {}
        }
    }
}
