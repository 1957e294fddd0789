//! Finding the keywords of the statements the rules examine.

use super::StatementKind;
use super::is_name;
use crate::lex::{Token, TokenKind, is_any_word, is_word};
use crate::words::{STATEMENT_WORDS, WordSet, words};

/// A statement keyword found in a token stream, before parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Index of the statement's keyword token.
    pub keyword: usize,
    /// Index of the first token (a leading `WITH`, or the keyword).
    pub first: usize,
    /// The kind the keyword announces.
    pub kind: StatementKind,
}

/// Words after which `UPDATE`, `DELETE`... name an event or a privilege, not a statement.
/// Not `DO` nor `INSTEAD`: a rule's action (`DO INSTEAD UPDATE t SET ...`, `DO DELETE
/// FROM t`) is a statement, and an upsert's `DO UPDATE SET` is told apart by its `SET`.
const BEFORE_NON_STATEMENT: WordSet = WordSet::new(&[
    "FOR", "AFTER", "BEFORE", "OF", "GRANT", "DENY", "REVOKE", "OR", "NO", "TO",
]);

/// After `ON UPDATE` / `ON DELETE` of a foreign key.
const REFERENTIAL_ACTIONS: WordSet = WordSet::new(&["CASCADE", "RESTRICT", "NO", "SET"]);

/// Finds the statement keywords of writes and grants in a token stream.
pub fn find_statements(text: &str, tokens: &[Token]) -> Vec<Found> {
    find_statements_at(
        text,
        tokens,
        (0..tokens.len()).filter(|&i| is_any_word(text, &tokens[i], &STATEMENT_WORDS)),
    )
}

/// [`find_statements`] given the indices of the bare words among `tokens` that are
/// statement keywords ([`STATEMENT_WORDS`]), in order, as the lexer notes them.
pub(crate) fn find_statements_at(
    text: &str,
    tokens: &[Token],
    keywords: impl IntoIterator<Item = usize>,
) -> Vec<Found> {
    let mut found = Vec::new();
    for i in keywords {
        let token = &tokens[i];
        let word = &text[token.range()];
        let kind = if word.eq_ignore_ascii_case("UPDATE") {
            StatementKind::Update
        } else if word.eq_ignore_ascii_case("DELETE") {
            StatementKind::Delete
        } else if word.eq_ignore_ascii_case("MERGE") {
            StatementKind::Merge
        } else if word.eq_ignore_ascii_case("INSERT") || word.eq_ignore_ascii_case("REPLACE") {
            StatementKind::Insert
        } else if word.eq_ignore_ascii_case("GRANT") {
            StatementKind::Grant
        } else if word.eq_ignore_ascii_case("TRUNCATE") {
            StatementKind::Truncate
        } else {
            continue;
        };
        let prev = i.checked_sub(1).map(|p| &tokens[p]);
        let next = tokens.get(i + 1);
        if prev.is_some_and(|p| {
            p.kind == TokenKind::Comma
                || p.kind == TokenKind::Dot
                || is_any_word(text, p, &BEFORE_NON_STATEMENT)
        }) {
            continue;
        }
        // Function-like uses (`UPDATE(col)` in triggers, `REPLACE(x, ...)`), `UPDATE STATISTICS`, `MERGE JOIN`.
        if next.is_none_or(|n| {
            n.kind == TokenKind::LParen
                && kind != StatementKind::Insert
                && kind != StatementKind::Grant
        }) {
            continue;
        }
        let next = next.unwrap_or(token);
        // `SET NOCOUNT ON` then a statement, versus `ON DELETE CASCADE` and a rule's
        // event, `CREATE RULE r AS ON UPDATE TO t`.
        if prev.is_some_and(|p| is_word(text, p, "ON"))
            && (is_any_word(text, next, &REFERENTIAL_ACTIONS) || is_word(text, next, "TO"))
        {
            continue;
        }
        match kind {
            StatementKind::Update if is_any_word(text, next, words!["SET", "STATISTICS"]) => {
                continue;
            }
            StatementKind::Merge if is_word(text, next, "JOIN") => continue,
            // A MERGE arm (`THEN DELETE`), also the last thing in a CTE (`... DELETE)`).
            StatementKind::Delete
                if is_any_word(text, next, words!["WHEN", "OUTPUT", "END"])
                    || matches!(next.kind, TokenKind::Semicolon | TokenKind::RParen) =>
            {
                continue;
            }
            StatementKind::Insert => {
                let replace = word.eq_ignore_ascii_case("REPLACE");
                if next.kind == TokenKind::LParen
                    || is_any_word(text, next, words!["VALUES", "DEFAULT"])
                {
                    continue;
                }
                if replace && !is_word(text, next, "INTO") {
                    continue;
                }
                if prev.is_some_and(|p| is_word(text, p, "OR")) {
                    continue;
                }
            }
            _ => {}
        }
        let first = cte_start(text, tokens, i).unwrap_or(i);
        found.push(Found {
            keyword: i,
            first,
            kind,
        });
    }
    found
}

/// When the keyword at `i` follows a CTE list (`WITH a AS (...), b AS (...)`), the index of `WITH`.
fn cte_start(text: &str, tokens: &[Token], i: usize) -> Option<usize> {
    let mut j = i.checked_sub(1)?;
    loop {
        if tokens[j].kind != TokenKind::RParen {
            return None;
        }
        let open = matching_open(tokens, j)?;
        let mut k = open.checked_sub(1)?;
        if is_word(text, &tokens[k], "MATERIALIZED") {
            k = k.checked_sub(1)?;
            if is_word(text, &tokens[k], "NOT") {
                k = k.checked_sub(1)?;
            }
        }
        if !is_word(text, &tokens[k], "AS") {
            return None;
        }
        k = k.checked_sub(1)?;
        if tokens[k].kind == TokenKind::RParen {
            k = matching_open(tokens, k)?.checked_sub(1)?;
        }
        if !is_name(&tokens[k]) {
            return None;
        }
        let before = k.checked_sub(1)?;
        if is_word(text, &tokens[before], "RECURSIVE")
            && before > 0
            && is_word(text, &tokens[before - 1], "WITH")
        {
            return Some(before - 1);
        }
        if is_word(text, &tokens[before], "WITH") {
            return Some(before);
        }
        if tokens[before].kind != TokenKind::Comma {
            return None;
        }
        j = before.checked_sub(1)?;
    }
}

pub(super) fn matching_open(tokens: &[Token], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for j in (0..=close).rev() {
        match tokens[j].kind {
            TokenKind::RParen => depth += 1,
            TokenKind::LParen => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}
