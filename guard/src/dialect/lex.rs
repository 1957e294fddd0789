//! One SQL lexer per dialect, following each database's own tokenizer for the
//! constructs that decide where a token ends: quotes of every form, comments (nested or
//! not), parameters, dollar quotes and operator runs.
//!
//! Two checks are built on it. [`portable_problems`] accepts a caller's text for
//! `#[fenced_write]` only if it lies in a small subset that all three databases split
//! into the same tokens; [`check_fenced`] re-reads a final statement with its
//! database's lexer and verifies that the fence is a conjunct of the top-level `WHERE`.
//! Both live here, in the guard, because the guard runs the second at run time (every
//! [`FencedSql`](super::FencedSql) is checked when it is made) and the macro, a
//! proc-macro crate that can export nothing but macros, calls both at compile time.
//!
//! References: PostgreSQL's `scan.l` and "Lexical Structure" (4.1), SQLite's
//! `tokenize.c` and "SQL Language Expressions", SQL Server's "Database identifiers",
//! "Constants" and "Comments" pages.

use std::ops::Range;

use super::Dialect;

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// A keyword or a bare identifier.
    Word,
    /// A quoted identifier: `"x"`, and in their dialects `[x]`, `` `x` ``, `U&"x"`.
    QuotedIdent,
    /// A string literal: `'x'`, and in their dialects `E'x'`, `N'x'`, `X'00'`,
    /// `B'01'`, `U&'x'`, `$tag$x$tag$`.
    String,
    /// A numeric literal (SQL Server's `$1.5` money included).
    Number,
    /// A parameter or variable: `$1`, `?`, `?1`, `:x`, `@x`, `$x`, `#x`, `@@x`.
    Parameter,
    /// An operator, as the database splits operator characters.
    Operator,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `,`
    Comma,
    /// `.`
    Dot,
    /// `;`
    Semicolon,
    /// A character the dialect gives no meaning to here (one character).
    Other,
}

/// A token: what it is and where, in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// Where it is.
    pub range: Range<usize>,
}

/// A text split into tokens; comments are kept apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lexed {
    /// The tokens, in order.
    pub tokens: Vec<Token>,
    /// The comments, in order, delimiters included.
    pub comments: Vec<Range<usize>>,
}

/// Something wrong with a text, at a byte range of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlProblem {
    /// Where.
    pub range: Range<usize>,
    /// What, and what to write instead.
    pub message: String,
}

fn problem(range: Range<usize>, message: impl Into<String>) -> SqlProblem {
    SqlProblem {
        range,
        message: message.into(),
    }
}

/// Splits `sql` as `dialect`'s server does.
///
/// # Errors
///
/// An unterminated string, quoted identifier, dollar quote or block comment, and
/// anything else the server itself would fail to split.
pub fn lex(dialect: Dialect, sql: &str) -> Result<Lexed, SqlProblem> {
    Lexer::new(dialect, sql, false).run()
}

/// Splits a caller's text as `dialect` would once the macro has replaced every `@name`
/// by that dialect's numbered parameter: `@name` is one [`TokenKind::Parameter`] in
/// every dialect.
///
/// # Errors
///
/// As [`lex`].
pub fn lex_caller(dialect: Dialect, sql: &str) -> Result<Lexed, SqlProblem> {
    Lexer::new(dialect, sql, true).run()
}

const DIALECTS: [Dialect; 3] = [Dialect::Postgres, Dialect::Sqlite, Dialect::Mssql];

fn name(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => "PostgreSQL",
        Dialect::Sqlite => "SQLite",
        Dialect::Mssql => "SQL Server",
    }
}

struct Lexer<'a> {
    dialect: Dialect,
    sql: &'a str,
    bytes: &'a [u8],
    macro_placeholders: bool,
    out: Lexed,
}

fn is_ascii_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

impl<'a> Lexer<'a> {
    /// Whether a macro placeholder `@name` starts at byte `at`: an `@`, in the macro's
    /// reading, before a letter (any, as in a Rust identifier) or `_`.
    fn placeholder_at(&self, at: usize) -> bool {
        self.macro_placeholders
            && self.bytes.get(at) == Some(&b'@')
            && self.sql[at + 1..]
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
    }

    fn new(dialect: Dialect, sql: &'a str, macro_placeholders: bool) -> Self {
        Lexer {
            dialect,
            sql,
            bytes: sql.as_bytes(),
            macro_placeholders,
            out: Lexed::default(),
        }
    }

    fn at(&self, i: usize) -> u8 {
        self.bytes.get(i).copied().unwrap_or(0)
    }

    fn ident_start(&self, i: usize) -> bool {
        let b = self.at(i);
        is_ascii_ident_start(b)
            || b >= 0x80
            || (self.dialect == Dialect::Mssql && b == b'#' && i < self.bytes.len())
    }

    fn ident_continue(&self, b: u8) -> bool {
        b.is_ascii_alphanumeric()
            || b == b'_'
            || b >= 0x80
            || b == b'$'
            || (self.dialect == Dialect::Mssql && matches!(b, b'#' | b'@'))
    }

    fn ident_end(&self, mut i: usize) -> usize {
        while i < self.bytes.len() && self.ident_continue(self.bytes[i]) {
            i += 1;
        }
        i
    }

    fn push(&mut self, kind: TokenKind, range: Range<usize>) -> usize {
        let end = range.end;
        self.out.tokens.push(Token { kind, range });
        end
    }

    fn is_space(&self, b: u8) -> bool {
        match self.dialect {
            Dialect::Postgres => matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c | 0x0b),
            Dialect::Sqlite => matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c),
            Dialect::Mssql => matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c | 0x0b),
        }
    }

    fn run(mut self) -> Result<Lexed, SqlProblem> {
        let mut i = 0;
        while i < self.bytes.len() {
            let b = self.bytes[i];
            if self.is_space(b) {
                i += 1;
                continue;
            }
            i = self.one(i)?;
        }
        Ok(self.out)
    }

    /// Lexes the token (or comment) at `i`; returns where it ends.
    fn one(&mut self, i: usize) -> Result<usize, SqlProblem> {
        let d = self.dialect;
        let b = self.bytes[i];
        let next = self.at(i + 1);
        match b {
            b'-' if next == b'-' => {
                // PostgreSQL and SQL Server end a line comment at CR or LF, SQLite at LF.
                let mut j = i + 2;
                while j < self.bytes.len()
                    && self.bytes[j] != b'\n'
                    && !(self.bytes[j] == b'\r' && d != Dialect::Sqlite)
                {
                    j += 1;
                }
                self.out.comments.push(i..j);
                return Ok(j);
            }
            b'/' if next == b'*' => return self.block_comment(i),
            b'\'' => return self.string(i, i, false),
            b'"' => return self.delimited(i, b'"', "a quoted identifier"),
            b'[' if d == Dialect::Sqlite => {
                // SQLite: `[` ... the first `]`, no escape.
                return match memchr(b']', &self.bytes[i + 1..]) {
                    Some(n) => Ok(self.push(TokenKind::QuotedIdent, i..i + 1 + n + 1)),
                    None => Err(problem(i..self.bytes.len(), "an unterminated `[`")),
                };
            }
            b'[' if d == Dialect::Mssql => return self.delimited(i, b']', "a `[` identifier"),
            b'`' if d == Dialect::Sqlite => return self.delimited(i, b'`', "a `` ` `` identifier"),
            b'(' => return Ok(self.push(TokenKind::LParen, i..i + 1)),
            b')' => return Ok(self.push(TokenKind::RParen, i..i + 1)),
            b',' => return Ok(self.push(TokenKind::Comma, i..i + 1)),
            b';' => return Ok(self.push(TokenKind::Semicolon, i..i + 1)),
            b'.' if !next.is_ascii_digit() => return Ok(self.push(TokenKind::Dot, i..i + 1)),
            b'0'..=b'9' | b'.' => return self.number(i),
            b'@' if self.placeholder_at(i) => {
                // A Rust parameter's name, which may have non-ASCII letters (`@größe`).
                let rest = &self.sql[i + 1..];
                let len = rest
                    .char_indices()
                    .find(|&(_, c)| !(c.is_alphanumeric() || c == '_'))
                    .map_or(rest.len(), |(n, _)| n);
                return Ok(self.push(TokenKind::Parameter, i..i + 1 + len));
            }
            _ => {}
        }
        match d {
            Dialect::Postgres => self.postgres(i),
            Dialect::Sqlite => self.sqlite(i),
            Dialect::Mssql => self.mssql(i),
        }
    }

    fn block_comment(&mut self, i: usize) -> Result<usize, SqlProblem> {
        // PostgreSQL and SQL Server nest block comments; SQLite does not, and lets an
        // unterminated one run to the end.
        let nests = self.dialect != Dialect::Sqlite;
        let mut depth = 1usize;
        let mut j = i + 2;
        while j < self.bytes.len() {
            if self.bytes[j] == b'*' && self.at(j + 1) == b'/' {
                depth -= 1;
                j += 2;
                if depth == 0 {
                    self.out.comments.push(i..j);
                    return Ok(j);
                }
            } else if nests && self.bytes[j] == b'/' && self.at(j + 1) == b'*' {
                depth += 1;
                j += 2;
            } else {
                j += 1;
            }
        }
        if self.dialect == Dialect::Sqlite {
            self.out.comments.push(i..j);
            return Ok(j);
        }
        Err(problem(
            i..self.bytes.len(),
            format!("an unterminated `/*` comment ({})", name(self.dialect)),
        ))
    }

    /// A `'...'` string whose opening quote is at `quote`, token starting at `start`;
    /// `backslash` when a backslash escapes the next character (PostgreSQL's `E''`).
    fn string(&mut self, start: usize, quote: usize, backslash: bool) -> Result<usize, SqlProblem> {
        let mut j = quote + 1;
        while j < self.bytes.len() {
            match self.bytes[j] {
                b'\\' if backslash => j += 2,
                b'\'' if self.at(j + 1) == b'\'' => j += 2,
                b'\'' => return Ok(self.push(TokenKind::String, start..j + 1)),
                _ => j += 1,
            }
        }
        Err(problem(
            start..self.bytes.len(),
            format!("an unterminated string literal ({})", name(self.dialect)),
        ))
    }

    /// An identifier between `open` at `i` and `close`, the closing character doubled
    /// to stand for itself.
    fn delimited(&mut self, i: usize, close: u8, what: &str) -> Result<usize, SqlProblem> {
        let mut j = i + 1;
        while j < self.bytes.len() {
            if self.bytes[j] == close {
                if self.at(j + 1) == close {
                    j += 2;
                    continue;
                }
                return Ok(self.push(TokenKind::QuotedIdent, i..j + 1));
            }
            j += 1;
        }
        Err(problem(
            i..self.bytes.len(),
            format!("{what} without its closing `{}`", close as char),
        ))
    }

    fn number(&mut self, i: usize) -> Result<usize, SqlProblem> {
        let b = self.bytes;
        let mut j = i;
        if b[i] == b'0' && matches!(self.at(i + 1), b'x' | b'X') {
            j = i + 2;
            while self.at(j).is_ascii_hexdigit()
                || (self.dialect == Dialect::Postgres && self.at(j) == b'_')
            {
                j += 1;
            }
        } else {
            let digits = |j: &mut usize| {
                while self.at(*j).is_ascii_digit()
                    || (self.dialect == Dialect::Postgres
                        && self.at(*j) == b'_'
                        && self.at(*j + 1).is_ascii_digit())
                {
                    *j += 1;
                }
            };
            digits(&mut j);
            if self.at(j) == b'.' && !(self.dialect == Dialect::Postgres && self.at(j + 1) == b'.')
            {
                j += 1;
                digits(&mut j);
            }
            if matches!(self.at(j), b'e' | b'E') {
                let mut k = j + 1;
                if matches!(self.at(k), b'+' | b'-') {
                    k += 1;
                }
                if self.at(k).is_ascii_digit() {
                    j = k;
                    digits(&mut j);
                }
            }
        }
        if j < b.len() && self.ident_continue(b[j]) && self.dialect != Dialect::Mssql {
            // PostgreSQL 15+ ("trailing junk") and SQLite refuse a number run into a
            // word; SQL Server reads the word as the next token (an alias).
            let end = self.ident_end(j);
            return Err(problem(
                i..end,
                format!(
                    "a number run into a word (`{}`), which {} refuses",
                    &self.sql[i..end],
                    name(self.dialect)
                ),
            ));
        }
        Ok(self.push(TokenKind::Number, i..j))
    }

    fn word(&mut self, i: usize) -> usize {
        let end = self.ident_end(i + 1);
        self.push(TokenKind::Word, i..end)
    }

    fn other(&mut self, i: usize) -> usize {
        let len = self.sql[i..].chars().next().map_or(1, char::len_utf8);
        self.push(TokenKind::Other, i..i + len)
    }

    fn postgres(&mut self, i: usize) -> Result<usize, SqlProblem> {
        let b = self.bytes[i];
        let next = self.at(i + 1);
        // String prefixes: E'..' (backslash escapes), B'..', X'..', N'..', U&'..'.
        if matches!(b, b'E' | b'e') && next == b'\'' {
            return self.string(i, i + 1, true);
        }
        if matches!(b, b'B' | b'b' | b'X' | b'x' | b'N' | b'n') && next == b'\'' {
            return self.string(i, i + 1, false);
        }
        if matches!(b, b'U' | b'u') && next == b'&' && self.at(i + 2) == b'\'' {
            return self.string(i, i + 2, false);
        }
        if matches!(b, b'U' | b'u') && next == b'&' && self.at(i + 2) == b'"' {
            let end = self.delimited(i + 2, b'"', "a quoted identifier")?;
            if let Some(last) = self.out.tokens.last_mut() {
                last.range.start = i;
            }
            return Ok(end);
        }
        if self.ident_start(i) {
            return Ok(self.word(i));
        }
        if b == b'$' {
            if next.is_ascii_digit() {
                let mut j = i + 1;
                while self.at(j).is_ascii_digit() {
                    j += 1;
                }
                return Ok(self.push(TokenKind::Parameter, i..j));
            }
            // $tag$ ... $tag$, the tag an identifier without `$`, or empty.
            let mut j = i + 1;
            if is_ascii_ident_start(self.at(j)) || self.at(j) >= 0x80 {
                while self.at(j).is_ascii_alphanumeric() || self.at(j) == b'_' || self.at(j) >= 0x80
                {
                    j += 1;
                }
            }
            if self.at(j) == b'$' {
                let tag = &self.sql[i..=j];
                return match self.sql[j + 1..].find(tag) {
                    Some(n) => Ok(self.push(TokenKind::String, i..j + 1 + n + tag.len())),
                    None => Err(problem(
                        i..self.bytes.len(),
                        format!("an unterminated dollar quote `{tag}` (PostgreSQL)"),
                    )),
                };
            }
            return Ok(self.other(i));
        }
        if b == b':' {
            let len = if matches!(next, b':' | b'=') { 2 } else { 1 };
            let kind = if len == 2 {
                TokenKind::Operator
            } else {
                TokenKind::Other
            };
            return Ok(self.push(kind, i..i + len));
        }
        const OP: &[u8] = b"+-*/<>=~!@#%^&|`?";
        const SPECIAL: &[u8] = b"~!@#%^&|`?";
        if OP.contains(&b) {
            let mut j = i;
            while j < self.bytes.len() && OP.contains(&self.bytes[j]) {
                let (c, n) = (self.bytes[j], self.at(j + 1));
                if j > i && ((c == b'-' && n == b'-') || (c == b'/' && n == b'*')) {
                    break;
                }
                if j > i && c == b'@' && self.placeholder_at(j) {
                    break;
                }
                j += 1;
            }
            let mut end = j;
            if end - i > 1 && !self.bytes[i..end].iter().any(|c| SPECIAL.contains(c)) {
                while end - i > 1 && matches!(self.bytes[end - 1], b'+' | b'-') {
                    end -= 1;
                }
            }
            return Ok(self.push(TokenKind::Operator, i..end));
        }
        Ok(self.other(i))
    }

    fn sqlite(&mut self, i: usize) -> Result<usize, SqlProblem> {
        let b = self.bytes[i];
        let next = self.at(i + 1);
        if matches!(b, b'X' | b'x') && next == b'\'' {
            return self.string(i, i + 1, false);
        }
        if self.ident_start(i) {
            return Ok(self.word(i));
        }
        match b {
            b'?' => {
                let mut j = i + 1;
                while self.at(j).is_ascii_digit() {
                    j += 1;
                }
                Ok(self.push(TokenKind::Parameter, i..j))
            }
            b'$' | b'@' | b':' | b'#' => {
                // tokenize.c, CC_VARALPHA: the name's characters, and for `$` TCL's
                // `::` and a `(...)` suffix.
                let mut j = i + 1;
                loop {
                    let c = self.at(j);
                    if self.ident_continue(c) && j < self.bytes.len() {
                        j += 1;
                    } else if b == b'$' && c == b':' && self.at(j + 1) == b':' {
                        j += 2;
                    } else if b == b'$' && c == b'(' && j > i + 1 {
                        match memchr(b')', &self.bytes[j..]) {
                            Some(n) => j += n + 1,
                            None => break,
                        }
                        break;
                    } else {
                        break;
                    }
                }
                if j == i + 1 {
                    return Ok(self.other(i));
                }
                Ok(self.push(TokenKind::Parameter, i..j))
            }
            b'=' => Ok(self.push(TokenKind::Operator, i..i + if next == b'=' { 2 } else { 1 })),
            b'<' => Ok(self.push(
                TokenKind::Operator,
                i..i + if matches!(next, b'=' | b'>' | b'<') {
                    2
                } else {
                    1
                },
            )),
            b'>' => Ok(self.push(
                TokenKind::Operator,
                i..i + if matches!(next, b'=' | b'>') { 2 } else { 1 },
            )),
            b'!' if next == b'=' => Ok(self.push(TokenKind::Operator, i..i + 2)),
            b'|' => Ok(self.push(TokenKind::Operator, i..i + if next == b'|' { 2 } else { 1 })),
            b'-' if next == b'>' => Ok(self.push(
                TokenKind::Operator,
                i..i + if self.at(i + 2) == b'>' { 3 } else { 2 },
            )),
            b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'~' => {
                Ok(self.push(TokenKind::Operator, i..i + 1))
            }
            _ => Ok(self.other(i)),
        }
    }

    fn mssql(&mut self, i: usize) -> Result<usize, SqlProblem> {
        let b = self.bytes[i];
        let next = self.at(i + 1);
        if matches!(b, b'N' | b'n') && next == b'\'' {
            return self.string(i, i + 1, false);
        }
        if b == b'@' {
            let end = self.ident_end(i + 1);
            return Ok(self.push(TokenKind::Parameter, i..end));
        }
        if self.ident_start(i) {
            return Ok(self.word(i));
        }
        match b {
            b'$' if next.is_ascii_digit() || (next == b'.' && self.at(i + 2).is_ascii_digit()) => {
                // A money constant.
                let mut j = i + 1;
                while self.at(j).is_ascii_digit() || self.at(j) == b'.' {
                    j += 1;
                }
                Ok(self.push(TokenKind::Number, i..j))
            }
            b'$' if is_ascii_ident_start(next) => Ok(self.word(i)),
            b':' if next == b':' => Ok(self.push(TokenKind::Operator, i..i + 2)),
            b'!' if matches!(next, b'=' | b'<' | b'>') => {
                Ok(self.push(TokenKind::Operator, i..i + 2))
            }
            b'<' if matches!(next, b'=' | b'>') => Ok(self.push(TokenKind::Operator, i..i + 2)),
            b'>' if next == b'=' => Ok(self.push(TokenKind::Operator, i..i + 2)),
            b'|' if next == b'|' => Ok(self.push(TokenKind::Operator, i..i + 2)),
            b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' if next == b'=' => {
                Ok(self.push(TokenKind::Operator, i..i + 2))
            }
            b'=' | b'<' | b'>' | b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' | b'~' => {
                Ok(self.push(TokenKind::Operator, i..i + 1))
            }
            _ => Ok(self.other(i)),
        }
    }
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

/// The operators a portable caller text may use: the same token, and the same meaning,
/// in PostgreSQL, SQLite and SQL Server.
pub const PORTABLE_OPERATORS: [&str; 12] = [
    "=", "<>", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/", "%",
];

/// Every reason `sql`, a caller's text for `#[fenced_write]` with `@name` placeholders,
/// is outside the portable subset: a construct that one of PostgreSQL, SQLite and SQL
/// Server would read differently from the others, or that the macro cannot bind.
///
/// The subset: ASCII words; `"quoted"` identifiers; `'...'` strings with `''` and no
/// backslash; decimal numbers; `@name` placeholders; the operators
/// [`PORTABLE_OPERATORS`]; `( ) , .`; `--` comments and unnested `/* */` comments;
/// spaces, tabs and line feeds (CR only before LF). The text must also split into the
/// same tokens in all three dialects, which is checked, not assumed.
///
/// A problem with a construct that one database's own reading accepts
/// ([`dialect_problems`]) says so, naming the `dialect = "..."` that would accept it.
pub fn portable_problems(sql: &str) -> Vec<SqlProblem> {
    let mut problems = subset_problems(sql, &DIALECTS);
    if problems.is_empty() {
        return problems;
    }
    let own: Vec<(Dialect, Vec<SqlProblem>)> = DIALECTS
        .iter()
        .map(|&d| (d, subset_problems(sql, &[d])))
        .collect();
    for p in &mut problems {
        let accepting: Vec<String> = own
            .iter()
            .filter(|(d, theirs)| {
                own_form_of(&sql[p.range.clone()]).contains(d)
                    && !theirs
                        .iter()
                        .any(|q| q.range.start < p.range.end && p.range.start < q.range.end)
            })
            .map(|(d, _)| format!("`dialect = \"{}\"`", option_name(*d)))
            .collect();
        if !accepting.is_empty() {
            p.message.push_str(&format!(
                "; or, for SQL written for one database only, add {}",
                accepting.join(" or ")
            ));
        }
    }
    problems
}

/// The databases whose own syntax `text` is, read as the construct it is meant to be:
/// bracket and backtick names, dollar quoting, `::`, `E'...'` and `N'...'` strings.
fn own_form_of(text: &str) -> &'static [Dialect] {
    let starts = |prefix: &str| {
        text.len() >= prefix.len() && text[..prefix.len()].eq_ignore_ascii_case(prefix)
    };
    if text.starts_with('[') {
        &[Dialect::Sqlite, Dialect::Mssql]
    } else if text.starts_with('`') {
        &[Dialect::Sqlite]
    } else if text == "::"
        || starts("E'")
        || (text.starts_with('$') && text.ends_with('$') && text.len() > 1)
    {
        &[Dialect::Postgres]
    } else if starts("N'") {
        &[Dialect::Mssql]
    } else {
        &[]
    }
}

/// The name `#[fenced_write(dialect = "...")]` gives `d`.
fn option_name(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => "postgres",
        Dialect::Sqlite => "sqlite",
        Dialect::Mssql => "mssql",
    }
}

/// Every reason `sql`, a caller's text for a `#[fenced_write]` method that declares
/// `dialect` as its one database, cannot be sent to it as written: a form the macro
/// cannot bind (any placeholder but `@name`, a system variable), more than one
/// statement (`;`, `GO`), a text `dialect` cannot split, and forms whose meaning
/// depends on the server's settings or version (PostgreSQL's backslash in a string
/// that is not `E'...'`, its hexadecimal and `_`-separated numbers), or that join or
/// alias silently (two strings in a row, SQL Server's number run into a word).
///
/// Everything else `dialect`'s lexer reads as a name, string, number or operator is
/// accepted: `$$...$$`, `E'...'` and `::` on PostgreSQL, `[name]` and `` `name` `` on
/// SQLite, `[name]` and `N'...'` on SQL Server, for example.
pub fn dialect_problems(dialect: Dialect, sql: &str) -> Vec<SqlProblem> {
    subset_problems(sql, &[dialect])
}

/// [`portable_problems`] for all three dialects, [`dialect_problems`] for one.
fn subset_problems(sql: &str, dialects: &[Dialect]) -> Vec<SqlProblem> {
    let portable = dialects.len() > 1;
    let mut problems: Vec<SqlProblem> = Vec::new();
    let mut add = |p: SqlProblem| add_problem(&mut problems, p);
    let bytes = sql.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let bad = match b {
            b'\r' if bytes.get(i + 1) != Some(&b'\n') => {
                Some("a carriage return without a line feed")
            }
            0x0b | 0x0c => Some("a vertical tab or form feed"),
            _ => None,
        };
        if let Some(what) = bad {
            add(problem(
                i..i + 1,
                format!(
                    "{what}: SQLite ends a `--` comment only at a line feed, PostgreSQL and SQL \
                     Server also at a carriage return, and their whitespace differs; write line \
                     feeds (`\\n`) and spaces"
                ),
            ));
        }
    }
    let mut lexed = Vec::new();
    let mut failures = Vec::new();
    for &d in dialects {
        match lex_caller(d, sql) {
            Ok(l) => lexed.push((d, l)),
            Err(p) => failures.push((d, p)),
        }
    }
    // Where another dialect read the text, its objection names the construct; a
    // dialect's failure to read it at all is reported when nothing else is.
    let mut unreadable = Vec::new();
    for (d, p) in failures {
        unreadable.push(problem(
            p.range,
            if portable {
                format!(
                    "{}: {} splits this text differently or not at all; close every string, \
                     quoted identifier and comment, and use only the forms all three databases \
                     share",
                    p.message,
                    name(d)
                )
            } else {
                format!(
                    "{}: {} cannot split this text; close every string, quoted identifier and \
                     comment",
                    p.message,
                    name(d)
                )
            },
        ));
    }
    for (d, l) in &lexed {
        for r in &l.comments {
            let Some(body) = sql[r.clone()].strip_prefix("/*") else {
                continue;
            };
            let closed = body.len() >= 2 && body.ends_with("*/");
            let inner = if closed {
                &body[..body.len() - 2]
            } else {
                body
            };
            // PostgreSQL and SQL Server nest comments, and agree with each other.
            if inner.contains("/*") && (portable || *d == Dialect::Sqlite) {
                add(problem(
                    r.clone(),
                    "a `/*` inside a block comment: PostgreSQL and SQL Server nest block \
                     comments, SQLite does not, so they disagree on where it ends; remove the \
                     inner `/*` or use `--` comments",
                ));
            } else if !closed {
                add(problem(
                    r.clone(),
                    "an unterminated `/*` comment: close it with `*/`",
                ));
            }
        }
        let tokens = &l.tokens;
        for (n, t) in tokens.iter().enumerate() {
            if let Some(message) = token_problem(*d, portable, sql, tokens, n) {
                add(problem(t.range.clone(), message));
            }
        }
    }
    if problems.is_empty() {
        for p in unreadable {
            add_problem(&mut problems, p);
        }
    }
    if problems.is_empty()
        && portable
        && let Some((_, first)) = lexed.first()
    {
        for (d, l) in &lexed[1..] {
            let differs = first
                .tokens
                .iter()
                .zip(&l.tokens)
                .position(|(a, b)| a != b)
                .or((first.tokens.len() != l.tokens.len())
                    .then(|| first.tokens.len().min(l.tokens.len())));
            if let Some(at) = differs {
                let range = first
                    .tokens
                    .get(at)
                    .or(l.tokens.get(at))
                    .map_or(0..sql.len(), |t| t.range.clone());
                add_problem(
                    &mut problems,
                    problem(
                        range.clone(),
                        format!(
                            "PostgreSQL and {} split this text differently at `{}`: put spaces \
                         between operators and use only the forms all three databases share",
                            name(*d),
                            &sql[range]
                        ),
                    ),
                );
                break;
            }
        }
    }
    problems
}

/// Adds `p` unless it overlaps a problem already found. Where two dialects object to
/// overlapping text, the one that read the larger construct (the whole `[name]` or
/// `$$...$$`, not its first character) explains it.
fn add_problem(problems: &mut Vec<SqlProblem>, p: SqlProblem) {
    let overlaps = |q: &SqlProblem| q.range.start < p.range.end && p.range.start < q.range.end;
    let contained = |q: &SqlProblem| {
        p.range.start <= q.range.start && q.range.end <= p.range.end && p.range != q.range
    };
    if problems.iter().any(|q| overlaps(q) && !contained(q)) {
        return;
    }
    problems.retain(|q| !overlaps(q));
    let at = problems.partition_point(|q| q.range.start < p.range.start);
    problems.insert(at, p);
}

/// What is wrong with token `n` as `d` read it: for the portable subset when
/// `portable`, for a text written for `d` alone otherwise.
fn token_problem(
    d: Dialect,
    portable: bool,
    sql: &str,
    tokens: &[Token],
    n: usize,
) -> Option<String> {
    let t = &tokens[n];
    let text = &sql[t.range.clone()];
    let previous = n.checked_sub(1).map(|p| &tokens[p]);
    let touches_word_before = previous.is_some_and(|p| {
        p.range.end == t.range.start && matches!(p.kind, TokenKind::Word | TokenKind::Number)
    });
    let after = sql[t.range.end..].chars().next();
    if !portable
        && matches!(
            t.kind,
            TokenKind::Word
                | TokenKind::QuotedIdent
                | TokenKind::String
                | TokenKind::Number
                | TokenKind::Operator
        )
    {
        return own_token_problem(d, t.kind, text, previous, after);
    }
    match t.kind {
        TokenKind::Word => {
            if text.eq_ignore_ascii_case("GO") {
                return Some(
                    "`GO` is a batch separator of SQL Server's client tools, not SQL: remove it \
                     (a column named `go` can be written \"go\")"
                        .into(),
                );
            }
            if !text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Some(format!(
                    "`{text}`: only ASCII letters, digits and `_` in a bare name (`$`, `#`, `@` and \
                     non-ASCII letters belong to names in some databases and not others); quote \
                     it as \"{}\" if it is a column",
                    text.replace('"', "\"\"")
                ));
            }
            None
        }
        TokenKind::QuotedIdent => {
            if text.starts_with('[') {
                Some(format!(
                    "`{text}` is bracket quoting, which SQL Server and SQLite read as a name and \
                     PostgreSQL as an array subscript: write \"{}\"",
                    text[1..text.len() - 1].replace(']', "")
                ))
            } else if text.starts_with('`') {
                Some(format!(
                    "`{text}` is backtick quoting (SQLite and MySQL only): write \"{}\"",
                    text[1..text.len() - 1].replace('`', "")
                ))
            } else if !text.starts_with('"') {
                Some(format!(
                    "`{text}` is a PostgreSQL-only identifier form: write a plain \"name\""
                ))
            } else if text == "\"\"" {
                Some(
                    "an empty quoted identifier: write the column's name between the quotes".into(),
                )
            } else if text.bytes().any(|b| b < 0x20) {
                Some("a control character in a quoted identifier: remove it".into())
            } else if touches_word_before {
                Some(format!(
                    "a word directly before `{text}` makes a prefixed form in some databases \
                     (PostgreSQL's `U&\"...\"`): put a space before the quote"
                ))
            } else {
                None
            }
        }
        TokenKind::String => {
            if text.starts_with('$') {
                Some(format!(
                    "`{}` is a dollar-quoted string (PostgreSQL only; SQLite reads `$` as a \
                     parameter): write a '...' literal with '' for a quote, or bind the value \
                     as `@name`",
                    abbreviate(text)
                ))
            } else if !text.starts_with('\'') {
                let prefix: String = text.chars().take_while(|c| *c != '\'').collect();
                Some(format!(
                    "`{prefix}'...'` is a prefixed string literal, which the databases read \
                     differently (PostgreSQL's `E''` escapes, SQL Server's `N''`, `X''` blobs, \
                     `B''` bits, `U&''`): write a plain '...' literal or bind the value as \
                     `@name`"
                ))
            } else if text.contains('\\') {
                Some(
                    "a backslash in a string literal: PostgreSQL reads it as an escape when \
                     `standard_conforming_strings` is off; bind the value as `@name` instead"
                        .into(),
                )
            } else if previous.is_some_and(|p| p.kind == TokenKind::String) {
                Some(
                    "two string literals in a row: PostgreSQL joins them into one when a line \
                     break separates them and refuses them otherwise, the others refuse them; \
                     write one literal, or `CONCAT('a', 'b')`"
                        .into(),
                )
            } else if touches_word_before {
                let p = previous.map_or("", |p| &sql[p.range.clone()]);
                Some(format!(
                    "`{p}'...'`: a word directly before a quote makes a prefixed string in some \
                     databases (`E''`, `N''`, `X''`): put a space before the quote"
                ))
            } else {
                None
            }
        }
        TokenKind::Number => {
            if text.starts_with("0x") || text.starts_with("0X") {
                Some(format!(
                    "`{text}` is a hexadecimal literal, an integer in PostgreSQL and SQLite and \
                     binary in SQL Server: write the decimal value"
                ))
            } else if text.starts_with('$') {
                Some(format!(
                    "`{text}` is a SQL Server money literal: write the plain number"
                ))
            } else if text.contains('_') {
                Some(format!("`{text}`: write the number without `_` separators"))
            } else if after.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
                Some(format!(
                    "`{text}` is run into the word after it, which SQL Server reads as an alias \
                     and the others refuse: put a space after the number"
                ))
            } else {
                None
            }
        }
        TokenKind::Parameter => {
            if text.starts_with('@') && !text.starts_with("@@") && text.len() > 1 {
                if touches_word_before
                    || previous.is_some_and(|p| {
                        p.range.end == t.range.start
                            && matches!(p.kind, TokenKind::String | TokenKind::QuotedIdent)
                    })
                {
                    Some(format!("put a space before `{text}`"))
                } else {
                    None
                }
            } else if text.starts_with("@@") {
                Some(format!(
                    "`{text}` is a SQL Server system variable (and a parameter to SQLite): it \
                     cannot be bound; remove it"
                ))
            } else if d == Dialect::Sqlite && text.starts_with("$$") {
                Some(format!(
                    "`{}` is a parameter to SQLite (`$$...$$` quotes a string in PostgreSQL \
                     only): write a '...' literal with '' for a quote, or bind the value as \
                     `@name`",
                    abbreviate(text)
                ))
            } else {
                Some(format!(
                    "`{text}` is a {} placeholder, which the macro does not bind (`$1` is \
                     PostgreSQL's, `?` and `:name` SQLite's): write `@name` for a parameter \
                     of the method",
                    name(d)
                ))
            }
        }
        TokenKind::Operator => {
            if PORTABLE_OPERATORS.contains(&text) {
                None
            } else if text == "||" {
                Some("`||` is not SQL Server's concatenation: write `CONCAT(a, b)`".into())
            } else if text == "::" {
                Some("`::` is PostgreSQL's cast: write `CAST(x AS type)`".into())
            } else if text == "==" {
                Some("`==` is SQLite's: write `=`".into())
            } else {
                Some(format!(
                    "the operator `{text}` is not in the portable subset ({}): it means \
                     something else, or nothing, in another database; {}",
                    PORTABLE_OPERATORS.join(" "),
                    if text.len() > 1 {
                        "if it is two operators, put a space between them"
                    } else {
                        "rewrite the condition with the operators listed"
                    }
                ))
            }
        }
        TokenKind::Semicolon => Some(
            "`;`: a fenced write is exactly one statement, and the fence is appended at its \
             end; remove the `;`"
                .into(),
        ),
        TokenKind::Other if !portable => Some(format!(
            "`{text}` means nothing to {} here, or something the macro does not read the same \
             way (such as an array subscript): remove it",
            name(d)
        )),
        TokenKind::Other => Some(match text {
            "$" => "`$` starts a parameter in SQLite and PostgreSQL and a dollar quote in \
                    PostgreSQL: write `@name` for a parameter, '...' for a string"
                .into(),
            "?" => "`?` is a SQLite parameter (and a PostgreSQL operator): write `@name`".into(),
            ":" => {
                "`:` starts a SQLite parameter: write `@name`; for a cast write `CAST(x AS type)`"
                    .into()
            }
            "[" | "]" => "`[`/`]`: write \"name\" for a quoted name".into(),
            "\\" => "`\\` is a client directive (psql) or an escape: remove it".into(),
            _ => format!(
                "`{text}` has no meaning shared by PostgreSQL, SQLite and SQL Server: remove it"
            ),
        }),
        TokenKind::LParen | TokenKind::RParen | TokenKind::Comma | TokenKind::Dot => None,
    }
}

/// [`token_problem`] for a name, string, number or operator of a text written for `d`
/// alone: the form is `d`'s own, so only what `d` itself reads ambiguously is refused.
fn own_token_problem(
    d: Dialect,
    kind: TokenKind,
    text: &str,
    previous: Option<&Token>,
    after: Option<char>,
) -> Option<String> {
    let quoted_inner = text.get(1..text.len().saturating_sub(1)).unwrap_or("");
    match kind {
        TokenKind::Word if text.eq_ignore_ascii_case("GO") => Some(
            "`GO` is a batch separator of SQL Server's client tools, not SQL: remove it (a \
             column named `go` can be written quoted)"
                .into(),
        ),
        TokenKind::QuotedIdent if quoted_inner.is_empty() => {
            Some("an empty quoted identifier: write the column's name between the quotes".into())
        }
        TokenKind::QuotedIdent if text.bytes().any(|b| b < 0x20) => {
            Some("a control character in a quoted identifier: remove it".into())
        }
        TokenKind::String if previous.is_some_and(|p| p.kind == TokenKind::String) => Some(
            "two string literals in a row: PostgreSQL joins them into one when a line break \
             separates them and refuses them otherwise, the others refuse them; write one \
             literal"
                .into(),
        ),
        TokenKind::String
            if d == Dialect::Postgres
                && text.contains('\\')
                && !text.starts_with(['E', 'e', 'U', 'u', '$']) =>
        {
            Some(
                "a backslash in a string literal that is not `E'...'`: PostgreSQL reads it as \
                 an escape when `standard_conforming_strings` is off; write `E'...'` with the \
                 escape you mean, or bind the value as `@name`"
                    .into(),
            )
        }
        TokenKind::Number
            if d == Dialect::Postgres
                && (text.contains('_') || text.starts_with("0x") || text.starts_with("0X")) =>
        {
            Some(format!(
                "`{text}`: PostgreSQL reads hexadecimal and `_`-separated numbers only from \
                 version 16 (an older server reads `0x10` as `0 AS x10`): write the decimal \
                 value"
            ))
        }
        TokenKind::Number
            if d == Dialect::Mssql && after.is_some_and(|c| c.is_alphanumeric() || c == '_') =>
        {
            Some(format!(
                "`{text}` is run into the word after it, which SQL Server reads as an alias: put \
                 a space after the number"
            ))
        }
        _ => None,
    }
}

fn abbreviate(text: &str) -> String {
    let mut s: String = text.chars().take(24).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

/// The text a quoted or bare identifier token names.
fn unquoted(sql: &str, token: &Token) -> String {
    let text = &sql[token.range.clone()];
    if token.kind != TokenKind::QuotedIdent {
        return text.to_owned();
    }
    let text = text.strip_prefix("U&").unwrap_or(text);
    let close = text.as_bytes()[text.len() - 1] as char;
    let inner = &text[1..text.len() - 1];
    inner.replace(&format!("{close}{close}"), &close.to_string())
}

fn is_word(sql: &str, token: &Token, word: &str) -> bool {
    token.kind == TokenKind::Word && sql[token.range.clone()].eq_ignore_ascii_case(word)
}

/// A token's kind and text, keywords in upper case: what two renderings are compared by.
fn shape<'a>(sql: &'a str, tokens: &[Token]) -> Vec<(TokenKind, std::borrow::Cow<'a, str>)> {
    tokens
        .iter()
        .map(|t| {
            let text = &sql[t.range.clone()];
            let text = if t.kind == TokenKind::Word {
                std::borrow::Cow::Owned(text.to_ascii_uppercase())
            } else {
                std::borrow::Cow::Borrowed(text)
            };
            (t.kind, text)
        })
        .collect()
}

/// Checks a final fenced statement as `dialect`'s server will read it: one `UPDATE` of
/// `table`, no comment and no `;`, every parameter one of `1..=params + 3` in the
/// dialect's numbered form, no protocol column assigned (except the published
/// generation set to the lease's by a publish-once statement), and a top-level `WHERE`
/// that is exactly [`fence_predicate`](super::fence_predicate) at `params + 1`, or
/// `(<condition>) AND <fence>`, either optionally followed by `AND`
/// [`publish_once_predicate`](super::publish_once_predicate), and nothing after it;
/// a `FROM` clause must not name the table again.
///
/// # Errors
///
/// The first reason the statement is not fenced, with where it is.
pub fn check_fenced(
    dialect: Dialect,
    sql: &str,
    table: &crate::FencedTable,
    params: usize,
) -> Result<(), SqlProblem> {
    let d = dialect;
    let lexed = lex(d, sql)?;
    if let Some(c) = lexed.comments.first() {
        return Err(problem(
            c.clone(),
            "a comment in a fenced statement: remove it (it could hide or end text)",
        ));
    }
    let tokens = &lexed.tokens;
    let whole = 0..sql.len();
    let text = |t: &Token| &sql[t.range.clone()];

    // Parameters: only the numbered ones the guard binds.
    let bound: Vec<String> = (1..=params + 3).map(|n| d.placeholder(n)).collect();
    for t in tokens {
        match t.kind {
            TokenKind::Semicolon => {
                return Err(problem(
                    t.range.clone(),
                    "`;` in a fenced statement: it must be exactly one statement",
                ));
            }
            TokenKind::Parameter if !bound.iter().any(|b| b == text(t)) => {
                return Err(problem(
                    t.range.clone(),
                    format!(
                        "`{}` is not a parameter the guard binds: {} are the caller's \
                         {params} values and the lease's key, generation and owner",
                        text(t),
                        match bound.as_slice() {
                            [first, .., last] => format!("{first} to {last}"),
                            _ => String::new(),
                        }
                    ),
                ));
            }
            _ => {}
        }
    }

    // Depth of each token; the parentheses balance.
    let mut depth = Vec::with_capacity(tokens.len());
    let mut level = 0usize;
    let mut matching = vec![usize::MAX; tokens.len()];
    let mut open = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        match t.kind {
            TokenKind::LParen => {
                depth.push(level);
                open.push(i);
                level += 1;
            }
            TokenKind::RParen => {
                let Some(o) = open.pop() else {
                    return Err(problem(t.range.clone(), "a `)` without its `(`"));
                };
                matching[o] = i;
                level -= 1;
                depth.push(level);
            }
            _ => depth.push(level),
        }
    }
    if let Some(&o) = open.last() {
        return Err(problem(tokens[o].range.clone(), "a `(` without its `)`"));
    }

    // UPDATE <table>.
    if !tokens.first().is_some_and(|t| is_word(sql, t, "UPDATE")) {
        return Err(problem(
            whole,
            "a fenced statement is one `UPDATE` of the fenced table",
        ));
    }
    let mut i = 1;
    if d == Dialect::Postgres && tokens.get(i).is_some_and(|t| is_word(sql, t, "ONLY")) {
        i += 1;
    }
    if d == Dialect::Mssql
        && tokens.get(i).is_some_and(|t| is_word(sql, t, "TOP"))
        && tokens
            .get(i + 1)
            .is_some_and(|t| t.kind == TokenKind::LParen)
    {
        i = matching[i + 1] + 1;
    }
    if tokens.get(i).is_some_and(|t| is_word(sql, t, "OR")) {
        return Err(problem(
            tokens[i].range.clone(),
            "`UPDATE OR ...` is refused: SQLite's conflict clause (`OR REPLACE` deletes the \
             rows a new value collides with) acts on rows the fence does not cover",
        ));
    }
    let name_start = i;
    let mut name = Vec::new();
    while let Some(t) = tokens.get(i)
        && matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent)
    {
        name.push(unquoted(sql, t));
        i += 1;
        if !tokens.get(i).is_some_and(|t| t.kind == TokenKind::Dot) {
            break;
        }
        i += 1;
    }
    let expected: Vec<String> = table
        .name()
        .schema()
        .into_iter()
        .chain(std::iter::once(table.name().name()))
        .map(|p| p.as_str().to_owned())
        .collect();
    let same = name.len() == expected.len()
        && name
            .iter()
            .zip(&expected)
            .all(|(a, b)| a.eq_ignore_ascii_case(b));
    if !same {
        let at = tokens
            .get(name_start)
            .map_or(whole.clone(), |t| t.range.clone());
        return Err(problem(
            at,
            format!(
                "this statement updates `{}`, not the store's table {}",
                name.join("."),
                table.name()
            ),
        ));
    }

    // The one top-level WHERE, and SET before it.
    let top: Vec<usize> = (0..tokens.len()).filter(|&k| depth[k] == 0).collect();
    let wheres: Vec<usize> = top
        .iter()
        .copied()
        .filter(|&k| is_word(sql, &tokens[k], "WHERE"))
        .collect();
    let [w] = wheres.as_slice() else {
        return Err(problem(
            wheres
                .get(1)
                .map_or(whole.clone(), |&k| tokens[k].range.clone()),
            "a fenced statement has exactly one top-level `WHERE`, which ends with the fence",
        ));
    };
    let w = *w;
    let Some(set) = top[..]
        .iter()
        .copied()
        .find(|&k| k < w && is_word(sql, &tokens[k], "SET"))
    else {
        return Err(problem(whole, "expected `SET` before the `WHERE`"));
    };
    let from = top
        .iter()
        .copied()
        .find(|&k| k > set && k < w && is_word(sql, &tokens[k], "FROM"))
        .unwrap_or(w);

    // The condition: [ ( ... ) AND ] fence [ AND published < generation ].
    let fence_sql = super::fence_predicate(d, table, params + 1);
    let publish_sql = super::publish_once_predicate(d, table, params + 1);
    let fence_lexed = lex(d, &fence_sql)?;
    let publish_lexed = lex(d, &publish_sql)?;
    let fence = shape(&fence_sql, &fence_lexed.tokens);
    let publish = shape(&publish_sql, &publish_lexed.tokens);
    let condition = shape(sql, &tokens[w + 1..]);
    let and = (TokenKind::Word, std::borrow::Cow::Borrowed("AND"));
    let mut rest: &[_] = &condition;
    if rest.first().is_some_and(|t| t.0 == TokenKind::LParen) {
        let close = matching[w + 1] - (w + 1);
        if rest.get(close + 1) != Some(&and) {
            return Err(problem(
                tokens[w + 1].range.clone(),
                "the caller's condition must be one parenthesised group followed by `AND` and \
                 the fence",
            ));
        }
        rest = &rest[close + 2..];
    }
    let published = if rest == fence.as_slice() {
        false
    } else if rest.len() == fence.len() + 1 + publish.len()
        && rest[..fence.len()] == fence[..]
        && rest[fence.len()] == and
        && rest[fence.len() + 1..] == publish[..]
    {
        true
    } else {
        return Err(problem(
            tokens[w].range.start..sql.len(),
            format!(
                "the top-level `WHERE` does not end with the fence: expected `WHERE \
                 (<condition>) AND {fence_sql}`, with nothing after it"
            ),
        ));
    };

    // SET: no protocol column, but the published generation of a publication.
    let generation = d.placeholder(params + 2);
    let mut k = set + 1;
    while k < from {
        let end = (k..from)
            .find(|&e| depth[e] == 0 && tokens[e].kind == TokenKind::Comma)
            .unwrap_or(from);
        let eq = (k..end)
            .find(|&e| {
                depth[e] == depth[k]
                    && tokens[e].kind == TokenKind::Operator
                    && text(&tokens[e]).ends_with('=')
            })
            .unwrap_or(end);
        for t in &tokens[k..eq] {
            if !matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent) {
                continue;
            }
            let column = unquoted(sql, t);
            if !table.is_protocol_column(&column) {
                continue;
            }
            let publication = published
                && table.published_column().same_as(&column)
                && eq + 2 == end
                && text(&tokens[eq]) == "="
                && text(&tokens[eq + 1]) == generation;
            if !publication {
                return Err(problem(
                    t.range.clone(),
                    format!(
                        "`{column}` belongs to the fencing protocol (only the guard's own \
                         statements set it, the fence checks it): a fenced statement may not \
                         assign it"
                    ),
                ));
            }
        }
        k = end + 1;
    }
    // FROM must not name the fenced table again: SQL Server would update whichever
    // reference the UPDATE's name resolves to.
    for t in &tokens[from.min(w)..w] {
        if matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent)
            && unquoted(sql, t).eq_ignore_ascii_case(table.name().name().as_str())
        {
            return Err(problem(
                t.range.clone(),
                "the `FROM` clause names the fenced table again: SQL Server would then update \
                 the row the alias picks, under another fence; join other tables only",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::fence_predicate;
    use crate::{FencedTable, publish_once_assignment, publish_once_predicate};

    fn kinds(d: Dialect, sql: &str) -> Vec<(TokenKind, &str)> {
        lex(d, sql)
            .unwrap()
            .tokens
            .into_iter()
            .map(|t| (t.kind, &sql[t.range]))
            .collect()
    }

    #[test]
    fn each_dialect_splits_its_own_forms() {
        use TokenKind::*;
        let sql = "[a] `b` $$x$$ E'\\'' ?1 $1 :n @v /* /* */ x";
        assert_eq!(
            kinds(Dialect::Postgres, "$$x$$ E'\\'' $1 /* /* */ */ a"),
            [
                (String, "$$x$$"),
                (String, "E'\\''"),
                (Parameter, "$1"),
                (Word, "a")
            ]
        );
        assert_eq!(
            kinds(Dialect::Sqlite, "[a] `b` ?1 :n @v $x /* /* */ y"),
            [
                (QuotedIdent, "[a]"),
                (QuotedIdent, "`b`"),
                (Parameter, "?1"),
                (Parameter, ":n"),
                (Parameter, "@v"),
                (Parameter, "$x"),
                (Word, "y")
            ]
        );
        assert_eq!(
            kinds(Dialect::Mssql, "[a]]b] N'x' @v @@ROWCOUNT /* /* */ */ 1x"),
            [
                (QuotedIdent, "[a]]b]"),
                (String, "N'x'"),
                (Parameter, "@v"),
                (Parameter, "@@ROWCOUNT"),
                (Number, "1"),
                (Word, "x")
            ]
        );
        // PostgreSQL's operator runs: a trailing sign is split off unless the run holds
        // one of ~!@#%^&|`?.
        assert_eq!(kinds(Dialect::Postgres, "a=-1")[1], (Operator, "="));
        assert_eq!(kinds(Dialect::Postgres, "a!=-1")[1], (Operator, "!=-"));
        // PostgreSQL nests the comment, which is then unterminated.
        assert!(lex(Dialect::Postgres, sql).is_err());
        // SQLite has no `E''`: the backslash does not escape, the string runs on.
        assert!(lex(Dialect::Sqlite, sql).is_err());
        assert!(lex(Dialect::Postgres, "'open").is_err());
        assert!(lex(Dialect::Postgres, "/* /* */").is_err());
        assert_eq!(lex(Dialect::Sqlite, "/* /* */").unwrap().tokens, []);
    }

    fn refused(sql: &str) -> Vec<String> {
        portable_problems(sql)
            .into_iter()
            .map(|p| p.message)
            .collect()
    }

    #[test]
    fn the_portable_subset() {
        for ok in [
            "UPDATE T SET a = @a, \"b c\" = 'it''s' WHERE (x <> 1.5e3 OR y != -2) -- note\n AND z = @z",
            "UPDATE T SET a = CAST(@a AS INTEGER) /* plain */ WHERE a=-1 AND b<=2",
            "UPDATE T SET a = 'x\r\ny'\r\nWHERE b = 'é'",
        ] {
            assert_eq!(refused(ok), Vec::<String>::new(), "{ok}");
        }
        for (bad, says) in [
            ("a = [b]", "bracket quoting"),
            ("a = `b`", "backtick"),
            ("a = $$x$$", "dollar-quoted"),
            ("a = E'x'", "prefixed string"),
            ("a = N'x'", "prefixed string"),
            ("a = X'00'", "prefixed string"),
            ("a = 'x\\'", "backslash"),
            ("a = U&\"x\"", "PostgreSQL-only identifier"),
            ("a = $1", "placeholder"),
            ("a = ?", "`?`"),
            ("a = :x", "placeholder"),
            ("a = @@ROWCOUNT", "system variable"),
            ("a = 1 /* /* */ */", "inside a block comment"),
            ("a = 1 /* open", "unterminated"),
            ("a = 1 /* ", "unterminated"),
            ("a = 'x'\n'y'", "two string literals"),
            ("a = 1 /*/", "unterminated"),
            ("a = 1; DELETE FROM t", "`;`"),
            ("a = 1\nGO\n", "batch separator"),
            ("a = 1 -- x\r b", "carriage return"),
            ("a = b || c", "CONCAT"),
            ("a = b::int", "CAST"),
            ("a != -1 AND b !=-1", "two operators"),
            ("a = 0x10", "hexadecimal"),
            ("a = 1x", "run into"),
            ("a$b = 1", "ASCII letters"),
            ("a = #t", "placeholder"),
        ] {
            let found = refused(bad);
            assert!(found.iter().any(|m| m.contains(says)), "{bad}: {found:?}");
        }
    }

    #[test]
    fn a_text_written_for_one_dialect() {
        let refused = |d: Dialect, sql: &str| -> Vec<String> {
            dialect_problems(d, sql)
                .into_iter()
                .map(|p| p.message)
                .collect()
        };
        // Each dialect's own forms, refused by the portable subset, accepted alone.
        for (d, ok) in [
            (
                Dialect::Postgres,
                "UPDATE T SET a = $$it's$$ || E'\\n', b = x::bigint /* a /* nested */ one */ \
                 WHERE c @> @tags AND d = N'x'",
            ),
            (
                Dialect::Sqlite,
                "UPDATE T SET [a] = `b` || 'x', c = X'00' WHERE d == @d AND e = 0x10",
            ),
            (
                Dialect::Mssql,
                "UPDATE T SET [a]]b] = N'x', c += 1 /* a /* nested */ one */ WHERE d = 0x10 \
                 AND e = 'a\\b'",
            ),
        ] {
            assert_eq!(refused(d, ok), Vec::<String>::new(), "{d}: {ok}");
            assert!(!portable_problems(ok).is_empty(), "{ok}");
        }
        // What the macro cannot bind, or the one database reads ambiguously.
        for (d, bad, says) in [
            (Dialect::Postgres, "a = $1", "placeholder"),
            (
                Dialect::Postgres,
                "a = 'x\\'",
                "`standard_conforming_strings`",
            ),
            (
                Dialect::Postgres,
                "a = N'x\\'",
                "`standard_conforming_strings`",
            ),
            (Dialect::Postgres, "a = 0x10", "version 16"),
            (Dialect::Postgres, "a = 1_000", "version 16"),
            (Dialect::Postgres, "a = 'x'\n'y'", "two string literals"),
            (Dialect::Postgres, "a = [b]", "means nothing to PostgreSQL"),
            (Dialect::Postgres, "a = 1; DELETE FROM t", "`;`"),
            (Dialect::Postgres, "a = $$x", "unterminated"),
            (Dialect::Sqlite, "a = ?1", "placeholder"),
            (Dialect::Sqlite, "a = :x", "placeholder"),
            (Dialect::Sqlite, "a = $$x$$", "parameter to SQLite"),
            (
                Dialect::Sqlite,
                "a = 1 /* /* */ */",
                "inside a block comment",
            ),
            (Dialect::Sqlite, "a = 1 /* open", "unterminated"),
            (Dialect::Sqlite, "a = []", "empty quoted identifier"),
            (Dialect::Mssql, "a = @@ROWCOUNT", "system variable"),
            (Dialect::Mssql, "a = 1x", "alias"),
            (Dialect::Mssql, "a = 1\nGO\n", "batch separator"),
            (Dialect::Mssql, "a = $$x$$", "means nothing to SQL Server"),
            (Dialect::Mssql, "a = `b`", "means nothing to SQL Server"),
            (Dialect::Mssql, "a = 1 -- x\r b", "carriage return"),
        ] {
            let found = refused(d, bad);
            assert!(
                found.iter().any(|m| m.contains(says)),
                "{d}: {bad}: {found:?}"
            );
        }
    }

    fn table() -> FencedTable {
        FencedTable::default()
    }

    fn statement(d: Dialect, condition: Option<&str>) -> String {
        let t = table();
        let name = t.name().quoted(d);
        match condition {
            Some(c) => format!(
                "UPDATE {name} SET Payload = {} WHERE ({c}) AND {}",
                d.placeholder(1),
                fence_predicate(d, &t, 2)
            ),
            None => format!(
                "UPDATE {name} SET Payload = {} WHERE {}",
                d.placeholder(1),
                fence_predicate(d, &t, 2)
            ),
        }
    }

    #[test]
    fn a_fenced_statement_passes_in_every_dialect() {
        for d in DIALECTS {
            for c in [
                None,
                Some("a = 1 OR b = 'x'"),
                Some("a IN (SELECT 1) AND b BETWEEN 1 AND 2"),
            ] {
                let sql = statement(d, c);
                assert_eq!(check_fenced(d, &sql, &table(), 1), Ok(()), "{sql}");
            }
            let t = table();
            let publication = format!(
                "UPDATE {} SET Payload = {}, {} WHERE {} AND {}",
                t.name().quoted(d),
                d.placeholder(1),
                publish_once_assignment(d, &t, 2),
                fence_predicate(d, &t, 2),
                publish_once_predicate(d, &t, 2)
            );
            assert_eq!(
                check_fenced(d, &publication, &t, 1),
                Ok(()),
                "{publication}"
            );
        }
    }

    #[test]
    fn an_escaped_fence_is_refused() {
        let t = table();
        for d in DIALECTS {
            let fence = fence_predicate(d, &t, 2);
            let name = t.name().quoted(d);
            let p1 = d.placeholder(1);
            let cases = [
                // The caller's text closes the group: the fence is one arm of an OR.
                (
                    format!(
                        "UPDATE {name} SET Payload = {p1} WHERE (a = 1) OR (1 = 1) AND {fence}"
                    ),
                    "one parenthesised group",
                ),
                (
                    format!("UPDATE {name} SET Payload = {p1} WHERE (a = 1) AND {fence} OR 1 = 1"),
                    "does not end",
                ),
                (
                    format!("UPDATE {name} SET Payload = {p1} WHERE a = 1"),
                    "does not end",
                ),
                (
                    format!(
                        "UPDATE {name} SET Payload = {p1} WHERE (a = 1) AND {fence}; DELETE FROM x"
                    ),
                    "`;`",
                ),
                (
                    format!(
                        "UPDATE {name} SET Payload = {p1} WHERE (a = {}) AND {fence}",
                        d.placeholder(9)
                    ),
                    "not a parameter",
                ),
                (
                    format!("UPDATE {name} SET Payload = {p1}, \"Generation\" = 0 WHERE {fence}"),
                    "fencing protocol",
                ),
                (
                    format!("UPDATE {name} SET Payload = {p1}, LeaseEpoch = 0 WHERE {fence}"),
                    "fencing protocol",
                ),
                (
                    format!("UPDATE {name} SET Payload = {p1} WHERE (a = 1) AND {fence} -- x"),
                    "comment",
                ),
                (
                    format!("UPDATE Other SET Payload = {p1} WHERE {fence}"),
                    "not the store's table",
                ),
                (
                    format!("UPDATE OR REPLACE {name} SET Payload = {p1} WHERE {fence}"),
                    "UPDATE OR",
                ),
                (
                    format!("UPDATE {name} SET Payload = {p1} WHERE {fence} OPTION (MAXDOP 1)"),
                    "does not end",
                ),
                (
                    format!(
                        // fenced-lint: allow(unanalysed-write) a statement the check must refuse
                        "UPDATE {name} SET Payload = {p1} FROM Other AS ReportPublication WHERE {fence}"
                    ),
                    "names the fenced table again",
                ),
            ];
            for (sql, says) in cases {
                let found = check_fenced(d, &sql, &t, 1);
                assert!(
                    found.as_ref().is_err_and(|p| p.message.contains(says)),
                    "{d}: {sql}: {found:?}"
                );
            }
        }
        // What each database reads as a string or comment cannot hide the structure:
        // PostgreSQL's dollar quote, SQL Server's nested comment.
        let fence = fence_predicate(Dialect::Postgres, &t, 2);
        let sql = format!(
            // fenced-lint: allow(unfenced-write) a statement the check must refuse: PostgreSQL reads the fence as an arm of an OR
            "UPDATE \"ReportPublication\" SET Payload = $1 WHERE (a = $$) AND x = ($$) OR (1 = 1) AND {fence}"
        );
        assert!(check_fenced(Dialect::Postgres, &sql, &t, 1).is_err());
        // An empty string is two quotes, not an opening quote and an escaped one: read
        // the other way, `'' = '') OR ('y` would be one string and the fence would seem
        // to follow one group, while every database reads an `OR` whose first arm holds
        // on every row.
        for d in DIALECTS {
            let sql = format!(
                "UPDATE {} SET Payload = {} WHERE ('' = '') OR ('y' = 'y''') AND {}",
                t.name().quoted(d),
                d.placeholder(1),
                fence_predicate(d, &t, 2)
            );
            let found = check_fenced(d, &sql, &t, 1);
            assert!(
                found
                    .as_ref()
                    .is_err_and(|p| p.message.contains("one parenthesised group")),
                "{d}: {found:?}"
            );
        }
        assert_eq!(
            kinds(Dialect::Sqlite, "'' = '''x'"),
            [
                (TokenKind::String, "''"),
                (TokenKind::Operator, "="),
                (TokenKind::String, "'''x'")
            ]
        );
    }

    #[test]
    fn fenced_sql_is_checked_when_made_and_used() {
        use crate::FencedSql;
        let t = table();
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let [pg, lite, ms] = DIALECTS.map(|d| leak(statement(d, Some("a = 1"))));
        let sql = FencedSql::new(&t, 1, pg, lite, ms).expect("fenced");
        for d in DIALECTS {
            assert_eq!(
                sql.check_use(&t, d, 1).map_err(|e| e.to_string()),
                Ok(sql.for_dialect(d).unwrap())
            );
        }
        assert!(sql.check_use(&t, Dialect::Sqlite, 2).is_err());
        let other = FencedTable::builder()
            .epoch_table("OtherEpoch")
            .build()
            .unwrap();
        assert!(sql.check_use(&other, Dialect::Sqlite, 1).is_err());
        // Written for one database: the others refuse it, saying so.
        let only = FencedSql::only(&t, 1, Dialect::Postgres, pg).expect("fenced");
        assert_eq!(only.check_use(&t, Dialect::Postgres, 1).ok(), Some(pg));
        assert_eq!(only.for_dialect(Dialect::Sqlite), None);
        let error = only
            .check_use(&t, Dialect::Sqlite, 1)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("written for postgresql only, not for sqlite"),
            "{error}"
        );
        // Checked as the one database reads it.
        assert!(FencedSql::only(&t, 1, Dialect::Sqlite, pg).is_err());
        // One dialect's text unfenced: refused, naming the dialect.
        let unfenced = leak(format!(
            // fenced-lint: allow(unfenced-write) a statement the check must refuse: the fence is an arm of an OR
            "UPDATE \"ReportPublication\" SET Payload = ?1 WHERE (a = 1) OR {}",
            fence_predicate(Dialect::Sqlite, &t, 2)
        ));
        let error = FencedSql::new(&t, 1, pg, unfenced, ms)
            .unwrap_err()
            .to_string();
        assert!(error.contains("sqlite statement is not fenced"), "{error}");
    }

    #[test]
    fn a_portable_refusal_names_the_dialect_that_would_accept_it() {
        let hint = |sql: &str| {
            portable_problems(sql)
                .into_iter()
                .map(|p| p.message)
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(
            hint("UPDATE t SET a = $$x$$").contains("add `dialect = \"postgres\"`"),
            "{}",
            hint("UPDATE t SET a = $$x$$")
        );
        let brackets = hint("UPDATE t SET [a] = 1");
        assert!(
            brackets.contains("`dialect = \"sqlite\"` or `dialect = \"mssql\"`"),
            "{brackets}"
        );
        // The control: what no database's own reading accepts gets no such hint.
        let joined = hint("UPDATE t SET a = 'x' 'y'");
        assert!(
            !joined.is_empty() && !joined.contains("dialect ="),
            "{joined}"
        );
    }
}
