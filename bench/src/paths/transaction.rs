//! A fenced transaction of the guard's pool (`Store::transaction`: the lease checked,
//! three lines inserted, a fenced update of the lease's row, commit) against the same
//! statements in a plain transaction of the driver's: PostgreSQL, SQLite and SQL
//! Server. On PostgreSQL and SQLite, also the plain transaction with the guard's
//! check-and-lock added ([`Checked`]): the share of the gap that one statement makes,
//! and the rest, the guard's own; and the deferred transaction
//! (`Store::deferred_transaction`, [`Deferred`]), whose fenced update is its lock.
//!
//! Each worker holds a lease on its own row for the whole run, so the fenced write is an
//! update (`Store::update`), which a held lease can repeat, where a publication could run
//! once per generation; both are one fenced `UPDATE` of the row.

use std::path::{Path, PathBuf};
use std::sync::{Barrier, OnceLock};
use std::time::Duration;

use fenced_guard::{
    Dialect, FencedTable, Identifier, Lease, Lend, Mssql, Postgres, Sqlite, SqliteOptions, Store,
    Value, dialect,
};
use rusqlite::params;

use super::client::{run_cycles, warm};
use super::place::{MssqlPlace, PgPlace, TdsClient};
use super::{Name, Pair, Results, Run, ServerClock, Settings, Side, compare, protocol};
use crate::error::{Error, Result};
use crate::measure::{self, Cycle, Summary, Timing, Window};
use crate::postgres::connect;
use crate::sqlite::Execution;
use crate::workload::{self, PAYLOAD, PAYLOAD_COLUMN, Rows};

/// Lines each transaction inserts.
pub(crate) const LINES: [&str; 3] = ["first line", "second line", "third line"];
/// How long a fenced transaction may stay open: far longer than any of the runs'.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);
/// The workers' leases, held for the whole benchmark.
const HELD_FOR: Duration = Duration::from_secs(3600);

pub(crate) async fn run(
    settings: &Settings,
    results: &mut Results,
    log: &mut dyn FnMut(&str),
) -> Result<()> {
    let most = settings.workers.iter().copied().max().unwrap_or(1);

    let place = PgPlace::setup(&settings.postgres, settings.durable).await?;
    let measured = async {
        let (table, leases) = pg_leases(&place, "TxLease", most).await?;
        let lines = place.lines("TxLine").await?;
        let pair = PgTransaction {
            place: &place,
            statements: Statements::new(Dialect::Postgres, &table, &lines)?,
            table,
            leases,
            lines,
        };
        let mut measured = compare(&pair, settings, log).await?;
        measured.extend(compare(&Checked(&pair), settings, log).await?);
        measured.extend(compare(&Deferred(&pair), settings, log).await?);
        Ok::<_, Error>(measured)
    }
    .await;
    place.teardown().await?;
    results.ran_on(place.version().await?);
    results.measured.extend(measured?);

    for execution in [Execution::InPlace, Execution::HandOff] {
        let lite = Lite::setup(&settings.sqlite_dir, most, execution).await?;
        results
            .measured
            .extend(compare(&lite, settings, log).await?);
        if execution == Execution::InPlace {
            results
                .measured
                .extend(compare(&Checked(&lite), settings, log).await?);
        }
        results
            .measured
            .extend(compare(&Deferred(&lite), settings, log).await?);
    }
    results.ran_on(format!("SQLite {} (bundled, WAL)", rusqlite::version()));

    if let Some(url) = &settings.mssql {
        let place = MssqlPlace::setup(url).await?;
        let measured = async {
            let table = place
                .table("TxLease", i64::try_from(most).unwrap_or(i64::MAX))
                .await?;
            let lines = format!("[{}].[TxLine]", place.schema);
            use fenced_guard::Executor as _;
            place
                .admin
                .execute_batch(&format!(
                    "CREATE TABLE {lines} ([Report] bigint NOT NULL, [Line] nvarchar(100) NOT NULL)"
                ))
                .await?;
            place.created(&lines);
            let store = Store::new(place.pool(1).await?, table.clone());
            let leases = hold(&store, most).await?;
            let pair = TdsTransaction {
                place: &place,
                statements: Statements::new(Dialect::Mssql, &table, &lines)?,
                table,
                leases,
            };
            compare(&pair, settings, log).await
        }
        .await;
        let version = place.version().await;
        place.teardown().await?;
        results.ran_on(version?);
        results.measured.extend(measured?);
    }
    Ok(())
}

/// Takes a lease on each of the rows `1..=rows`, held for the whole benchmark.
async fn hold<B: fenced_guard::Backend>(store: &Store<B>, rows: usize) -> Result<Vec<Lease>> {
    let mut leases = Vec::with_capacity(rows);
    for worker in 0..rows {
        let key = Rows::Distinct.key(worker);
        let lease = store
            .try_acquire(key, HELD_FOR)
            .await?
            .ok_or_else(|| protocol(format!("row {key} was not free")))?;
        leases.push(lease);
    }
    Ok(leases)
}

async fn pg_leases(place: &PgPlace, name: &str, rows: usize) -> Result<(FencedTable, Vec<Lease>)> {
    let table = place
        .table(name, i64::try_from(rows).unwrap_or(i64::MAX))
        .await?;
    let store = Store::new(
        Postgres::connect_with(&place.config, 1).await?,
        table.clone(),
    );
    let leases = hold(&store, rows).await?;
    Ok((table, leases))
}

/// The statements of the transaction's body, as the guard renders the fenced write.
#[derive(Clone)]
struct Statements {
    /// Inserts a line: 1 the report's key, 2 the line.
    insert: String,
    /// The fenced update of the lease's row: 1 the payload, 2 key, 3 generation, 4
    /// owner.
    update: String,
    /// The guard's check-and-lock of a transaction it began: 1 key, 2 generation, 3
    /// owner; a row while the lease holds.
    check: String,
}

impl Statements {
    fn new(d: Dialect, table: &FencedTable, lines: &str) -> Result<Statements> {
        let q = |name: &str| -> Result<String> { Ok(Identifier::new(name)?.quoted(d)) };
        Ok(Statements {
            insert: format!(
                "INSERT INTO {lines} ({}, {}) VALUES ({}, {})",
                q("Report")?,
                q("Line")?,
                d.placeholder(1),
                d.placeholder(2)
            ),
            update: dialect::update(d, table, &[&Identifier::new(PAYLOAD_COLUMN)?]),
            check: dialect::lock_after_begin(d, table),
        })
    }
}

/// The fenced transaction, through the guard's pool: locked first, or `deferred`.
struct FencedCycle<B> {
    store: Store<B>,
    lease: Lease,
    insert: String,
    deferred: bool,
}

impl<B: Lend + Clone> Cycle for FencedCycle<B> {
    async fn attempt(&mut self, key: i64) -> Result<bool> {
        if self.deferred {
            return self.deferred(key).await;
        }
        let tx = self
            .store
            .transaction(&self.lease, TIMEOUT)
            .await?
            .ok_or_else(|| protocol("a fenced transaction was refused under a held lease"))?;
        for line in LINES {
            let rows = tx
                .execute(&self.insert, &[Value::I64(key), Value::from(line)])
                .await?;
            workload::one_row(rows, "a line's insert")?;
        }
        let payload = [(PAYLOAD_COLUMN, Value::from(PAYLOAD))];
        if !tx.store().update(&self.lease, &payload).await?.is_applied() {
            return Err(protocol("a fenced update was refused under a held lease"));
        }
        tx.commit().await?;
        Ok(true)
    }
}

impl<B: Lend + Clone> FencedCycle<B> {
    /// The deferred transaction: the same lines, its fenced update its lock.
    async fn deferred(&self, key: i64) -> Result<bool> {
        let tx = self
            .store
            .deferred_transaction(&self.lease, TIMEOUT)
            .await?
            .ok_or_else(|| protocol("a deferred transaction was refused under a held lease"))?;
        for line in LINES {
            let rows = tx
                .execute(&self.insert, &[Value::I64(key), Value::from(line)])
                .await?;
            workload::one_row(rows, "a line's insert")?;
        }
        let payload = [(PAYLOAD_COLUMN, Value::from(PAYLOAD))];
        if !tx.update(&payload).await?.is_applied() {
            return Err(protocol("a fenced update was refused under a held lease"));
        }
        if !tx.commit().await?.is_applied() {
            return Err(protocol("a deferred commit was refused under a held lease"));
        }
        Ok(true)
    }
}

/// One fenced cycle per worker, worker `i` under lease `i`; `deferred` transactions or
/// those locked first.
fn fenced_cycles<B: Lend + Clone>(
    store: &Store<B>,
    leases: &[Lease],
    insert: &str,
    workers: usize,
    deferred: bool,
) -> Vec<FencedCycle<B>> {
    leases[..workers]
        .iter()
        .map(|lease| FencedCycle {
            store: store.clone(),
            lease: lease.clone(),
            insert: insert.to_owned(),
            deferred,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// PostgreSQL.

struct PgTransaction<'p> {
    place: &'p PgPlace,
    table: FencedTable,
    statements: Statements,
    leases: Vec<Lease>,
    lines: String,
}

/// The plain transaction on tokio-postgres, its statements prepared once; with `check`,
/// the guard's check-and-lock sent with its `BEGIN`, in the same round trip.
struct PlainPg {
    client: tokio_postgres::Client,
    insert: tokio_postgres::Statement,
    update: tokio_postgres::Statement,
    check: Option<tokio_postgres::Statement>,
    lease: Lease,
}

impl Cycle for PlainPg {
    async fn attempt(&mut self, key: i64) -> Result<bool> {
        if let Some(check) = &self.check {
            return self.checked(check, key).await;
        }
        let tx = self.client.transaction().await?;
        for line in LINES {
            workload::one_row(
                tx.execute(&self.insert, &[&key, &line]).await?,
                "a line's insert",
            )?;
        }
        let (generation, owner) = (self.lease.generation(), self.lease.owner());
        let updated = tx
            .execute(&self.update, &[&PAYLOAD, &key, &generation, &owner])
            .await?;
        workload::one_row(updated, "the fenced update")?;
        tx.commit().await?;
        Ok(true)
    }
}

impl PlainPg {
    /// A client of its own for `lease`'s transactions, its statements prepared.
    async fn connect(
        config: &str,
        statements: &Statements,
        lease: &Lease,
        with_check: bool,
    ) -> Result<PlainPg> {
        let client = connect(config).await?;
        let check = if with_check {
            Some(client.prepare(&statements.check).await?)
        } else {
            None
        };
        Ok(PlainPg {
            insert: client.prepare(&statements.insert).await?,
            update: client.prepare(&statements.update).await?,
            check,
            client,
            lease: lease.clone(),
        })
    }

    /// The plain transaction with the guard's check-and-lock: `BEGIN` and the check
    /// pipelined, as the guard's pool sends them, then the same statements.
    async fn checked(&self, check: &tokio_postgres::Statement, key: i64) -> Result<bool> {
        let (generation, owner) = (self.lease.generation(), self.lease.owner());
        let lease: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&key, &generation, &owner];
        let (begun, locked) = tokio::join!(
            self.client.batch_execute("BEGIN"),
            self.client.query_opt(check, &lease),
        );
        begun?;
        if locked?.is_none() {
            return Err(protocol("the check-and-lock refused a held lease"));
        }
        for line in LINES {
            workload::one_row(
                self.client.execute(&self.insert, &[&key, &line]).await?,
                "a line's insert",
            )?;
        }
        let updated = self
            .client
            .execute(&self.update, &[&PAYLOAD, &key, &generation, &owner])
            .await?;
        workload::one_row(updated, "the fenced update")?;
        self.client.batch_execute("COMMIT").await?;
        Ok(true)
    }
}

impl PgTransaction<'_> {
    /// The guard's fenced transactions, on a pool of one connection per worker, locked
    /// first or `deferred`.
    async fn fenced(
        &self,
        config: &str,
        clock: &ServerClock<'_>,
        workers: usize,
        timing: Timing,
        deferred: bool,
    ) -> Result<(Summary, Option<u64>)> {
        let store = Store::new(
            Postgres::connect_with(config, workers).await?,
            self.table.clone(),
        );
        let insert = &self.statements.insert;
        let cycles = fenced_cycles(&store, &self.leases, insert, workers, deferred);
        run_cycles(cycles, timing, clock).await
    }

    /// The plain transactions, one client per worker, with the guard's check-and-lock
    /// or without.
    async fn plain(
        &self,
        config: &str,
        clock: &ServerClock<'_>,
        workers: usize,
        timing: Timing,
        with_check: bool,
    ) -> Result<(Summary, Option<u64>)> {
        let mut cycles = Vec::with_capacity(workers);
        for lease in &self.leases[..workers] {
            cycles.push(PlainPg::connect(config, &self.statements, lease, with_check).await?);
        }
        run_cycles(cycles, timing, clock).await
    }

    /// Clears what the last run left: the leases' dead row versions and the lines.
    async fn reset(&self) -> Result<()> {
        let table = self.table.name().quoted(Dialect::Postgres);
        self.place.reset(&table, &self.lines).await
    }
}

impl Pair for PgTransaction<'_> {
    fn name(&self) -> Name {
        Name {
            path: "fenced transaction, guard's pool",
            against: "the same statements in a plain transaction",
            database: "PostgreSQL",
            unit: "transaction",
            target: Some(0.9),
        }
    }

    async fn run(&self, side: Side, workers: usize, timing: Timing) -> Result<Run> {
        self.reset().await?;
        let place = self.place;
        let name = place.name(match side {
            Side::Guard => "fenced",
            Side::Driver => "plain",
        });
        let config = place.named(&name);
        let clock = ServerClock::of(&place.monitor, &name);
        let (summary, server) = match side {
            Side::Guard => self.fenced(&config, &clock, workers, timing, false).await?,
            Side::Driver => self.plain(&config, &clock, workers, timing, false).await?,
        };
        Ok(Run::of(summary, server, timing.measured))
    }
}

/// The deferred transaction of the guard's pool (`Store::deferred_transaction`), its
/// fenced update its lock, against the plain transaction.
struct Deferred<'p, P>(&'p P);

impl Pair for Deferred<'_, PgTransaction<'_>> {
    fn name(&self) -> Name {
        Name {
            path: "deferred transaction, guard's pool",
            against: "the same statements in a plain transaction",
            database: "PostgreSQL",
            unit: "transaction",
            target: Some(0.9),
        }
    }

    async fn run(&self, side: Side, workers: usize, timing: Timing) -> Result<Run> {
        let pair = self.0;
        pair.reset().await?;
        let name = pair.place.name(match side {
            Side::Guard => "deferred",
            Side::Driver => "plain",
        });
        let config = pair.place.named(&name);
        let clock = ServerClock::of(&pair.place.monitor, &name);
        let (summary, server) = match side {
            Side::Guard => pair.fenced(&config, &clock, workers, timing, true).await?,
            Side::Driver => pair.plain(&config, &clock, workers, timing, false).await?,
        };
        Ok(Run::of(summary, server, timing.measured))
    }
}

/// What the guard's check-and-lock costs by itself: the plain transaction with that one
/// statement added, on the driver, against the plain transaction. No fenced transaction
/// can be faster than its first side, so its ratio bounds the fenced transaction's.
struct Checked<'p, P>(&'p P);

impl Pair for Checked<'_, PgTransaction<'_>> {
    fn name(&self) -> Name {
        Name {
            path: "plain transaction and the guard's check-and-lock",
            against: "the same statements in a plain transaction",
            database: "PostgreSQL",
            unit: "transaction",
            target: None,
        }
    }

    async fn run(&self, side: Side, workers: usize, timing: Timing) -> Result<Run> {
        let pair = self.0;
        pair.reset().await?;
        let name = pair.place.name(match side {
            Side::Guard => "checked",
            Side::Driver => "plain",
        });
        let config = pair.place.named(&name);
        let clock = ServerClock::of(&pair.place.monitor, &name);
        let (summary, server) = pair
            .plain(&config, &clock, workers, timing, side == Side::Guard)
            .await?;
        Ok(Run::of(summary, server, timing.measured))
    }
}

// ---------------------------------------------------------------------------------------
// SQLite.

/// How long a statement waits for another connection's write lock, on both sides.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A SQLite file of its own, with the workers' leases, and the guard's execution mode.
struct Lite {
    _dir: tempfile::TempDir,
    path: PathBuf,
    table: FencedTable,
    leases: Vec<Lease>,
    statements: Statements,
    execution: Execution,
}

impl Lite {
    async fn setup(parent: &Path, rows: usize, execution: Execution) -> Result<Lite> {
        let dir = tempfile::tempdir_in(parent).map_err(|source| Error::Io {
            path: parent.display().to_string(),
            source,
        })?;
        let path = dir.path().join("paths.db");
        let table = workload::table("TxLease")?;
        let store = Store::new(Sqlite::open(&path).await?, table.clone());
        store.create_schema().await?;
        use fenced_guard::Executor as _;
        store
            .backend()
            .execute_batch(
                "CREATE TABLE TxLine (\"Report\" INTEGER NOT NULL, \"Line\" TEXT NOT NULL)",
            )
            .await?;
        for worker in 0..rows {
            store.provision(Rows::Distinct.key(worker)).await?;
        }
        let leases = hold(&store, rows).await?;
        Ok(Lite {
            _dir: dir,
            path,
            statements: Statements::new(Dialect::Sqlite, &table, "TxLine")?,
            table,
            leases,
            execution,
        })
    }
}

impl Pair for Lite {
    fn name(&self) -> Name {
        Name {
            path: "fenced transaction, guard's pool",
            against: "the same statements in a plain transaction",
            database: match self.execution {
                Execution::InPlace => "SQLite, in place",
                Execution::HandOff => "SQLite, hand-off",
            },
            unit: "transaction",
            target: Some(0.9),
        }
    }

    async fn run(&self, side: Side, workers: usize, timing: Timing) -> Result<Run> {
        let summary = match side {
            Side::Guard => self.fenced(workers, timing, false).await?,
            Side::Driver => self.plain(workers, timing).await?,
        };
        Ok(Run::of(summary, None, timing.measured))
    }
}

impl Pair for Deferred<'_, Lite> {
    fn name(&self) -> Name {
        Name {
            path: "deferred transaction, guard's pool",
            ..self.0.name()
        }
    }

    async fn run(&self, side: Side, workers: usize, timing: Timing) -> Result<Run> {
        let summary = match side {
            Side::Guard => self.0.fenced(workers, timing, true).await?,
            Side::Driver => self.0.plain(workers, timing).await?,
        };
        Ok(Run::of(summary, None, timing.measured))
    }
}

impl Lite {
    /// The guard's fenced transactions, on a pool of one connection per worker, locked
    /// first or `deferred`.
    async fn fenced(&self, workers: usize, timing: Timing, deferred: bool) -> Result<Summary> {
        let options = SqliteOptions::default()
            .max_connections(workers)
            .busy_timeout(BUSY_TIMEOUT)
            .execution(self.execution.into());
        let store = Store::new(
            Sqlite::open_with(&self.path, options).await?,
            self.table.clone(),
        );
        let insert = &self.statements.insert;
        let cycles = fenced_cycles(&store, &self.leases, insert, workers, deferred);
        Ok(run_cycles(cycles, timing, &ServerClock::none()).await?.0)
    }

    /// The plain transactions on rusqlite, one thread per worker.
    async fn plain(&self, workers: usize, timing: Timing) -> Result<Summary> {
        let (path, statements) = (self.path.clone(), self.statements.clone());
        let leases = self.leases[..workers].to_vec();
        tokio::task::spawn_blocking(move || {
            plain_sqlite(&path, &statements, &leases, timing, false)
        })
        .await
        .map_err(|_| Error::Worker)?
    }
}

impl Pair for Checked<'_, Lite> {
    fn name(&self) -> Name {
        Name {
            path: "plain transaction and the guard's check-and-lock",
            against: "the same statements in a plain transaction",
            database: "SQLite",
            unit: "transaction",
            target: None,
        }
    }

    async fn run(&self, side: Side, workers: usize, timing: Timing) -> Result<Run> {
        let (path, statements) = (self.0.path.clone(), self.0.statements.clone());
        let leases = self.0.leases[..workers].to_vec();
        let with_check = side == Side::Guard;
        let summary = tokio::task::spawn_blocking(move || {
            plain_sqlite(&path, &statements, &leases, timing, with_check)
        })
        .await
        .map_err(|_| Error::Worker)??;
        Ok(Run::of(summary, None, timing.measured))
    }
}

/// The plain transactions on rusqlite, `BEGIN IMMEDIATE` as the guard's, one thread and
/// connection per lease, statements kept in each connection's cache; `with_check`, the
/// guard's check-and-lock after the `BEGIN`.
fn plain_sqlite(
    path: &Path,
    statements: &Statements,
    leases: &[Lease],
    timing: Timing,
    with_check: bool,
) -> Result<Summary> {
    let ready = Barrier::new(leases.len() + 1);
    let window = OnceLock::new();
    std::thread::scope(|scope| {
        let handles: Vec<_> = leases
            .iter()
            .enumerate()
            .map(|(i, lease)| {
                let (ready, window) = (&ready, &window);
                scope.spawn(move || {
                    let conn = PlainSqlite::open(path, statements, lease);
                    ready.wait();
                    let conn = conn?;
                    let window: Window = *window.wait();
                    measure::drive_blocking(
                        |key| conn.transaction(key, with_check),
                        Rows::Distinct.key(i),
                        window,
                    )
                })
            })
            .collect();
        ready.wait();
        let window = *window.get_or_init(|| timing.start());
        std::thread::sleep(
            window
                .measure_from
                .saturating_duration_since(std::time::Instant::now()),
        );
        let cpu_start = measure::process_cpu();
        std::thread::sleep(
            window
                .until
                .saturating_duration_since(std::time::Instant::now()),
        );
        let cpu = measure::cpu_between(cpu_start, measure::process_cpu());
        let mut tally = measure::Tally::default();
        for handle in handles {
            tally.merge(handle.join().map_err(|_| Error::Worker)??);
        }
        Ok(Summary::of(tally, window.measured(), cpu))
    })
}

/// A rusqlite connection of its own for `lease`'s plain transactions, its statements
/// kept in the connection's cache.
struct PlainSqlite<'a> {
    conn: rusqlite::Connection,
    statements: &'a Statements,
    lease: &'a Lease,
    owner: String,
}

impl<'a> PlainSqlite<'a> {
    fn open(path: &Path, statements: &'a Statements, lease: &'a Lease) -> Result<Self> {
        let conn = rusqlite::Connection::open(path)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.prepare_cached(&statements.insert)?;
        conn.prepare_cached(&statements.update)?;
        conn.prepare_cached(&statements.check)?;
        Ok(PlainSqlite {
            conn,
            statements,
            lease,
            owner: lease.owner().hyphenated().to_string(),
        })
    }

    /// One plain transaction on row `key`, `BEGIN IMMEDIATE` as the guard's; with
    /// `with_check`, the guard's check-and-lock after the `BEGIN`.
    fn transaction(&self, key: i64, with_check: bool) -> Result<bool> {
        let (conn, statements) = (&self.conn, self.statements);
        let (generation, owner) = (self.lease.generation(), &self.owner);
        conn.execute_batch("BEGIN IMMEDIATE")?;
        if with_check {
            let locked = conn
                .prepare_cached(&statements.check)?
                .exists(params![key, generation, owner])?;
            if !locked {
                return Err(protocol("the check-and-lock refused a held lease"));
            }
        }
        for line in LINES {
            let rows = conn
                .prepare_cached(&statements.insert)?
                .execute(params![key, line])?;
            workload::one_row(u64::try_from(rows).unwrap_or(0), "a line's insert")?;
        }
        let updated = conn
            .prepare_cached(&statements.update)?
            .execute(params![PAYLOAD, key, generation, owner])?;
        workload::one_row(u64::try_from(updated).unwrap_or(0), "the fenced update")?;
        conn.execute_batch("COMMIT")?;
        Ok(true)
    }
}

// ---------------------------------------------------------------------------------------
// Counted: a given number of one kind of transaction, for `fenced-bench count`.

/// A kind of transaction `fenced-bench count` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Kind {
    /// The plain transaction on the driver.
    Plain,
    /// The plain transaction with the guard's check-and-lock, on the driver.
    Checked,
    /// The fenced transaction of the guard's pool (on SQLite, run in place).
    Fenced,
    /// The deferred transaction of the guard's pool, its fenced update its lock.
    Deferred,
}

impl Kind {
    pub(crate) const ALL: [Kind; 4] = [Kind::Plain, Kind::Checked, Kind::Fenced, Kind::Deferred];

    /// Its name in the table.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::Plain => "plain",
            Kind::Checked => "checked",
            Kind::Fenced => "fenced",
            Kind::Deferred => "deferred",
        }
    }
}

/// Runs `count` transactions of `kind` one after another, on row 1 of a SQLite file of
/// its own under `dir`, on the calling thread.
pub(crate) async fn sqlite_transactions(dir: &Path, kind: Kind, count: u64) -> Result<()> {
    let lite = Lite::setup(dir, 1, Execution::InPlace).await?;
    let key = Rows::Distinct.key(0);
    let lease = &lite.leases[0];
    if matches!(kind, Kind::Fenced | Kind::Deferred) {
        let options = SqliteOptions::default()
            .max_connections(1)
            .busy_timeout(BUSY_TIMEOUT)
            .execution(Execution::InPlace.into());
        let store = Store::new(
            Sqlite::open_with(&lite.path, options).await?,
            lite.table.clone(),
        );
        let mut cycle = FencedCycle {
            store,
            lease: lease.clone(),
            insert: lite.statements.insert.clone(),
            deferred: kind == Kind::Deferred,
        };
        repeat(&mut cycle, key, count).await
    } else {
        let conn = PlainSqlite::open(&lite.path, &lite.statements, lease)?;
        for _ in 0..count {
            conn.transaction(key, kind == Kind::Checked)?;
        }
        Ok(())
    }
}

/// Runs `count` transactions of `kind` one after another, on row 1 of a table in a
/// schema of its own on the PostgreSQL server of `config`, dropped after.
pub(crate) async fn postgres_transactions(config: &str, kind: Kind, count: u64) -> Result<()> {
    let place = PgPlace::setup(config, false).await?;
    let ran = async {
        let (table, leases) = pg_leases(&place, "TxLease", 1).await?;
        let statements = Statements::new(Dialect::Postgres, &table, &place.lines("TxLine").await?)?;
        let key = Rows::Distinct.key(0);
        if matches!(kind, Kind::Fenced | Kind::Deferred) {
            let mut cycle = FencedCycle {
                store: Store::new(Postgres::connect_with(&place.config, 1).await?, table),
                lease: leases[0].clone(),
                insert: statements.insert.clone(),
                deferred: kind == Kind::Deferred,
            };
            repeat(&mut cycle, key, count).await
        } else {
            let with_check = kind == Kind::Checked;
            let mut cycle =
                PlainPg::connect(&place.config, &statements, &leases[0], with_check).await?;
            repeat(&mut cycle, key, count).await
        }
    }
    .await;
    place.teardown().await?;
    ran
}

/// `count` attempts of `cycle` on row `key`, each of which must complete: a counted
/// transaction that did not would make the count meaningless.
async fn repeat(cycle: &mut impl Cycle, key: i64, count: u64) -> Result<()> {
    for _ in 0..count {
        if !cycle.attempt(key).await? {
            return Err(protocol("a counted transaction did not complete"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// SQL Server.

struct TdsTransaction<'p> {
    place: &'p MssqlPlace,
    table: FencedTable,
    statements: Statements,
    leases: Vec<Lease>,
}

/// The plain transaction on tiberius.
struct PlainTds {
    client: TdsClient,
    statements: Statements,
    lease: Lease,
}

impl Cycle for PlainTds {
    async fn attempt(&mut self, key: i64) -> Result<bool> {
        self.client
            .simple_query("BEGIN TRANSACTION")
            .await?
            .into_results()
            .await?;
        for line in LINES {
            let rows = self
                .client
                .execute(&self.statements.insert, &[&key, &line])
                .await?
                .total();
            workload::one_row(rows, "a line's insert")?;
        }
        let (generation, owner) = (self.lease.generation(), self.lease.owner());
        let updated = self
            .client
            .execute(
                &self.statements.update,
                &[&PAYLOAD, &key, &generation, &owner],
            )
            .await?
            .total();
        workload::one_row(updated, "the fenced update")?;
        self.client
            .simple_query("COMMIT TRANSACTION")
            .await?
            .into_results()
            .await?;
        Ok(true)
    }
}

impl Pair for TdsTransaction<'_> {
    fn name(&self) -> Name {
        Name {
            path: "fenced transaction, guard's pool",
            against: "the same statements in a plain transaction",
            database: "SQL Server (TDS)",
            unit: "transaction",
            // The target is PostgreSQL's and SQLite's: on SQL Server every statement of
            // a fenced transaction carries its own check (`dialect::still_fenced`).
            target: None,
        }
    }

    async fn run(&self, side: Side, workers: usize, timing: Timing) -> Result<Run> {
        let summary = match side {
            Side::Guard => {
                let store: Store<Mssql> =
                    Store::new(self.place.pool(workers).await?, self.table.clone());
                let insert = &self.statements.insert;
                let cycles = fenced_cycles(&store, &self.leases, insert, workers, false);
                let cycles = warm(cycles).await?;
                run_cycles(cycles, timing, &ServerClock::none()).await?.0
            }
            Side::Driver => {
                let mut cycles = Vec::with_capacity(workers);
                for lease in &self.leases[..workers] {
                    cycles.push(PlainTds {
                        client: self.place.client().await?,
                        statements: self.statements.clone(),
                        lease: lease.clone(),
                    });
                }
                let cycles = warm(cycles).await?;
                run_cycles(cycles, timing, &ServerClock::none()).await?.0
            }
        };
        Ok(Run::of(summary, None, timing.measured))
    }
}
