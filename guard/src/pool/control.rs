//! What a lent connection reads off a statement before sending it: whether its first
//! word controls a transaction, so that it may end the fenced transaction open on the
//! connection; and the refusal of such a statement while the guard holds that
//! transaction's commits ([`Lend::hold_commits`](crate::Lend::hold_commits)).
//!
//! PostgreSQL and SQLite end a transaction block only on a statement of its own
//! (`COMMIT`, `ROLLBACK`, `END`; PostgreSQL's `ABORT` and `PREPARE TRANSACTION`;
//! `RELEASE` of the outermost savepoint), besides an error or an interrupt that rolls
//! it back.

use crate::error::Error;

/// Why a statement that could end a deferred transaction before its lease is checked
/// was not sent.
const COMMIT_HELD: &str = "the deferred transaction's lease is not checked yet, and a statement \
     that could end its transaction would commit its writes unfenced: end it with its own \
     `commit` or `rollback`";

/// [`Error::StatementRefused`] for a statement sent while commits are held.
pub(crate) fn commit_held() -> Error {
    Error::StatementRefused {
        reason: COMMIT_HELD.to_owned(),
    }
}

/// Whether `sql`, one statement sent with parameters, could end or begin a transaction
/// or a part of one: its first word, past spaces and comments, is one that begins
/// such a statement. A text whose first word cannot be read counts as one.
pub(crate) fn may_end_a_transaction(sql: &str) -> bool {
    const CONTROL: &[&str] = &[
        "COMMIT",
        "ROLLBACK",
        "END",
        "ABORT",
        "PREPARE",
        "BEGIN",
        "START",
        "SAVEPOINT",
        "RELEASE",
    ];
    // Most statements begin with their word, and most words with a letter no
    // transaction control begins with (`INSERT`, `UPDATE`, `DELETE`, `WITH`), or with
    // `SELECT`: told without reading past spaces and comments. The letters are read off
    // `CONTROL`, so that a word added there is never missed here.
    let bytes = sql.as_bytes();
    let begins_a_control = |first: &u8| {
        CONTROL.iter().any(|word| {
            word.as_bytes()
                .first()
                .is_some_and(|c| c.eq_ignore_ascii_case(first))
        })
    };
    match bytes.first() {
        Some(first) if first.is_ascii_alphabetic() && !begins_a_control(first) => {
            return false;
        }
        Some(b'S' | b's')
            if bytes
                .get(..6)
                .is_some_and(|w| w.eq_ignore_ascii_case(b"SELECT"))
                && !bytes
                    .get(6)
                    .is_some_and(|next| next.is_ascii_alphanumeric() || *next == b'_') =>
        {
            return false;
        }
        _ => {}
    }
    match first_word(sql) {
        Some(word) => CONTROL.iter().any(|c| word.eq_ignore_ascii_case(c)),
        None => !sql.trim_start().starts_with('('),
    }
}

/// The first word of `sql`, past white space, `--` comments and (nested) `/* */`
/// comments; `None` when it begins with something else.
fn first_word(sql: &str) -> Option<&str> {
    let mut rest = sql;
    loop {
        rest = rest.trim_start();
        if let Some(line) = rest.strip_prefix("--") {
            rest = line.split_once('\n').map_or("", |(_, after)| after);
        } else if rest.starts_with("/*") {
            let mut depth = 0usize;
            let mut end = None;
            let bytes = rest.as_bytes();
            let mut i = 0;
            while i + 1 < bytes.len() {
                match (bytes[i], bytes[i + 1]) {
                    (b'/', b'*') => {
                        depth += 1;
                        i += 2;
                    }
                    (b'*', b'/') => {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            end = Some(i);
                            break;
                        }
                    }
                    _ => i += 1,
                }
            }
            rest = &rest[end?..];
        } else {
            break;
        }
    }
    let len = rest
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '_'))
        .unwrap_or(rest.len());
    (len > 0).then(|| &rest[..len])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every statement that controls a transaction is counted, however spelled; the
    /// statements a fenced transaction sends are not.
    #[test]
    fn statements_that_may_end_a_transaction_are_told_apart() {
        for sql in [
            "COMMIT",
            "commit and chain",
            "  ROLLBACK",
            "END",
            "abort",
            "PREPARE TRANSACTION 'x'",
            "-- a note\nCOMMIT",
            "/* a /* nested */ note */ COMMIT",
            "BEGIN",
            "START TRANSACTION",
            "SAVEPOINT s",
            "RELEASE s",
            "/* unclosed",
            "",
            "; COMMIT",
            "Savepoint s",
            "StarT TRANSACTION",
        ] {
            assert!(may_end_a_transaction(sql), "{sql:?}");
        }
        for sql in [
            "INSERT INTO line VALUES ($1)",
            "select 1",
            "WITH x AS (SELECT 1) UPDATE line SET a = 1",
            "(SELECT 1)",
            "-- COMMIT\nSELECT 1",
            "/* COMMIT */ DELETE FROM line",
            "UPDATE t SET a = CASE WHEN b THEN 1 END",
            "SELECT",
            "Select\t1",
            "delete from line",
            "SELECT_ALL()",
            "SELECTx",
        ] {
            assert!(!may_end_a_transaction(sql), "{sql:?}");
        }
    }
}
