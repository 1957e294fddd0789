//! How the guard reads SQL: each database's own reading ([`fenced_sql::lex`]), and the
//! check built on it that a final statement carries its fence.
//!
//! [`check_fenced`] re-reads a final statement with its database's lexer and verifies
//! that the fence is a conjunct of the top-level `WHERE`: every
//! [`FencedSql`](super::FencedSql) is checked with it when it is made, and
//! `#[fenced_write]` checks every statement it renders with it. [`portable_problems`]
//! and [`dialect_problems`] are the forms `#[fenced_write]` accepts
//! ([`fenced_sql::portable`]).

pub use fenced_sql::SqlError as SqlProblem;
pub use fenced_sql::lex::{Comment, Lexed, Token, TokenKind};
pub use fenced_sql::portable::{PORTABLE_OPERATORS, portable_problems};

use super::Dialect;

impl From<Dialect> for fenced_sql::Dialect {
    fn from(dialect: Dialect) -> fenced_sql::Dialect {
        match dialect {
            Dialect::Postgres => fenced_sql::Dialect::Postgres,
            Dialect::Sqlite => fenced_sql::Dialect::Sqlite,
            Dialect::Mssql => fenced_sql::Dialect::Mssql,
        }
    }
}

/// Splits `sql` as `dialect`'s server does ([`fenced_sql::lex::lex_as`]).
///
/// # Errors
///
/// An unterminated string, quoted identifier, dollar quote or block comment, and
/// anything else the server itself would fail to split.
pub fn lex(dialect: Dialect, sql: &str) -> Result<Lexed, SqlProblem> {
    fenced_sql::lex::lex_as(dialect.into(), sql)
}

/// Splits a caller's text as `dialect` would once the macro has replaced every `@name`
/// by that dialect's numbered parameter: `@name` is one [`TokenKind::Parameter`] in
/// every dialect ([`fenced_sql::lex::lex_caller`]).
///
/// # Errors
///
/// As [`lex`].
pub fn lex_caller(dialect: Dialect, sql: &str) -> Result<Lexed, SqlProblem> {
    fenced_sql::lex::lex_caller(dialect.into(), sql)
}

/// Every reason `sql`, a caller's text for a `#[fenced_write]` method that declares
/// `dialect` as its one database, cannot be sent to it as written
/// ([`fenced_sql::portable::dialect_problems`]).
pub fn dialect_problems(dialect: Dialect, sql: &str) -> Vec<SqlProblem> {
    fenced_sql::portable::dialect_problems(dialect.into(), sql)
}

/// The name a quoted or bare identifier token stands for.
fn unquoted(sql: &str, token: &Token) -> String {
    fenced_sql::lex::ident_name(sql, token).into_owned()
}

fn is_word(sql: &str, token: &Token, word: &str) -> bool {
    token.kind == TokenKind::Word && sql[token.range()].eq_ignore_ascii_case(word)
}

/// A token's kind and text, keywords in upper case: what two renderings are compared by.
fn shape<'a>(sql: &'a str, tokens: &[Token]) -> Vec<(TokenKind, std::borrow::Cow<'a, str>)> {
    tokens
        .iter()
        .map(|t| {
            let text = &sql[t.range()];
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
        return Err(SqlProblem::new(
            c.range.clone(),
            "a comment in a fenced statement: remove it (it could hide or end text)",
        ));
    }
    let tokens = &lexed.tokens;
    let whole = 0..sql.len();
    let text = |t: &Token| &sql[t.range()];

    // Parameters: only the numbered ones the guard binds.
    let bound: Vec<String> = (1..=params + 3).map(|n| d.placeholder(n)).collect();
    for t in tokens {
        match t.kind {
            TokenKind::Semicolon => {
                return Err(SqlProblem::new(
                    t.range(),
                    "`;` in a fenced statement: it must be exactly one statement",
                ));
            }
            TokenKind::Parameter if !bound.iter().any(|b| b == text(t)) => {
                return Err(SqlProblem::new(
                    t.range(),
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
                    return Err(SqlProblem::new(t.range(), "a `)` without its `(`"));
                };
                matching[o] = i;
                level -= 1;
                depth.push(level);
            }
            _ => depth.push(level),
        }
    }
    if let Some(&o) = open.last() {
        return Err(SqlProblem::new(tokens[o].range(), "a `(` without its `)`"));
    }

    // UPDATE <table>.
    if !tokens.first().is_some_and(|t| is_word(sql, t, "UPDATE")) {
        return Err(SqlProblem::new(
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
        return Err(SqlProblem::new(
            tokens[i].range(),
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
        let at = tokens.get(name_start).map_or(whole.clone(), |t| t.range());
        return Err(SqlProblem::new(
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
        return Err(SqlProblem::new(
            wheres.get(1).map_or(whole.clone(), |&k| tokens[k].range()),
            "a fenced statement has exactly one top-level `WHERE`, which ends with the fence",
        ));
    };
    let w = *w;
    let Some(set) = top[..]
        .iter()
        .copied()
        .find(|&k| k < w && is_word(sql, &tokens[k], "SET"))
    else {
        return Err(SqlProblem::new(whole, "expected `SET` before the `WHERE`"));
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
            return Err(SqlProblem::new(
                tokens[w + 1].range(),
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
        return Err(SqlProblem::new(
            tokens[w].range().start..sql.len(),
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
                return Err(SqlProblem::new(
                    t.range(),
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
            return Err(SqlProblem::new(
                t.range(),
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

    const DIALECTS: [Dialect; 3] = [Dialect::Postgres, Dialect::Sqlite, Dialect::Mssql];

    fn kinds(d: Dialect, sql: &str) -> Vec<(TokenKind, &str)> {
        lex(d, sql)
            .unwrap()
            .tokens
            .into_iter()
            .map(|t| (t.kind, &sql[t.range()]))
            .collect()
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
}
