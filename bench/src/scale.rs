//! `fenced-bench scale`: leases at scale on PostgreSQL, printed as ratios.
//!
//! - **Renewal**: one round renewing `N` leases batched (`Store::renew_many`, a
//!   `BatchKeeper`'s statements) against one statement per lease (`Store::renew` from
//!   32 tasks): statements sent, the round's time, server and client CPU.
//! - **Batch keeper**: `N` leases kept by one `BatchKeeper`; some are stolen (their
//!   expiry moved into the past, then claimed by another store); every stolen lease
//!   must be revoked (refused) before its local deadline, and no other lost.
//! - **Table size**: acquisition (acquire, release) and the full cycle (acquire,
//!   publish, release) with 256 tasks over 32 connections, each task on rows of its own,
//!   on a 1,000,000-row table against a table of one row per task; the acquisition's
//!   plan must use the key's index (`EXPLAIN`).
//! - **Claiming**: batches of 1, 10, 100 claimed by 32 workers from 100,000 rows,
//!   against a loop of `try_acquire` over random candidate keys.
//!
//! Sizes are options (`fenced-bench scale --help`); the defaults fit a 2-core machine.
//! Figures are printed, never asserted, except what the benchmark checks to be
//! meaningful (every renewal applied, every stolen lease revoked, the index used).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fenced_guard::{
    Backend, BatchKeeper, Candidates, Dialect, Executor, FencedTable, KeptLease, Lease, Loss,
    Postgres, Result as GuardResult, Store, Value, dialect,
};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tokio_postgres::{Client, SimpleQueryMessage};

use crate::error::{Error, Result};
use crate::measure::{self, Cycle, Summary, figure as f, process_cpu};
use crate::postgres::{connect, with_parameter};
use crate::workload::{self, PAYLOAD, PAYLOAD_COLUMN};

/// What to run, and how large.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) postgres: String,
    pub(crate) durable: bool,
    /// Lease counts of the renewal comparison.
    pub(crate) leases: Vec<usize>,
    /// The ttl whose third is the keeper's cadence, for statements per second.
    pub(crate) ttl: Duration,
    /// Rounds of each side of the renewal comparison (median reported).
    pub(crate) rounds: usize,
    /// Tasks (and connections) renewing one lease per statement.
    pub(crate) per_lease_tasks: usize,
    /// Statements (and connections) in flight for the batched side and the keeper.
    pub(crate) in_flight: usize,
    /// Leases kept by the batch keeper, and its leases' ttl.
    pub(crate) keeper_leases: usize,
    pub(crate) keeper_ttl: Duration,
    /// Leases stolen from under the batch keeper.
    pub(crate) steal: usize,
    /// Rows of the large table, tasks and connections of the table-size comparison.
    pub(crate) big_rows: i64,
    /// The large table's `fillfactor`, if not PostgreSQL's default of 100.
    pub(crate) fillfactor: Option<u8>,
    pub(crate) tasks: usize,
    pub(crate) connections: usize,
    /// Windows and repeats of the table-size and claiming comparisons.
    pub(crate) warmup: Duration,
    pub(crate) measured: Duration,
    pub(crate) repeats: usize,
    /// Rows, workers and batch sizes of the claiming comparison.
    pub(crate) claim_rows: i64,
    pub(crate) claim_workers: usize,
    pub(crate) claim_batches: Vec<usize>,
    /// Which parts run.
    pub(crate) parts: Vec<Part>,
}

/// A part of the scale benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Part {
    /// Batched renewal against a statement per lease.
    Renewal,
    /// The batch keeper under stolen leases.
    Keeper,
    /// A 1,000,000-row table against a small one.
    Size,
    /// Claiming against a loop of `try_acquire`.
    Claim,
}

/// A statement counter around the guard's PostgreSQL backend.
#[derive(Clone, Debug)]
struct Counted {
    inner: Postgres,
    sent: Arc<AtomicU64>,
}

impl Counted {
    fn new(inner: Postgres) -> Self {
        Counted {
            inner,
            sent: Arc::default(),
        }
    }

    fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    fn count(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }
}

impl Executor for Counted {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(
        &self,
        sql: &str,
        params: &[Value],
    ) -> impl Future<Output = GuardResult<u64>> + Send {
        self.count();
        self.inner.execute(sql, params)
    }

    fn query_row(
        &self,
        sql: &str,
        params: &[Value],
    ) -> impl Future<Output = GuardResult<Option<Vec<Value>>>> + Send {
        self.count();
        self.inner.query_row(sql, params)
    }

    fn query_rows(
        &self,
        sql: &str,
        params: &[Value],
    ) -> impl Future<Output = GuardResult<Vec<Vec<Value>>>> + Send {
        self.count();
        self.inner.query_rows(sql, params)
    }

    fn execute_batch(&self, sql: &str) -> impl Future<Output = GuardResult<()>> + Send {
        self.count();
        self.inner.execute_batch(sql)
    }
}

/// The PostgreSQL server's CPU time, in nanoseconds, of the backends serving the
/// connections named `application_name`: the sum of their `/proc/<pid>/schedstat`
/// (the server runs on this machine).
pub(crate) struct ServerCpu {
    pids: Vec<i32>,
}

impl ServerCpu {
    pub(crate) async fn of(monitor: &Client, application_name: &str) -> Result<ServerCpu> {
        let rows = monitor
            .query(
                "SELECT pid FROM pg_stat_activity WHERE application_name = $1",
                &[&application_name],
            )
            .await?;
        let pids = rows
            .iter()
            .map(|r| r.try_get::<_, i32>(0).map_err(Error::from))
            .collect::<Result<Vec<_>>>()?;
        Ok(ServerCpu { pids })
    }

    /// Nanoseconds on a CPU so far, all the backends together; `None` when `/proc`
    /// cannot tell (another machine, or no backend).
    pub(crate) fn now(&self) -> Option<u64> {
        if self.pids.is_empty() {
            return None;
        }
        let mut total = 0u64;
        for pid in &self.pids {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
            total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
        }
        Some(total)
    }
}

/// The backends of a run and their CPU time when its window started.
type CpuMark = (ServerCpu, Option<u64>);

/// One measured span: wall time, statements, server and client CPU.
#[derive(Clone, Copy, Debug, Default)]
struct Span {
    wall: Duration,
    statements: u64,
    server_ns: Option<u64>,
    client: Option<Duration>,
}

impl Span {
    /// Runs `body` and measures it.
    async fn of<F: Future<Output = Result<()>>>(
        counter: &Counted,
        server: &ServerCpu,
        body: F,
    ) -> Result<Span> {
        let (sent, server_start, client_start) = (counter.sent(), server.now(), process_cpu());
        let started = Instant::now();
        body.await?;
        let wall = started.elapsed();
        Ok(Span {
            wall,
            statements: counter.sent() - sent,
            server_ns: server.now().zip(server_start).map(|(e, s)| e - s),
            client: measure::cpu_between(client_start, process_cpu()),
        })
    }
}

/// The median of `values` (NaN for none).
fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|v| !v.is_nan());
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// The harness's schema and monitoring connection.
struct Scale {
    config: String,
    schema: String,
    monitor: Client,
    runs: AtomicUsize,
}

impl Scale {
    async fn setup(settings: &Settings) -> Result<Scale> {
        let config = if settings.durable {
            settings.postgres.clone()
        } else {
            with_parameter(&settings.postgres, "options", "-c synchronous_commit=off")
        };
        let monitor = connect(&with_parameter(
            &config,
            "application_name",
            "fenced-scale-monitor",
        ))
        .await?;
        let schema = format!("fenced_scale_{}", std::process::id());
        monitor
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
            ))
            .await?;
        Ok(Scale {
            config,
            schema,
            monitor,
            runs: AtomicUsize::new(0),
        })
    }

    async fn teardown(self) -> Result<()> {
        self.monitor
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema))
            .await?;
        Ok(())
    }

    /// A fresh application name for a pool's connections.
    fn name(&self, side: &str) -> String {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        format!("fenced-scale-{side}-{}-{n}", std::process::id())
    }

    /// A pool of `connections` named `name`.
    async fn backend(&self, name: &str, connections: usize) -> Result<Postgres> {
        let config = with_parameter(&self.config, "application_name", name);
        Ok(Postgres::connect_with(&config, connections).await?)
    }

    /// Creates the table `name` with rows `1..=rows`, analysed.
    async fn table(&self, name: &str, rows: i64) -> Result<FencedTable> {
        self.table_with(name, rows, None).await
    }

    /// As [`table`](Scale::table), with the table's `fillfactor`.
    async fn table_with(
        &self,
        name: &str,
        rows: i64,
        fillfactor: Option<u8>,
    ) -> Result<FencedTable> {
        let table = workload::table(&format!("{}.{name}", self.schema))?;
        let store = Store::new(self.backend("fenced-scale-setup", 1).await?, table.clone());
        store.create_schema().await?;
        let d = Dialect::Postgres;
        if let Some(fillfactor) = fillfactor {
            self.monitor
                .batch_execute(&format!(
                    "ALTER TABLE {} SET (fillfactor = {fillfactor})",
                    table.name().quoted(d)
                ))
                .await?;
        }
        self.monitor
            .execute(
                &format!(
                    "INSERT INTO {} ({}, {}, {}) SELECT g, 0, 0 FROM generate_series(1::bigint, $1) AS g",
                    table.name().quoted(d),
                    table.key_column().quoted(d),
                    table.generation_column().quoted(d),
                    table.published_column().quoted(d),
                ),
                &[&rows],
            )
            .await?;
        self.vacuum(&table).await?;
        Ok(table)
    }

    async fn vacuum(&self, table: &FencedTable) -> Result<()> {
        self.monitor
            .batch_execute(&format!(
                "VACUUM ANALYZE {}",
                table.name().quoted(Dialect::Postgres)
            ))
            .await?;
        Ok(())
    }

    /// The server's WAL position, in bytes: what every session wrote, exactly (the
    /// counters of `pg_stat_wal` lag by up to a second).
    async fn wal(&self) -> Result<i64> {
        let row = self
            .monitor
            .query_one(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint",
                &[],
            )
            .await?;
        Ok(row.try_get(0)?)
    }

    /// The plan of `sql` run with `values` (literals), by `EXPLAIN EXECUTE`.
    async fn plan(&self, sql: &str, values: &str) -> Result<String> {
        self.monitor
            .batch_execute(&format!("PREPARE fenced_scale_plan AS {sql}"))
            .await?;
        let plan = self
            .monitor
            .simple_query(&format!("EXPLAIN EXECUTE fenced_scale_plan({values})"))
            .await;
        self.monitor
            .batch_execute("DEALLOCATE fenced_scale_plan")
            .await?;
        Ok(plan?
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

/// Claims `n` leases with `ttl`, a thousand per claim.
async fn claim_all<B: Backend>(store: &Store<B>, n: usize, ttl: Duration) -> Result<Vec<Lease>> {
    let mut leases = Vec::with_capacity(n);
    while leases.len() < n {
        let batch = (n - leases.len()).min(1000);
        let got = store.claim(&Candidates::any(), batch, ttl).await?;
        if got.is_empty() {
            return Err(Error::Protocol(format!(
                "only {} of {n} rows could be claimed",
                leases.len()
            )));
        }
        leases.extend(got);
    }
    Ok(leases)
}

// ---------------------------------------------------------------------------------------
// Renewal.

/// One side of the renewal comparison, the median of its rounds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RenewalSide {
    statements: f64,
    round_ms: f64,
    server_ms: f64,
    client_ms: f64,
}

/// The renewal comparison for one lease count.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Renewal {
    leases: usize,
    batched: RenewalSide,
    single: RenewalSide,
}

/// The leases of the renewal comparison live this long: every round renews them all,
/// and the slowest round must end before the first lease would expire.
const LONG_TTL: Duration = Duration::from_secs(600);

async fn batched_round(
    store: &Store<Counted>,
    leases: &Arc<Vec<Lease>>,
    in_flight: usize,
) -> Result<()> {
    let per = leases.len().div_ceil(in_flight.max(1));
    let mut tasks = Vec::new();
    for part in 0..in_flight {
        let (store, leases) = (store.clone(), Arc::clone(leases));
        tasks.push(tokio::spawn(async move {
            let slice =
                &leases[(part * per).min(leases.len())..((part + 1) * per).min(leases.len())];
            let outcomes = store.renew_many(slice).await?;
            if !outcomes.iter().all(|o| o.is_applied()) {
                return Err(Error::Protocol("a batched renewal was not applied".into()));
            }
            Ok(())
        }));
    }
    for task in tasks {
        task.await.map_err(|_| Error::Worker)??;
    }
    Ok(())
}

async fn per_lease_round(
    store: &Store<Counted>,
    leases: &Arc<Vec<Lease>>,
    tasks: usize,
) -> Result<()> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let (store, leases, next) = (store.clone(), Arc::clone(leases), Arc::clone(&next));
        handles.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(lease) = leases.get(i) else {
                    return Ok(());
                };
                if store.renew(lease).await?.is_refused() {
                    return Err(Error::Protocol("a renewal was refused".into()));
                }
            }
        }));
    }
    for handle in handles {
        handle.await.map_err(|_| Error::Worker)??;
    }
    Ok(())
}

async fn renewal(
    scale: &Scale,
    settings: &Settings,
    n: usize,
    log: &mut dyn FnMut(&str),
) -> Result<Renewal> {
    let table = scale
        .table(&format!("Renew{n}"), i64::try_from(n).unwrap_or(i64::MAX))
        .await?;
    let setup = Store::new(scale.backend("fenced-scale-setup", 4).await?, table.clone());
    let leases = Arc::new(claim_all(&setup, n, LONG_TTL).await?);

    let batched_name = scale.name("batched");
    let batched = Store::new(
        Counted::new(scale.backend(&batched_name, settings.in_flight).await?),
        table.clone(),
    );
    let single_name = scale.name("per-lease");
    let single = Store::new(
        Counted::new(
            scale
                .backend(&single_name, settings.per_lease_tasks)
                .await?,
        ),
        table.clone(),
    );
    // Warm-up: every connection opened, every statement prepared.
    batched_round(&batched, &leases, settings.in_flight).await?;
    let warm: Arc<Vec<Lease>> = Arc::new(
        leases
            .iter()
            .take(settings.per_lease_tasks * 4)
            .cloned()
            .collect(),
    );
    per_lease_round(&single, &warm, settings.per_lease_tasks).await?;
    let batched_cpu = ServerCpu::of(&scale.monitor, &batched_name).await?;
    let single_cpu = ServerCpu::of(&scale.monitor, &single_name).await?;

    let (mut b, mut s) = (Vec::new(), Vec::new());
    for round in 0..settings.rounds {
        for batched_first in [round % 2 == 0, round % 2 == 1] {
            if batched_first {
                b.push(
                    Span::of(
                        batched.backend(),
                        &batched_cpu,
                        batched_round(&batched, &leases, settings.in_flight),
                    )
                    .await?,
                );
            } else {
                s.push(
                    Span::of(
                        single.backend(),
                        &single_cpu,
                        per_lease_round(&single, &leases, settings.per_lease_tasks),
                    )
                    .await?,
                );
            }
        }
        log(&format!(
            "  renewal of {n}: round {} batched {:.0} ms, per lease {:.0} ms",
            round + 1,
            b.last().map_or(f64::NAN, |x| x.wall.as_secs_f64() * 1e3),
            s.last().map_or(f64::NAN, |x| x.wall.as_secs_f64() * 1e3),
        ));
    }
    let side = |spans: &[Span]| RenewalSide {
        statements: median(spans.iter().map(|x| x.statements as f64).collect()),
        round_ms: median(spans.iter().map(|x| x.wall.as_secs_f64() * 1e3).collect()),
        server_ms: median(
            spans
                .iter()
                .map(|x| x.server_ns.map_or(f64::NAN, |ns| ns as f64 / 1e6))
                .collect(),
        ),
        client_ms: median(
            spans
                .iter()
                .map(|x| x.client.map_or(f64::NAN, |c| c.as_secs_f64() * 1e3))
                .collect(),
        ),
    };
    Ok(Renewal {
        leases: n,
        batched: side(&b),
        single: side(&s),
    })
}

// ---------------------------------------------------------------------------------------
// The batch keeper under stolen leases.

/// What the batch keeper did with stolen leases.
#[derive(Clone, Debug)]
pub(crate) struct KeeperRun {
    leases: usize,
    ttl: Duration,
    statements_per_interval: f64,
    stolen: usize,
    refused: usize,
    in_time: usize,
    slowest_ms: f64,
    others_lost: usize,
}

async fn keeper(
    scale: &Scale,
    settings: &Settings,
    log: &mut dyn FnMut(&str),
) -> Result<KeeperRun> {
    let n = settings.keeper_leases;
    let ttl = settings.keeper_ttl;
    let table = scale
        .table("Kept", i64::try_from(n).unwrap_or(i64::MAX))
        .await?;
    let store = Store::new(
        scale
            .backend(&scale.name("keeper"), settings.in_flight)
            .await?,
        table.clone(),
    );
    let keeper = BatchKeeper::builder()
        .in_flight(settings.in_flight)
        .start(&store)?;
    let mut kept: Vec<Option<KeptLease>> = Vec::with_capacity(n);
    let mut leases = Vec::with_capacity(n);
    while leases.len() < n {
        let got = store
            .claim(&Candidates::any(), (n - leases.len()).min(1000), ttl)
            .await?;
        if got.is_empty() {
            return Err(Error::Protocol("the keeper's rows ran out".into()));
        }
        for lease in got {
            kept.push(Some(keeper.keep(&lease)?));
            leases.push(lease);
        }
    }
    // Three renewal intervals, once every lease has been renewed.
    let renew = ttl / 3;
    tokio::time::sleep(ttl).await;
    let before = keeper.statements_sent();
    tokio::time::sleep(renew * 3).await;
    let statements_per_interval = (keeper.statements_sent() - before) as f64 / 3.0;
    log(&format!(
        "  keeper of {n}: {statements_per_interval:.1} statements per renewal interval"
    ));

    // The thief: expire the victims' rows, then claim them.
    let mut rng = StdRng::seed_from_u64(u64::from(std::process::id()));
    let mut victims: Vec<usize> = (0..n).collect();
    victims.shuffle(&mut rng);
    victims.truncate(settings.steal.min(n).min(1000));
    let thief = Store::new(scale.backend("fenced-scale-thief", 1).await?, table.clone());
    let d = Dialect::Postgres;
    let placeholders: Vec<String> = (1..=victims.len()).map(|i| d.placeholder(i)).collect();
    let expire = format!(
        "UPDATE {} SET {} = clock_timestamp() - interval '1 hour' WHERE {} IN ({})",
        table.name().quoted(d),
        table.expiry_column().quoted(d),
        table.key_column().quoted(d),
        placeholders.join(", ")
    );
    let keys: Vec<Value> = victims
        .iter()
        .map(|&i| Value::from(leases[i].key()))
        .collect();
    let expired = thief.backend().execute(&expire, &keys).await?;
    let expired_at = Instant::now();
    // A claim skips rows locked at the moment, such as those a renewal statement of the
    // keeper is working on: claim again until every victim is taken.
    let mut left: Vec<_> = victims.iter().map(|&i| leases[i].key().clone()).collect();
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        let stolen = thief
            .claim(
                &Candidates::keys(left.iter()),
                left.len(),
                Duration::from_secs(600),
            )
            .await?;
        let taken: HashSet<_> = stolen.iter().map(|l| l.key().clone()).collect();
        left.retain(|k| !taken.contains(k));
        if !left.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    if expired as usize != victims.len() || !left.is_empty() {
        return Err(Error::Protocol(format!(
            "{expired} rows expired and {} not stolen of {} victims",
            left.len(),
            victims.len()
        )));
    }
    let mut waits = Vec::new();
    for &i in &victims {
        let k = kept[i].take().ok_or(Error::Worker)?;
        let lease = leases[i].clone();
        let bound = ttl * 2;
        waits.push(tokio::spawn(async move {
            let loss = tokio::time::timeout(bound, k.lost()).await.ok();
            (
                loss,
                Instant::now(),
                lease.local_deadline(),
                lease.is_revoked(),
            )
        }));
    }
    let (mut refused, mut in_time, mut slowest) = (0, 0, Duration::ZERO);
    for wait in waits {
        let (loss, at, deadline, revoked) = wait.await.map_err(|_| Error::Worker)?;
        if matches!(loss, Some(Loss::Refused)) && revoked {
            refused += 1;
            slowest = slowest.max(at - expired_at);
            if at <= deadline {
                in_time += 1;
            }
        }
    }
    let others_lost = kept.iter().flatten().filter(|k| k.loss().is_some()).count();
    keeper.stop().await;
    Ok(KeeperRun {
        leases: n,
        ttl,
        statements_per_interval,
        stolen: victims.len(),
        refused,
        in_time,
        slowest_ms: slowest.as_secs_f64() * 1e3,
        others_lost,
    })
}

// ---------------------------------------------------------------------------------------
// Table size.

/// Which statements a table-size cycle runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SizeShape {
    /// Acquire and release.
    Acquisition,
    /// Acquire, publish, release.
    Cycle,
}

/// A task's cycle on rows of its own: task `i` of `tasks` picks, each cycle, a random
/// key among `i + 1 + tasks * j`.
struct SizeCycle {
    store: Store<Postgres>,
    shape: SizeShape,
    per_task: i64,
    tasks: i64,
    rng: StdRng,
}

impl Cycle for SizeCycle {
    async fn attempt(&mut self, task: i64) -> Result<bool> {
        let key = task + self.tasks * self.rng.random_range(0..self.per_task);
        let Some(lease) = self.store.try_acquire(key, workload::TTL).await? else {
            return Err(Error::Protocol(format!(
                "row {key} of a task's own was held"
            )));
        };
        if self.shape == SizeShape::Cycle {
            let payload = [(PAYLOAD_COLUMN, Value::from(PAYLOAD))];
            if self.store.publish(&lease, &payload).await?.is_refused() {
                return Err(Error::Protocol("a publication was refused".into()));
            }
        }
        if self.store.release(&lease).await?.is_refused() {
            return Err(Error::Protocol("a release was refused".into()));
        }
        Ok(true)
    }
}

/// One side of the table-size comparison.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SizeSide {
    summary: Summary,
    server_us_per_cycle: f64,
    /// The whole server's WAL per cycle (every session's, the benchmark's being the
    /// only writers).
    wal_bytes_per_cycle: f64,
}

/// The table-size comparison for one shape.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Size {
    shape: SizeShape,
    big: SizeSide,
    small: SizeSide,
}

async fn size_run(
    scale: &Scale,
    settings: &Settings,
    table: &FencedTable,
    rows: i64,
    shape: SizeShape,
) -> Result<SizeSide> {
    scale.vacuum(table).await?;
    let name = scale.name("size");
    let store = Store::new(
        scale.backend(&name, settings.connections).await?,
        table.clone(),
    );
    let tasks = settings.tasks as i64;
    let cycles: Vec<SizeCycle> = (0..settings.tasks)
        .map(|i| SizeCycle {
            store: store.clone(),
            shape,
            per_task: (rows / tasks).max(1),
            tasks,
            rng: StdRng::seed_from_u64(i as u64),
        })
        .collect();
    let window = measure::Window::starting_now(settings.warmup, settings.measured);
    let server: Arc<Mutex<Option<CpuMark>>> = Arc::default();
    let (_, tally, cpu, start, end) = measure::run_async(
        cycles,
        |i| i as i64 + 1,
        window,
        || async {
            let cpu = ServerCpu::of(&scale.monitor, &name).await?;
            let at = cpu.now();
            *server.lock().map_err(|_| Error::Worker)? = Some((cpu, at));
            scale.wal().await
        },
        || async {
            let wal = scale.wal().await?;
            let guard = server.lock().map_err(|_| Error::Worker)?;
            let cpu = guard
                .as_ref()
                .and_then(|(cpu, at)| Some(cpu.now()? - (*at)?));
            Ok::<_, Error>((cpu, wal))
        },
    )
    .await?;
    let (wal_start, (server_ns, wal_end)) = (start?, end?);
    let n = tally.latencies_ns.len() as f64;
    let per_cycle = |x: f64| if n > 0.0 { x / n } else { f64::NAN };
    let summary = Summary::of(tally, window.measured(), cpu);
    Ok(SizeSide {
        summary,
        server_us_per_cycle: server_ns.map_or(f64::NAN, |ns| per_cycle(ns as f64 / 1e3)),
        wal_bytes_per_cycle: per_cycle((wal_end - wal_start) as f64),
    })
}

async fn size(
    scale: &Scale,
    settings: &Settings,
    log: &mut dyn FnMut(&str),
) -> Result<(Vec<Size>, String)> {
    let big = scale
        .table_with("Big", settings.big_rows, settings.fillfactor)
        .await?;
    let small_rows = settings.tasks as i64;
    let small = scale.table("Small", small_rows).await?;
    let plan = scale
        .plan(
            &dialect::acquire(Dialect::Postgres, &big),
            "123457, '00000000-0000-0000-0000-000000000001', 30000",
        )
        .await?;
    let index = format!("Index Scan using \"{}_pkey\"", big.name().name().as_str());
    if !plan.contains(&index) {
        return Err(Error::Protocol(format!(
            "the acquisition does not use the key's index:\n{plan}"
        )));
    }
    let plan = plan
        .lines()
        .find(|line| line.contains(&index))
        .map(|line| {
            line.split("  (cost")
                .next()
                .unwrap_or(line)
                .trim()
                .trim_start_matches("-> ")
                .to_owned()
        })
        .unwrap_or_default();
    let mut results = Vec::new();
    for shape in [SizeShape::Acquisition, SizeShape::Cycle] {
        let (mut b, mut s) = (Vec::new(), Vec::new());
        for repeat in 0..settings.repeats {
            for big_first in [repeat % 2 == 0, repeat % 2 == 1] {
                if big_first {
                    b.push(size_run(scale, settings, &big, settings.big_rows, shape).await?);
                } else {
                    s.push(size_run(scale, settings, &small, small_rows, shape).await?);
                }
            }
            log(&format!(
                "  table size, {shape:?}: repeat {} big {:.0}/s, small {:.0}/s",
                repeat + 1,
                b.last().map_or(f64::NAN, |x| x.summary.cycles_per_sec),
                s.last().map_or(f64::NAN, |x| x.summary.cycles_per_sec),
            ));
        }
        let side = |runs: &[SizeSide]| SizeSide {
            summary: Summary::median(&runs.iter().map(|r| r.summary).collect::<Vec<_>>()),
            server_us_per_cycle: median(runs.iter().map(|r| r.server_us_per_cycle).collect()),
            wal_bytes_per_cycle: median(runs.iter().map(|r| r.wal_bytes_per_cycle).collect()),
        };
        results.push(Size {
            shape,
            big: side(&b),
            small: side(&s),
        });
    }
    Ok((results, plan))
}

// ---------------------------------------------------------------------------------------
// Claiming.

/// One side of the claiming comparison.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClaimSide {
    leases_per_sec: f64,
    statements_per_lease: f64,
    server_us_per_lease: f64,
    client_us_per_lease: f64,
}

/// The claiming comparison for one batch size.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Claiming {
    batch: usize,
    claim: ClaimSide,
    single: ClaimSide,
}

/// Claimed leases live 1 ms: every row taken is free again at once and the table never
/// drains, so both sides measure acquisition alone, without releases.
const CLAIM_TTL: Duration = Duration::from_millis(1);

async fn claim_run(
    scale: &Scale,
    settings: &Settings,
    table: &FencedTable,
    batch: usize,
    claiming: bool,
) -> Result<ClaimSide> {
    scale.vacuum(table).await?;
    let name = scale.name(if claiming { "claim" } else { "try-acquire" });
    let store = Store::new(
        Counted::new(scale.backend(&name, settings.claim_workers).await?),
        table.clone(),
    );
    let window = measure::Window::starting_now(settings.warmup, settings.measured);
    let taken = Arc::new(AtomicU64::new(0));
    let rows = settings.claim_rows;
    let mut tasks = Vec::new();
    for worker in 0..settings.claim_workers {
        let (store, taken) = (store.clone(), Arc::clone(&taken));
        let mut rng = StdRng::seed_from_u64(worker as u64);
        tasks.push(tokio::spawn(async move {
            while Instant::now() < window.until {
                let got = if claiming {
                    store
                        .claim(&Candidates::any(), batch, CLAIM_TTL)
                        .await?
                        .len()
                } else {
                    let mut got = 0;
                    while got < batch {
                        let key = rng.random_range(1..=rows);
                        if store.try_acquire(key, CLAIM_TTL).await?.is_some() {
                            got += 1;
                        }
                    }
                    got
                };
                let now = Instant::now();
                if now >= window.measure_from && now < window.until {
                    taken.fetch_add(got as u64, Ordering::Relaxed);
                }
            }
            Ok::<_, Error>(())
        }));
    }
    tokio::time::sleep_until(window.measure_from.into()).await;
    let server = ServerCpu::of(&scale.monitor, &name).await?;
    let (sent, server_start, client_start) = (store.backend().sent(), server.now(), process_cpu());
    tokio::time::sleep_until(window.until.into()).await;
    let (sent_end, server_end, client_end) = (store.backend().sent(), server.now(), process_cpu());
    for task in tasks {
        task.await.map_err(|_| Error::Worker)??;
    }
    let leases = taken.load(Ordering::Relaxed) as f64;
    let per_lease = |x: f64| if leases > 0.0 { x / leases } else { f64::NAN };
    Ok(ClaimSide {
        leases_per_sec: leases / window.measured().as_secs_f64(),
        statements_per_lease: per_lease((sent_end - sent) as f64),
        server_us_per_lease: server_end
            .zip(server_start)
            .map_or(f64::NAN, |(e, s)| per_lease((e - s) as f64 / 1e3)),
        client_us_per_lease: measure::cpu_between(client_start, client_end)
            .map_or(f64::NAN, |c| per_lease(c.as_secs_f64() * 1e6)),
    })
}

async fn claiming(
    scale: &Scale,
    settings: &Settings,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Claiming>> {
    let table = scale.table("Queue", settings.claim_rows).await?;
    let mut results = Vec::new();
    for &batch in &settings.claim_batches {
        let (mut c, mut s) = (Vec::new(), Vec::new());
        for repeat in 0..settings.repeats {
            for claim_first in [repeat % 2 == 0, repeat % 2 == 1] {
                if claim_first {
                    c.push(claim_run(scale, settings, &table, batch, true).await?);
                } else {
                    s.push(claim_run(scale, settings, &table, batch, false).await?);
                }
            }
            log(&format!(
                "  claiming batches of {batch}: repeat {} claim {:.0} leases/s, try_acquire {:.0}/s",
                repeat + 1,
                c.last().map_or(f64::NAN, |x| x.leases_per_sec),
                s.last().map_or(f64::NAN, |x| x.leases_per_sec),
            ));
        }
        let side = |runs: &[ClaimSide]| ClaimSide {
            leases_per_sec: median(runs.iter().map(|r| r.leases_per_sec).collect()),
            statements_per_lease: median(runs.iter().map(|r| r.statements_per_lease).collect()),
            server_us_per_lease: median(runs.iter().map(|r| r.server_us_per_lease).collect()),
            client_us_per_lease: median(runs.iter().map(|r| r.client_us_per_lease).collect()),
        };
        results.push(Claiming {
            batch,
            claim: side(&c),
            single: side(&s),
        });
    }
    Ok(results)
}

// ---------------------------------------------------------------------------------------
// The run and its report.

/// Everything measured.
#[derive(Debug, Default)]
pub(crate) struct Results {
    version: String,
    renewal: Vec<Renewal>,
    keeper: Option<KeeperRun>,
    size: Vec<Size>,
    plan: Option<String>,
    claiming: Vec<Claiming>,
}

/// Runs the parts `settings` names, logging progress through `log`.
pub(crate) async fn run(settings: &Settings, log: &mut dyn FnMut(&str)) -> Result<Results> {
    let scale = Scale::setup(settings).await?;
    let result = run_parts(&scale, settings, log).await;
    let teardown = scale.teardown().await;
    let results = result?;
    teardown?;
    Ok(results)
}

async fn run_parts(
    scale: &Scale,
    settings: &Settings,
    log: &mut dyn FnMut(&str),
) -> Result<Results> {
    let mut results = Results {
        version: scale
            .monitor
            .query_one("SHOW server_version", &[])
            .await?
            .try_get(0)?,
        ..Results::default()
    };
    let wants = |part| settings.parts.contains(&part);
    if wants(Part::Renewal) {
        for &n in &settings.leases {
            log(&format!("renewal of {n} leases"));
            results
                .renewal
                .push(renewal(scale, settings, n, log).await?);
        }
    }
    if wants(Part::Keeper) {
        log(&format!(
            "batch keeper of {} leases",
            settings.keeper_leases
        ));
        results.keeper = Some(keeper(scale, settings, log).await?);
    }
    if wants(Part::Size) {
        log(&format!(
            "table size: {} rows against {}",
            settings.big_rows, settings.tasks
        ));
        let (size, plan) = size(scale, settings, log).await?;
        results.size = size;
        results.plan = Some(plan);
    }
    if wants(Part::Claim) {
        log(&format!("claiming from {} rows", settings.claim_rows));
        results.claiming = claiming(scale, settings, log).await?;
    }
    Ok(results)
}

/// The results as Markdown tables.
pub(crate) fn markdown(settings: &Settings, results: &Results) -> String {
    let mut out = String::new();
    let cadence = settings.ttl / 3;
    let _ = writeln!(
        out,
        "PostgreSQL {}, synchronous_commit {}.\n",
        results.version,
        if settings.durable { "on" } else { "off" }
    );
    if !results.renewal.is_empty() {
        let _ = writeln!(
            out,
            "#### Renewal: batched (`renew_many`, {} statements in flight) against one statement per lease ({} tasks)\n\n\
             Median of {} rounds. *At cadence*: statements per second a keeper sends renewing every lease every {:?} (a {:?} ttl).\n\n\
             | leases | statements/round, batched | per lease | ratio | round ms, batched | per lease | ratio | server CPU ms/round, batched | per lease | ratio | client CPU ms/round, batched | per lease | statements/s at cadence, batched | per lease |\n\
             |--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
            settings.in_flight, settings.per_lease_tasks, settings.rounds, cadence, settings.ttl
        );
        for r in &results.renewal {
            let (b, s) = (r.batched, r.single);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.leases,
                f(b.statements, 0),
                f(s.statements, 0),
                f(s.statements / b.statements, 0),
                f(b.round_ms, 0),
                f(s.round_ms, 0),
                f(s.round_ms / b.round_ms, 1),
                f(b.server_ms, 0),
                f(s.server_ms, 0),
                f(s.server_ms / b.server_ms, 1),
                f(b.client_ms, 0),
                f(s.client_ms, 0),
                f(b.statements / cadence.as_secs_f64(), 1),
                f(s.statements / cadence.as_secs_f64(), 0),
            );
        }
        out.push('\n');
    }
    if let Some(k) = &results.keeper {
        let _ = writeln!(
            out,
            "#### Batch keeper: {} leases of {:?}, {} stolen\n\n\
             | statements per renewal interval | stolen | revoked (refused) | revoked before their local deadline | slowest from expiry to revocation, ms | other leases lost |\n\
             |--:|--:|--:|--:|--:|--:|\n\
             | {} | {} | {} | {} | {} | {} |\n",
            k.leases,
            k.ttl,
            k.stolen,
            f(k.statements_per_interval, 1),
            k.stolen,
            k.refused,
            k.in_time,
            f(k.slowest_ms, 0),
            k.others_lost
        );
    }
    if !results.size.is_empty() {
        let _ = writeln!(
            out,
            "#### Table size: {} rows{} against {} ({} tasks over {} connections, each task on rows of its own)\n\n\
             Median of {} runs of {:?}. The acquisition's plan: `{}`.\n\n\
             | cycle | large cycles/s | small cycles/s | large/small | large p50 ms | small p50 ms | large p99 ms | small p99 ms | large server CPU µs/cycle | small | large client CPU µs/cycle | small | large WAL bytes/cycle | small |\n\
             |---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
            settings.big_rows,
            settings
                .fillfactor
                .map_or(String::new(), |f| format!(" (fillfactor {f})")),
            settings.tasks,
            settings.tasks,
            settings.connections,
            settings.repeats,
            settings.measured,
            results.plan.as_deref().unwrap_or("")
        );
        for s in &results.size {
            let (b, m) = (s.big, s.small);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                match s.shape {
                    SizeShape::Acquisition => "acquire, release",
                    SizeShape::Cycle => "acquire, publish, release",
                },
                f(b.summary.cycles_per_sec, 0),
                f(m.summary.cycles_per_sec, 0),
                f(b.summary.cycles_per_sec / m.summary.cycles_per_sec, 3),
                f(b.summary.p50_ms, 2),
                f(m.summary.p50_ms, 2),
                f(b.summary.p99_ms, 2),
                f(m.summary.p99_ms, 2),
                f(b.server_us_per_cycle, 0),
                f(m.server_us_per_cycle, 0),
                f(b.summary.cpu_us_per_cycle, 0),
                f(m.summary.cpu_us_per_cycle, 0),
                f(b.wal_bytes_per_cycle, 0),
                f(m.wal_bytes_per_cycle, 0),
            );
        }
        out.push('\n');
    }
    if !results.claiming.is_empty() {
        let _ = writeln!(
            out,
            "#### Claiming from {} rows ({} workers) against a loop of `try_acquire` over random keys\n\n\
             Median of {} runs of {:?}; leases of 1 ms, so the table never drains and both sides measure acquisition alone.\n\n\
             | batch | claim leases/s | loop leases/s | claim/loop | statements/lease, claim | loop | server CPU µs/lease, claim | loop | client CPU µs/lease, claim | loop |\n\
             |--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
            settings.claim_rows, settings.claim_workers, settings.repeats, settings.measured
        );
        for c in &results.claiming {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                c.batch,
                f(c.claim.leases_per_sec, 0),
                f(c.single.leases_per_sec, 0),
                f(c.claim.leases_per_sec / c.single.leases_per_sec, 2),
                f(c.claim.statements_per_lease, 3),
                f(c.single.statements_per_lease, 3),
                f(c.claim.server_us_per_lease, 1),
                f(c.single.server_us_per_lease, 1),
                f(c.claim.client_us_per_lease, 1),
                f(c.single.client_us_per_lease, 1),
            );
        }
        out.push('\n');
    }
    out
}
