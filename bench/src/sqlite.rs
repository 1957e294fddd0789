//! SQLite: the guard (its pool of connections, each statement run in one of the guard's
//! execution modes) against rusqlite with the same statements prepared once on each
//! worker's own connection, on the worker's own thread. Both in WAL mode with the same
//! busy timeout, on the same file.

use std::path::{Path, PathBuf};
use std::sync::{Barrier, OnceLock};
use std::time::Duration;

use fenced_guard::{Dialect, FencedTable, Sqlite, SqliteExecution, SqliteOptions, Store};
use rusqlite::{Connection, Statement, params};
use uuid::Uuid;

use crate::check::Check;
use crate::error::{Error, Result};
use crate::measure::{self, Summary, Timing, Window};
use crate::workload::{
    self, CONTENDED_KEY, CycleSql, GuardCycle, PAYLOAD, Rows, Shape, TTL, one_row,
};

/// How long a statement waits for another connection's write lock, on both sides.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the guard runs a SQLite statement: the benchmark's own names for
/// [`SqliteExecution`]'s modes. That enum is non-exhaustive; this one is not, so that
/// every mode measured has a name on the command line, in the tables and in the chart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Execution {
    /// On the runtime thread that awaits the statement ([`SqliteExecution::InPlace`]).
    InPlace,
    /// On the same thread inside `tokio::task::block_in_place`, after handing the
    /// thread's other tasks to another thread ([`SqliteExecution::HandOff`], the
    /// guard's default).
    HandOff,
}

impl Execution {
    /// Its name in tables, charts and progress lines.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Execution::InPlace => "in place",
            Execution::HandOff => "hand-off",
        }
    }
}

impl From<Execution> for SqliteExecution {
    fn from(execution: Execution) -> Self {
        match execution {
            Execution::InPlace => SqliteExecution::InPlace,
            Execution::HandOff => SqliteExecution::HandOff,
        }
    }
}

/// A SQLite target: a database file in a temporary directory under the chosen
/// directory, removed on drop.
pub(crate) struct Lite {
    _dir: tempfile::TempDir,
    path: PathBuf,
    table: FencedTable,
}

impl Lite {
    /// Creates the database file (WAL mode) and the table, and provisions the contended
    /// row and one row per worker up to `max_workers`.
    pub(crate) async fn setup(parent: &Path, max_workers: usize) -> Result<Lite> {
        let dir = tempfile::tempdir_in(parent).map_err(|source| Error::Io {
            path: parent.display().to_string(),
            source,
        })?;
        let path = dir.path().join("bench.db");
        let table = workload::table("BenchLease")?;
        let store = Store::new(Sqlite::open(&path).await?, table.clone());
        store.create_schema().await?;
        for key in CONTENDED_KEY..=i64::try_from(max_workers).unwrap_or(i64::MAX - 1) {
            store.provision(key).await?;
        }
        let path = path.canonicalize().map_err(|source| Error::Io {
            path: path.display().to_string(),
            source,
        })?;
        Ok(Lite {
            _dir: dir,
            path,
            table,
        })
    }

    /// One run through the guard: `workers` workers sharing one guard store whose pool
    /// holds up to `workers` connections and runs its statements as `execution` says.
    pub(crate) async fn run_guard(
        &self,
        execution: Execution,
        rows: Rows,
        shape: Shape,
        workers: usize,
        timing: Timing,
    ) -> Result<(Summary, Check)> {
        let options = SqliteOptions::default()
            .max_connections(workers)
            .busy_timeout(BUSY_TIMEOUT)
            .execution(execution.into());
        let store = Store::new(
            Sqlite::open_with(&self.path, options).await?,
            self.table.clone(),
        );
        let cycles = GuardCycle::for_workers(&store, shape, workers);
        let path = &self.path;
        let window = timing.start();
        let (_, tally, cpu, start, end) = measure::run_async(
            cycles,
            |i| rows.key(i),
            window,
            || async { open_handles(path) },
            || async { open_handles(path) },
        )
        .await?;
        Ok((
            Summary::of(tally, window.measured(), cpu),
            handle_check(start?, end?),
        ))
    }

    /// One run of the same statements through rusqlite: each worker owns one
    /// connection, on its own thread, and prepares the cycle's statements on it once.
    pub(crate) async fn run_raw(
        &self,
        rows: Rows,
        shape: Shape,
        workers: usize,
        timing: Timing,
    ) -> Result<(Summary, Check)> {
        let sql = CycleSql::render(Dialect::Sqlite, &self.table, shape)?;
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || run_raw_threads(&path, &sql, rows, workers, timing))
            .await
            .map_err(|_| Error::Worker)?
    }
}

fn run_raw_threads(
    path: &Path,
    sql: &CycleSql,
    rows: Rows,
    workers: usize,
    timing: Timing,
) -> Result<(Summary, Check)> {
    // Each worker opens its connection and prepares its statements, then waits for the
    // others, so that the window starts once all are ready, as in the guard's runs. The
    // barrier is made once the threads are started, for as many as did start, so that a
    // thread the system refuses leaves no one waiting for it.
    let ready = OnceLock::new();
    let window = OnceLock::new();
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(workers);
        let mut refused = None;
        for i in 0..workers {
            let (ready, window) = (&ready, &window);
            // Named so that a profile can tell the raw side's threads apart (`perf
            // --comm raw-sqlite-0`).
            let spawned = std::thread::Builder::new()
                .name(format!("raw-sqlite-{i}"))
                .spawn_scoped(scope, move || {
                    raw_worker(path, sql, rows.key(i), ready, window)
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            }
        }
        ready.get_or_init(|| Barrier::new(handles.len() + 1)).wait();
        if let Some(e) = refused {
            // A window that is already over: the started workers stop before their
            // first cycle, and the run reports why it could not be made.
            window.get_or_init(|| Window::starting_now(Duration::ZERO, Duration::ZERO));
            for handle in handles {
                let _ = handle.join();
            }
            return Err(Error::Spawn(e));
        }
        let window: Window = *window.get_or_init(|| timing.start());
        std::thread::sleep(
            window
                .measure_from
                .saturating_duration_since(std::time::Instant::now()),
        );
        let cpu_start = measure::process_cpu();
        let start = open_handles(path);
        std::thread::sleep(
            window
                .until
                .saturating_duration_since(std::time::Instant::now()),
        );
        let cpu = measure::cpu_between(cpu_start, measure::process_cpu());
        let end = open_handles(path);
        let mut tally = measure::Tally::default();
        let mut first_error = None;
        for handle in handles {
            match handle.join() {
                Ok(Ok(t)) => tally.merge(t),
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(_) => {
                    first_error.get_or_insert(Error::Worker);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok((
                Summary::of(tally, window.measured(), cpu),
                handle_check(start?, end?),
            )),
        }
    })
}

fn raw_worker(
    path: &Path,
    sql: &CycleSql,
    key: i64,
    ready: &OnceLock<Barrier>,
    window: &OnceLock<Window>,
) -> Result<measure::Tally> {
    let prepared = raw_connection(path, sql);
    ready.wait().wait();
    let (conn, sql) = prepared?;
    let window = *window.wait();
    let mut acquire = conn.prepare_cached(&sql.acquire)?;
    let mut publish = conn.prepare_cached(&sql.publish)?;
    let mut release = match &sql.release {
        Some(release) => Some(conn.prepare_cached(release)?),
        None => None,
    };
    let ttl_ms = i64::try_from(TTL.as_millis()).unwrap_or(i64::MAX);
    measure::drive_blocking(
        |key| {
            raw_attempt(
                &mut acquire,
                &mut publish,
                release.as_deref_mut(),
                key,
                ttl_ms,
            )
        },
        key,
        window,
    )
}

fn raw_attempt(
    acquire: &mut Statement<'_>,
    publish: &mut Statement<'_>,
    release: Option<&mut Statement<'_>>,
    key: i64,
    ttl_ms: i64,
) -> Result<bool> {
    let owner = Uuid::new_v4().hyphenated().to_string();
    let generation = {
        let mut rows = acquire.query(params![key, owner, ttl_ms])?;
        let generation: Option<i64> = match rows.next()? {
            Some(row) => Some(row.get(0)?),
            None => None,
        };
        // Step to the end, as the guard does, so the statement completes.
        while rows.next()?.is_some() {}
        generation
    };
    let Some(generation) = generation else {
        return Ok(false);
    };
    let published = publish.execute(params![PAYLOAD, key, generation, owner])?;
    one_row(u64::try_from(published).unwrap_or(u64::MAX), "publish")?;
    if let Some(release) = release {
        let released = release.execute(params![key, generation, owner])?;
        one_row(u64::try_from(released).unwrap_or(u64::MAX), "release")?;
    }
    Ok(true)
}

/// How many open file descriptors of this process refer to the database file: one per
/// open connection.
fn open_handles(path: &Path) -> Result<usize> {
    let fds = Path::new("/proc/self/fd");
    let entries = std::fs::read_dir(fds).map_err(|source| Error::Io {
        path: fds.display().to_string(),
        source,
    })?;
    Ok(entries
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|target| target == path)
        .count())
}

fn handle_check(start: usize, end: usize) -> Check {
    Check {
        connections_at_start: start,
        connections_at_end: end,
        opened_during: end.saturating_sub(start),
        prepared: None,
        same_sql: None,
    }
}

/// Opens a worker's connection and prepares the cycle's statements into its cache.
fn raw_connection<'a>(path: &Path, sql: &'a CycleSql) -> Result<(Connection, &'a CycleSql)> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    for statement in [Some(&sql.acquire), Some(&sql.publish), sql.release.as_ref()]
        .into_iter()
        .flatten()
    {
        conn.prepare_cached(statement)?;
    }
    Ok((conn, sql))
}
