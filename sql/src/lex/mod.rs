//! One SQL lexer, with a reading per database and a tolerant one.
//!
//! Each database's reading follows its own tokenizer where it decides where a token
//! ends: quotes of every form, comments (nested or not), parameters, dollar quotes,
//! numbers and operator runs (PostgreSQL's `scan.l` and "Lexical Structure", SQLite's
//! `tokenize.c`, SQL Server's "Database identifiers", "Constants" and "Comments"). Like
//! its server, it refuses a text it cannot split ([`lex_as`]); [`lex_caller`] reads a
//! `#[fenced_write]` text, whose `@name` placeholders the macro binds.
//!
//! The tolerant reading ([`lex`]) is the lint's, for a file whose database it does not
//! know: every database's quotes, parameters and operators at once, and it never fails.
//! Anything it does not recognise becomes a one-character [`TokenKind::Other`] token, so
//! a strange construct costs one statement at most, never a file. Lines that only hold
//! `GO` (optionally with a count) become [`TokenKind::BatchSeparator`]; SQLCMD lines
//! (`:setvar`, `:r`, ...) and psql meta-commands are skipped, as is `COPY ... FROM stdin`
//! data; `$(var)` and SSMS template placeholders (`<name, type, value>`) become
//! [`TokenKind::Placeholder`].
//!
//! In every reading, comments are returned apart from the tokens (suppressions live in
//! them).

mod marks;
mod mode;
mod mssql;
mod name;
mod postgres;
mod quoted;
mod scan;
mod server;
mod sqlite;
mod tolerant;

use std::ops::Range;

pub(crate) use marks::Marks;

use crate::words::WordSet;
use crate::{Dialect, SqlError};

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// A keyword or a bare identifier.
    Word,
    /// A quoted identifier: `"x"`, and in their readings `[x]`, `` `x` ``, `U&"x"`.
    QuotedIdent,
    /// A string literal: `'x'`, and in their readings `E'x'`, `N'x'`, `X'00'`, `B'01'`,
    /// `U&'x'`, `$tag$x$tag$`.
    String,
    /// A numeric literal (SQL Server's `$1.5` money included).
    Number,
    /// A parameter or variable: `$1`, `?`, `?1`, `:x`, `@x`, `$x`, `#x`, `@@x`.
    Parameter,
    /// `$(var)` or an SSMS template placeholder `<name, type, value>` (tolerant
    /// reading).
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
    /// An operator, as the reading splits operator characters: `=`, `<>`, `::`, `->>`.
    Operator,
    /// A `GO` line (tolerant reading).
    BatchSeparator,
    /// A character the reading gives no meaning to here (one character).
    Other,
}

/// A token: its kind and byte range in the text.
///
/// The range is kept in 32 bits: a token is lexed for every few bytes of a file, and
/// half the size is half the memory written. [`lex`] reads at most the first 4 GiB of a
/// text; the databases' readings refuse a longer one.
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
    /// The tokens the analysis looks for (tolerant reading).
    pub(crate) marks: Marks,
}

/// Lexes `text` in the tolerant reading.
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

/// [`lex`] into buffers already allocated: `out` is cleared first.
pub fn lex_reusing(text: &str, out: &mut Lexed) {
    let text = within_token_ranges(text);
    out.tokens.clear();
    out.comments.clear();
    let mut marks = std::mem::take(&mut out.marks);
    marks.clear();
    // About one token in six bytes of SQL: one allocation, not a dozen doublings. A
    // buffer too small is replaced, not grown: growing would copy its old capacity.
    let expected = text.len() / 6;
    if out.tokens.capacity() < expected {
        out.tokens = Vec::with_capacity(expected);
    }
    // The tolerant reading never fails.
    let _ = scan::scan::<mode::Tolerant>(text, 0, 0, out, &mut marks);
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

/// Splits `sql` as `dialect`'s server does.
///
/// # Errors
///
/// An unterminated string, quoted identifier, dollar quote or block comment, a number
/// run into a word where the server refuses one, a text longer than 4 GiB: anything the
/// server itself would fail to split.
pub fn lex_as(dialect: Dialect, sql: &str) -> Result<Lexed, SqlError> {
    match dialect {
        Dialect::Postgres => strict::<mode::Postgres<false>>(sql),
        Dialect::Sqlite => strict::<mode::Sqlite<false>>(sql),
        Dialect::Mssql => strict::<mode::Mssql<false>>(sql),
    }
}

/// Splits a `#[fenced_write]` text as `dialect` would once the macro has replaced every
/// `@name` by that dialect's numbered parameter: `@name` is one [`TokenKind::Parameter`]
/// in every dialect.
///
/// # Errors
///
/// As [`lex_as`].
pub fn lex_caller(dialect: Dialect, sql: &str) -> Result<Lexed, SqlError> {
    match dialect {
        Dialect::Postgres => strict::<mode::Postgres<true>>(sql),
        Dialect::Sqlite => strict::<mode::Sqlite<true>>(sql),
        Dialect::Mssql => strict::<mode::Mssql<true>>(sql),
    }
}

fn strict<M: mode::Mode>(sql: &str) -> Result<Lexed, SqlError> {
    if within_token_ranges(sql).len() < sql.len() {
        return Err(SqlError::new(
            0..sql.len(),
            "a text longer than 4 GiB, which is no statement",
        ));
    }
    let mut out = Lexed::default();
    scan::scan::<M>(sql, 0, 0, &mut out, &mut Marks::default()).map_err(|e| *e)?;
    Ok(out)
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

/// The name a bare or quoted identifier token stands for, as its database reads it:
/// `"a""b"` is `a"b`, `[a]]b]` is `a]b`, PostgreSQL's `U&"d\0061t"` is `dat` (the
/// escape `\`; a name followed by `UESCAPE` is decoded by the parser). Any other
/// token is its text.
pub fn ident_name<'a>(text: &'a str, token: &Token) -> std::borrow::Cow<'a, str> {
    name::unquoted(text, token, '\\')
}

/// [`ident_name`], PostgreSQL's Unicode escapes introduced by `escape` (what a
/// `UESCAPE` after the name says).
pub(crate) fn ident_name_escaped<'a>(
    text: &'a str,
    token: &Token,
    escape: char,
) -> std::borrow::Cow<'a, str> {
    name::unquoted(text, token, escape)
}

/// The identifier a token denotes, as written between its quotes: quotes, brackets and
/// PostgreSQL's `U&` removed (a doubled quote stays doubled, an escape undecoded); for
/// a template placeholder, its default value.
pub fn ident_text<'a>(text: &'a str, token: &Token) -> &'a str {
    // A token made by hand may lie outside the text: it names nothing.
    let raw = text.get(token.range()).unwrap_or("");
    match token.kind {
        TokenKind::QuotedIdent => {
            let raw = match raw.get(..2) {
                Some("U&" | "u&") => &raw[2..],
                _ => raw,
            };
            // The opening quote is ASCII; the closing one may be missing (end of input).
            let Some(inner) = raw.get(1..) else {
                return raw;
            };
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
    use crate::words::STATEMENT_WORDS;

    fn kinds(text: &str) -> Vec<(TokenKind, &str)> {
        lex(text)
            .tokens
            .iter()
            .map(|t| (t.kind, &text[t.range()]))
            .collect()
    }

    fn own(d: Dialect, text: &str) -> Vec<(TokenKind, &str)> {
        lex_as(d, text)
            .unwrap()
            .tokens
            .iter()
            .map(|t| (t.kind, &text[t.range()]))
            .collect()
    }

    #[test]
    fn each_dialect_splits_its_own_forms() {
        use TokenKind::*;
        let sql = "[a] `b` $$x$$ E'\\'' ?1 $1 :n @v /* /* */ x";
        assert_eq!(
            own(Dialect::Postgres, "$$x$$ E'\\'' $1 /* /* */ */ a"),
            [
                (String, "$$x$$"),
                (String, "E'\\''"),
                (Parameter, "$1"),
                (Word, "a")
            ]
        );
        assert_eq!(
            own(Dialect::Sqlite, "[a] `b` ?1 :n @v $x /* /* */ y"),
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
            own(Dialect::Mssql, "[a]]b] N'x' @v @@ROWCOUNT /* /* */ */ 1x"),
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
        assert_eq!(own(Dialect::Postgres, "a=-1")[1], (Operator, "="));
        assert_eq!(own(Dialect::Postgres, "a!=-1")[1], (Operator, "!=-"));
        // PostgreSQL nests the comment, which is then unterminated.
        assert!(lex_as(Dialect::Postgres, sql).is_err());
        // SQLite has no `E''`: the backslash does not escape, the string runs on.
        assert!(lex_as(Dialect::Sqlite, sql).is_err());
        assert!(lex_as(Dialect::Postgres, "'open").is_err());
        assert!(lex_as(Dialect::Postgres, "/* /* */").is_err());
        assert_eq!(lex_as(Dialect::Sqlite, "/* /* */").unwrap().tokens, []);
        // Each server's refusals say what and where.
        for (d, text, says) in [
            (
                Dialect::Postgres,
                "a = 1x",
                "a number run into a word (`1x`), which PostgreSQL refuses",
            ),
            (Dialect::Sqlite, "a = [b", "an unterminated `[`"),
            (
                Dialect::Mssql,
                "a = [b",
                "a `[` identifier without its closing `]`",
            ),
            (
                Dialect::Postgres,
                "a = $t$x",
                "an unterminated dollar quote `$t$` (PostgreSQL)",
            ),
            (
                Dialect::Mssql,
                "a = 'x",
                "an unterminated string literal (SQL Server)",
            ),
        ] {
            let error = lex_as(d, text).unwrap_err();
            assert_eq!(error.message, says, "{d}: {text}");
            assert_eq!(error.range.end, text.len(), "{d}: {text}");
        }
    }

    /// `#[fenced_write]`'s `@name` is one parameter in every reading of a caller's
    /// text, also where the database reads `@` otherwise (PostgreSQL: an operator).
    #[test]
    fn a_caller_text_reads_at_names_as_placeholders() {
        use TokenKind::*;
        for d in Dialect::ALL {
            let text = "a=@größe AND b = @_x$";
            let caller: Vec<(TokenKind, std::string::String)> = lex_caller(d, text)
                .unwrap()
                .tokens
                .iter()
                .map(|t| (t.kind, text[t.range()].to_owned()))
                .collect();
            assert_eq!(caller[2], (Parameter, "@größe".to_owned()), "{d}");
            assert_eq!(caller[6], (Parameter, "@_x".to_owned()), "{d}");
        }
        // The control: PostgreSQL's own reading makes `=@` one operator.
        assert_eq!(own(Dialect::Postgres, "a=@b")[1], (Operator, "=@"));
    }

    /// PostgreSQL's Unicode-escaped name is one quoted name in its reading and in the
    /// tolerant one (which must not take `U` for a table); the others read `U & "x"`.
    #[test]
    fn unicode_escaped_names() {
        use TokenKind::*;
        let text = "UPDATE U&\"Rep\\006frt\" SET a = 1";
        assert_eq!(
            own(Dialect::Postgres, text)[1],
            (QuotedIdent, "U&\"Rep\\006frt\"")
        );
        assert_eq!(kinds(text)[1], (QuotedIdent, "U&\"Rep\\006frt\""));
        assert_eq!(ident_text(text, &lex(text).tokens[1]), "Rep\\006frt");
        for d in [Dialect::Sqlite, Dialect::Mssql] {
            assert_eq!(
                own(d, text)[1..4],
                [
                    (Word, "U"),
                    (Operator, "&"),
                    (QuotedIdent, "\"Rep\\006frt\"")
                ],
                "{d}"
            );
        }
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

    /// A token made by hand names what its range covers, and nothing outside the text.
    #[test]
    fn names_of_tokens_made_by_hand() {
        let made = |kind, range| Token::new(kind, range);
        assert_eq!(ident_text("ab", &made(TokenKind::QuotedIdent, 5..9)), "");
        assert_eq!(ident_name("ab", &made(TokenKind::QuotedIdent, 5..9)), "");
        assert_eq!(
            ident_name("é\"x\"", &made(TokenKind::QuotedIdent, 0..2)),
            "é"
        );
        assert_eq!(
            ident_text("é\"x\"", &made(TokenKind::QuotedIdent, 0..2)),
            "é"
        );
        assert_eq!(
            ident_name("\"a\"\"b\"", &made(TokenKind::QuotedIdent, 0..6)),
            "a\"b"
        );
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
