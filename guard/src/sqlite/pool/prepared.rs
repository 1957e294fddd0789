//! A pooled SQLite connection that keeps its own prepared statements
//! ([`KeptStatements`]), and counts the transactions that ended on it.
//!
//! rusqlite's `prepare_cached` finds a statement by hashing its whole text, twice per
//! use (taken out of the cache, put back), and copies the key and resets the bindings
//! each time: about 4,000 instructions of a lease cycle's 76,000 (measured with
//! callgrind; `BENCHMARKS.md` as of `fdcf93c` has the breakdown). A statement that
//! borrows its connection can only be kept beside that connection, and the pool moves
//! connections between threads; this module keeps the two together and lets the pair
//! move.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rusqlite::{Connection, PrepFlags, Statement};

use crate::pool::kept::KeptStatements;

/// How many statements a connection keeps: [`Sqlite::MAX_PREPARED_STATEMENTS`].
///
/// [`Sqlite::MAX_PREPARED_STATEMENTS`]: crate::Sqlite::MAX_PREPARED_STATEMENTS
pub(super) const CAPACITY: usize = 64;

self_cell::self_cell!(
    /// A connection and the statements prepared on it.
    struct Cell {
        owner: Connection,

        #[covariant]
        dependent: Kept,
    }
);

/// The statements prepared on one connection.
type Kept<'conn> = KeptStatements<Statement<'conn>>;

/// A connection with the statements prepared on it, moved between threads as one.
pub(super) struct PreparedConnection {
    cell: Cell,
    ended: Arc<AtomicU64>,
    /// While set, the commit hook turns every commit into a rollback
    /// ([`Lend::hold_commits`](crate::Lend::hold_commits)).
    commits_held: Arc<AtomicBool>,
    /// Made once: every fenced transaction on the connection needs it.
    interrupt: Arc<rusqlite::InterruptHandle>,
}

// SAFETY: `Connection` is `Send`; a `Statement` is not, because it holds a
// `&Connection` (a `Connection` is not `Sync`) and a raw `sqlite3_stmt` pointer. Every
// statement in the cell was prepared on, and borrows, the cell's own connection, and
// nothing outside the cell refers to either: `Kept` holds only statements and their
// owned texts, and `with_statement` lends a statement for the duration of a call
// through `&mut self`. So moving the cell moves the connection together with every
// borrow of it and every statement of it, and they are used from one thread at a time.
// That is what SQLite requires of a connection opened with `SQLITE_OPEN_NO_MUTEX`
// (rusqlite's default, on a threadsafe build), and the same reasoning by which rusqlite
// itself marks its statement cache, which keeps raw statements inside a `Connection`,
// `Send`.
#[allow(unsafe_code)]
unsafe impl Send for PreparedConnection {}

impl PreparedConnection {
    /// Keeps `conn`'s statements, and counts its transactions from now on.
    ///
    /// # Errors
    ///
    /// When SQLite refuses the hooks that count (a connection rusqlite does not own).
    pub(super) fn new(conn: Connection) -> rusqlite::Result<Self> {
        let ended = Arc::new(AtomicU64::new(0));
        let committed = Arc::clone(&ended);
        let commits_held = Arc::new(AtomicBool::new(false));
        let held = Arc::clone(&commits_held);
        conn.commit_hook(Some(move || {
            committed.fetch_add(1, Ordering::Relaxed);
            // `true` turns the commit into a rollback.
            held.load(Ordering::Relaxed)
        }))?;
        let rolled_back = Arc::clone(&ended);
        conn.rollback_hook(Some(move || {
            rolled_back.fetch_add(1, Ordering::Relaxed);
        }))?;
        let interrupt = Arc::new(conn.get_interrupt_handle());
        Ok(PreparedConnection {
            cell: Cell::new(conn, |_| KeptStatements::new(CAPACITY)),
            ended,
            commits_held,
            interrupt,
        })
    }

    /// How many transactions have ended on this connection, committed or rolled back,
    /// shared: it moves on whatever ends one (a `COMMIT` in any batch, a rollback
    /// SQLite made itself after an error or an interrupt), so that a lent connection's
    /// fenced transaction can tell, without a query, that it is still the transaction
    /// its lease was checked in.
    ///
    /// SQLite calls the commit hook for a transaction that wrote, or took the write
    /// lock (`BEGIN IMMEDIATE`); a read-only transaction's end is not counted.
    pub(super) fn transactions_ended(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.ended)
    }

    /// The switch that holds this connection's commits, shared: while it is on, SQLite
    /// turns every commit into a rollback, however it was asked for (a `COMMIT` in any
    /// batch, a `RELEASE` of the outermost savepoint, a statement run outside a
    /// transaction).
    pub(super) fn commits_held(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.commits_held)
    }

    /// Stops a statement running on this connection, from any thread.
    pub(super) fn interrupt_handle(&self) -> Arc<rusqlite::InterruptHandle> {
        Arc::clone(&self.interrupt)
    }

    /// The connection, for work that prepares its own statements (batches,
    /// transactions).
    pub(super) fn conn(&self) -> &Connection {
        self.cell.borrow_owner()
    }

    /// Runs `f` with the statement for `sql`, prepared on this connection the first time
    /// and kept. As with `prepare_cached`, the text is trimmed first, and a statement
    /// that fails to prepare is an error and keeps nothing.
    pub(super) fn with_statement<T>(
        &mut self,
        sql: &str,
        f: impl FnOnce(&mut Statement<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let sql = sql.trim();
        self.cell.with_dependent_mut(|conn, kept| {
            let index = match kept.find(sql) {
                Some(index) => index,
                None => {
                    // As `prepare_cached` does: the statement will be used many times.
                    let statement =
                        conn.prepare_with_flags(sql, PrepFlags::SQLITE_PREPARE_PERSISTENT)?;
                    kept.keep(sql, statement)
                }
            };
            f(kept.get_mut(index))
        })
    }

    /// How many statements this connection keeps.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.cell.borrow_dependent().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    fn connection() -> PreparedConnection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (v INTEGER)").unwrap();
        PreparedConnection::new(conn).unwrap()
    }

    fn insert(conn: &mut PreparedConnection, sql: &str, v: i64) -> usize {
        conn.with_statement(sql, |stmt| stmt.execute([v])).unwrap()
    }

    fn values(conn: &PreparedConnection) -> Vec<i64> {
        let mut stmt = conn
            .conn()
            .prepare("SELECT v FROM t ORDER BY rowid")
            .unwrap();
        let rows = stmt.query_map([], |row| row.get(0)).unwrap();
        rows.collect::<rusqlite::Result<_>>().unwrap()
    }

    /// A statement is prepared once and run again from the connection's keeping, with
    /// new parameters each time; the same text with surrounding space is the same
    /// statement. SQLite counts the runs of each prepared statement: a statement
    /// prepared again would have none.
    #[test]
    fn a_statement_is_kept_and_run_again() {
        let mut conn = connection();
        let sql = "INSERT INTO t (v) VALUES (?1)";
        assert_eq!(insert(&mut conn, sql, 1), 1);
        assert_eq!(insert(&mut conn, sql, 2), 1);
        assert_eq!(insert(&mut conn, &format!("  {sql}\n"), 3), 1);
        let runs = conn
            .with_statement(sql, |stmt| Ok(stmt.get_status(StatementStatus::Run)))
            .unwrap();
        assert_eq!(runs, 3);
        assert_eq!(conn.kept(), 1);
        assert_eq!(values(&conn), [1, 2, 3]);
    }

    /// Each text runs its own statement, whichever was used last: a lookup that
    /// matched by length alone runs the wrong one here.
    #[test]
    fn each_text_runs_its_own_statement() {
        let mut conn = connection();
        let twice = "INSERT INTO t (v) VALUES (?1 * 2)";
        let thrice = "INSERT INTO t (v) VALUES (?1 * 3)";
        assert_eq!(twice.len(), thrice.len());
        for v in 1..=2 {
            insert(&mut conn, twice, v);
            insert(&mut conn, thrice, v);
        }
        insert(&mut conn, twice, 10);
        assert_eq!(conn.kept(), 2);
        assert_eq!(values(&conn), [2, 3, 4, 6, 20]);
    }

    /// Past its capacity the connection finalizes the statement run longest ago, and
    /// keeps the one run most recently even if it was prepared first.
    #[test]
    fn the_statement_run_longest_ago_makes_room() {
        let mut conn = connection();
        let sql = |n: usize| format!("INSERT INTO t (v) VALUES (?1 + {n})");
        for n in 0..CAPACITY {
            insert(&mut conn, &sql(n), 0);
        }
        insert(&mut conn, &sql(0), 0); // now the most recently run
        insert(&mut conn, &sql(CAPACITY), 0); // finalizes sql(1), run longest ago
        assert_eq!(conn.kept(), CAPACITY);
        let kept = conn.cell.borrow_dependent();
        assert!(kept.contains(&sql(0)));
        assert!(!kept.contains(&sql(1)));
        assert!(kept.contains(&sql(CAPACITY)));
    }

    /// A text that does not prepare is an error and keeps nothing; the connection's
    /// other statements still run.
    #[test]
    fn a_statement_that_fails_to_prepare_keeps_nothing() {
        let mut conn = connection();
        insert(&mut conn, "INSERT INTO t (v) VALUES (?1)", 1);
        let error =
            conn.with_statement("INSERT INTO missing VALUES (?1)", |stmt| stmt.execute([1]));
        assert!(error.is_err(), "{error:?}");
        assert_eq!(conn.kept(), 1);
        insert(&mut conn, "INSERT INTO t (v) VALUES (?1)", 2);
        assert_eq!(values(&conn), [1, 2]);
    }

    /// Every way a transaction ends moves the count: a commit, an autocommitted write,
    /// a rollback, the rollback SQLite makes itself when a statement's conflict clause
    /// says so. A savepoint rolled back to ends nothing, and neither does a failed
    /// statement whose transaction stays open. A read-only transaction's end is not
    /// counted (SQLite calls no hook for it): the negative control.
    #[test]
    fn every_end_of_a_transaction_is_counted() {
        let conn = connection();
        conn.conn()
            .execute_batch("CREATE TABLE u (v INTEGER PRIMARY KEY)")
            .unwrap();
        let ended = conn.transactions_ended();
        let count = || ended.load(Ordering::Relaxed);
        let mut seen = count();
        let mut after = |sql: &str| {
            let _ = conn.conn().execute_batch(sql);
            let moved = count() - seen;
            seen = count();
            moved
        };
        assert_eq!(
            after("BEGIN IMMEDIATE; INSERT INTO t VALUES (1); COMMIT"),
            1
        );
        assert_eq!(after("INSERT INTO t VALUES (2)"), 1);
        assert_eq!(
            after("BEGIN IMMEDIATE; INSERT INTO t VALUES (3); ROLLBACK"),
            1
        );
        assert_eq!(after("BEGIN IMMEDIATE; COMMIT"), 1);
        assert_eq!(
            after("BEGIN IMMEDIATE; SAVEPOINT s; INSERT INTO t VALUES (4)"),
            0
        );
        assert_eq!(after("ROLLBACK TO s"), 0);
        assert_eq!(
            after("INSERT INTO u VALUES (1); INSERT INTO u VALUES (1)"),
            0
        );
        assert!(
            !conn.conn().is_autocommit(),
            "a failed statement ended the transaction"
        );
        assert_eq!(after("INSERT OR ROLLBACK INTO u VALUES (1)"), 1);
        assert!(conn.conn().is_autocommit());
        // Negative control: a transaction that only read.
        assert_eq!(after("BEGIN; SELECT count(*) FROM t; COMMIT"), 0);
    }

    /// The connection and its statements move to another thread together and run
    /// there (this is what the `Send` impl claims); the statement prepared on the first
    /// thread is the one run on the second.
    #[test]
    fn a_connection_and_its_statements_run_on_another_thread() {
        let mut conn = connection();
        let sql = "INSERT INTO t (v) VALUES (?1)";
        insert(&mut conn, sql, 1);
        let conn = std::thread::spawn(move || {
            insert(&mut conn, sql, 2);
            conn
        })
        .join()
        .unwrap();
        assert_eq!(conn.kept(), 1);
        assert_eq!(values(&conn), [1, 2]);
    }
}
