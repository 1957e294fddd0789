//! SQLite through rusqlite (bundled): WAL, a busy timeout, a small pool of connections
//! used off the async runtime's threads.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::backend::Backend;
use crate::backend::pool::{Checkout, Pool};
use crate::dialect::Dialect;
use crate::error::{Error, Result};
use crate::value::{Key, Value};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, params_from_iter};

/// Options for [`Sqlite::open_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    max_connections: usize,
    busy_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            max_connections: 4,
            busy_timeout: Duration::from_secs(5),
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
    /// with `SQLITE_BUSY` (an error, never a refusal). Default 5 s.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }
}

struct Inner {
    path: PathBuf,
    options: SqliteOptions,
    pool: Arc<Pool<Connection>>,
}

impl Inner {
    fn connect(&self) -> rusqlite::Result<Connection> {
        let conn = Connection::open(&self.path)?;
        conn.busy_timeout(self.options.busy_timeout)?;
        Ok(conn)
    }
}

/// The SQLite backend: a database file, opened in WAL mode, with a small pool of
/// connections. Every statement runs on tokio's blocking pool, never on the async
/// runtime's threads. Cheap to clone (clones share the pool).
///
/// The expiry column holds integer milliseconds since the Unix epoch from SQLite's own
/// clock; owners are stored as hyphenated lowercase text.
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
        });
        let sqlite = Sqlite { inner };
        sqlite
            .run(|conn| {
                let mode: String =
                    conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
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

    async fn checkout(&self) -> Result<Checkout<Connection>> {
        let inner = Arc::clone(&self.inner);
        self.inner
            .pool
            .checkout(|| async move {
                tokio::task::spawn_blocking(move || inner.connect())
                    .await
                    .map_err(Error::Task)?
                    .map_err(Error::Sqlite)
            })
            .await
    }

    /// Runs `f` on a pooled connection on tokio's blocking pool.
    async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let checkout = self.checkout().await?;
        on_blocking_pool(checkout, f).await
    }

    /// Runs one autocommitted statement `f` on a pooled connection.
    ///
    /// On tokio's multi-threaded runtime the statement first runs in place, on this
    /// worker thread (tokio hands the thread's other tasks to another thread meanwhile),
    /// which spares the two thread switches of a round trip through the blocking pool.
    /// That attempt does not wait for another connection's lock: with the busy timeout
    /// off, a locked database answers `SQLITE_BUSY` at once, having changed nothing, and
    /// the statement is sent again from the blocking pool with the configured busy
    /// timeout. So the runtime's thread is never held by a lock wait, and a caller's
    /// timeout around the statement still fires on time while it waits.
    async fn run_statement<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let mut checkout = self.checkout().await?;
        if on_multi_thread_runtime() {
            let busy_timeout = self.inner.options.busy_timeout;
            let attempt = tokio::task::block_in_place(|| {
                let conn = checkout.conn();
                conn.busy_timeout(Duration::ZERO)?;
                let result = f(conn);
                conn.busy_timeout(busy_timeout)?;
                Ok(result)
            });
            match attempt {
                Ok(Err(e)) if is_busy(&e) => {}
                Ok(result) => {
                    checkout.give_back();
                    return result.map_err(Error::Sqlite);
                }
                // The busy timeout could not be set: the connection is dropped.
                Err(e) => return Err(Error::Sqlite(e)),
            }
        }
        on_blocking_pool(checkout, f).await
    }
}

async fn on_blocking_pool<T, F>(mut checkout: Checkout<Connection>, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let result = f(checkout.conn());
        // An SQL error leaves a SQLite connection usable; only a panic drops it.
        checkout.give_back();
        result
    })
    .await
    .map_err(Error::Task)?
    .map_err(Error::Sqlite)
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

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Bool(v) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(*v))),
            Value::I64(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Value::F64(v) => ToSqlOutput::Borrowed(ValueRef::Real(*v)),
            Value::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Value::Bytes(v) => ToSqlOutput::Borrowed(ValueRef::Blob(v)),
            Value::Uuid(v) => {
                ToSqlOutput::Owned(rusqlite::types::Value::Text(v.hyphenated().to_string()))
            }
        })
    }
}

impl rusqlite::ToSql for Key {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Key::BigInt(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Key::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Key::Uuid(v) => {
                ToSqlOutput::Owned(rusqlite::types::Value::Text(v.hyphenated().to_string()))
            }
        })
    }
}

fn decode(index: usize, value: ValueRef<'_>) -> rusqlite::Result<Value> {
    Ok(match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(v) => Value::I64(v),
        ValueRef::Real(v) => Value::F64(v),
        ValueRef::Text(v) => Value::Text(
            std::str::from_utf8(v)
                .map_err(|e| rusqlite::Error::Utf8Error(index, e))?
                .to_owned(),
        ),
        ValueRef::Blob(v) => Value::Bytes(v.to_vec()),
    })
}

impl Backend for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        let sql = sql.to_owned();
        let params = params.to_vec();
        self.run_statement(move |conn| {
            let mut stmt = conn.prepare_cached(&sql)?;
            let rows = stmt.execute(params_from_iter(params.iter()))?;
            Ok(u64::try_from(rows).unwrap_or(u64::MAX))
        })
        .await
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        let sql = sql.to_owned();
        let params = params.to_vec();
        self.run_statement(move |conn| {
            let mut stmt = conn.prepare_cached(&sql)?;
            let width = stmt.column_count();
            let mut rows = stmt.query(params_from_iter(params.iter()))?;
            let first = match rows.next()? {
                Some(row) => Some(
                    (0..width)
                        .map(|i| decode(i, row.get_ref(i)?))
                        .collect::<rusqlite::Result<Vec<_>>>()?,
                ),
                None => None,
            };
            // Step to the end so that a RETURNING statement completes its changes.
            while rows.next()?.is_some() {}
            Ok(first)
        })
        .await
    }

    async fn execute_batch(&self, sql: &str) -> Result<()> {
        let sql = sql.to_owned();
        self.run(move |conn| conn.execute_batch(&sql)).await
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
            conn.execute_batch("BEGIN IMMEDIATE")?;
            let body = || -> rusqlite::Result<usize> {
                let rows = conn
                    .prepare_cached(&write)?
                    .execute(params_from_iter(write_params.iter()))?;
                if rows == 1 {
                    conn.prepare_cached(&record)?
                        .execute(params_from_iter(record_params.iter()))?;
                }
                Ok(rows)
            };
            match body() {
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

    async fn round_trip() -> Result<Option<Vec<Value>>> {
        let dir = tempfile::tempdir().map_err(|e| Error::Config(e.to_string()))?;
        let sqlite = Sqlite::open(dir.path().join("t.db")).await?;
        sqlite.execute_batch("CREATE TABLE t (v INTEGER)").await?;
        let rows = sqlite
            .execute("INSERT INTO t (v) VALUES (?1)", &[Value::I64(7)])
            .await?;
        assert_eq!(rows, 1);
        let error = sqlite.execute("INSERT INTO missing VALUES (1)", &[]).await;
        assert!(matches!(error, Err(Error::Sqlite(_))), "{error:?}");
        sqlite.query_row("SELECT v FROM t", &[]).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn statements_run_in_place_on_the_multi_thread_runtime() {
        assert!(on_multi_thread_runtime());
        assert_eq!(round_trip().await.unwrap(), Some(vec![Value::I64(7)]));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lock_wait_happens_off_the_runtime_thread_and_still_waits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let options = SqliteOptions::default().busy_timeout(Duration::from_secs(30));
        let sqlite = Sqlite::open_with(&path, options).await.unwrap();
        sqlite
            .execute_batch("CREATE TABLE t (v INTEGER)")
            .await
            .unwrap();
        // Another connection holds the write lock until told to commit (or for 10 s).
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

        // A timeout around the statement fires while the lock is held: the wait is not
        // inside the runtime thread's poll. (Waiting in place, the statement would hold
        // the thread until the holder gives up after 10 s, and then succeed.)
        let insert = sqlite.execute("INSERT INTO t (v) VALUES (1)", &[]);
        let timed_out = tokio::time::timeout(Duration::from_millis(50), insert).await;
        assert!(timed_out.is_err(), "{timed_out:?}");

        // And the statement does wait for the lock (no SQLITE_BUSY at once): it
        // completes once the holder commits.
        let waiting = tokio::spawn({
            let sqlite = sqlite.clone();
            async move { sqlite.execute("INSERT INTO t (v) VALUES (2)", &[]).await }
        });
        tokio::task::yield_now().await;
        release_tx.send(()).unwrap();
        assert_eq!(waiting.await.unwrap().unwrap(), 1);
        holder.join().unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn statements_run_on_the_blocking_pool_on_the_current_thread_runtime() {
        assert!(!on_multi_thread_runtime());
        assert_eq!(round_trip().await.unwrap(), Some(vec![Value::I64(7)]));
    }
}
