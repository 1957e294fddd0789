//! What a caller's statement inside a fenced transaction may not do: end the
//! transaction (or open or roll back to a savepoint, which would release the lease's
//! lock), or write a table only the guard's own statements write.
//!
//! The transaction's lock on the lease's row is what fences its statements, so a
//! statement that ends the transaction turns every later one into an unfenced
//! autocommitted write; and a statement that writes the lease, epoch or operations table
//! can revive a stale lease, undo an epoch advance, or make an operation apply twice.
//!
//! The reading is conservative, so that no spelling slips through: the text is split by
//! its own database's lexer ([`super::lex`]), and a statement that names a protected
//! table anywhere (bare, quoted, bracketed, in any case, under any schema or alias) and
//! has a word that can write anywhere is refused, though it might only read that table.
//! What a database's collation would take for the same name (full-width letters,
//! compatibility case forms) is folded before names are compared.

use super::Dialect;
use super::lex::{self, Lexed, Token, TokenKind};
use crate::table::QualifiedName;

/// Words after which a statement may write, or run code that does. A statement that
/// names a protected table and has one of these anywhere is refused.
pub(super) const WRITING_WORDS: &[&str] = &[
    "INSERT",
    "UPDATE",
    "DELETE",
    "MERGE",
    "REPLACE",
    "UPSERT",
    "TRUNCATE",
    "DROP",
    "ALTER",
    "CREATE",
    "INTO",
    "EXEC",
    "EXECUTE",
    "CALL",
    "DO",
    "COPY",
    "GRANT",
    "REVOKE",
    "RENAME",
    "REINDEX",
    "VACUUM",
    "LOCK",
    "PRAGMA",
    "ATTACH",
    "DETACH",
    "OUTPUT",
    "RETURNING",
];

/// Words that control the transaction at the start of a statement, in some database.
const TRANSACTION_WORDS: &[&str] = &[
    "BEGIN",
    "START",
    "COMMIT",
    "END",
    "ROLLBACK",
    "ABORT",
    "SAVEPOINT",
    "RELEASE",
    "SAVE",
    "PREPARE",
];

/// Why a statement may not run inside a fenced transaction; `None` when it may.
/// `protected` are the tables only the guard writes. A fenced transaction reads each
/// text once per thread ([`super::reading`]).
pub(crate) fn refusal(dialect: Dialect, sql: &str, protected: &[&QualifiedName]) -> Option<String> {
    let lexed = match lex::lex(dialect, sql) {
        Ok(lexed) => lexed,
        Err(problem) => {
            return Some(format!(
                "it does not split into {dialect} tokens: {}",
                problem.message
            ));
        }
    };
    transaction_control(dialect, sql, &lexed).or_else(|| protected_write(sql, &lexed, protected))
}

fn word<'a>(sql: &'a str, token: &Token) -> Option<&'a str> {
    (token.kind == TokenKind::Word).then(|| &sql[token.range()])
}

fn is(sql: &str, token: Option<&Token>, words: &[&str]) -> bool {
    token
        .and_then(|t| word(sql, t))
        .is_some_and(|w| words.iter().any(|x| w.eq_ignore_ascii_case(x)))
}

fn transaction_control(dialect: Dialect, sql: &str, lexed: &Lexed) -> Option<String> {
    let tokens = &lexed.tokens;
    for (i, token) in tokens.iter().enumerate() {
        let Some(text) = word(sql, token) else {
            continue;
        };
        let next = tokens.get(i + 1);
        let at_start = i == 0 || tokens[i - 1].kind == TokenKind::Semicolon;
        let is_one_of = |words: &[&str]| words.iter().any(|w| text.eq_ignore_ascii_case(w));
        // `END` closes a CASE or a T-SQL block anywhere else; `BEGIN` opens a block.
        // On SQL Server `BEGIN ... END` is a block; `BEGIN TRAN` is matched below.
        let controls = if dialect == Dialect::Mssql && is_one_of(&["BEGIN", "END"]) {
            is_transaction_begin(sql, next)
        } else if at_start && is_one_of(TRANSACTION_WORDS) {
            true
        } else if is_one_of(&["COMMIT", "ROLLBACK"]) {
            // T-SQL needs no `;` between statements: `... COMMIT` is a statement anywhere.
            dialect == Dialect::Mssql || at_start
        } else if is_one_of(&["BEGIN", "SAVE"]) {
            dialect == Dialect::Mssql && is_transaction_begin(sql, next)
        } else {
            false
        };
        if controls {
            return Some(format!(
                "`{text}` controls the transaction, whose lock on the lease's row fences \
                 every statement in it; end a fenced transaction through its own commit or \
                 rollback"
            ));
        }
    }
    None
}

/// `TRAN`, `TRANSACTION`, `DISTRIBUTED` or `WORK` after `BEGIN` / `SAVE`.
fn is_transaction_begin(sql: &str, next: Option<&Token>) -> bool {
    is(sql, next, &["TRAN", "TRANSACTION", "DISTRIBUTED", "WORK"])
}

/// Words after which a table's name comes (a `FROM` or `USING` list goes on after
/// each of its commas).
const TABLE_WORDS: &[&str] = &[
    "FROM", "INTO", "UPDATE", "JOIN", "USING", "TABLE", "MERGE", "DELETE", "INSERT", "TRUNCATE",
    "COPY", "ON", "APPLY",
];

/// Words that may stand between a table word and the name: `UPDATE ONLY t`,
/// `DROP TABLE IF EXISTS t`, `FROM LATERAL`, `UPDATE TOP (1) PERCENT t`, SQLite's
/// `UPDATE OR IGNORE t`.
const TRANSPARENT_WORDS: &[&str] = &[
    "ONLY", "IF", "NOT", "EXISTS", "LATERAL", "TOP", "PERCENT", "OR", "ROLLBACK", "ABORT",
    "REPLACE", "FAIL", "IGNORE",
];

/// Words after which a parenthesised group at a table's place holds tables: a
/// parenthesised join, `FROM (t AS a JOIN u ON ...)`, PostgreSQL's `ONLY (t)`.
const GROUP_WORDS: &[&str] = &["FROM", "JOIN", "USING", "APPLY", "ONLY", "LATERAL"];

/// Words that end a `FROM` or `USING` list at its depth.
const LIST_END_WORDS: &[&str] = &[
    "WHERE",
    "GROUP",
    "ORDER",
    "HAVING",
    "LIMIT",
    "WINDOW",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "RETURNING",
    "OUTPUT",
    "SET",
    "VALUES",
    "SELECT",
    "OFFSET",
    "FETCH",
    "FOR",
    "WITH",
];

fn protected_write(sql: &str, lexed: &Lexed, protected: &[&QualifiedName]) -> Option<String> {
    let tokens = &lexed.tokens;
    let mut named = None;
    let mut writes = None;
    // Whether the next name is a table's, and the depths of open FROM/USING lists.
    let mut table_next = false;
    let mut lists: Vec<usize> = Vec::new();
    // The depths at which a group closes before the table's name: `TOP (1) t`.
    let mut resume: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let token = &tokens[i];
        let text = &sql[token.range()];
        let previous = i.checked_sub(1).map(|p| &tokens[p]);
        match token.kind {
            TokenKind::LParen => {
                if table_next && is(sql, previous, &["TOP"]) {
                    resume.push(depth);
                }
                depth += 1;
                if table_next
                    && (is(sql, previous, GROUP_WORDS)
                        || previous.is_some_and(|p| {
                            matches!(p.kind, TokenKind::Comma | TokenKind::LParen)
                        }))
                {
                    // A parenthesised join: its tables are at a table's place, and its
                    // commas separate tables.
                    lists.push(depth);
                    i += 1;
                    continue;
                }
            }
            TokenKind::RParen => {
                lists.retain(|&d| d < depth);
                depth = depth.saturating_sub(1);
                table_next = resume.last() == Some(&depth);
                if table_next {
                    resume.pop();
                    i += 1;
                    continue;
                }
            }
            TokenKind::Comma => table_next = lists.last() == Some(&depth),
            TokenKind::Semicolon => {
                lists.clear();
                table_next = false;
            }
            TokenKind::QuotedIdent if text.starts_with("U&") => {
                // Its escapes could spell any name; PostgreSQL alone reads it.
                return Some(format!(
                    "`{text}` is a Unicode-escaped name, which could spell a table only the \
                     guard writes; write the name as a plain quoted identifier"
                ));
            }
            TokenKind::Word if is(sql, Some(token), WRITING_WORDS) && writes.is_none() => {
                writes = Some(text);
            }
            _ => {}
        }
        if token.kind == TokenKind::Word {
            if is(sql, Some(token), TABLE_WORDS) {
                table_next = true;
                if is(sql, Some(token), &["FROM", "USING"]) {
                    lists.push(depth);
                }
                i += 1;
                continue;
            }
            if table_next && is(sql, Some(token), TRANSPARENT_WORDS) {
                i += 1;
                continue;
            }
            // `WITH (NOLOCK)`, a table hint, goes on with the list.
            let hint = is(sql, Some(token), &["WITH"])
                && tokens
                    .get(i + 1)
                    .is_some_and(|t| t.kind == TokenKind::LParen);
            if lists.last() == Some(&depth) && is(sql, Some(token), LIST_END_WORDS) && !hint {
                lists.pop();
            }
        }
        if table_next && matches!(token.kind, TokenKind::Word | TokenKind::QuotedIdent) {
            // The last part of a dotted name: `db.schema.t`, `[db]..[t]`.
            let mut last = i;
            while tokens
                .get(last + 1)
                .is_some_and(|t| t.kind == TokenKind::Dot)
            {
                let mut next = last + 1;
                while tokens.get(next).is_some_and(|t| t.kind == TokenKind::Dot) {
                    next += 1;
                }
                match tokens.get(next) {
                    Some(t) if matches!(t.kind, TokenKind::Word | TokenKind::QuotedIdent) => {
                        last = next;
                    }
                    _ => break,
                }
            }
            let part = &tokens[last];
            let name = fenced_sql::lex::ident_name(sql, part);
            if named.is_none() {
                named = protected
                    .iter()
                    .find(|t| same_name(&name, t.name().as_str()));
            }
            table_next = false;
            i = last + 1;
            continue;
        }
        if !matches!(token.kind, TokenKind::Comma) {
            table_next = false;
        }
        i += 1;
    }
    match (named, writes) {
        (Some(table), Some(writing)) => Some(format!(
            "it names {table}, which only the guard's own statements write, and `{writing}` \
             can write it; inside a fenced transaction write the lease's table through \
             `Fenced::store()` and never write the epoch or operations tables"
        )),
        _ => None,
    }
}

/// Whether some database could take `name` for `protected`: equal once case is folded
/// (Unicode's, which maps compatibility forms such as the Kelvin sign to ASCII) and
/// full-width forms are read as ASCII (SQL Server's default collations ignore width),
/// within PostgreSQL's first 63 bytes.
fn same_name(name: &str, protected: &str) -> bool {
    const POSTGRES_MAX: usize = 63;
    let folded: String = name
        .chars()
        .map(|c| match c {
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            _ => c,
        })
        .flat_map(char::to_lowercase)
        .collect();
    let folded = folded.as_bytes();
    let protected = protected.to_ascii_lowercase();
    let protected = protected.as_bytes();
    folded[..folded.len().min(POSTGRES_MAX)] == protected[..protected.len().min(POSTGRES_MAX)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables() -> Vec<QualifiedName> {
        ["app.Report", "app.FencedEpoch", "app.FencedOperation"]
            .iter()
            .map(|t| QualifiedName::parse(t).unwrap())
            .collect()
    }

    fn refused(dialect: Dialect, sql: &str) -> bool {
        let tables = tables();
        let protected: Vec<&QualifiedName> = tables.iter().collect();
        refusal(dialect, sql, &protected).is_some()
    }

    const ALL: [Dialect; 3] = [Dialect::Postgres, Dialect::Sqlite, Dialect::Mssql];

    #[test]
    fn plain_writes_of_other_tables_pass() {
        for d in ALL {
            for sql in [
                "INSERT INTO line (report, text) VALUES (1, 'x')",
                "UPDATE line SET text = 'y' WHERE report = 1",
                "DELETE FROM line WHERE report = 1",
                "SELECT Payload FROM Report WHERE ReportId = 1",
                "SELECT CASE WHEN a = 1 THEN 2 END FROM line",
                "UPDATE line SET released = 1, committed = 2",
                "INSERT INTO line (report, fencedepoch) SELECT report, 1 FROM line AS l WHERE l.report = 2",
            ] {
                assert!(!refused(d, sql), "{d}: {sql}");
            }
        }
    }

    #[test]
    fn every_spelling_of_a_protected_table_in_a_write_is_refused() {
        for d in ALL {
            for sql in [
                "DELETE FROM FencedOperation",
                "DELETE FROM fencedoperation WHERE 1 = 1",
                "DELETE FROM app.FENCEDOPERATION",
                "UPDATE \"FencedEpoch\" SET \"Epoch\" = 1",
                "UPDATE \"Report\" SET \"Generation\" = 1 FROM line AS Report",
                "UPDATE r SET Generation = 1 FROM (SELECT * FROM Report) AS r",
                "INSERT INTO line SELECT * FROM Report",
                "WITH x AS (SELECT 1) DELETE FROM \"fencedoperation\" WHERE 1 = 0",
                "UPDATE line SET a = 1 FROM line AS l, app.\"Report\" WHERE 1 = 0",
                "DELETE FROM line USING line AS l JOIN ONLY Report ON true",
                "INSERT INTO line SELECT * FROM (SELECT * FROM x, (SELECT 1 FROM Report) AS y) AS z",
                "DELETE FROM \u{FF32}eport",
                "INSERT INTO FencedOperation (OperationId) VALUES (1)",
            ] {
                assert!(refused(d, sql), "{d}: {sql}");
            }
        }
        assert!(refused(Dialect::Mssql, "DELETE FROM [FencedOperation]"));
        assert!(refused(
            Dialect::Postgres,
            "INSERT INTO U&\"Report\" SELECT * FROM line"
        ));
        assert!(refused(
            Dialect::Postgres,
            "INSERT INTO U&\"\\0052eport\" SELECT * FROM line"
        ));
    }

    #[test]
    fn a_longer_name_that_postgres_truncates_to_a_protected_one_is_refused() {
        let long = format!("{}{}", "A".repeat(63), "Operation");
        let table = QualifiedName::parse(&long[..63]).unwrap();
        assert!(
            refusal(
                Dialect::Postgres,
                &format!("DELETE FROM \"{long}\""),
                &[&table]
            )
            .is_some()
        );
    }

    #[test]
    fn transaction_control_is_refused() {
        for d in ALL {
            for sql in [
                "COMMIT",
                "commit",
                "ROLLBACK",
                "ROLLBACK TO SAVEPOINT a",
                "SAVEPOINT a",
                "RELEASE SAVEPOINT a",
                "BEGIN TRANSACTION",
                "INSERT INTO line VALUES (1); COMMIT",
            ] {
                assert!(refused(d, sql), "{d}: {sql}");
            }
        }
        for sql in [
            "INSERT INTO line VALUES (1) COMMIT",
            "IF 1 = 1 BEGIN TRAN",
            "IF 1 = 1 SAVE TRANSACTION a",
            "INSERT INTO line VALUES (1) ROLLBACK TRANSACTION",
        ] {
            assert!(refused(Dialect::Mssql, sql), "{sql}");
        }
        for d in [Dialect::Postgres, Dialect::Sqlite] {
            assert!(refused(d, "END"), "{d}");
            assert!(refused(d, "BEGIN"), "{d}");
        }
        assert!(!refused(
            Dialect::Mssql,
            "BEGIN INSERT INTO line VALUES (1) END"
        ));
    }

    /// A statement names the table it writes in places other than right after its
    /// keyword: inside a parenthesised join (SQL Server writes the table an alias in it
    /// names), after `TOP (n)` and SQLite's `OR IGNORE`, in a `FROM` list after a table
    /// hint.
    #[test]
    fn a_protected_table_behind_a_group_a_hint_or_a_conflict_clause_is_refused() {
        for d in ALL {
            for sql in [
                "UPDATE p SET Generation = 1 FROM (Report AS p JOIN line AS l ON 1 = 1)",
                "DELETE p FROM line AS l JOIN (other AS o CROSS JOIN app.Report AS p) ON 1 = 1",
                "UPDATE p SET a = 1 FROM ((FencedEpoch AS p JOIN line ON 1 = 1) JOIN o ON 1 = 1)",
                "UPDATE p SET a = 1 FROM line AS l WITH (NOLOCK), FencedOperation AS p",
                "UPDATE TOP (1) Report SET a = 1",
                "DELETE TOP (10) PERCENT Report",
                "UPDATE OR IGNORE Report SET a = 1",
                "UPDATE ONLY (Report) SET a = 1",
            ] {
                assert!(refused(d, sql), "{d}: {sql}");
            }
            // The controls: the same shapes on other tables.
            for sql in [
                "UPDATE p SET a = 1 FROM (line AS p JOIN other AS o ON o.id = p.id)",
                "UPDATE TOP (1) line SET a = 1",
                "UPDATE OR IGNORE line SET a = (SELECT 1)",
                "UPDATE l SET a = 1 FROM line AS l WITH (NOLOCK), other AS o WHERE o.id = l.id",
            ] {
                assert!(!refused(d, sql), "{d}: {sql}");
            }
        }
    }

    #[test]
    fn a_text_that_does_not_split_is_refused() {
        assert!(refused(Dialect::Postgres, "INSERT INTO line VALUES ('x"));
    }
}
