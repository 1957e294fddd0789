//! The tolerant reading's own rules: every database's quotes, parameters and operators
//! at once, and what clients and tools add to SQL files (`GO` lines, templates, `COPY`
//! data). Nothing here fails: an open quote runs to the end of the text, and a
//! character with no meaning is a one-character [`TokenKind::Other`].

use super::TokenKind;

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '#'
}

fn is_ident_continue(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$' || c == '#'
}

/// ASCII bytes that continue an identifier: letters, digits, `_`, `$`, `#`.
static IDENT_CONTINUE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b'#';
        b += 1;
    }
    table
};

/// Whether a prefixed string (`N'...'`, `E'...'`, `X'...'`, `B'...'`, `U'...'`) or
/// PostgreSQL's Unicode-escaped name (`U&"..."`) starts at `i`, a letter.
#[inline(always)]
pub(super) fn prefixed(bytes: &[u8], i: usize) -> bool {
    // Asked at every word: `'` and `&` differ in their last bit only, so one test rules
    // out nearly every word.
    match bytes.get(i + 1) {
        Some(&next) if next | 1 == b'\'' => {
            if next == b'\'' {
                matches!(
                    bytes[i],
                    b'N' | b'n' | b'E' | b'e' | b'X' | b'x' | b'B' | b'b' | b'U' | b'u'
                )
            } else {
                unicode_name(bytes, i)
            }
        }
        _ => false,
    }
}

/// Whether PostgreSQL's Unicode-escaped name `U&"..."` starts at `i`: one name, which
/// must not be read as a table `U` (the other databases read `U & "..."`, never a name).
#[inline(always)]
pub(super) fn unicode_name(bytes: &[u8], i: usize) -> bool {
    matches!(bytes[i], b'U' | b'u')
        && bytes.get(i + 1) == Some(&b'&')
        && bytes.get(i + 2) == Some(&b'"')
}

/// The end of the identifier whose rest starts at `i`.
#[inline(always)]
pub(super) fn ident_end(text: &str, mut i: usize) -> usize {
    // ASCII, the usual case, byte by byte; anything else by characters.
    let bytes = text.as_bytes();
    while i < bytes.len() && IDENT_CONTINUE[usize::from(bytes[i])] {
        i += 1;
    }
    if i == bytes.len() || bytes[i].is_ascii() {
        return i;
    }
    ident_end_unicode(text, i)
}

#[cold]
fn ident_end_unicode(text: &str, mut i: usize) -> usize {
    for c in text[i..].chars() {
        if is_ident_continue(c) {
            i += c.len_utf8();
        } else {
            break;
        }
    }
    i
}

/// The end of the number starting at `i`: digits, letters, `.` and `_` run together
/// (`1e-5`, `0x1F`, `1.5`, `1x`), one token whatever a database makes of it.
pub(super) fn number_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len()
        && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.' || bytes[i] == b'_')
    {
        if matches!(bytes[i], b'e' | b'E') && matches!(bytes.get(i + 1), Some(b'+' | b'-')) {
            i += 1;
        }
        i += 1;
    }
    i
}

/// Whether a `:name` parameter's name starts at `i`.
#[inline(always)]
pub(super) fn parameter_follows(text: &str, i: usize) -> bool {
    text[i..].chars().next().is_some_and(is_ident_start)
}

/// The end of the operator starting at `i`: one character, or two that make one
/// operator in some database (`<=`, `<>`, `!=`, `||`, `+=`, `==`, `!<`...).
#[inline(always)]
pub(super) fn operator_end(bytes: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < bytes.len()
        && matches!(bytes[j], b'<' | b'>' | b'=' | b'|' | b'&')
        && operator_continues(&bytes[i..j], bytes[j])
    {
        j += 1;
    }
    j
}

/// The token at `i` that no other rule takes: a word that starts with a non-ASCII
/// letter, or a one-character [`TokenKind::Other`].
#[inline(always)]
pub(super) fn other(text: &str, i: usize) -> (TokenKind, usize) {
    let c = text[i..].chars().next().unwrap_or('\0');
    if is_ident_start(c) {
        (TokenKind::Word, ident_end(text, i))
    } else {
        (TokenKind::Other, i + c.len_utf8())
    }
}

fn operator_continues(so_far: &[u8], next: u8) -> bool {
    matches!(
        (so_far, next),
        (b"<", b'=')
            | (b"<", b'>')
            | (b">", b'=')
            | (b"!", b'=')
            | (b"|", b'|')
            | (b"<", b'<')
            | (b">", b'>')
            | (b"+", b'=')
            | (b"-", b'=')
            | (b"*", b'=')
            | (b"/", b'=')
            | (b"=", b'=')
            | (b"!", b'<')
            | (b"!", b'>')
    )
}

/// The end of a dollar-quoted string starting at the `$` at `i` (`$$...$$`,
/// `$tag$...$tag$`, the tag ASCII letters, digits and `_`): `None` when no tag starts
/// there; an open one runs to the end of the text.
#[inline]
pub(super) fn dollar_quoted_end(text: &str, i: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut j = i + 1;
    while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
        j += 1;
    }
    if bytes.get(j) != Some(&b'$') {
        return None;
    }
    let tag = &text[i..=j];
    let body = j + 1;
    Some(
        text[body..]
            .find(tag)
            .map_or(text.len(), |n| body + n + tag.len()),
    )
}

/// A `GO` or `GO n` line starting at `i`: returns the end of the line.
#[inline(always)]
pub(super) fn go_line(bytes: &[u8], i: usize) -> Option<usize> {
    // Every line's first token is tested: the two letters first.
    if !(bytes.get(i).is_some_and(|b| b.eq_ignore_ascii_case(&b'g'))
        && bytes
            .get(i + 1)
            .is_some_and(|b| b.eq_ignore_ascii_case(&b'o')))
    {
        return None;
    }
    let end = memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |n| i + n);
    let rest = &bytes[i + 2..end];
    let rest = match rest.iter().position(|b| *b == b'-') {
        Some(p) if rest.get(p + 1) == Some(&b'-') => &rest[..p],
        _ => rest,
    };
    let starts_with_space = rest.first().is_none_or(|b| b.is_ascii_whitespace());
    (starts_with_space
        && rest
            .iter()
            .all(|b| b.is_ascii_whitespace() || b.is_ascii_digit()))
    .then_some(end)
}

/// An SSMS template placeholder `<name, type, value>` on one line: returns its end.
pub(super) fn template_end(bytes: &[u8], i: usize) -> Option<usize> {
    let line_end = memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |n| i + n);
    let close = i + memchr::memchr(b'>', &bytes[i..line_end])?;
    let inner = &bytes[i + 1..close];
    let commas = inner.iter().filter(|b| **b == b',').count();
    let first = inner.first()?;
    (commas == 2
        && (first.is_ascii_alphabetic() || *first == b'_')
        && !inner.contains(&b'<')
        && !inner.contains(&b'\''))
    .then_some(close + 1)
}

/// The end of the line starting at `i` (a SQLCMD command, a psql meta-command): not SQL.
pub(super) fn line_end(bytes: &[u8], i: usize) -> usize {
    memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |n| i + n)
}

/// The end of COPY data starting after the `;` at `from - 1`: after the line that holds
/// only `\.`, or the end of the text.
pub(super) fn copy_data_end(bytes: &[u8], from: usize) -> usize {
    // The data starts on the line after the command.
    let Some(newline) = memchr::memchr(b'\n', &bytes[from..]) else {
        return bytes.len();
    };
    let mut line = from + newline + 1;
    while line < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[line..]).map_or(bytes.len(), |n| line + n);
        let row = &bytes[line..end];
        let row = row.strip_suffix(b"\r").unwrap_or(row);
        if row == b"\\." {
            return end;
        }
        line = end + 1;
    }
    bytes.len()
}
