//! SQL Server's own tokens ("Database identifiers", "Constants"): `[...]` names,
//! `N'...'` strings, `@variables` and `@@functions`, `#temporary` names, money
//! constants and its operators, compound assignments (`+=`) among them.

use super::TokenKind;
use super::server::{
    at, delimited, ident_end, ident_start, other, placeholder_at, placeholder_end, string,
};
use crate::{Dialect, SqlError};

/// Whether an `N'...'` string starts at `i`, a letter.
#[inline(always)]
pub(super) fn prefixed(bytes: &[u8], i: usize) -> bool {
    matches!(bytes[i], b'N' | b'n') && at(bytes, i + 1) == b'\''
}

/// The token at `i` that the scanning loop leaves to SQL Server's rules; `caller`: a
/// text with `@name` placeholders.
pub(super) fn token(text: &str, i: usize, caller: bool) -> Result<(TokenKind, usize), SqlError> {
    let bytes = text.as_bytes();
    let b = bytes[i];
    let next = at(bytes, i + 1);
    if caller && placeholder_at(text, i) {
        return Ok((TokenKind::Parameter, placeholder_end(text, i)));
    }
    let operator = |len: usize| Ok((TokenKind::Operator, i + len));
    match b {
        b'[' => Ok((
            TokenKind::QuotedIdent,
            delimited(bytes, i, b']', "a `[` identifier")?,
        )),
        b'N' | b'n' if next == b'\'' => Ok((
            TokenKind::String,
            string(Dialect::Mssql, bytes, i, i + 1, false)?,
        )),
        b'@' => Ok((TokenKind::Parameter, ident_end(true, bytes, i + 1))),
        _ if ident_start(true, b) => Ok((TokenKind::Word, ident_end(true, bytes, i + 1))),
        // A money constant.
        b'$' if next.is_ascii_digit() || (next == b'.' && at(bytes, i + 2).is_ascii_digit()) => {
            let mut j = i + 1;
            while at(bytes, j).is_ascii_digit() || at(bytes, j) == b'.' {
                j += 1;
            }
            Ok((TokenKind::Number, j))
        }
        // `$action`, `$IDENTITY`.
        b'$' if next.is_ascii_alphabetic() || next == b'_' => {
            Ok((TokenKind::Word, ident_end(true, bytes, i + 1)))
        }
        b':' if next == b':' => operator(2),
        b'!' if matches!(next, b'=' | b'<' | b'>') => operator(2),
        b'<' if matches!(next, b'=' | b'>') => operator(2),
        b'>' if next == b'=' => operator(2),
        b'|' if next == b'|' => operator(2),
        b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' if next == b'=' => operator(2),
        b'=' | b'<' | b'>' | b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' | b'~' => {
            operator(1)
        }
        _ => Ok(other(text, i)),
    }
}
