//! SQLite through rusqlite (bundled): WAL, a busy timeout, a small pool of connections,
//! and statements that never wait for a lock on the async runtime's threads.
//!
//! SQLite itself waits for a lock by sleeping in the calling thread. Here a statement
//! never asks it to: a statement that finds the database locked ends at once with
//! `SQLITE_BUSY`, having changed nothing, and its task sleeps on tokio's timer before
//! running it again, on the schedule of SQLite's own busy handler.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::rows::{all_rows, first_row, rows_changed};
use super::value::bound;
use crate::dialect::kind::Dialect;
use crate::error::{Error, Result};
use crate::executor::Executor;
use crate::pool::{Checkout, DEFAULT_CHECKOUT_TIMEOUT, Pool};
use crate::value::Value;
use rusqlite::{Connection, Statement, params_from_iter};

mod lent;
mod prepared;
mod watchdog;

pub use lent::LentSqlite;
use prepared::PreparedConnection;

/// Where a statement runs on tokio's runtime: see [`SqliteOptions::execution`].
///
/// In both modes a statement runs without waiting for any lock: if another connection
/// holds the database's write lock, SQLite answers `SQLITE_BUSY` at once, having
/// changed nothing, and the task sleeps on tokio's timer (1, 2, 5, 10 ms and on, up to
/// 100 ms, the schedule of SQLite's own busy handler) before running the statement
/// again, until the [busy timeout](SqliteOptions::busy_timeout) has passed. A lock wait
/// never holds a thread, neither a runtime thread nor one of tokio's blocking pool, and
/// a timeout around the call fires on time. The runtime must have its timer enabled
/// (`#[tokio::main]` and `Builder::enable_all` do). The modes differ in what the
/// runtime's thread does while the statement itself runs.
#[cfg(feature = "sqlite")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SqliteExecution {
    /// The statement runs on the calling worker thread inside
    /// [`tokio::task::block_in_place`], which first hands the thread's other tasks to
    /// another thread, so that nothing queued behind the statement waits for it, even a
    /// commit that waits for the disk's flush. The hand-off costs a few microseconds per
    /// statement (a thread wake-up). On tokio's current-thread runtime, where
    /// `block_in_place` is not allowed, statements run on the blocking pool instead.
    #[default]
    HandOff,
    /// The statement runs on the calling thread as any other code of the task does. The
    /// fastest mode. The thread is held for as long as the statement takes:
    /// microseconds when the file is in the page cache and commits do not wait for the
    /// disk (a memory-backed file, or WAL with `PRAGMA synchronous = NORMAL`), but with
    /// the default `synchronous = FULL` on a disk every commit holds it for the disk's
    /// flush (often milliseconds). Each statement spends a unit of the task's
    /// cooperative budget (a fenced transaction one in all, before its `BEGIN
    /// IMMEDIATE`, so that it never yields while holding the write lock), so a task
    /// issuing statements without pause still yields to the thread's other tasks every
    /// so often, as with any tokio resource that is always ready; a statement that found nothing to change (a refused acquisition or
    /// write, in either mode) yields at once, since the task holding the row may be
    /// waiting on the same thread.
    InPlace,
}

/// The longest busy timeout SQLite takes: `i32::MAX` milliseconds.
const MAX_BUSY_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

/// Options for [`Sqlite::open_with`].
#[cfg(feature = "sqlite")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    max_connections: usize,
    busy_timeout: Duration,
    checkout_timeout: Duration,
    execution: SqliteExecution,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            max_connections: 4,
            busy_timeout: Duration::from_secs(5),
            checkout_timeout: DEFAULT_CHECKOUT_TIMEOUT,
            execution: SqliteExecution::HandOff,
        }
    }
}

impl SqliteOptions {
    /// How many connections the pool may open. Default 4; at least 1.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// How long a statement waits for another connection's write lock before failing
    /// with `SQLITE_BUSY` (an error, never a refusal). Default 5 s. The wait is a sleep
    /// of the statement's task between tries (see [`SqliteExecution`]). Saturates at
    /// `i32::MAX` milliseconds (about 24.8 days), the most SQLite takes: a longer
    /// timeout, [`Duration::MAX`] included, waits that long.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout.min(MAX_BUSY_TIMEOUT);
        self
    }

    /// How long a statement waits for a pooled connection, the opening of a new one
    /// included, before failing with [`Error::PoolTimedOut`]: all of them may be held
    /// by statements waiting for another connection's lock. Default 30 s. A timeout too
    /// long for the timer ([`Duration::MAX`]) waits as long as it takes.
    pub fn checkout_timeout(mut self, timeout: Duration) -> Self {
        self.checkout_timeout = timeout;
        self
    }

    /// Where statements run on tokio's runtime. Default [`SqliteExecution::HandOff`].
    ///
    /// ```
    /// use fenced_guard::{SqliteExecution, SqliteOptions};
    ///
    /// // The file is on memory-backed storage, so no commit waits for a disk: let
    /// // statements run on the runtime's threads without the hand-off.
    /// let options = SqliteOptions::default().execution(SqliteExecution::InPlace);
    /// # let _ = options;
    /// ```
    pub fn execution(mut self, execution: SqliteExecution) -> Self {
        self.execution = execution;
        self
    }
}

struct Inner {
    path: PathBuf,
    options: SqliteOptions,
    pool: Arc<Pool<PreparedConnection>>,
    /// Ends lent transactions at their deadlines.
    watchdog: Arc<watchdog::Watchdog>,
}

impl Inner {
    /// Opens a connection. An idle connection has no busy timeout: a statement run on a
    /// runtime thread must never wait for a lock there, and waits by sleeping its task
    /// instead ([`LockWait`]). Work on the blocking pool (opening the database, batches,
    /// transactions) sets the configured timeout for its duration
    /// ([`with_busy_timeout`]).
    fn connect(&self) -> rusqlite::Result<PreparedConnection> {
        let conn = Connection::open(&self.path)?;
        conn.busy_timeout(Duration::ZERO)?;
        PreparedConnection::new(conn)
    }
}

/// The SQLite backend: a database file, opened in WAL mode, with a small pool of
/// connections, each statement prepared once per connection and kept with it (up to
/// [`Sqlite::MAX_PREPARED_STATEMENTS`] per connection; past that, the one used longest
/// ago is finalized). A statement that must wait for another connection's lock waits by
/// sleeping its task on tokio's timer, never holding a thread; where the statement
/// itself runs is chosen by [`SqliteExecution`]. Cheap to clone (clones share the pool).
///
/// The expiry column holds integer milliseconds since the Unix epoch from SQLite's own
/// clock; owners are stored as hyphenated lowercase text.
#[cfg(feature = "sqlite")]
#[derive(Clone)]
pub struct Sqlite {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Sqlite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sqlite")
            .field("path", &self.inner.path)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl Sqlite {
    /// How many prepared statements each connection keeps. A store uses a handful per
    /// table; the bound is for statements sent through the backend directly
    /// ([`Executor::execute`]), so that a stream of distinct texts cannot grow a
    /// connection's statements without limit. Past it, the statement used longest ago
    /// is finalized.
    pub const MAX_PREPARED_STATEMENTS: usize = prepared::CAPACITY;

    /// Opens (creating if needed) the database file at `path` with default options, and
    /// switches it to WAL mode.
    ///
    /// # Errors
    ///
    /// [`Error::Sqlite`] if the file cannot be opened or WAL mode cannot be set.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, SqliteOptions::default()).await
    }

    /// Opens the database file at `path` with `options`, and switches it to WAL mode.
    ///
    /// # Errors
    ///
    /// [`Error::Sqlite`] if the file cannot be opened or WAL mode cannot be set.
    pub async fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self> {
        let inner = Arc::new(Inner {
            path: path.as_ref().to_path_buf(),
            options,
            pool: Pool::new(options.max_connections),
            watchdog: watchdog::Watchdog::new(),
        });
        let sqlite = Sqlite { inner };
        sqlite
            .run(|conn| {
                let mode: String =
                    conn.conn()
                        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
                if mode.eq_ignore_ascii_case("wal") {
                    Ok(Ok(()))
                } else {
                    Ok(Err(Error::Config(format!(
                        "sqlite refused WAL mode (journal mode is {mode})"
                    ))))
                }
            })
            .await??;
        Ok(sqlite)
    }

    /// The database file's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    async fn checkout(&self) -> Result<Checkout<PreparedConnection>> {
        let inner = Arc::clone(&self.inner);
        self.inner
            .pool
            .checkout_within(self.inner.options.checkout_timeout, || async move {
                tokio::task::spawn_blocking(move || inner.connect())
                    .await
                    .map_err(Error::Task)?
                    .map_err(Error::Sqlite)
            })
            .await
    }

    /// Runs `f` on a pooled connection on tokio's blocking pool, with the busy timeout.
    async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut PreparedConnection) -> rusqlite::Result<T> + Send + 'static,
    {
        let checkout = self.checkout().await?;
        on_blocking_pool(checkout, self.inner.options.busy_timeout, f).await
    }

    /// Runs one autocommitted statement, `sql` with `params`, through `step` on a pooled
    /// connection, where [`SqliteExecution`] says, without waiting for any lock: while
    /// the database is locked, the task sleeps between tries ([`LockWait`]). On the
    /// current-thread runtime with [`SqliteExecution::HandOff`], the statement runs on
    /// the blocking pool, with the busy timeout.
    ///
    /// Runs on the runtime's threads borrow `sql` and `params`; only the blocking pool's
    /// run copies them.
    async fn run_statement<T>(
        &self,
        sql: &str,
        params: &[Value],
        step: fn(&mut Statement<'_>, &[Value]) -> rusqlite::Result<T>,
    ) -> Result<T>
    where
        T: Found + Send + 'static,
    {
        let mut checkout = match self.inner.pool.take_idle() {
            Some(checkout) => checkout,
            None => self.checkout().await?,
        };
        let run_once =
            |conn: &mut PreparedConnection| conn.with_statement(sql, |stmt| step(stmt, params));
        let execution = self.inner.options.execution;
        let mut lock_wait = LockWait::new(self.inner.options.busy_timeout);
        loop {
            let attempt = match execution {
                SqliteExecution::InPlace => run_once(checkout.conn()),
                SqliteExecution::HandOff if on_multi_thread_runtime() => {
                    tokio::task::block_in_place(|| run_once(checkout.conn()))
                }
                SqliteExecution::HandOff => break,
            };
            if let Err(e) = &attempt
                && is_busy(e)
                && lock_wait.sleep().await
            {
                continue;
            }
            // An SQL error leaves a SQLite connection usable; only a panic drops it.
            checkout.give_back();
            // A network driver's task waits for its answer and lets the thread's other
            // tasks run meanwhile; this one did not, unless it slept for a lock.
            match &attempt {
                // A statement that found nothing to change (a refused acquisition or
                // fenced write) usually means another task holds the row, and that task
                // may be queued on this very thread: let it run now, rather than after a
                // caller retrying at once has spent its whole budget.
                Ok(found) if !found.found_anything() => tokio::task::yield_now().await,
                // Otherwise spend a unit of tokio's cooperative budget, so that a task
                // issuing statements without pause still yields every so often.
                // Yielding after every statement would cost a poll of the I/O driver
                // each time.
                _ if execution == SqliteExecution::InPlace => {
                    tokio::task::consume_budget().await;
                }
                _ => {}
            }
            return attempt.map_err(Error::Sqlite);
        }
        let (sql, params) = (sql.to_owned(), params.to_vec());
        on_blocking_pool(checkout, self.inner.options.busy_timeout, move |conn| {
            conn.with_statement(&sql, |stmt| step(stmt, &params))
        })
        .await
    }
}

/// A statement's wait for a lock another connection holds: sleeps of the task between
/// its tries, on the schedule of SQLite's own busy handler, until the busy timeout has
/// passed since the first try that found the lock held.
///
/// Why not let SQLite wait, on tokio's blocking pool, as an earlier version did: with
/// more tasks than runtime threads, two threads often run a write at the same moment,
/// and each wait then cost the thread switches of a trip to the blocking pool (about
/// half a context switch per lease cycle more than raw rusqlite's threads, with 32
/// tasks; `BENCHMARKS.md` as of `fdcf93c` has the figures).
struct LockWait {
    busy_timeout: Duration,
    /// When the first try found the lock held; `None` until then.
    since: Option<Instant>,
    /// Sleeps so far.
    sleeps: usize,
}

impl LockWait {
    /// SQLite's busy handler sleeps these many milliseconds between its tries, the
    /// last one again for as long as the wait goes on.
    const DELAYS_MS: [u64; 12] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];

    fn new(busy_timeout: Duration) -> Self {
        LockWait {
            busy_timeout,
            since: None,
            sleeps: 0,
        }
    }

    /// Sleeps before the next try and returns `true`; or returns `false` at once when
    /// the busy timeout has passed and the statement should fail with `SQLITE_BUSY`.
    async fn sleep(&mut self) -> bool {
        let waited = self.since.get_or_insert_with(Instant::now).elapsed();
        let Some(left) = self
            .busy_timeout
            .checked_sub(waited)
            .filter(|d| !d.is_zero())
        else {
            return false;
        };
        let delay = Self::DELAYS_MS[self.sleeps.min(Self::DELAYS_MS.len() - 1)];
        self.sleeps += 1;
        tokio::time::sleep(Duration::from_millis(delay).min(left)).await;
        true
    }
}

/// Whether a statement's result shows it found something: a row returned, or a row
/// changed.
trait Found {
    fn found_anything(&self) -> bool;
}

impl Found for u64 {
    fn found_anything(&self) -> bool {
        *self > 0
    }
}

impl Found for Option<Vec<Value>> {
    fn found_anything(&self) -> bool {
        self.is_some()
    }
}

impl Found for Vec<Vec<Value>> {
    fn found_anything(&self) -> bool {
        !self.is_empty()
    }
}

/// Runs `f` on `checkout`'s connection on tokio's blocking pool, with `busy_timeout` set
/// for its duration.
async fn on_blocking_pool<T, F>(
    mut checkout: Checkout<PreparedConnection>,
    busy_timeout: Duration,
    f: F,
) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&mut PreparedConnection) -> rusqlite::Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let result = with_busy_timeout(checkout.conn(), busy_timeout, f)?;
        // An SQL error leaves a SQLite connection usable; only a panic, or a busy
        // timeout that could not be reset, drops it.
        checkout.give_back();
        result
    })
    .await
    .map_err(Error::Task)?
    .map_err(Error::Sqlite)
}

/// Runs `f` with the busy timeout set to `timeout`, and clears it again. The outer error
/// is a failure to set or clear the timeout (the connection must then be dropped); the
/// inner result is `f`'s.
fn with_busy_timeout<T>(
    conn: &mut PreparedConnection,
    timeout: Duration,
    f: impl FnOnce(&mut PreparedConnection) -> rusqlite::Result<T>,
) -> rusqlite::Result<rusqlite::Result<T>> {
    conn.conn().busy_timeout(timeout)?;
    let result = f(conn);
    conn.conn().busy_timeout(Duration::ZERO)?;
    Ok(result)
}

/// `true` for `SQLITE_BUSY`: another connection holds the lock the statement needs.
fn is_busy(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
}

/// `true` on a worker thread of tokio's multi-threaded runtime, where
/// [`tokio::task::block_in_place`] is allowed.
fn on_multi_thread_runtime() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

impl Executor for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        self.run_statement(sql, params, rows_changed).await
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        self.run_statement(sql, params, first_row).await
    }

    async fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        self.run_statement(sql, params, all_rows).await
    }

    async fn execute_batch(&self, sql: &str) -> Result<()> {
        let sql = sql.to_owned();
        self.run(move |conn| conn.conn().execute_batch(&sql)).await
    }

    async fn execute_then_record(
        &self,
        write: &str,
        write_params: &[Value],
        record: &str,
        record_params: &[Value],
    ) -> Result<u64> {
        let (write, record) = (write.to_owned(), record.to_owned());
        let (write_params, record_params) = (write_params.to_vec(), record_params.to_vec());
        self.run(move |conn| {
            // IMMEDIATE takes the write lock first, so the write and its record see
            // and leave one consistent state.
            conn.conn().execute_batch("BEGIN IMMEDIATE")?;
            let body = |conn: &mut PreparedConnection| -> rusqlite::Result<usize> {
                let rows = conn.with_statement(&write, |stmt| {
                    stmt.execute(params_from_iter(bound(&write_params)))
                })?;
                if rows == 1 {
                    conn.with_statement(&record, |stmt| {
                        stmt.execute(params_from_iter(bound(&record_params)))
                    })?;
                }
                Ok(rows)
            };
            let outcome = body(conn);
            let conn = conn.conn();
            match outcome {
                Ok(rows) => {
                    if let Err(error) = conn.execute_batch("COMMIT") {
                        // A failed COMMIT may leave the transaction open; end it so the
                        // pooled connection is clean.
                        let _ = conn.execute_batch("ROLLBACK");
                        return Err(error);
                    }
                    Ok(u64::try_from(rows).unwrap_or(u64::MAX))
                }
                Err(error) => {
                    let _ = conn.execute_batch("ROLLBACK");
                    Err(error)
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn round_trip(execution: SqliteExecution) -> Result<Option<Vec<Value>>> {
        let dir = tempfile::tempdir().map_err(|e| Error::Config(e.to_string()))?;
        let options = SqliteOptions::default().execution(execution);
        let sqlite = Sqlite::open_with(dir.path().join("t.db"), options).await?;
        sqlite.execute_batch("CREATE TABLE t (v INTEGER)").await?;
        let rows = sqlite
            .execute("INSERT INTO t (v) VALUES (?1)", &[Value::I64(7)])
            .await?;
        assert_eq!(rows, 1);
        let error = sqlite.execute("INSERT INTO missing VALUES (1)", &[]).await;
        assert!(matches!(error, Err(Error::Sqlite(_))), "{error:?}");
        sqlite.query_row("SELECT v FROM t", &[]).await
    }

    /// A task retrying a refused acquisition at once, on the same thread as the lease's
    /// holder, lets the holder run after each refusal, not after a whole cooperative
    /// budget. Negative control: without the yield after a statement that found nothing,
    /// the contender is refused 129 times here before the holder runs again.
    #[tokio::test(flavor = "current_thread")]
    async fn a_refused_acquisition_in_place_lets_the_holder_run() {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteOptions::default().execution(SqliteExecution::InPlace);
        let table = crate::FencedTable::builder()
            .key_type(crate::KeyType::BigInt)
            .build()
            .unwrap();
        let store = crate::Store::new(
            Sqlite::open_with(dir.path().join("y.db"), options)
                .await
                .unwrap(),
            table,
        );
        store.create_schema().await.unwrap();
        store.provision(1_i64).await.unwrap();
        let ttl = Duration::from_secs(30);
        let lease = store.try_acquire(1_i64, ttl).await.unwrap().expect("free");
        let contender = tokio::spawn({
            let store = store.clone();
            async move {
                let mut refused = 0_u32;
                while store.try_acquire(1_i64, ttl).await.unwrap().is_none() {
                    refused += 1;
                }
                refused
            }
        });
        tokio::task::yield_now().await; // the contender runs until it yields
        assert!(store.release(&lease).await.unwrap().is_applied());
        let refused = contender.await.unwrap();
        assert!(
            (1..=2).contains(&refused),
            "{refused} refusals before the holder could release"
        );
    }

    /// A UUID bound to a statement reaches SQLite as its hyphenated lowercase text, in
    /// the statement run for its row and in the one run for its count, beside values of
    /// the other types.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_bound_uuid_reaches_sqlite_as_its_text() {
        let dir = tempfile::tempdir().unwrap();
        let sqlite = Sqlite::open(dir.path().join("u.db")).await.unwrap();
        sqlite
            .execute_batch("CREATE TABLE u (id TEXT, n INTEGER)")
            .await
            .unwrap();
        let uuid = uuid::Uuid::from_u128(0x0123_4567_89AB_CDEF_0123_4567_89AB_CDEF);
        let text = "01234567-89ab-cdef-0123-456789abcdef";
        let inserted = sqlite
            .execute(
                "INSERT INTO u (id, n) VALUES (?1, ?2)",
                &[Value::Uuid(uuid), Value::I64(3)],
            )
            .await
            .unwrap();
        assert_eq!(inserted, 1);
        let row = sqlite
            .query_row(
                "SELECT id, typeof(id), n, ?1 = id FROM u WHERE n = ?2",
                &[Value::Uuid(uuid), Value::I64(3)],
            )
            .await
            .unwrap();
        assert_eq!(
            row,
            Some(vec![
                Value::Text(text.into()),
                Value::Text("text".into()),
                Value::I64(3),
                Value::I64(1),
            ])
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn statements_run_on_the_multi_thread_runtime_in_either_mode() {
        assert!(on_multi_thread_runtime());
        for execution in [SqliteExecution::HandOff, SqliteExecution::InPlace] {
            let row = round_trip(execution).await.unwrap();
            assert_eq!(row, Some(vec![Value::I64(7)]), "{execution:?}");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn statements_run_on_the_current_thread_runtime_in_either_mode() {
        assert!(!on_multi_thread_runtime());
        for execution in [SqliteExecution::HandOff, SqliteExecution::InPlace] {
            let row = round_trip(execution).await.unwrap();
            assert_eq!(row, Some(vec![Value::I64(7)]), "{execution:?}");
        }
    }

    /// Runs one insert on `runtime` while its only blocking-pool thread is taken, and
    /// says whether it completed within `within`. A statement that runs on the runtime's
    /// own thread completes; one sent to the blocking pool waits.
    fn completes_while_the_blocking_pool_is_taken(
        runtime: &tokio::runtime::Runtime,
        execution: SqliteExecution,
        within: Duration,
    ) -> bool {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteOptions::default()
            .max_connections(1)
            .execution(execution);
        let sqlite = runtime.block_on(async {
            let sqlite = Sqlite::open_with(dir.path().join("t.db"), options)
                .await
                .unwrap();
            // Opens the pool's one connection, which then stays idle in the pool.
            sqlite
                .execute_batch("CREATE TABLE t (v INTEGER)")
                .await
                .unwrap();
            sqlite
        });
        let (release_tx, taken) = take_the_blocking_pool(runtime);
        let completed = runtime.block_on(async {
            let insert = sqlite.execute("INSERT INTO t (v) VALUES (1)", &[]);
            tokio::time::timeout(within, insert).await.is_ok()
        });
        release_tx.send(()).unwrap();
        runtime.block_on(taken).unwrap();
        completed
    }

    /// Takes the only thread of `runtime`'s blocking pool until the returned sender is
    /// used or dropped, or for 10 s.
    fn take_the_blocking_pool(
        runtime: &tokio::runtime::Runtime,
    ) -> (std::sync::mpsc::Sender<()>, tokio::task::JoinHandle<()>) {
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let taken = runtime.spawn_blocking(move || {
            started_tx.send(()).unwrap();
            let _ = release_rx.recv_timeout(Duration::from_secs(10));
        });
        started_rx.recv().unwrap();
        (release_tx, taken)
    }

    fn runtime(multi_thread: bool) -> tokio::runtime::Runtime {
        let mut builder = if multi_thread {
            tokio::runtime::Builder::new_multi_thread()
        } else {
            tokio::runtime::Builder::new_current_thread()
        };
        builder
            .max_blocking_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn statements_do_not_wait_for_the_blocking_pool() {
        let generous = Duration::from_secs(5);
        for (multi_thread, execution) in [
            (true, SqliteExecution::HandOff),
            (true, SqliteExecution::InPlace),
            (false, SqliteExecution::InPlace),
        ] {
            let runtime = runtime(multi_thread);
            assert!(
                completes_while_the_blocking_pool_is_taken(&runtime, execution, generous),
                "multi-thread {multi_thread}, {execution:?}"
            );
        }
    }

    #[test]
    fn negative_control_hand_off_on_the_current_thread_runtime_uses_the_blocking_pool() {
        // block_in_place is not allowed there, so the statement goes to the blocking
        // pool, and waits while its only thread is taken: the check above can fail.
        let runtime = runtime(false);
        assert!(!completes_while_the_blocking_pool_is_taken(
            &runtime,
            SqliteExecution::HandOff,
            Duration::from_millis(200),
        ));
    }

    /// Opens the database at `path` with `options` and creates table `t (v INTEGER)`.
    async fn with_table_t(path: &Path, options: SqliteOptions) -> Sqlite {
        let sqlite = Sqlite::open_with(path, options).await.unwrap();
        sqlite
            .execute_batch("CREATE TABLE t (v INTEGER)")
            .await
            .unwrap();
        sqlite
    }

    /// Holds the write lock of the database at `path` from another thread until the
    /// returned sender is used or dropped, or for 10 s.
    fn hold_the_write_lock(
        path: &Path,
    ) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>) {
        let path = path.to_path_buf();
        let (locked_tx, locked_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            locked_tx.send(()).unwrap();
            let _ = release_rx.recv_timeout(Duration::from_secs(10));
            conn.execute_batch("COMMIT").unwrap();
        });
        locked_rx.recv().unwrap();
        (release_tx, holder)
    }

    /// A statement that meets a held lock waits for it without a thread of the blocking
    /// pool: with the pool's only thread taken, it still completes once the lock is
    /// given up. (An earlier version waited there, and would wait here for the taken
    /// thread, 10 s.)
    #[test]
    fn a_lock_wait_takes_no_thread_of_the_blocking_pool() {
        for (multi_thread, execution) in [
            (true, SqliteExecution::HandOff),
            (true, SqliteExecution::InPlace),
            (false, SqliteExecution::InPlace),
        ] {
            let runtime = runtime(multi_thread);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.db");
            let options = SqliteOptions::default().execution(execution);
            let sqlite = runtime.block_on(with_table_t(&path, options));
            let (release_lock, holder) = hold_the_write_lock(&path);
            let (free_pool, taken) = take_the_blocking_pool(&runtime);
            let inserted = runtime.block_on(async {
                let insert = tokio::spawn({
                    let sqlite = sqlite.clone();
                    async move { sqlite.execute("INSERT INTO t (v) VALUES (1)", &[]).await }
                });
                tokio::time::sleep(Duration::from_millis(50)).await;
                release_lock.send(()).unwrap();
                tokio::time::timeout(Duration::from_secs(5), insert).await
            });
            free_pool.send(()).unwrap();
            runtime.block_on(taken).unwrap();
            holder.join().unwrap();
            let rows = inserted.expect("completed while the blocking pool was taken");
            assert_eq!(
                rows.unwrap().unwrap(),
                1,
                "multi-thread {multi_thread}, {execution:?}"
            );
        }
    }

    /// A lock held past the busy timeout ends the statement with `SQLITE_BUSY`, an
    /// error, once the timeout has passed and not before.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lock_held_past_the_busy_timeout_is_an_error() {
        let busy_timeout = Duration::from_millis(200);
        for execution in [SqliteExecution::HandOff, SqliteExecution::InPlace] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.db");
            let options = SqliteOptions::default()
                .busy_timeout(busy_timeout)
                .execution(execution);
            let sqlite = with_table_t(&path, options).await;
            let (release_lock, holder) = hold_the_write_lock(&path);
            let started = Instant::now();
            let result = sqlite.execute("INSERT INTO t (v) VALUES (1)", &[]).await;
            let waited = started.elapsed();
            release_lock.send(()).unwrap();
            holder.join().unwrap();
            assert!(
                matches!(&result, Err(Error::Sqlite(e)) if is_busy(e)),
                "{execution:?}: {result:?}"
            );
            assert!(
                waited >= busy_timeout,
                "{execution:?}: gave up after {waited:?}"
            );
            assert!(
                waited < Duration::from_secs(5),
                "{execution:?}: waited {waited:?}"
            );
        }
    }

    /// The pool's only connection is held by a statement waiting for another
    /// connection's lock: the next statement waits the checkout timeout, then fails.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_statement_waits_for_a_held_pool_only_the_checkout_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let timeout = Duration::from_millis(100);
        let options = SqliteOptions::default()
            .max_connections(1)
            .busy_timeout(Duration::from_secs(30))
            .checkout_timeout(timeout)
            .execution(SqliteExecution::InPlace);
        let sqlite = with_table_t(&path, options).await;
        let (release_tx, holder) = hold_the_write_lock(&path);
        let waiting = tokio::spawn({
            let sqlite = sqlite.clone();
            async move { sqlite.execute("INSERT INTO t (v) VALUES (1)", &[]).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = Instant::now();
        let second = tokio::time::timeout(
            Duration::from_secs(10),
            sqlite.execute("INSERT INTO t (v) VALUES (2)", &[]),
        )
        .await
        .expect("the checkout timeout ends the wait");
        assert!(
            matches!(second, Err(Error::PoolTimedOut { timeout: t }) if t == timeout),
            "{second:?}"
        );
        assert!(started.elapsed() >= timeout);
        assert!(!second.unwrap_err().may_have_committed());
        release_tx.send(()).unwrap();
        assert_eq!(waiting.await.unwrap().unwrap(), 1, "the first still ran");
        holder.join().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lock_wait_happens_off_the_runtime_thread_and_still_waits() {
        for execution in [SqliteExecution::HandOff, SqliteExecution::InPlace] {
            lock_wait(execution).await;
        }
    }

    async fn lock_wait(execution: SqliteExecution) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let options = SqliteOptions::default()
            .busy_timeout(Duration::from_secs(30))
            .execution(execution);
        let sqlite = with_table_t(&path, options).await;
        // Another connection holds the write lock until told to commit (or for 10 s).
        let (release_tx, holder) = hold_the_write_lock(&path);

        // A timeout around the statement fires while the lock is held: the wait is not
        // inside the runtime thread's poll. (Waiting in place, the statement would hold
        // the thread until the holder gives up after 10 s, and then succeed.)
        let insert = sqlite.execute("INSERT INTO t (v) VALUES (1)", &[]);
        let timed_out = tokio::time::timeout(Duration::from_millis(50), insert).await;
        assert!(timed_out.is_err(), "{execution:?}: {timed_out:?}");

        // And the statement does wait for the lock (no SQLITE_BUSY at once): it
        // completes once the holder commits.
        let waiting = tokio::spawn({
            let sqlite = sqlite.clone();
            async move { sqlite.execute("INSERT INTO t (v) VALUES (2)", &[]).await }
        });
        tokio::task::yield_now().await;
        release_tx.send(()).unwrap();
        assert_eq!(waiting.await.unwrap().unwrap(), 1, "{execution:?}");
        holder.join().unwrap();

        // The connection that waited went back to the pool without a busy timeout: the
        // next statement against a held lock answers SQLITE_BUSY at once in place, and
        // so again waits by sleeping rather than on this thread.
        let conn = Connection::open(dir.path().join("t.db")).unwrap();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        let insert = sqlite.execute("INSERT INTO t (v) VALUES (3)", &[]);
        let timed_out = tokio::time::timeout(Duration::from_millis(50), insert).await;
        assert!(timed_out.is_err(), "{execution:?}: {timed_out:?}");
        conn.execute_batch("COMMIT").unwrap();
    }
}
