//! A total SQL lexer for T-SQL, PostgreSQL and SQLite text.
//!
//! It never fails: anything it does not recognise becomes a one-character
//! [`TokenKind::Other`] token, so a strange construct costs one statement at most, never
//! a file. Comments are returned separately (suppressions live in them). Lines that only
//! hold `GO` (optionally with a count) become [`TokenKind::BatchSeparator`]; SQLCMD lines
//! (`:setvar`, `:r`, ...) are skipped; `$(var)` and SSMS template placeholders
//! (`<name, type, value>`) become [`TokenKind::Placeholder`].

use std::ops::Range;

use crate::words::{STATEMENT_WORDS, WordSet};

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A bare word: keyword or identifier.
    Word,
    /// `[bracketed]`, `"quoted"` or `` `backticked` `` identifier.
    QuotedIdent,
    /// A string literal (`'...'`, `N'...'`, `E'...'`, `$tag$...$tag$`).
    String,
    /// A number.
    Number,
    /// A parameter or variable: `@x`, `@@ROWCOUNT`, `$1`, `?`, `?1`, `:name`.
    Parameter,
    /// `$(var)` or an SSMS template placeholder `<name, type, value>`.
    Placeholder,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `,`
    Comma,
    /// `;`
    Semicolon,
    /// `.`
    Dot,
    /// An operator such as `=`, `<>`, `<=`, `+`, `::`.
    Operator,
    /// A `GO` line.
    BatchSeparator,
    /// Anything else, one character.
    Other,
}

/// A token: its kind and byte range in the text.
///
/// The range is kept in 32 bits: a token is lexed for every few bytes of a file, and
/// half the size is half the memory written. [`lex`] reads at most the first 4 GiB of a
/// text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    start: u32,
    end: u32,
}

impl Token {
    /// A token of `kind` over `range`, which must end within 4 GiB.
    pub fn new(kind: TokenKind, range: Range<usize>) -> Token {
        Token {
            kind,
            start: u32::try_from(range.start).unwrap_or(u32::MAX),
            end: u32::try_from(range.end).unwrap_or(u32::MAX),
        }
    }

    /// [`Token::new`] for the lexer, whose texts end within 4 GiB
    /// ([`within_token_ranges`]).
    #[inline(always)]
    fn lexed(kind: TokenKind, range: Range<usize>) -> Token {
        debug_assert!(range.end <= u32::MAX as usize);
        Token {
            kind,
            start: range.start as u32,
            end: range.end as u32,
        }
    }

    /// Where it is, in bytes.
    #[inline]
    pub fn range(&self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// A comment: its byte range and whether it is a line (`--`) comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    /// Where it is, in bytes, including the `--` or `/* */`.
    pub range: Range<usize>,
    /// `--` comment (`true`) or block comment (`false`).
    pub line: bool,
}

/// Tokens and comments of a text.
#[derive(Debug, Clone, Default)]
pub struct Lexed {
    /// The tokens, in order.
    pub tokens: Vec<Token>,
    /// The comments, in order.
    pub comments: Vec<Comment>,
    /// The tokens the analysis looks for.
    pub(crate) marks: Marks,
}

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

/// Lexes `text`.
///
/// A dollar-quoted string right after `AS` or `DO` is a function body
/// (`CREATE FUNCTION ... AS $$ ... $$`, `DO $$ ... $$`): its contents are lexed as SQL,
/// between two [`TokenKind::Semicolon`] tokens standing for the delimiters, so the
/// statements inside are checked like any other.
///
/// Of a text longer than 4 GiB, only the first 4 GiB are lexed (a token's range is
/// 32 bits).
pub fn lex(text: &str) -> Lexed {
    let mut out = Lexed::default();
    lex_reusing(text, &mut out);
    out
}

/// Tokens the analysis looks for, noted while lexing so that it need not look at every
/// token again.
#[derive(Debug, Clone, Default)]
pub(crate) struct Marks {
    /// The indices of the bare words that are statement keywords (`UPDATE`, `DELETE`,
    /// `MERGE`, `INSERT`, `REPLACE`, `GRANT`, `TRUNCATE`), in order.
    pub(crate) statement_words: Vec<usize>,
    /// The indices of the tokens `EXEC`, `EXECUTE` and `sp_executesql` (quoted or not),
    /// in order.
    pub(crate) executing: Vec<usize>,
    /// The indices of the string tokens right after the bare word `AS` or `DO`, in order.
    pub(crate) bodies: Vec<usize>,
    /// The indices of the operators `=` and `+=`, which may assign executed SQL to a
    /// variable, in order.
    pub(crate) assignments: Vec<usize>,
}

impl Marks {
    /// Notes `token`, about to be pushed at index `index`; `raw` is its text and
    /// `previous` the token before it, with its text.
    #[inline(always)]
    fn note(&mut self, index: usize, token: &Token, raw: &[u8], previous: Option<(&Token, &[u8])>) {
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

/// [`lex`] into buffers already allocated: `out` is cleared first.
pub fn lex_reusing(text: &str, out: &mut Lexed) {
    let text = within_token_ranges(text);
    out.tokens.clear();
    out.comments.clear();
    let mut marks = std::mem::take(&mut out.marks);
    marks.statement_words.clear();
    marks.executing.clear();
    marks.bodies.clear();
    marks.assignments.clear();
    // About one token in six bytes of SQL: one allocation, not a dozen doublings. A
    // buffer too small is replaced, not grown: growing would copy its old capacity.
    let expected = text.len() / 6;
    if out.tokens.capacity() < expected {
        out.tokens = Vec::with_capacity(expected);
    }
    lex_into(text, 0, 0, out, &mut marks);
    out.marks = marks;
}

/// The part of `text` whose offsets a token's 32-bit range can hold.
fn within_token_ranges(text: &str) -> &str {
    let mut end = text.len().min(u32::MAX as usize);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

const MAX_BODY_NESTING: usize = 4;

/// Lexes `text`, found at byte `base` of the outermost text, appending its tokens and
/// comments to `out` with ranges in the outermost text.
fn lex_into(text: &str, base: usize, nesting: usize, out: &mut Lexed, marks: &mut Marks) {
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
            if b.is_ascii_whitespace() {
                i += 1;
                continue;
            }
        }
        let at_line_start = line_start;
        line_start = false;
        let start = i;
        // GO batch separators and SQLCMD commands only at the start of a line.
        if at_line_start {
            if let Some(end) = go_line(bytes, i) {
                out.tokens.push(Token::lexed(
                    TokenKind::BatchSeparator,
                    base + i..base + end,
                ));
                statement_start = out.tokens.len();
                i = end;
                continue;
            }
            if b == b':' && bytes.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic()) {
                i = memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |n| i + n);
                continue;
            }
            // A psql meta-command (`\set`, `\c db`, a stray `\.`): not SQL.
            if b == b'\\' {
                i = memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |n| i + n);
                continue;
            }
        }
        // The common case first: a word that is not a prefixed string (`N'...'`).
        if (b.is_ascii_alphabetic() || b == b'_')
            && !(bytes.get(i + 1) == Some(&b'\'')
                && matches!(
                    b,
                    b'N' | b'n' | b'E' | b'e' | b'X' | b'x' | b'B' | b'b' | b'U' | b'u'
                ))
        {
            i = ident_end(text, i + 1);
            let token = Token::lexed(TokenKind::Word, base + start..base + i);
            marks.note(out.tokens.len(), &token, &bytes[start..i], None);
            out.tokens.push(token);
            continue;
        }
        if b == b';' {
            let copy = copy_from_stdin(text, base, &out.tokens[statement_start..]);
            out.tokens
                .push(Token::lexed(TokenKind::Semicolon, base + i..base + i + 1));
            statement_start = out.tokens.len();
            // The `;` ending `COPY ... FROM stdin`: the data follows on the next line, up
            // to a line holding only `\.` (psql and pg_dump's layout). It is data, not SQL:
            // a `'`, `"` or `[` in it must not open a quoted run that swallows what
            // follows.
            if copy {
                i = copy_data_end(bytes, i + 1);
                line_start = true;
            } else {
                i += 1;
            }
            continue;
        }
        let kind = match b {
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                let end = memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |n| i + n);
                out.comments.push(Comment {
                    range: base + i..base + end,
                    line: true,
                });
                i = end;
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = block_comment_end(bytes, i + 2);
                out.comments.push(Comment {
                    range: base + i..base + end,
                    line: false,
                });
                i = end;
                continue;
            }
            b'\'' => {
                i = quoted_end(bytes, i + 1, b'\'');
                TokenKind::String
            }
            b'N' | b'n' | b'E' | b'e' | b'X' | b'x' | b'B' | b'b' | b'U' | b'u'
                if bytes.get(i + 1) == Some(&b'\'') =>
            {
                let escapes = matches!(b, b'E' | b'e');
                i = if escapes {
                    backslash_quoted_end(bytes, i + 2)
                } else {
                    quoted_end(bytes, i + 2, b'\'')
                };
                TokenKind::String
            }
            b'"' => {
                i = quoted_end(bytes, i + 1, b'"');
                TokenKind::QuotedIdent
            }
            b'`' => {
                i = quoted_end(bytes, i + 1, b'`');
                TokenKind::QuotedIdent
            }
            b'[' => {
                i = quoted_end(bytes, i + 1, b']');
                TokenKind::QuotedIdent
            }
            b'$' => {
                if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                    TokenKind::Parameter
                } else if bytes.get(i + 1) == Some(&b'(') {
                    i = memchr::memchr(b')', &bytes[i..]).map_or(bytes.len(), |n| i + n + 1);
                    TokenKind::Placeholder
                } else if let Some(end) = dollar_quoted_end(text, i) {
                    let body_follows = out.tokens.last().is_some_and(|t| {
                        t.kind == TokenKind::Word && {
                            let word = &text[t.range().start - base..t.range().end - base];
                            word.eq_ignore_ascii_case("AS") || word.eq_ignore_ascii_case("DO")
                        }
                    });
                    if body_follows && nesting < MAX_BODY_NESTING {
                        let tag_len = text[i + 1..].find('$').map_or(1, |n| n + 2);
                        let body_start = i + tag_len;
                        let body_end = if end - body_start >= tag_len
                            && text[..end].ends_with(&text[i..body_start])
                        {
                            end - tag_len
                        } else {
                            end
                        };
                        out.tokens.push(Token::lexed(
                            TokenKind::Semicolon,
                            base + i..base + body_start,
                        ));
                        let before = out.tokens.len();
                        lex_into(
                            &text[body_start..body_end],
                            base + body_start,
                            nesting + 1,
                            out,
                            marks,
                        );
                        statement_start = before
                            + out.tokens[before..]
                                .iter()
                                .rposition(|t| {
                                    matches!(
                                        t.kind,
                                        TokenKind::Semicolon | TokenKind::BatchSeparator
                                    )
                                })
                                .map_or(0, |p| p + 1);
                        if body_end < end {
                            out.tokens.push(Token::lexed(
                                TokenKind::Semicolon,
                                base + body_end..base + end,
                            ));
                            statement_start = out.tokens.len();
                        }
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
            // PostgreSQL JSON and array operators: `->`, `->>`, `#>`, `#>>`, `#-`, `@>`, `<@`.
            b'-' if bytes.get(i + 1) == Some(&b'>') => {
                i += if bytes.get(i + 2) == Some(&b'>') {
                    3
                } else {
                    2
                };
                TokenKind::Operator
            }
            b'#' if matches!(bytes.get(i + 1), Some(b'>') | Some(b'-')) => {
                i += if bytes.get(i + 1) == Some(&b'>') && bytes.get(i + 2) == Some(&b'>') {
                    3
                } else {
                    2
                };
                TokenKind::Operator
            }
            b'@' if bytes.get(i + 1) == Some(&b'>') => {
                i += 2;
                TokenKind::Operator
            }
            b'<' if bytes.get(i + 1) == Some(&b'@') => {
                i += 2;
                TokenKind::Operator
            }
            b'@' => {
                i += 1;
                if bytes.get(i) == Some(&b'@') {
                    i += 1;
                }
                i = ident_end(text, i);
                TokenKind::Parameter
            }
            b'?' => {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                TokenKind::Parameter
            }
            b':' if bytes.get(i + 1) == Some(&b':') => {
                i += 2;
                TokenKind::Operator
            }
            b':' if text[i + 1..].chars().next().is_some_and(is_ident_start) => {
                i = ident_end(text, i + 1);
                TokenKind::Parameter
            }
            b'<' if template_end(bytes, i).is_some() => {
                i = template_end(bytes, i).unwrap_or(i + 1);
                TokenKind::Placeholder
            }
            b'0'..=b'9' => {
                i = number_end(bytes, i);
                TokenKind::Number
            }
            b'.' if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i = number_end(bytes, i + 1);
                TokenKind::Number
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
            b'.' => {
                i += 1;
                TokenKind::Dot
            }
            b'<' | b'>' | b'=' | b'!' | b'+' | b'-' | b'*' | b'/' | b'%' | b'|' | b'&' | b'^'
            | b'~' => {
                i += 1;
                while i < bytes.len()
                    && matches!(bytes[i], b'<' | b'>' | b'=' | b'|' | b'&')
                    && operator_continues(&bytes[start..i], bytes[i])
                {
                    i += 1;
                }
                TokenKind::Operator
            }
            b'#' => {
                i = ident_end(text, i + 1);
                TokenKind::Word
            }
            _ => {
                let c = text[i..].chars().next().unwrap_or('\0');
                if is_ident_start(c) {
                    i = ident_end(text, i);
                    TokenKind::Word
                } else {
                    i += c.len_utf8();
                    TokenKind::Other
                }
            }
        };
        let token = Token::lexed(kind, base + start..base + i);
        if matches!(
            kind,
            TokenKind::Word | TokenKind::QuotedIdent | TokenKind::String | TokenKind::Operator
        ) {
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
}

/// The end of a block comment whose body starts at `i`: comments nest.
fn block_comment_end(bytes: &[u8], mut i: usize) -> usize {
    let mut depth = 1;
    while depth > 0 {
        let Some(at) = memchr::memchr2(b'/', b'*', &bytes[i.min(bytes.len())..]) else {
            return bytes.len();
        };
        let j = i + at;
        if bytes[j] == b'/' && bytes.get(j + 1) == Some(&b'*') {
            depth += 1;
            i = j + 2;
        } else if bytes[j] == b'*' && bytes.get(j + 1) == Some(&b'/') {
            depth -= 1;
            i = j + 2;
        } else {
            i = j + 1;
        }
    }
    i
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

/// The end of COPY data starting after the `;` at `from - 1`: after the line that holds
/// only `\.`, or the end of the text.
fn copy_data_end(bytes: &[u8], from: usize) -> usize {
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

#[inline(always)]
fn ident_end(text: &str, mut i: usize) -> usize {
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

fn number_end(bytes: &[u8], mut i: usize) -> usize {
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

/// The end of a quoted run whose closing character is doubled to escape it.
fn quoted_end(bytes: &[u8], mut i: usize, close: u8) -> usize {
    while let Some(at) = memchr::memchr(close, &bytes[i.min(bytes.len())..]) {
        let j = i + at;
        if bytes.get(j + 1) == Some(&close) {
            i = j + 2;
            continue;
        }
        return j + 1;
    }
    bytes.len()
}

fn backslash_quoted_end(bytes: &[u8], mut i: usize) -> usize {
    while let Some(at) = memchr::memchr2(b'\\', b'\'', &bytes[i.min(bytes.len())..]) {
        let j = i + at;
        match bytes[j] {
            b'\\' => i = j + 2,
            _ if bytes.get(j + 1) == Some(&b'\'') => i = j + 2,
            _ => return j + 1,
        }
    }
    bytes.len()
}

fn dollar_quoted_end(text: &str, i: usize) -> Option<usize> {
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
fn go_line(bytes: &[u8], i: usize) -> Option<usize> {
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
    let trimmed: Vec<u8> = rest
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let starts_with_space = rest.first().is_none_or(|b| b.is_ascii_whitespace());
    (starts_with_space && trimmed.iter().all(u8::is_ascii_digit)).then_some(end)
}

/// An SSMS template placeholder `<name, type, value>` on one line: returns its end.
fn template_end(bytes: &[u8], i: usize) -> Option<usize> {
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

/// The value of a string literal token (`'...'`, `N'...'`, `E'...'`, `$tag$...$tag$`)
/// and, for each byte of the value and one past its end, the byte offset in `text` it
/// came from. Doubled quotes are unescaped; other escapes are kept as written.
pub fn string_value(text: &str, token: &Token) -> (String, Vec<usize>) {
    let raw = &text[token.range()];
    let base = token.range().start;
    let dollar = raw.starts_with('$');
    let (open, close) = if dollar {
        let tag = raw[1..].find('$').map_or(1, |n| n + 2);
        (tag, if raw.len() >= 2 * tag { tag } else { 0 })
    } else {
        let open = raw.find('\'').map_or(raw.len(), |n| n + 1);
        let close = usize::from(raw.len() > open && raw.ends_with('\''));
        (open, close)
    };
    let inner = raw
        .get(open..raw.len().saturating_sub(close).max(open))
        .unwrap_or("");
    let inner_base = base + open;
    let mut value = String::with_capacity(inner.len());
    let mut offsets = Vec::with_capacity(inner.len() + 1);
    let mut chars = inner.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c == '\'' && !dollar && chars.peek().is_some_and(|(_, n)| *n == '\'') {
            chars.next();
        }
        value.push(c);
        offsets.extend((0..c.len_utf8()).map(|i| inner_base + at + i));
    }
    offsets.push(inner_base + inner.len());
    (value, offsets)
}

/// Whether a token of `kind` whose text is `raw` executes SQL: `EXEC`, `EXECUTE`,
/// `sp_executesql`, or `sp_executesql` quoted (`[sp_executesql]`).
#[inline(always)]
pub(crate) fn executes(kind: TokenKind, raw: &[u8]) -> bool {
    // Lengths and first letters rule out nearly every token before a comparison.
    match (kind, raw.len(), raw.first().map(u8::to_ascii_lowercase)) {
        (TokenKind::Word, 4 | 7, Some(b'e')) => {
            raw.eq_ignore_ascii_case(b"EXEC") || raw.eq_ignore_ascii_case(b"EXECUTE")
        }
        (TokenKind::Word, 13, Some(b's')) => raw.eq_ignore_ascii_case(b"sp_executesql"),
        (TokenKind::QuotedIdent, 15, _) => {
            raw[1..14].eq_ignore_ascii_case(b"sp_executesql")
                && matches!(raw[14], b']' | b'"' | b'`')
        }
        _ => false,
    }
}

/// Whether `token` is a bare word in `words`.
#[inline(always)]
pub(crate) fn is_any_word(text: &str, token: &Token, words: &WordSet) -> bool {
    token.kind == TokenKind::Word && words.contains(&text.as_bytes()[token.range()])
}

/// Whether `token` is the bare word `word`, ignoring ASCII case.
#[inline]
pub fn is_word(text: &str, token: &Token, word: &str) -> bool {
    token.kind == TokenKind::Word
        && text.as_bytes()[token.range()].eq_ignore_ascii_case(word.as_bytes())
}

/// The identifier a token denotes: quotes and brackets removed; for a template
/// placeholder, its default value.
pub fn ident_text<'a>(text: &'a str, token: &Token) -> &'a str {
    let raw = &text[token.range()];
    match token.kind {
        TokenKind::QuotedIdent => {
            // The opening quote is ASCII; the closing one may be missing (end of input).
            let inner = &raw[1..];
            inner
                .strip_suffix([']', '"', '`'])
                .filter(|_| raw.len() >= 2)
                .unwrap_or(inner)
        }
        TokenKind::Placeholder if raw.starts_with('<') && raw.ends_with('>') => raw
            [1..raw.len() - 1]
            .rsplit(',')
            .next()
            .unwrap_or("")
            .trim(),
        _ => raw,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(TokenKind, &str)> {
        lex(text)
            .tokens
            .iter()
            .map(|t| (t.kind, &text[t.range()]))
            .collect()
    }

    #[test]
    fn lexes_dialect_features() {
        use TokenKind::*;
        assert_eq!(
            kinds(
                "UPDATE [dbo].[T] SET \"a\"=N'x''y' WHERE b<>@p AND c::int=$1 -- c\n/* x /* y */ */ go"
            ),
            vec![
                (Word, "UPDATE"),
                (QuotedIdent, "[dbo]"),
                (Dot, "."),
                (QuotedIdent, "[T]"),
                (Word, "SET"),
                (QuotedIdent, "\"a\""),
                (Operator, "="),
                (String, "N'x''y'"),
                (Word, "WHERE"),
                (Word, "b"),
                (Operator, "<>"),
                (Parameter, "@p"),
                (Word, "AND"),
                (Word, "c"),
                (Operator, "::"),
                (Word, "int"),
                (Operator, "="),
                (Parameter, "$1"),
                (Word, "go"),
            ]
        );
    }

    #[test]
    fn json_operators_are_operators() {
        use TokenKind::*;
        assert_eq!(
            kinds("a->'k' = $1 AND b->>'k' <> x AND c @> d AND e <@ f AND g #>> '{a}' AND @p = 1"),
            vec![
                (Word, "a"),
                (Operator, "->"),
                (String, "'k'"),
                (Operator, "="),
                (Parameter, "$1"),
                (Word, "AND"),
                (Word, "b"),
                (Operator, "->>"),
                (String, "'k'"),
                (Operator, "<>"),
                (Word, "x"),
                (Word, "AND"),
                (Word, "c"),
                (Operator, "@>"),
                (Word, "d"),
                (Word, "AND"),
                (Word, "e"),
                (Operator, "<@"),
                (Word, "f"),
                (Word, "AND"),
                (Word, "g"),
                (Operator, "#>>"),
                (String, "'{a}'"),
                (Word, "AND"),
                (Parameter, "@p"),
                (Operator, "="),
                (Number, "1"),
            ]
        );
    }

    #[test]
    fn go_lines_sqlcmd_and_templates() {
        use TokenKind::*;
        let text =
            ":setvar X 1\nselect 1\nGO 5\nupdate <tbl, sysname, Report> set x = $(X)\ngoto_x";
        assert_eq!(
            kinds(text),
            vec![
                (Word, "select"),
                (Number, "1"),
                (BatchSeparator, "GO 5"),
                (Word, "update"),
                (Placeholder, "<tbl, sysname, Report>"),
                (Word, "set"),
                (Word, "x"),
                (Operator, "="),
                (Placeholder, "$(X)"),
                (Word, "goto_x"),
            ]
        );
        let lexed = lex(text);
        assert_eq!(ident_text(text, &lexed.tokens[4]), "Report");
    }

    #[test]
    fn string_values_map_back() {
        let text = "EXEC sp_executesql N'UPDATE t SET a = ''x'' WHERE b = 1'";
        let lexed = lex(text);
        let token = lexed
            .tokens
            .iter()
            .find(|t| t.kind == TokenKind::String)
            .unwrap();
        let (value, offsets) = string_value(text, token);
        assert_eq!(value, "UPDATE t SET a = 'x' WHERE b = 1");
        let w = value.find("WHERE").unwrap();
        assert_eq!(&text[offsets[w]..offsets[w] + 5], "WHERE");
        for raw in ["'", "N'", "$a$", "$$x$$", "'abc", "'é''"] {
            let lexed = lex(raw);
            for t in &lexed.tokens {
                if t.kind == TokenKind::String {
                    let (value, offsets) = string_value(raw, t);
                    assert_eq!(offsets.len(), value.len() + 1);
                }
            }
        }
    }

    #[test]
    fn function_bodies_are_sql() {
        let text = "CREATE FUNCTION f() RETURNS void AS $body$ UPDATE t SET a = 'x' -- note\n $body$ LANGUAGE sql; SELECT $$UPDATE u$$";
        let lexed = lex(text);
        let words: Vec<&str> = lexed
            .tokens
            .iter()
            .filter(|t| t.kind == TokenKind::Word)
            .map(|t| &text[t.range()])
            .collect();
        assert!(
            words.contains(&"UPDATE") && words.contains(&"LANGUAGE"),
            "{words:?}"
        );
        assert_eq!(lexed.comments.len(), 1);
        assert_eq!(&text[lexed.comments[0].range.clone()], "-- note");
        assert_eq!(
            lexed
                .tokens
                .iter()
                .filter(|t| t.kind == TokenKind::String)
                .count(),
            2,
            "the `$$UPDATE u$$` literal stays a string"
        );
        let _ = lex("DO $a$ $b$ unterminated");
    }

    /// COPY data is skipped to its `\.` line: brackets, quotes and apostrophes in it open
    /// nothing, and the statement after it is lexed as SQL.
    #[test]
    fn copy_data_is_skipped_to_its_end_marker() {
        let text = "COPY public.t (a, b) FROM stdin;\n1\t[x\n2\t\"odd\n3\tit's\n\\.\nUPDATE t SET a = 1;\n";
        let words: Vec<&str> = kinds(text)
            .into_iter()
            .filter(|(k, _)| *k == TokenKind::Word)
            .map(|(_, w)| w)
            .collect();
        assert_eq!(
            words,
            [
                "COPY", "public", "t", "a", "b", "FROM", "stdin", "UPDATE", "t", "SET", "a"
            ]
        );
        // Meta-commands are not SQL; a COPY from a file has no inline data.
        let text = "\\set x 1\nCOPY t FROM '/tmp/f';\nUPDATE t SET a = 1;";
        assert!(kinds(text).contains(&(TokenKind::Word, "UPDATE")));
        assert_eq!(kinds(text)[0], (TokenKind::Word, "COPY"));
    }

    /// What the lexer notes is what a search of its tokens finds, for texts made of
    /// fragments that exercise every place a token is made (nested bodies, quoted names,
    /// COPY data, words that are not ASCII).
    #[test]
    fn marks_agree_with_the_tokens() {
        const FRAGMENTS: &[&str] = &[
            "UPDATE t SET a = 1; ",
            "exec sp_executesql N'DELETE u'; ",
            "EXECUTE [sp_executesql] @s; ",
            "\"sp_executesql\" ",
            "`sp_executesql` ",
            "CREATE FUNCTION f() AS $$ INSERT INTO t VALUES (1); EXEC x $$ LANGUAGE sql; ",
            "DO $a$ BEGIN EXECUTE 'MERGE t'; END $a$; ",
            "AS 'GRANT x' ",
            "do E'truncate t' ",
            "#t REPLACE é update ",
            "COPY t FROM stdin;\nupdate 'x' [ exec\n\\.\n",
            "-- EXEC\n/* update */ ",
            "as ",
            "'s' ",
        ];
        let mut seed = 7u32;
        for _ in 0..300 {
            let mut text = String::new();
            for _ in 0..6 {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                text.push_str(FRAGMENTS[(seed >> 16) as usize % FRAGMENTS.len()]);
            }
            let lexed = lex(&text);
            let tokens = &lexed.tokens;
            let raw = |t: &Token| text[t.range()].as_bytes();
            let statement_words: Vec<usize> = (0..tokens.len())
                .filter(|&i| {
                    tokens[i].kind == TokenKind::Word && STATEMENT_WORDS.contains(raw(&tokens[i]))
                })
                .collect();
            let bodies: Vec<usize> = (1..tokens.len())
                .filter(|&i| {
                    let previous = &tokens[i - 1];
                    tokens[i].kind == TokenKind::String
                        && previous.kind == TokenKind::Word
                        && (raw(previous).eq_ignore_ascii_case(b"AS")
                            || raw(previous).eq_ignore_ascii_case(b"DO"))
                })
                .collect();
            let marks = &lexed.marks;
            assert_eq!(marks.statement_words, statement_words, "{text}");
            assert_eq!(marks.bodies, bodies, "{text}");
            let executing: Vec<usize> = (0..tokens.len())
                .filter(|&i| executes(tokens[i].kind, raw(&tokens[i])))
                .collect();
            assert_eq!(marks.executing, executing, "{text}");
        }
    }

    #[test]
    fn unterminated_things_do_not_panic() {
        for text in [
            "'abc",
            "[abc",
            "/* abc",
            "$tag$ abc",
            "E'\\",
            "\"x",
            "<a, b",
            "é",
            "$",
            "@",
        ] {
            let _ = lex(text);
        }
    }

    #[test]
    fn executing_tokens() {
        for (kind, raw, expected) in [
            (TokenKind::Word, "EXEC", true),
            (TokenKind::Word, "execute", true),
            (TokenKind::Word, "Sp_ExecuteSql", true),
            (TokenKind::QuotedIdent, "[sp_executesql]", true),
            (TokenKind::QuotedIdent, "\"sp_executesql\"", true),
            (TokenKind::QuotedIdent, "[sp_executesqlx", false),
            (TokenKind::QuotedIdent, "[EXEC]", false),
            (TokenKind::Word, "EXECUTES", false),
            (TokenKind::Word, "exe", false),
            (TokenKind::String, "'EXEC'", false),
            (TokenKind::Parameter, "@EXEC", false),
        ] {
            assert_eq!(executes(kind, raw.as_bytes()), expected, "{raw}");
        }
    }
}
