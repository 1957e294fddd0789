//! SQL analysis: a total lexer, a tolerant statement parser, and the statement shape
//! used by both the lint's rules and the `#[fenced_write]` macro.

pub mod expr;
pub mod lexer;
pub mod parse;
pub mod shape;

pub use expr::{ColumnRef, CompareOp, Operand, Predicate};
pub use parse::{Assignment, InsertPart, SqlError, Statement, StatementKind, TableName, UpdateArm};
pub use shape::{Placeholder, SetShape, UpdateShape, parse_update};

use std::ops::Range;

/// One write or grant found in a SQL text, parsed or not.
#[derive(Debug, Clone)]
pub struct Analysed {
    /// The kind its keyword announces.
    pub kind: StatementKind,
    /// Byte range of its first keyword.
    pub keyword: Range<usize>,
    /// The parsed statement, or why it could not be parsed together with the byte range
    /// the statement spans as far as it could be followed and the tables named there.
    pub result: Result<Statement, (SqlError, Range<usize>, Vec<TableName>)>,
    /// The first keyword begins the text, or follows anything but a word, or follows a
    /// keyword that opens or closes a block (`BEGIN`, `THEN`, `AS`...). Prose in a Rust
    /// string ("cannot update ReportPublication") fails this test; SQL almost never does.
    pub at_statement_start: bool,
}

const BLOCK_WORDS: &[&str] = &[
    "BEGIN",
    "THEN",
    "ELSE",
    "AS",
    "DO",
    "LOOP",
    "END",
    "TRY",
    "CATCH",
    "TRAN",
    "TRANSACTION",
];

fn at_statement_start(text: &str, tokens: &[lexer::Token], first: usize) -> bool {
    let Some(prev) = first.checked_sub(1).map(|p| &tokens[p]) else {
        return true;
    };
    prev.kind != lexer::TokenKind::Word
        || BLOCK_WORDS
            .iter()
            .any(|w| text[prev.range.clone()].eq_ignore_ascii_case(w))
}

/// Finds and parses every `UPDATE`, `DELETE`, `MERGE`, `INSERT`, `GRANT` and `TRUNCATE`
/// in `text`, in order.
pub fn analyse(text: &str) -> Vec<Analysed> {
    let lexed = lexer::lex(text);
    analyse_tokens(text, &lexed.tokens)
}

/// [`analyse`] over tokens already lexed.
pub fn analyse_tokens(text: &str, tokens: &[lexer::Token]) -> Vec<Analysed> {
    parse::find_statements(text, tokens)
        .into_iter()
        .map(|found| {
            let keyword = tokens[found.first].range.clone();
            let result = parse::parse_found(text, tokens, &found).map_err(|error| {
                // How far the statement reaches: up to `;`, `GO` or the next found keyword.
                let end = tokens[found.keyword..]
                    .iter()
                    .skip(1)
                    .position(|t| {
                        matches!(
                            t.kind,
                            lexer::TokenKind::Semicolon | lexer::TokenKind::BatchSeparator
                        )
                    })
                    .map_or(tokens.len(), |p| found.keyword + 1 + p);
                let end = end.min(found.keyword + 200).min(tokens.len());
                let slice = &tokens[found.first..end];
                let mut mentioned = parse::tables_in(text, slice);
                // The word after the keyword is the most likely target.
                mentioned.extend(
                    slice
                        .iter()
                        .filter(|t| {
                            matches!(
                                t.kind,
                                lexer::TokenKind::Word
                                    | lexer::TokenKind::QuotedIdent
                                    | lexer::TokenKind::Placeholder
                            )
                        })
                        .map(|t| TableName {
                            schema: None,
                            name: lexer::ident_text(text, t).to_owned(),
                            range: t.range.clone(),
                        }),
                );
                let range = keyword.start..slice.last().map_or(keyword.end, |t| t.range.end);
                (error, range, mentioned)
            });
            Analysed {
                kind: found.kind,
                keyword,
                result,
                at_statement_start: at_statement_start(text, tokens, found.first),
            }
        })
        .collect()
}
