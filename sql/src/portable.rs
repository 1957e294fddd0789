//! The SQL that PostgreSQL, SQLite and SQL Server read alike, for `#[fenced_write]`
//! texts: the macro sends one text to every database, so it accepts a text only where
//! all three split it into the same tokens with the same meaning, or, for a method
//! written for one database, only where that database's own reading is unambiguous and
//! the macro can bind it. Each problem says what to write instead.

use crate::Dialect;
use crate::SqlError;
use crate::lex::{Token, TokenKind, lex_caller};

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
pub fn portable_problems(sql: &str) -> Vec<SqlError> {
    let mut problems = subset_problems(sql, &Dialect::ALL);
    if problems.is_empty() {
        return problems;
    }
    let own: Vec<(Dialect, Vec<SqlError>)> = Dialect::ALL
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
pub fn dialect_problems(dialect: Dialect, sql: &str) -> Vec<SqlError> {
    subset_problems(sql, &[dialect])
}

/// [`portable_problems`] for all three dialects, [`dialect_problems`] for one.
fn subset_problems(sql: &str, dialects: &[Dialect]) -> Vec<SqlError> {
    let portable = dialects.len() > 1;
    let mut problems: Vec<SqlError> = Vec::new();
    let mut add = |p: SqlError| add_problem(&mut problems, p);
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
            add(SqlError::new(
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
        unreadable.push(SqlError::new(
            p.range,
            if portable {
                format!(
                    "{}: {} splits this text differently or not at all; close every string, \
                     quoted identifier and comment, and use only the forms all three databases \
                     share",
                    p.message,
                    d.name()
                )
            } else {
                format!(
                    "{}: {} cannot split this text; close every string, quoted identifier and \
                     comment",
                    p.message,
                    d.name()
                )
            },
        ));
    }
    for (d, l) in &lexed {
        for c in &l.comments {
            let r = &c.range;
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
                add(SqlError::new(
                    r.clone(),
                    "a `/*` inside a block comment: PostgreSQL and SQL Server nest block \
                     comments, SQLite does not, so they disagree on where it ends; remove the \
                     inner `/*` or use `--` comments",
                ));
            } else if !closed {
                add(SqlError::new(
                    r.clone(),
                    "an unterminated `/*` comment: close it with `*/`",
                ));
            }
        }
        let tokens = &l.tokens;
        for (n, t) in tokens.iter().enumerate() {
            if let Some(message) = token_problem(*d, portable, sql, tokens, n) {
                add(SqlError::new(t.range(), message));
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
                    .map_or(0..sql.len(), |t| t.range());
                add_problem(
                    &mut problems,
                    SqlError::new(
                        range.clone(),
                        format!(
                            "PostgreSQL and {} split this text differently at `{}`: put spaces \
                         between operators and use only the forms all three databases share",
                            d.name(),
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
fn add_problem(problems: &mut Vec<SqlError>, p: SqlError) {
    let overlaps = |q: &SqlError| q.range.start < p.range.end && p.range.start < q.range.end;
    let contained = |q: &SqlError| {
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
    let text = &sql[t.range()];
    let previous = n.checked_sub(1).map(|p| &tokens[p]);
    let touches_word_before = previous.is_some_and(|p| {
        p.range().end == t.range().start && matches!(p.kind, TokenKind::Word | TokenKind::Number)
    });
    let after = sql[t.range().end..].chars().next();
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
                let p = previous.map_or("", |p| &sql[p.range()]);
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
                        p.range().end == t.range().start
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
                    d.name()
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
            d.name()
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
        // Only the tolerant reading makes these.
        TokenKind::Placeholder | TokenKind::BatchSeparator => None,
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
        // Its escapes (and a `UESCAPE` after it) could spell any name, a protocol
        // column's or a protected table's among them, while the macro compares names
        // as written.
        TokenKind::QuotedIdent if text.starts_with(['U', 'u']) => Some(format!(
            "`{text}` is a Unicode-escaped name, whose escapes could spell any name: \
             write it as a plain quoted identifier, \"name\""
        )),
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

#[cfg(test)]
mod tests {
    use super::*;

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
            (Dialect::Postgres, "a = U&\"x\"", "Unicode-escaped name"),
            (
                Dialect::Postgres,
                "U&\"\\0061\" = 1",
                "Unicode-escaped name",
            ),
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
