//! What the three servers' own tokenizers share: bare names, numbers, quoted runs that
//! must be closed, and `#[fenced_write]`'s `@name` placeholders. A server refuses a text
//! it cannot split; so does its reading here, with a [`SqlError`] saying where.

use super::TokenKind;
use super::quoted::{backslashed, doubled};
use crate::{Dialect, SqlError};

/// Whether `b` starts a bare name: an ASCII letter or `_`, any byte of a non-ASCII
/// character, and on SQL Server `#` (a temporary table).
#[inline(always)]
pub(super) fn ident_start(mssql: bool, b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80 || (mssql && b == b'#')
}

/// Whether `b` continues a bare name: ASCII letters and digits, `_`, `$`, any byte of a
/// non-ASCII character, and on SQL Server `#` and `@`.
#[inline(always)]
pub(super) fn ident_continue(mssql: bool, b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || b == b'_'
        || b >= 0x80
        || b == b'$'
        || (mssql && matches!(b, b'#' | b'@'))
}

/// The end of the bare name whose rest starts at `i`.
#[inline(always)]
pub(super) fn ident_end(mssql: bool, bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && ident_continue(mssql, bytes[i]) {
        i += 1;
    }
    i
}

/// The byte at `i`, or 0 past the end.
#[inline(always)]
pub(super) fn at(bytes: &[u8], i: usize) -> u8 {
    bytes.get(i).copied().unwrap_or(0)
}

/// Whether `#[fenced_write]`'s placeholder `@name` starts at `i`: an `@` before a
/// letter (any, as in a Rust identifier) or `_`.
pub(super) fn placeholder_at(text: &str, i: usize) -> bool {
    text.as_bytes().get(i) == Some(&b'@')
        && text[i + 1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// The end of the placeholder `@name` at `i`: a Rust parameter's name, which may have
/// non-ASCII letters (`@größe`).
pub(super) fn placeholder_end(text: &str, i: usize) -> usize {
    let rest = &text[i + 1..];
    let len = rest
        .char_indices()
        .find(|&(_, c)| !(c.is_alphanumeric() || c == '_'))
        .map_or(rest.len(), |(n, _)| n);
    i + 1 + len
}

/// A one-character token the database gives no meaning to here.
pub(super) fn other(text: &str, i: usize) -> (TokenKind, usize) {
    let len = text[i..].chars().next().map_or(1, char::len_utf8);
    (TokenKind::Other, i + len)
}

/// The end of a `'...'` string whose token starts at `start` and whose opening quote is
/// at `quote`; with `backslash`, a backslash escapes the next character (`E'...'`).
pub(super) fn string(
    dialect: Dialect,
    bytes: &[u8],
    start: usize,
    quote: usize,
    backslash: bool,
) -> Result<usize, SqlError> {
    let end = if backslash {
        backslashed(bytes, quote + 1)
    } else {
        doubled(bytes, quote + 1, b'\'')
    };
    end.ok_or_else(|| {
        SqlError::new(
            start..bytes.len(),
            format!("an unterminated string literal ({})", dialect.name()),
        )
    })
}

/// The end of a name quoted from `i` to `close`, the closing character doubled standing
/// for itself; `what` names the form for the error.
pub(super) fn delimited(bytes: &[u8], i: usize, close: u8, what: &str) -> Result<usize, SqlError> {
    doubled(bytes, i + 1, close).ok_or_else(|| {
        SqlError::new(
            i..bytes.len(),
            format!("{what} without its closing `{}`", close as char),
        )
    })
}

/// The error for a `/*` comment at `i` that is never closed.
pub(super) fn unterminated_comment(dialect: Dialect, i: usize, len: usize) -> SqlError {
    SqlError::new(
        i..len,
        format!("an unterminated `/*` comment ({})", dialect.name()),
    )
}

/// The end of the number starting at `i`, as `dialect` reads it: PostgreSQL's `_`
/// separators (version 16), hexadecimal, a fraction (not PostgreSQL's `1..2`), an
/// exponent. PostgreSQL (15 and later: "trailing junk") and SQLite refuse a number run
/// into a word; SQL Server reads the word as the next token (an alias).
pub(super) fn number(dialect: Dialect, text: &str, i: usize) -> Result<usize, SqlError> {
    let bytes = text.as_bytes();
    let postgres = dialect == Dialect::Postgres;
    let mssql = dialect == Dialect::Mssql;
    let mut j = i;
    if bytes[i] == b'0' && matches!(at(bytes, i + 1), b'x' | b'X') {
        j = i + 2;
        while at(bytes, j).is_ascii_hexdigit() || (postgres && at(bytes, j) == b'_') {
            j += 1;
        }
    } else {
        let digits = |j: &mut usize| {
            while at(bytes, *j).is_ascii_digit()
                || (postgres && at(bytes, *j) == b'_' && at(bytes, *j + 1).is_ascii_digit())
            {
                *j += 1;
            }
        };
        digits(&mut j);
        if at(bytes, j) == b'.' && !(postgres && at(bytes, j + 1) == b'.') {
            j += 1;
            digits(&mut j);
        }
        if matches!(at(bytes, j), b'e' | b'E') {
            let mut k = j + 1;
            if matches!(at(bytes, k), b'+' | b'-') {
                k += 1;
            }
            if at(bytes, k).is_ascii_digit() {
                j = k;
                digits(&mut j);
            }
        }
    }
    if j < bytes.len() && ident_continue(mssql, bytes[j]) && !mssql {
        let end = ident_end(mssql, bytes, j);
        return Err(SqlError::new(
            i..end,
            format!(
                "a number run into a word (`{}`), which {} refuses",
                &text[i..end],
                dialect.name()
            ),
        ));
    }
    Ok(j)
}
