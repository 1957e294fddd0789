//! PostgreSQL's own tokens (`scan.l`, "Lexical Structure"): prefixed strings and
//! Unicode-escaped names, `$n` parameters, dollar quotes, and operator runs.

use super::TokenKind;
use super::server::{
    at, delimited, ident_end, ident_start, other, placeholder_at, placeholder_end, string,
};
use crate::{Dialect, SqlError};

const D: Dialect = Dialect::Postgres;

/// The characters an operator is made of.
const OPERATOR: &[u8] = b"+-*/<>=~!@#%^&|`?";
/// An operator holding one of these keeps a trailing `+` or `-`.
const SPECIAL: &[u8] = b"~!@#%^&|`?";

/// Whether a prefixed string (`E'...'`, `B'...'`, `X'...'`, `N'...'`, `U&'...'`) or a
/// Unicode-escaped name (`U&"..."`) starts at `i`, a letter.
#[inline(always)]
pub(super) fn prefixed(bytes: &[u8], i: usize) -> bool {
    match at(bytes, i + 1) {
        b'\'' => matches!(
            bytes[i],
            b'E' | b'e' | b'B' | b'b' | b'X' | b'x' | b'N' | b'n'
        ),
        b'&' => matches!(bytes[i], b'U' | b'u') && matches!(at(bytes, i + 2), b'\'' | b'"'),
        _ => false,
    }
}

/// The token at `i` that the scanning loop leaves to PostgreSQL's rules; `caller`: a
/// text with `@name` placeholders.
pub(super) fn token(text: &str, i: usize, caller: bool) -> Result<(TokenKind, usize), SqlError> {
    let bytes = text.as_bytes();
    let b = bytes[i];
    let next = at(bytes, i + 1);
    if caller && placeholder_at(text, i) {
        return Ok((TokenKind::Parameter, placeholder_end(text, i)));
    }
    if matches!(b, b'E' | b'e') && next == b'\'' {
        return Ok((TokenKind::String, string(D, bytes, i, i + 1, true)?));
    }
    if matches!(b, b'B' | b'b' | b'X' | b'x' | b'N' | b'n') && next == b'\'' {
        return Ok((TokenKind::String, string(D, bytes, i, i + 1, false)?));
    }
    if matches!(b, b'U' | b'u') && next == b'&' && at(bytes, i + 2) == b'\'' {
        return Ok((TokenKind::String, string(D, bytes, i, i + 2, false)?));
    }
    if matches!(b, b'U' | b'u') && next == b'&' && at(bytes, i + 2) == b'"' {
        let end = delimited(bytes, i + 2, b'"', "a quoted identifier")?;
        return Ok((TokenKind::QuotedIdent, end));
    }
    if ident_start(false, b) {
        return Ok((TokenKind::Word, ident_end(false, bytes, i + 1)));
    }
    if b == b'$' {
        if next.is_ascii_digit() {
            let mut j = i + 1;
            while at(bytes, j).is_ascii_digit() {
                j += 1;
            }
            return Ok((TokenKind::Parameter, j));
        }
        // $tag$ ... $tag$, the tag an identifier without `$`, or empty.
        let mut j = i + 1;
        if at(bytes, j).is_ascii_alphabetic() || at(bytes, j) == b'_' || at(bytes, j) >= 0x80 {
            while at(bytes, j).is_ascii_alphanumeric()
                || at(bytes, j) == b'_'
                || at(bytes, j) >= 0x80
            {
                j += 1;
            }
        }
        if at(bytes, j) == b'$' {
            let tag = &text[i..=j];
            return match text[j + 1..].find(tag) {
                Some(n) => Ok((TokenKind::String, j + 1 + n + tag.len())),
                None => Err(SqlError::new(
                    i..bytes.len(),
                    format!("an unterminated dollar quote `{tag}` (PostgreSQL)"),
                )),
            };
        }
        return Ok(other(text, i));
    }
    if b == b':' {
        return Ok(if matches!(next, b':' | b'=') {
            (TokenKind::Operator, i + 2)
        } else {
            (TokenKind::Other, i + 1)
        });
    }
    if OPERATOR.contains(&b) {
        let mut j = i;
        while j < bytes.len() && OPERATOR.contains(&bytes[j]) {
            let (c, n) = (bytes[j], at(bytes, j + 1));
            if j > i && ((c == b'-' && n == b'-') || (c == b'/' && n == b'*')) {
                break;
            }
            if j > i && caller && placeholder_at(text, j) {
                break;
            }
            j += 1;
        }
        let mut end = j;
        if end - i > 1 && !bytes[i..end].iter().any(|c| SPECIAL.contains(c)) {
            while end - i > 1 && matches!(bytes[end - 1], b'+' | b'-') {
                end -= 1;
            }
        }
        return Ok((TokenKind::Operator, end));
    }
    Ok(other(text, i))
}
