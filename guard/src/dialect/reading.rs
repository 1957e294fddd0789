//! A fenced transaction's statement as read before it is sent: whether the screen
//! refuses it ([`super::screen`]) and how it carries its check of the lease
//! ([`super::recheck`]), read once per text and thread.
//!
//! A fenced transaction sends the same few texts again and again, and reading one costs
//! more than finding it: each thread keeps what it read of the last [`REMEMBERED`]
//! texts, under their dialect and the tables the screen protected. Both readings come
//! from one lookup, since every statement needs both; the table is found by its
//! address first, which the memo's own reference keeps from being reused.

use std::cell::RefCell;
use std::sync::Arc;

use super::Dialect;
use super::recheck::{self, Shape};
use super::screen;
use crate::table::{FencedTable, QualifiedName};

/// What a statement was read to be.
#[derive(Clone, Debug)]
pub(crate) struct Reading {
    /// Why it may not run inside a fenced transaction; `None` when it may.
    pub(crate) refusal: Option<String>,
    /// How it carries its check of the lease.
    pub(crate) shape: Shape,
}

/// How many readings each thread keeps.
const REMEMBERED: usize = 32;

thread_local! {
    static READ: RefCell<Vec<Remembered>> = const { RefCell::new(Vec::new()) };
}

/// A text read, under the dialect and the table whose protected tables it was read
/// for.
struct Remembered {
    dialect: Dialect,
    sql: Box<str>,
    table: Arc<FencedTable>,
    reading: Reading,
}

impl Remembered {
    fn is(&self, dialect: Dialect, sql: &str, table: &Arc<FencedTable>) -> bool {
        self.dialect == dialect
            && *self.sql == *sql
            && (Arc::ptr_eq(&self.table, table)
                || self.table.protected_tables().eq(table.protected_tables()))
    }
}

/// `sql` in `dialect`, read for a fenced transaction on `table`.
pub(crate) fn read(dialect: Dialect, sql: &str, table: &Arc<FencedTable>) -> Reading {
    let remembered = READ.with_borrow(|read| {
        read.iter()
            .find(|r| r.is(dialect, sql, table))
            .map(|r| r.reading.clone())
    });
    if let Some(reading) = remembered {
        return reading;
    }
    let protected: Vec<&QualifiedName> = table.protected_tables().collect();
    let reading = Reading {
        refusal: screen::refusal(dialect, sql, &protected),
        shape: recheck::shape(dialect, sql),
    };
    READ.with_borrow_mut(|read| {
        if read.len() >= REMEMBERED {
            read.remove(0);
        }
        read.push(Remembered {
            dialect,
            sql: sql.into(),
            table: Arc::clone(table),
            reading: reading.clone(),
        });
    });
    reading
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(name: &str) -> Arc<FencedTable> {
        Arc::new(FencedTable::builder().table(name).build().unwrap())
    }

    fn refused(dialect: Dialect, sql: &str, on: &Arc<FencedTable>) -> bool {
        read(dialect, sql, on).refusal.is_some()
    }

    /// A verdict remembered is the one read, for the same text, dialect and tables
    /// only: the same text is read again for other tables, or another dialect.
    #[test]
    fn a_remembered_verdict_is_for_its_own_text_dialect_and_tables() {
        let (report, elsewhere) = (table("app.Report"), table("app.Elsewhere"));
        let sql = "UPDATE Report SET Payload = 'x'";
        for _ in 0..3 {
            assert!(
                refused(Dialect::Postgres, sql, &report),
                "read, then remembered"
            );
        }
        let remembered = || READ.with_borrow(Vec::len);
        let before = remembered();
        // An equal table at another address is found by its names, not read again.
        assert!(refused(Dialect::Postgres, sql, &table("app.Report")));
        assert_eq!(remembered(), before);
        // Another table's names are not the same: read again, and not refused.
        assert!(!refused(Dialect::Postgres, sql, &elsewhere));
        assert_eq!(remembered(), before + 1);
        assert!(refused(Dialect::Sqlite, sql, &report));
        // `COMMIT` ends a T-SQL statement anywhere, elsewhere only at its start.
        let mid = "SELECT 1 COMMIT";
        assert!(refused(Dialect::Mssql, mid, &report));
        assert!(!refused(Dialect::Postgres, mid, &report));
        for i in 0..REMEMBERED {
            assert!(!refused(Dialect::Sqlite, &format!("SELECT {i}"), &report));
        }
        assert!(
            refused(Dialect::Mssql, mid, &report),
            "forgotten, then read again"
        );
    }

    /// Each text keeps its own shape, however many were read before it on the thread.
    #[test]
    fn a_remembered_shape_is_the_texts_own() {
        let report = table("Report");
        let shape = |sql: &str| read(Dialect::Postgres, sql, &report).shape;
        let (write, read_only) = (
            "DELETE FROM line WHERE a = $1",
            "SELECT a FROM line WHERE a = $1",
        );
        for round in 0..3 {
            for n in 0..REMEMBERED + 1 {
                let other = format!("SELECT {n}");
                assert!(matches!(shape(&other), Shape::Reads), "round {round}");
            }
            assert!(matches!(shape(write), Shape::Writes(_)), "round {round}");
            assert!(matches!(shape(read_only), Shape::Reads), "round {round}");
            assert!(matches!(shape(write), Shape::Writes(_)), "round {round}");
        }
    }
}
