//! A connection of the pool lent for a fenced transaction ([`Lend`]): its `BEGIN
//! IMMEDIATE` run with the first statement, its statements run where the pool's
//! [`SqliteExecution`] says, its deadline enforced by a rollback, and the count of
//! transactions ended on it read without a query.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::Statement;

use super::prepared::PreparedConnection;
use super::watchdog::{Due, Watch, Watchdog};
use super::{
    LockWait, Sqlite, SqliteExecution, is_busy, on_multi_thread_runtime, with_busy_timeout,
};
use crate::dialect::{self, kind::Dialect};
use crate::error::{Error, Result};
use crate::executor::{Executor, GuardOnly, InTransaction, Lend};
use crate::pool::control::{commit_held, may_end_a_transaction};
use crate::pool::{Checkout, Deadline};
use crate::sqlite::caller;
use crate::sqlite::rows::{all_rows, first_row, rows_changed};
use crate::value::Value;

/// A connection of a [`Sqlite`] pool, lent for a fenced transaction.
///
/// Its statements run where the pool's [`SqliteExecution`] says, as the pool's own do.
/// With [`SqliteExecution::HandOff`] each waits for a lock as SQLite itself does, in the
/// calling thread, up to the busy timeout (on the multi-threaded runtime inside
/// [`block_in_place`](tokio::task::block_in_place), on the current-thread runtime on
/// the runtime's one thread). With [`SqliteExecution::InPlace`] each runs on the
/// calling thread, and the `BEGIN IMMEDIATE`, the one statement that can find the write
/// lock held, sleeps its task between tries instead of waiting in the thread. A fenced
/// transaction's other statements hold the write lock from its `BEGIN IMMEDIATE`.
#[cfg(feature = "sqlite")]
pub struct LentSqlite {
    conn: Arc<std::sync::Mutex<Checkout<PreparedConnection>>>,
    execution: SqliteExecution,
    busy_timeout: Duration,
    deadline: Deadline,
    /// Stops a statement running on the connection, from any thread.
    interrupt: Arc<rusqlite::InterruptHandle>,
    watchdog: Arc<Watchdog>,
    /// The transaction's deadline in the watchdog's table, once bounded; taken out
    /// when the transaction ends.
    watch: std::sync::Mutex<Option<Watch>>,
    /// The transaction's `BEGIN` until it runs, with the next statement.
    begin: std::sync::Mutex<Option<&'static str>>,
    /// How many transactions have ended on the connection.
    transactions_ended: Arc<AtomicU64>,
    /// The connection's switch that turns its commits into rollbacks.
    commits_held: Arc<AtomicBool>,
}

impl std::fmt::Debug for LentSqlite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LentSqlite").finish_non_exhaustive()
    }
}

impl LentSqlite {
    /// The `BEGIN` not run yet, if any.
    fn pending_begin(&self) -> std::sync::MutexGuard<'_, Option<&'static str>> {
        self.begin
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn watched(&self) -> std::sync::MutexGuard<'_, Option<Watch>> {
        self.watch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Checkout<PreparedConnection>> {
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` on the connection, after the transaction's `BEGIN` if it has not run
    /// yet: with the pool's hand-off, one trip to the thread that waits for the lock,
    /// not two.
    async fn run<T>(
        &self,
        f: impl FnOnce(&mut PreparedConnection) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let begin = self.pending_begin().take();
        if self.execution == SqliteExecution::HandOff {
            return self.handed_off(begin, f);
        }
        if let Some(begin) = begin {
            // A unit of the task's cooperative budget for the whole transaction, spent
            // before it takes the write lock: a task running transactions without pause
            // still yields to the thread's other tasks every so often, and never while
            // it holds the lock every other writer waits for. (A unit per statement, as
            // the pool's own statements spend, yielded every twenty transactions or so,
            // each yield waking the runtime's other thread: about 1.3 µs of a 12 µs
            // transaction.)
            tokio::task::consume_budget().await;
            self.begin_in_place(begin).await?;
        }
        f(self.connection().conn()).map_err(Error::Sqlite)
    }

    /// `begin` on the calling thread: an idle connection has no busy timeout, so while
    /// another connection holds the write lock SQLite answers `SQLITE_BUSY` at once,
    /// having changed nothing, and the task sleeps before trying again ([`LockWait`]).
    async fn begin_in_place(&self, begin: &str) -> Result<()> {
        let mut lock_wait = LockWait::new(self.busy_timeout);
        loop {
            let attempt = self.connection().conn().with_statement(begin, |stmt| {
                stmt.execute([])?;
                Ok(())
            });
            match attempt {
                Err(e) if is_busy(&e) && lock_wait.sleep().await => {}
                other => return other.map_err(Error::Sqlite),
            }
        }
    }

    /// `begin` if given, then `f`, in one call that waits for a lock in the thread, up
    /// to the busy timeout, handing the runtime thread's other tasks to another thread
    /// first where the runtime allows.
    fn handed_off<T>(
        &self,
        begin: Option<&str>,
        f: impl FnOnce(&mut PreparedConnection) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let run = || {
            let mut checkout = self.connection();
            with_busy_timeout(checkout.conn(), self.busy_timeout, |conn| {
                if let Some(begin) = begin {
                    conn.with_statement(begin, |stmt| stmt.execute([]))?;
                }
                f(conn)
            })
        };
        let result = if on_multi_thread_runtime() {
            tokio::task::block_in_place(run)
        } else {
            run()
        };
        result.and_then(|inner| inner).map_err(Error::Sqlite)
    }

    /// Runs `sql`, prepared once on the connection and kept, through `step`.
    async fn statement<T>(
        &self,
        sql: &str,
        params: &[Value],
        step: fn(&mut Statement<'_>, &[Value]) -> rusqlite::Result<T>,
    ) -> Result<T> {
        if self.commits_held.load(Ordering::Relaxed) && may_end_a_transaction(sql) {
            return Err(commit_held());
        }
        self.deadline.remaining()?;
        self.run(|conn| conn.with_statement(sql, |stmt| step(stmt, params)))
            .await
    }
}

impl Lend for Sqlite {
    type Lent = LentSqlite;

    async fn lend(&self) -> Result<LentSqlite> {
        let mut checkout = match self.inner.pool.take_idle() {
            Some(checkout) => checkout,
            // Waiting for a connection, or opening one, is the rare case: boxed, so that
            // every fenced transaction's future does not carry its state.
            None => Box::pin(self.checkout()).await?,
        };
        let interrupt = checkout.conn().interrupt_handle();
        let transactions_ended = checkout.conn().transactions_ended();
        let commits_held = checkout.conn().commits_held();
        // A connection is given back with its commits let go; a lent one that was not
        // given back is closed. So this only restates what holds.
        commits_held.store(false, Ordering::Relaxed);
        Ok(LentSqlite {
            conn: Arc::new(std::sync::Mutex::new(checkout)),
            execution: self.inner.options.execution,
            busy_timeout: self.inner.options.busy_timeout,
            deadline: Deadline::default(),
            interrupt,
            watchdog: Arc::clone(&self.inner.watchdog),
            watch: std::sync::Mutex::new(None),
            begin: std::sync::Mutex::new(None),
            transactions_ended,
            commits_held,
        })
    }

    /// Runs with the transaction's first statement, in the same call: `BEGIN
    /// IMMEDIATE` and the check, waiting for the write lock once.
    fn begin(
        lent: &LentSqlite,
        begin: &'static str,
        _: GuardOnly,
    ) -> impl Future<Output = Result<()>> + Send {
        *lent.pending_begin() = Some(begin);
        std::future::ready(Ok(()))
    }

    /// Each statement reads the time left, and fails past the deadline, before it runs.
    const BOUNDS_STATEMENTS: bool = true;

    /// SQLite has no bound of its own on a transaction. Statements past the deadline
    /// are refused unsent, and at the deadline, unless the transaction ended first, a
    /// statement still running is interrupted and the transaction rolled back: the
    /// write lock is free for a successor even while the holder hangs.
    fn bound(lent: &LentSqlite, deadline: Instant, timeout: Duration) {
        lent.deadline.set(deadline, timeout);
        let due = Due {
            conn: Arc::downgrade(&lent.conn),
            interrupt: Arc::clone(&lent.interrupt),
        };
        *lent.watched() = Some(lent.watchdog.watch(deadline, due));
    }

    /// Given back to the pool, its deadline first taken out of the watchdog's table;
    /// unless the watchdog's rollback holds it at this very moment: then it is closed.
    fn give_back(lent: LentSqlite) {
        drop(lent.watched().take());
        // The pool's own statements commit on it again.
        lent.commits_held.store(false, Ordering::Relaxed);
        if let Ok(conn) = Arc::try_unwrap(lent.conn) {
            conn.into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .give_back();
        }
    }

    /// The count of transactions ended on the connection, which SQLite's commit and
    /// rollback hooks move: whatever ends the fenced transaction (a `COMMIT` sent
    /// through the store's executor, the deadline's rollback, a rollback SQLite made
    /// after an error) moves it.
    fn transaction_mark(lent: &LentSqlite) -> Option<u64> {
        Some(lent.transactions_ended.load(Ordering::Relaxed))
    }

    /// Every batch, and each statement whose first word controls a transaction, is
    /// refused unsent while commits are held; and SQLite's commit hook turns any
    /// commit that still happens into a rollback.
    const HOLDS_COMMITS: bool = true;

    fn hold_commits(lent: &LentSqlite, held: bool, _: GuardOnly) {
        lent.commits_held.store(held, Ordering::Relaxed);
    }
}

impl InTransaction for LentSqlite {}

impl Executor for LentSqlite {
    fn transaction_open(&self) -> Option<bool> {
        if self.pending_begin().is_some() {
            return Some(true);
        }
        Some(!self.connection().conn().conn().is_autocommit())
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        self.statement(sql, params, rows_changed).await
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        self.statement(sql, params, first_row).await
    }

    async fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        self.statement(sql, params, all_rows).await
    }

    /// The transaction's own end (`COMMIT`, `ROLLBACK`) runs as a statement prepared
    /// once on the connection and kept; any other text as a batch.
    async fn execute_batch(&self, sql: &str) -> Result<()> {
        if self.commits_held.load(Ordering::Relaxed) {
            return Err(commit_held());
        }
        let own_end = [
            dialect::commit(Dialect::Sqlite),
            dialect::rollback(Dialect::Sqlite),
        ];
        if own_end.contains(&sql) {
            return self
                .run(|conn| conn.with_statement(sql, |stmt| stmt.execute([])).map(drop))
                .await;
        }
        self.run(|conn| conn.conn().execute_batch(sql)).await
    }

    async fn execute_then_record(
        &self,
        write: &str,
        write_params: &[Value],
        record: &str,
        record_params: &[Value],
    ) -> Result<u64> {
        self.deadline.remaining()?;
        self.run(|conn| {
            caller::execute_then_record(conn.conn(), (write, write_params), (record, record_params))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rusqlite::StatementStatus;

    use super::*;
    use crate::{FencedTable, SqliteOptions, Store};

    /// A store on a fresh database file with lines to write, and a lease on key 1.
    async fn setup(
        dir: &tempfile::TempDir,
        execution: SqliteExecution,
    ) -> (Store<Sqlite>, crate::Lease) {
        let options = SqliteOptions::default().execution(execution);
        let sqlite = Sqlite::open_with(dir.path().join("lent.db"), options)
            .await
            .unwrap();
        let store = Store::new(
            sqlite,
            FencedTable::builder()
                .key_type(crate::KeyType::BigInt)
                .build()
                .unwrap(),
        );
        store.create_schema().await.unwrap();
        store
            .backend()
            .execute_batch("CREATE TABLE line (v INTEGER)")
            .await
            .unwrap();
        store.provision(1_i64).await.unwrap();
        let lease = store
            .try_acquire(1_i64, Duration::from_secs(60))
            .await
            .unwrap()
            .unwrap();
        (store, lease)
    }

    /// How many times SQLite ran the lease check a fenced transaction sends before a
    /// write, on `lent`'s connection.
    fn checks_run(lent: &LentSqlite, check: &str) -> i32 {
        lent.connection()
            .conn()
            .with_statement(check, |stmt| Ok(stmt.get_status(StatementStatus::Run)))
            .unwrap()
    }

    const LINE: &str = "INSERT INTO line (v) VALUES (?1)";

    /// In the transaction its lease was locked in, a write sends no check before it:
    /// the lock fences it. Once that transaction has ended (committed, or rolled back,
    /// and another begun on the connection), each write checks the lease first. In
    /// both ways of running statements.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_checks_the_lease_once_its_transaction_has_ended() {
        for execution in [SqliteExecution::InPlace, SqliteExecution::HandOff] {
            for end in ["COMMIT; BEGIN", "ROLLBACK; BEGIN IMMEDIATE"] {
                let dir = tempfile::tempdir().unwrap();
                let (store, lease) = setup(&dir, execution).await;
                let check = store.statements().still_fenced.clone();
                let tx = store
                    .transaction(&lease, Duration::from_secs(30))
                    .await
                    .unwrap()
                    .unwrap();
                for v in 0..3 {
                    assert_eq!(tx.execute(LINE, &[Value::I64(v)]).await.unwrap(), 1);
                }
                let lent = tx.store().backend();
                assert_eq!(checks_run(lent, &check), 0, "{execution:?}");

                lent.execute_batch(end).await.unwrap();
                for v in 0..2 {
                    assert_eq!(tx.execute(LINE, &[Value::I64(v)]).await.unwrap(), 1);
                }
                assert_eq!(checks_run(lent, &check), 2, "{execution:?} after {end}");
                tx.commit().await.unwrap();
            }
        }
    }

    /// A transaction committed under its `Fenced` (no new one begun) leaves the
    /// connection in autocommit: the lent connection's count has moved, so rusqlite is
    /// asked again, and a write, or a read, is refused unsent rather than committed on
    /// its own. Negative control: the same write before the commit lands.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_statement_after_a_commit_under_its_fenced_is_refused() {
        for execution in [SqliteExecution::InPlace, SqliteExecution::HandOff] {
            let dir = tempfile::tempdir().unwrap();
            let (store, lease) = setup(&dir, execution).await;
            let tx = store
                .transaction(&lease, Duration::from_secs(30))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(tx.execute(LINE, &[Value::I64(1)]).await.unwrap(), 1);
            tx.store().backend().execute_batch("COMMIT").await.unwrap();
            for sql in [LINE, "SELECT count(*) FROM line"] {
                let params: &[Value] = if sql == LINE { &[Value::I64(2)] } else { &[] };
                let sent = tx.execute(sql, params).await;
                assert!(
                    matches!(sent, Err(Error::NotInTransaction(_))),
                    "{execution:?} {sql}: {sent:?}"
                );
            }
            let lines: i64 = rusqlite::Connection::open(store.backend().path())
                .unwrap()
                .query_row("SELECT count(*) FROM line", [], |row| row.get(0))
                .unwrap();
            assert_eq!(lines, 1, "{execution:?}: only the line before the commit");
        }
    }

    /// The watchdog's task ends with the runtime that ran it: a pool used on a second
    /// runtime starts another, and a transaction that hangs there is still rolled back
    /// at its deadline, freeing the write lock.
    #[test]
    fn a_pool_outliving_its_runtime_still_ends_transactions_at_their_deadlines() {
        let runtime = || {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap()
        };
        let dir = tempfile::tempdir().unwrap();
        let first = runtime();
        let (store, lease) = first.block_on(async {
            let (store, lease) = setup(&dir, SqliteExecution::InPlace).await;
            let tx = store
                .transaction(&lease, Duration::from_secs(30))
                .await
                .unwrap()
                .unwrap();
            tx.commit().await.unwrap();
            (store, lease)
        });
        drop(first);
        runtime().block_on(async {
            let tx = store
                .transaction(&lease, Duration::from_millis(200))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(tx.execute(LINE, &[Value::I64(1)]).await.unwrap(), 1);
            tokio::time::sleep(Duration::from_millis(800)).await;
            let probe = rusqlite::Connection::open(store.backend().path()).unwrap();
            probe
                .execute_batch("BEGIN IMMEDIATE")
                .expect("the hung transaction still holds the write lock");
            let lines: i64 = probe
                .query_row("SELECT count(*) FROM line", [], |row| row.get(0))
                .unwrap();
            assert_eq!(lines, 0);
            drop(tx);
        });
    }

    /// Negative control: on a caller's connection, with no mark to read, every write
    /// checks the lease first, and the count above can see it.
    #[tokio::test]
    async fn a_write_in_a_callers_transaction_always_checks() {
        let dir = tempfile::tempdir().unwrap();
        let (store, lease) = setup(&dir, SqliteExecution::InPlace).await;
        let check = store.statements().still_fenced.clone();
        let mut conn = rusqlite::Connection::open(store.backend().path()).unwrap();
        let caller = conn.transaction().unwrap();
        let fenced = store
            .on(&caller)
            .unwrap()
            .fence(&lease)
            .await
            .unwrap()
            .unwrap();
        for v in 0..3 {
            assert_eq!(fenced.execute(LINE, &[Value::I64(v)]).await.unwrap(), 1);
        }
        let runs = caller
            .prepare_cached(&check)
            .unwrap()
            .get_status(StatementStatus::Run);
        assert_eq!(runs, 3);
    }

    /// SQLite's commit hook stands behind the refusal of a statement that could end a
    /// transaction while commits are held: a `COMMIT` that reaches SQLite anyway (run
    /// here on the connection itself, past the lent executor) is turned into a
    /// rollback. Negative control: with commits let go, the same `COMMIT` commits.
    #[tokio::test]
    async fn a_commit_that_reaches_sqlite_while_commits_are_held_rolls_back() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _lease) = setup(&dir, SqliteExecution::InPlace).await;
        for held in [true, false] {
            let lent = store.backend().lend().await.unwrap();
            Sqlite::hold_commits(&lent, held, GuardOnly::TOKEN);
            let committed = {
                let mut checkout = lent.connection();
                let conn = checkout.conn().conn();
                conn.execute_batch("BEGIN IMMEDIATE; INSERT INTO line VALUES (1)")
                    .unwrap();
                conn.execute_batch("COMMIT")
            };
            assert_eq!(committed.is_err(), held, "held {held}: {committed:?}");
            Sqlite::hold_commits(&lent, false, GuardOnly::TOKEN);
            Sqlite::give_back(lent);
        }
        let lines = store.backend().query_i64("SELECT count(*) FROM line", &[]);
        assert_eq!(lines.await.unwrap(), Some(1));
    }
}
