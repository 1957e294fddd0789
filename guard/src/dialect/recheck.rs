//! Every statement of a fenced transaction that can write checks the lease again, as
//! part of itself, so that a stale holder's statement lands nowhere however its
//! [`Fenced`](crate::Fenced) was obtained.
//!
//! The transaction's lock on the lease's row is the fence; this is the defence behind
//! it. Should the transaction have ended under the `Fenced` (a `COMMIT` sent through
//! [`Store::backend`](crate::Store::backend), a caller's handle, a custom executor
//! that claims a transaction it does not have), each statement still finds whether the
//! lease's row carries the lease (key, generation, owner, current epoch), or on SQL
//! Server whether its transaction is still the one that locked the row, and fails
//! without writing once it does not:
//!
//! - SQL Server: the statement's batch begins with the check, which raises error 51001
//!   unless the transaction holds the application lock the check-and-lock took, named
//!   for that lock alone (and 51000 with no transaction open), for every statement. An
//!   error can roll a SQL Server transaction back by itself, which no count of the
//!   statements sent would see; a lock held is cheaper to ask for than the lease's row
//!   (about half the time on Babelfish) and proves more;
//! - PostgreSQL: the statement's `WITH` clause holds the check
//!   ([`super::still_fenced_cte`]), which fails it with 42P01; a statement that can
//!   write but cannot take a `WITH` clause (`CALL`, `DO`, `COPY`, DDL, `EXPLAIN`) is
//!   refused;
//! - SQLite: the check is a query run just before the statement, in its transaction
//!   ([`super::still_fenced_query`]); a transaction cannot write after another
//!   connection's commit made its snapshot old, so the pair is atomic.
//!
//! Where the pool that lent the connection can tell that the transaction is still the
//! one the lease was locked in ([`Lend::transaction_mark`](crate::Lend::transaction_mark)),
//! the lock fences the statement and it is sent as written (`locked` below).
//!
//! Whether a statement can write is read as the screen reads it: any word after which
//! a statement may write ([`super::screen::WRITING_WORDS`]). A function that writes,
//! called from a plain `SELECT`, is not seen.

use super::lex::{self, Lexed, TokenKind};
use super::screen::WRITING_WORDS;
use super::{Dialect, still_fenced, still_fenced_cte};
use crate::table::FencedTable;

/// How a caller's statement is sent inside a fenced transaction.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Recheck {
    /// It cannot write: as written.
    Unneeded,
    /// As this text, which checks the lease itself, with the lease's key, generation
    /// and owner bound after the caller's parameters (on SQL Server, the name of the
    /// transaction's own lock instead).
    Within(String),
    /// As written, after the dialect's check query in the same transaction (SQLite).
    Before,
}

/// How `sql`, of [`Shape`] `shape`, with `params` parameters of the caller's, carries
/// its check of the lease of `table` in `dialect`; `Err` with the reason when it can
/// write and cannot carry one.
///
/// `locked`: the statement is known to run in the very transaction the lease was
/// checked and locked in (the pool's [transaction
/// mark](crate::executor::Lend::transaction_mark) has not moved), whose lock fences it:
/// it is sent as written, and refused only where it would be refused anyway, so that a
/// statement fares alike on every connection.
pub(crate) fn recheck(
    dialect: Dialect,
    table: &FencedTable,
    sql: &str,
    shape: Shape,
    params: usize,
    locked: bool,
) -> Result<Recheck, String> {
    if dialect == Dialect::Mssql {
        // Every statement, locked or not: the batch's check also says whether the
        // transaction is open, and on SQL Server an error can roll a transaction back
        // by itself, which no count of the statements sent would see.
        return Ok(Recheck::Within(format!(
            "{}{sql}",
            still_fenced(params + 1)
        )));
    }
    match shape {
        Shape::Reads => Ok(Recheck::Unneeded),
        Shape::Refused(reason) => Err(reason),
        Shape::Writes(_) if locked => Ok(Recheck::Unneeded),
        Shape::Writes(_) if dialect == Dialect::Sqlite => Ok(Recheck::Before),
        Shape::Writes(place) => {
            let entry = still_fenced_cte(table, params + 1);
            Ok(Recheck::Within(match place {
                Place::InWith(at) => format!("{} {entry},{}", &sql[..at], &sql[at..]),
                Place::Ahead => format!("WITH {entry} {sql}"),
            }))
        }
    }
}

/// What a statement is, for its check.
#[derive(Clone, Debug)]
pub(crate) enum Shape {
    /// It cannot write.
    Reads,
    /// It can write, and takes the check here (PostgreSQL's `WITH` entry; SQLite's check
    /// goes before it).
    Writes(Place),
    /// It can write and cannot take the check, or does not split into tokens.
    Refused(String),
}

/// `sql`'s [`Shape`] in `dialect`. SQL Server's statements all carry the check the same
/// way, whatever their shape.
pub(crate) fn shape(dialect: Dialect, sql: &str) -> Shape {
    let lexed = match lex::lex(dialect, sql) {
        Ok(lexed) => lexed,
        Err(problem) => {
            return Shape::Refused(format!(
                "it does not split into {dialect} tokens: {}",
                problem.message
            ));
        }
    };
    if !can_write(sql, &lexed) {
        return Shape::Reads;
    }
    match dialect {
        Dialect::Postgres => place_of_check(sql, &lexed).map_or_else(Shape::Refused, Shape::Writes),
        _ => Shape::Writes(Place::Ahead),
    }
}

fn can_write(sql: &str, lexed: &Lexed) -> bool {
    lexed.tokens.iter().any(|t| {
        t.kind == TokenKind::Word
            && WRITING_WORDS
                .iter()
                .any(|w| sql[t.range()].eq_ignore_ascii_case(w))
    })
}

/// Where a PostgreSQL statement takes the check's `WITH` entry.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Place {
    /// First in its own `WITH` clause, which ends at this byte offset of its first
    /// word (`WITH`, or `RECURSIVE` after it).
    InWith(usize),
    /// In a `WITH` clause put before it.
    Ahead,
}

/// Words a PostgreSQL statement that may take a `WITH` clause begins with.
const TAKES_WITH: &[&str] = &[
    "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "VALUES", "TABLE",
];

/// Where `sql` takes a `WITH` entry first: in its own `WITH` clause, or in one added
/// before it; `Err` when it cannot take one.
fn place_of_check(sql: &str, lexed: &Lexed) -> Result<Place, String> {
    let tokens = &lexed.tokens;
    let word = |i: usize| {
        tokens
            .get(i)
            .filter(|t| t.kind == TokenKind::Word)
            .map(|t| &sql[t.range()])
    };
    let is = |i: usize, w: &str| word(i).is_some_and(|x| x.eq_ignore_ascii_case(w));
    if several(lexed) {
        return Err(
            "it holds more than one statement; send each through the `Fenced` \
                    on its own"
                .into(),
        );
    }
    if is(0, "WITH") {
        let after = if is(1, "RECURSIVE") { 1 } else { 0 };
        return Ok(Place::InWith(tokens[after].range().end));
    }
    let first = tokens.first();
    let takes = first.is_some_and(|t| t.kind == TokenKind::LParen)
        || word(0).is_some_and(|w| TAKES_WITH.iter().any(|x| w.eq_ignore_ascii_case(x)));
    if takes {
        return Ok(Place::Ahead);
    }
    let text = first.map_or("", |t| &sql[t.range()]);
    Err(format!(
        "it can write, and on postgresql every statement of a fenced transaction that can \
         write checks the lease in a WITH clause of its own, which a statement beginning \
         with `{text}` cannot take; write it as SELECT, INSERT, UPDATE, DELETE or MERGE"
    ))
}

/// Whether a `;` stands before the last token: a text of several statements.
fn several(lexed: &Lexed) -> bool {
    let n = lexed.tokens.len();
    lexed.tokens[..n.saturating_sub(1)]
        .iter()
        .any(|t| t.kind == TokenKind::Semicolon)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> FencedTable {
        FencedTable::builder().table("Report").build().unwrap()
    }

    /// `recheck`, with the statement's shape read.
    fn checked(d: Dialect, sql: &str, params: usize, locked: bool) -> Result<Recheck, String> {
        recheck(d, &table(), sql, shape(d, sql), params, locked)
    }

    fn pg(sql: &str) -> Result<Recheck, String> {
        checked(Dialect::Postgres, sql, 2, false)
    }

    macro_rules! within {
        ($($name:ident: $sql:expr => $starts:expr;)*) => {$(
            #[test]
            fn $name() {
                match pg($sql) {
                    Ok(Recheck::Within(text)) => {
                        assert!(text.starts_with($starts), "{text}");
                        assert!(text.contains("\"fenced check\" AS (UPDATE"), "{text}");
                        assert!(text.contains("= $3 AND"), "{text}");
                        assert!(text.contains("= $5 AND"), "{text}");
                    }
                    other => panic!("{other:?}"),
                }
            }
        )*};
    }

    within! {
        an_insert_takes_a_with_clause: "INSERT INTO line VALUES ($1, $2)" => "WITH \"fenced check\"";
        an_update_takes_one: "update line set b = $1 where a = $2" => "WITH \"fenced check\"";
        a_delete_takes_one: "DELETE FROM line WHERE a = $1 AND b = $2" => "WITH \"fenced check\"";
        a_merge_takes_one: "MERGE INTO line USING s ON true WHEN MATCHED THEN DELETE" => "WITH \"fenced check\"";
        a_with_clause_gains_an_entry: "WITH x AS (SELECT $1 AS a) INSERT INTO line SELECT a, $2 FROM x" => "WITH \"fenced check\" AS (";
        a_recursive_one_keeps_its_word_first: "WITH RECURSIVE x AS (SELECT 1) DELETE FROM line" => "WITH RECURSIVE \"fenced check\" AS (";
        a_leading_comment_stays_before: "-- a note\nINSERT INTO line VALUES ($1, $2)" => "WITH \"fenced check\"";
    }

    #[test]
    fn a_with_entry_is_inserted_before_the_callers_entries() {
        let Ok(Recheck::Within(text)) = pg("WITH x AS (SELECT 1) INSERT INTO line SELECT * FROM x")
        else {
            panic!()
        };
        assert!(
            text.ends_with("), x AS (SELECT 1) INSERT INTO line SELECT * FROM x"),
            "{text}"
        );
    }

    #[test]
    fn a_read_is_sent_as_written() {
        assert_eq!(pg("SELECT a FROM line WHERE a = $1"), Ok(Recheck::Unneeded));
        assert_eq!(
            checked(Dialect::Sqlite, "SELECT 1", 0, false),
            Ok(Recheck::Unneeded)
        );
    }

    #[test]
    fn a_write_that_cannot_take_a_with_clause_is_refused() {
        for sql in [
            "CALL write_lines($1)",
            "DO $$ BEGIN INSERT INTO line VALUES (1); END $$",
            "COPY line FROM STDIN",
            "EXPLAIN ANALYZE INSERT INTO line VALUES (1)",
            "CREATE TABLE t AS SELECT 1",
            "TRUNCATE line",
        ] {
            let refused = pg(sql).unwrap_err();
            assert!(refused.contains("WITH clause"), "{sql}: {refused}");
        }
    }

    /// In the transaction the lease was locked in, a write is sent as written, and
    /// what is refused elsewhere is refused there too.
    #[test]
    fn a_write_in_the_locked_transaction_is_sent_as_written() {
        let locked = |d, sql| checked(d, sql, 2, true);
        for d in [Dialect::Postgres, Dialect::Sqlite] {
            assert_eq!(
                locked(d, "INSERT INTO line VALUES (1, 2)"),
                Ok(Recheck::Unneeded)
            );
        }
        // SQL Server checks every statement all the same.
        assert!(matches!(
            locked(Dialect::Mssql, "INSERT INTO line VALUES (1, 2)"),
            Ok(Recheck::Within(_))
        ));
        assert!(locked(Dialect::Postgres, "CALL write_lines($1)").is_err());
        assert!(
            locked(
                Dialect::Postgres,
                "INSERT INTO line VALUES (1); DELETE FROM line"
            )
            .is_err()
        );
    }

    #[test]
    fn several_statements_are_refused() {
        assert!(pg("INSERT INTO line VALUES (1); DELETE FROM line").is_err());
        assert!(matches!(
            pg("INSERT INTO line VALUES (1);"),
            Ok(Recheck::Within(_))
        ));
    }

    #[test]
    fn sqlite_checks_before_a_write_and_sql_server_in_every_batch() {
        assert_eq!(
            checked(Dialect::Sqlite, "INSERT INTO line VALUES (?1)", 1, false),
            Ok(Recheck::Before)
        );
        let Ok(Recheck::Within(text)) = checked(Dialect::Mssql, "SELECT @P1", 1, false) else {
            panic!()
        };
        assert!(
            text.contains("THROW 51001") && text.ends_with("SELECT @P1"),
            "{text}"
        );
        assert!(text.contains("CONCAT(N'fenced lease ', @P2)"), "{text}");
    }
}
