//! SQLite's own tokens (`tokenize.c`, "SQL Language Expressions"): `[...]` and
//! `` `...` `` names, `X'...'` blobs, `?`, `?n`, `:name`, `@name`, `$name` and `#name`
//! parameters, and its operators.

use super::TokenKind;
use super::server::{
    at, delimited, ident_continue, ident_end, ident_start, other, placeholder_at, placeholder_end,
    string,
};
use crate::{Dialect, SqlError};

/// Whether an `X'...'` blob starts at `i`, a letter.
#[inline(always)]
pub(super) fn prefixed(bytes: &[u8], i: usize) -> bool {
    matches!(bytes[i], b'X' | b'x') && at(bytes, i + 1) == b'\''
}

/// The token at `i` that the scanning loop leaves to SQLite's rules; `caller`: a text
/// with `@name` placeholders.
pub(super) fn token(text: &str, i: usize, caller: bool) -> Result<(TokenKind, usize), SqlError> {
    let bytes = text.as_bytes();
    let b = bytes[i];
    let next = at(bytes, i + 1);
    if caller && placeholder_at(text, i) {
        return Ok((TokenKind::Parameter, placeholder_end(text, i)));
    }
    let operator = |len: usize| Ok((TokenKind::Operator, i + len));
    match b {
        // `[` ... the first `]`, no escape.
        b'[' => match memchr::memchr(b']', &bytes[i + 1..]) {
            Some(n) => Ok((TokenKind::QuotedIdent, i + 1 + n + 1)),
            None => Err(SqlError::new(i..bytes.len(), "an unterminated `[`")),
        },
        b'`' => Ok((
            TokenKind::QuotedIdent,
            delimited(bytes, i, b'`', "a `` ` `` identifier")?,
        )),
        b'X' | b'x' if next == b'\'' => Ok((
            TokenKind::String,
            string(Dialect::Sqlite, bytes, i, i + 1, false)?,
        )),
        _ if ident_start(false, b) => Ok((TokenKind::Word, ident_end(false, bytes, i + 1))),
        b'?' => {
            let mut j = i + 1;
            while at(bytes, j).is_ascii_digit() {
                j += 1;
            }
            Ok((TokenKind::Parameter, j))
        }
        b'$' | b'@' | b':' | b'#' => {
            // CC_VARALPHA: the name's characters, and for `$` TCL's `::` and a `(...)`
            // suffix.
            let mut j = i + 1;
            loop {
                let c = at(bytes, j);
                if ident_continue(false, c) && j < bytes.len() {
                    j += 1;
                } else if b == b'$' && c == b':' && at(bytes, j + 1) == b':' {
                    j += 2;
                } else if b == b'$' && c == b'(' && j > i + 1 {
                    if let Some(n) = memchr::memchr(b')', &bytes[j..]) {
                        j += n + 1;
                    }
                    break;
                } else {
                    break;
                }
            }
            if j == i + 1 {
                return Ok(other(text, i));
            }
            Ok((TokenKind::Parameter, j))
        }
        b'=' => operator(if next == b'=' { 2 } else { 1 }),
        b'<' => operator(if matches!(next, b'=' | b'>' | b'<') {
            2
        } else {
            1
        }),
        b'>' => operator(if matches!(next, b'=' | b'>') { 2 } else { 1 }),
        b'!' if next == b'=' => operator(2),
        b'|' => operator(if next == b'|' { 2 } else { 1 }),
        b'-' if next == b'>' => operator(if at(bytes, i + 2) == b'>' { 3 } else { 2 }),
        b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'~' => operator(1),
        _ => Ok(other(text, i)),
    }
}
