//! The scanning loop, one for every reading: what all of them split alike (spaces,
//! words, comments, quotes, parentheses, numbers) is read here, each reading's own
//! tokens by its module. It is compiled once per [`Mode`], so a reading's rules cost no
//! test per byte.

use super::marks::Marks;
use super::mode::Mode;
use super::{Comment, Lexed, Token, TokenKind};
use super::{mssql, postgres, quoted, server, sqlite, tolerant};
use crate::{Dialect, SqlError};

/// How deep function bodies in dollar quotes are lexed as SQL inside each other.
const MAX_BODY_NESTING: usize = 4;

/// Whether `b`, at most a space, is whitespace to the reading.
#[inline(always)]
fn is_space<M: Mode>(b: u8) -> bool {
    if M::TOLERANT {
        b.is_ascii_whitespace()
    } else if M::SQLITE {
        matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c)
    } else {
        matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c | 0x0b)
    }
}

/// Whether a prefixed string or name (`N'...'`, `U&"..."`) starts at the letter at `i`.
#[inline(always)]
fn prefixed<M: Mode>(bytes: &[u8], i: usize) -> bool {
    match M::DIALECT {
        None => tolerant::prefixed(bytes, i),
        Some(Dialect::Postgres) => postgres::prefixed(bytes, i),
        Some(Dialect::Sqlite) => sqlite::prefixed(bytes, i),
        Some(Dialect::Mssql) => mssql::prefixed(bytes, i),
    }
}

/// The end of the bare name whose rest starts at `i`.
#[inline(always)]
fn word_end<M: Mode>(text: &str, i: usize) -> usize {
    if M::TOLERANT {
        tolerant::ident_end(text, i)
    } else {
        server::ident_end(M::MSSQL, text.as_bytes(), i)
    }
}

/// The token at `i` that the loop leaves to the reading: a database's own tokens, or
/// the tolerant reading's word that starts with a non-ASCII letter or character with
/// no meaning.
#[inline(always)]
fn own_token<M: Mode>(text: &str, i: usize) -> Result<(TokenKind, usize), SqlError> {
    match M::DIALECT {
        Some(Dialect::Postgres) => postgres::token(text, i, M::CALLER),
        Some(Dialect::Sqlite) => sqlite::token(text, i, M::CALLER),
        Some(Dialect::Mssql) => mssql::token(text, i, M::CALLER),
        None => Ok(tolerant::other(text, i)),
    }
}

/// Lexes `text`, found at byte `base` of the outermost text, appending its tokens and
/// comments to `out` with ranges in the outermost text, and noting in `marks` what the
/// tolerant reading notes. Only a database's reading fails, where its server would.
pub(super) fn scan<M: Mode>(
    text: &str,
    base: usize,
    nesting: usize,
    out: &mut Lexed,
    marks: &mut Marks,
) -> Result<(), Box<SqlError>> {
    let bytes = text.as_bytes();
    // The index in `out.tokens` of the first token of the current statement: after the
    // last `;` or `GO` (for `COPY ... FROM stdin`).
    let mut statement_start = out.tokens.len();
    let mut i = 0;
    let mut line_start = true;
    while i < bytes.len() {
        let b = bytes[i];
        // Whitespace is at most a space; most bytes are not.
        if b <= b' ' {
            if b == b'\n' {
                line_start = true;
                i += 1;
                continue;
            }
            if is_space::<M>(b) {
                i += 1;
                continue;
            }
        }
        let at_line_start = line_start;
        line_start = false;
        let start = i;
        // GO batch separators, SQLCMD and psql commands: only at the start of a line.
        if M::TOLERANT && at_line_start {
            if let Some(end) = tolerant::go_line(bytes, i) {
                out.tokens.push(Token::lexed(
                    TokenKind::BatchSeparator,
                    base + i..base + end,
                ));
                statement_start = out.tokens.len();
                i = end;
                continue;
            }
            // SQLCMD (`:setvar`, `:r`), a psql meta-command (`\set`, `\c db`, a stray
            // `\.`): not SQL.
            if (b == b':' && bytes.get(i + 1).is_some_and(u8::is_ascii_alphabetic)) || b == b'\\' {
                i = tolerant::line_end(bytes, i);
                continue;
            }
        }
        // The common case first: a word that is not a prefixed string (`N'...'`).
        if (b.is_ascii_alphabetic() || b == b'_') && !prefixed::<M>(bytes, i) {
            i = word_end::<M>(text, i + 1);
            let token = Token::lexed(TokenKind::Word, base + start..base + i);
            if M::TOLERANT {
                marks.note(out.tokens.len(), &token, &bytes[start..i], None);
            }
            out.tokens.push(token);
            continue;
        }
        if b == b';' {
            let copy = M::TOLERANT && copy_from_stdin(text, base, &out.tokens[statement_start..]);
            out.tokens
                .push(Token::lexed(TokenKind::Semicolon, base + i..base + i + 1));
            statement_start = out.tokens.len();
            // The `;` ending `COPY ... FROM stdin`: the data follows on the next line, up
            // to a line holding only `\.` (psql and pg_dump's layout). It is data, not SQL:
            // a `'`, `"` or `[` in it must not open a quoted run that swallows what
            // follows.
            if copy {
                i = tolerant::copy_data_end(bytes, i + 1);
                line_start = true;
            } else {
                i += 1;
            }
            continue;
        }
        let kind = match b {
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                // PostgreSQL and SQL Server end a line comment at a carriage return too.
                let end = quoted::line_comment_end(bytes, i, M::POSTGRES || M::MSSQL);
                out.comments.push(Comment {
                    range: base + i..base + end,
                    line: true,
                });
                i = end;
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                // SQLite does not nest block comments, and lets an open one run to the
                // end; PostgreSQL and SQL Server nest them and refuse an open one.
                let end = match quoted::block_comment_end(bytes, i + 2, !M::SQLITE) {
                    Some(end) => end,
                    None => match M::DIALECT {
                        Some(d) if d != Dialect::Sqlite => {
                            return Err(Box::new(server::unterminated_comment(d, i, bytes.len())));
                        }
                        _ => bytes.len(),
                    },
                };
                out.comments.push(Comment {
                    range: base + i..base + end,
                    line: false,
                });
                i = end;
                continue;
            }
            b'\'' => {
                i = match M::DIALECT {
                    None => quoted::doubled(bytes, i + 1, b'\'').unwrap_or(bytes.len()),
                    Some(d) => server::string(d, bytes, i, i, false)?,
                };
                TokenKind::String
            }
            b'"' => {
                i = if M::TOLERANT {
                    quoted::doubled(bytes, i + 1, b'"').unwrap_or(bytes.len())
                } else {
                    server::delimited(bytes, i, b'"', "a quoted identifier")?
                };
                TokenKind::QuotedIdent
            }
            b'(' => {
                i += 1;
                TokenKind::LParen
            }
            b')' => {
                i += 1;
                TokenKind::RParen
            }
            b',' => {
                i += 1;
                TokenKind::Comma
            }
            b'.' if !bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i += 1;
                TokenKind::Dot
            }
            b'0'..=b'9' | b'.' => {
                i = match M::DIALECT {
                    None => tolerant::number_end(bytes, i),
                    Some(d) => server::number(d, text, i)?,
                };
                TokenKind::Number
            }
            b'$' if M::TOLERANT => {
                if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                    TokenKind::Parameter
                } else if bytes.get(i + 1) == Some(&b'(') {
                    i = memchr::memchr(b')', &bytes[i..]).map_or(bytes.len(), |n| i + n + 1);
                    TokenKind::Placeholder
                } else if let Some(end) = tolerant::dollar_quoted_end(text, i) {
                    let body_follows = out.tokens.last().is_some_and(|t| {
                        t.kind == TokenKind::Word && {
                            let word = &text[t.range().start - base..t.range().end - base];
                            word.eq_ignore_ascii_case("AS") || word.eq_ignore_ascii_case("DO")
                        }
                    });
                    if body_follows && nesting < MAX_BODY_NESTING {
                        statement_start = body::<M>(text, base, nesting, i, end, out, marks)?;
                        i = end;
                        continue;
                    }
                    i = end;
                    TokenKind::String
                } else {
                    i += 1;
                    TokenKind::Other
                }
            }
            // The tolerant reading's own tokens are split here rather than in a function
            // of their own: one dispatch per token on the lint's path, which lexes every
            // file it analyses.
            b'N' | b'n' | b'X' | b'x' | b'B' | b'b' | b'U' | b'u'
                if M::TOLERANT && bytes.get(i + 1) == Some(&b'\'') =>
            {
                i = quoted::doubled(bytes, i + 2, b'\'').unwrap_or(bytes.len());
                TokenKind::String
            }
            b'U' | b'u' if M::TOLERANT && tolerant::unicode_name(bytes, i) => {
                i = quoted::doubled(bytes, i + 3, b'"').unwrap_or(bytes.len());
                TokenKind::QuotedIdent
            }
            b'E' | b'e' if M::TOLERANT && bytes.get(i + 1) == Some(&b'\'') => {
                i = quoted::backslashed(bytes, i + 2).unwrap_or(bytes.len());
                TokenKind::String
            }
            b'`' if M::TOLERANT => {
                i = quoted::doubled(bytes, i + 1, b'`').unwrap_or(bytes.len());
                TokenKind::QuotedIdent
            }
            b'[' if M::TOLERANT => {
                i = quoted::doubled(bytes, i + 1, b']').unwrap_or(bytes.len());
                TokenKind::QuotedIdent
            }
            // PostgreSQL JSON and array operators: `->`, `->>`, `#>`, `#>>`, `#-`, `@>`, `<@`.
            b'-' if M::TOLERANT && bytes.get(i + 1) == Some(&b'>') => {
                i += if bytes.get(i + 2) == Some(&b'>') {
                    3
                } else {
                    2
                };
                TokenKind::Operator
            }
            b'#' if M::TOLERANT && matches!(bytes.get(i + 1), Some(b'>' | b'-')) => {
                i += if bytes.get(i + 1) == Some(&b'>') && bytes.get(i + 2) == Some(&b'>') {
                    3
                } else {
                    2
                };
                TokenKind::Operator
            }
            b'@' if M::TOLERANT && bytes.get(i + 1) == Some(&b'>') => {
                i += 2;
                TokenKind::Operator
            }
            b'<' if M::TOLERANT && bytes.get(i + 1) == Some(&b'@') => {
                i += 2;
                TokenKind::Operator
            }
            b'@' if M::TOLERANT => {
                i += 1;
                if bytes.get(i) == Some(&b'@') {
                    i += 1;
                }
                i = tolerant::ident_end(text, i);
                TokenKind::Parameter
            }
            b'?' if M::TOLERANT => {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                TokenKind::Parameter
            }
            b':' if M::TOLERANT && bytes.get(i + 1) == Some(&b':') => {
                i += 2;
                TokenKind::Operator
            }
            b':' if M::TOLERANT && tolerant::parameter_follows(text, i + 1) => {
                i = tolerant::ident_end(text, i + 1);
                TokenKind::Parameter
            }
            b'<' if M::TOLERANT && tolerant::template_end(bytes, i).is_some() => {
                i = tolerant::template_end(bytes, i).unwrap_or(i + 1);
                TokenKind::Placeholder
            }
            b'<' | b'>' | b'=' | b'!' | b'+' | b'-' | b'*' | b'/' | b'%' | b'|' | b'&' | b'^'
            | b'~'
                if M::TOLERANT =>
            {
                i = tolerant::operator_end(bytes, i);
                TokenKind::Operator
            }
            b'#' if M::TOLERANT => {
                i = tolerant::ident_end(text, i + 1);
                TokenKind::Word
            }
            _ => {
                let (kind, end) = own_token::<M>(text, i)?;
                i = end;
                kind
            }
        };
        let token = Token::lexed(kind, base + start..base + i);
        if M::TOLERANT
            && matches!(
                kind,
                TokenKind::Word | TokenKind::QuotedIdent | TokenKind::String | TokenKind::Operator
            )
        {
            // The previous token is of this text: a nested body ends with a delimiter.
            let previous = out.tokens.last().map(|t| {
                let raw = bytes
                    .get(t.range().start.wrapping_sub(base)..t.range().end.wrapping_sub(base))
                    .unwrap_or_default();
                (t, raw)
            });
            marks.note(out.tokens.len(), &token, &bytes[start..i], previous);
        }
        out.tokens.push(token);
    }
    Ok(())
}

/// A function body in the dollar quote from `i` to `end` (`AS $$ ... $$`, `DO $$ ... $$`):
/// its contents lexed as SQL between two [`TokenKind::Semicolon`] tokens standing for
/// the delimiters. Returns where the next statement's tokens start. Kept out of the
/// loop, which it would otherwise crowd: bodies are rare.
#[inline(never)]
fn body<M: Mode>(
    text: &str,
    base: usize,
    nesting: usize,
    i: usize,
    end: usize,
    out: &mut Lexed,
    marks: &mut Marks,
) -> Result<usize, Box<SqlError>> {
    let tag_len = text[i + 1..].find('$').map_or(1, |n| n + 2);
    let body_start = i + tag_len;
    let body_end = if end - body_start >= tag_len && text[..end].ends_with(&text[i..body_start]) {
        end - tag_len
    } else {
        end
    };
    out.tokens.push(Token::lexed(
        TokenKind::Semicolon,
        base + i..base + body_start,
    ));
    let before = out.tokens.len();
    scan::<M>(
        &text[body_start..body_end],
        base + body_start,
        nesting + 1,
        out,
        marks,
    )?;
    let mut statement_start = before
        + out.tokens[before..]
            .iter()
            .rposition(|t| matches!(t.kind, TokenKind::Semicolon | TokenKind::BatchSeparator))
            .map_or(0, |p| p + 1);
    if body_end < end {
        out.tokens.push(Token::lexed(
            TokenKind::Semicolon,
            base + body_end..base + end,
        ));
        statement_start = out.tokens.len();
    }
    Ok(statement_start)
}

/// Whether the tokens of a statement (ranges offset by `base` from `text`) make `COPY
/// ... FROM STDIN`.
fn copy_from_stdin(text: &str, base: usize, statement: &[Token]) -> bool {
    let word = |t: &Token, w: &str| {
        t.kind == TokenKind::Word
            && text[t.range().start - base..t.range().end - base].eq_ignore_ascii_case(w)
    };
    statement.first().is_some_and(|t| word(t, "COPY"))
        && statement
            .windows(2)
            .any(|pair| word(&pair[0], "FROM") && word(&pair[1], "STDIN"))
}
