//! The fault tests' history workload across promotions: workers on the connection
//! string naming both servers, pausing past their ttl, while a driver fails the
//! primary over again and again, rebuilding the old one each time as the new standby
//! with `pg_rewind`. The fault tests' checker judges the run, told when each failover
//! cut replication and killed the primary.
//!
//! Each failover, the driver:
//!
//! 1. stops every call ([`Gate::quiesce`]), picks workers in the middle of their work,
//!    holds them before their next call (a process paused), and renews their leases as
//!    their holders would have before pausing, so that they outlive the failover;
//!    waits until the standby has replayed everything, then cuts replication;
//! 2. lets the workload go on, on the primary alone: everything it does now is lost
//!    with the primary. There, the held workers' leases end (their expiry moved into
//!    the past on the primary alone, standing for its clock running ahead), and the
//!    driver takes their rows over: the lost takeovers of the issue;
//! 3. stops every call again, kills the primary, promotes the standby, and lets every
//!    worker go on, the held ones with their old leases, live on the new primary;
//! 4. rebuilds the old primary as the new standby while the workload runs.
//!
//! No call is in flight at the cut or at the kill, so the checker knows which calls
//! were lost. The held workers' next writes after the failover are stale: refused with
//! the timeline stamp, accepted without it (the negative control).

use std::sync::Arc;
use std::time::Duration;

use fenced_guard::{Executor, FencedTable, Postgres, Store, Value};
use tokio::sync::Mutex;

use crate::checker::{Failover, Verdict, check_across};
use crate::cluster::{Cluster, Options};
use crate::gate::{AtWork, Gate};
use crate::history::{
    Bench, Call, Mode, Op, Recorded, Seen, Settings, TraceEntry, job_table_builder, run_gated,
};
use crate::postgres::{read_trace, trace_ddl};
use crate::proxy::Proxy;
use crate::report::Report;

/// How long the held workers' leases are renewed for: past the failover.
const HELD_TTL: Duration = Duration::from_secs(30);
/// How many workers are held at each failover, at most.
const HELD: usize = 2;
/// How long the workload runs between two steps of the driver.
const BETWEEN: Duration = Duration::from_millis(600);

/// The workload's database: the cluster's servers through one connection string.
pub struct FailoverBench {
    /// The application's, naming every server.
    url: String,
    /// The superuser's, to the primary whichever it is, for the trace.
    trace_url: String,
    stamp: bool,
}

impl Bench for FailoverBench {
    type Backend = Postgres;

    fn name(&self) -> &'static str {
        if self.stamp {
            "postgresql-failover"
        } else {
            "postgresql-failover-unstamped"
        }
    }

    fn table(&self) -> FencedTable {
        job_table_builder("Job")
            .stamp_timeline(self.stamp)
            .build()
            .expect("a valid workload table")
    }

    async fn prepare(&self) {
        let store = Store::new(
            Postgres::connect_with(&self.url, 1)
                .await
                .expect("connect as the application"),
            self.table(),
        );
        store
            .create_schema()
            .await
            .expect("create the fenced table");
        store
            .backend()
            .execute_batch(&trace_ddl(store.table(), "JobTrace", "JobTraceRow"))
            .await
            .expect("create the trace table and its trigger");
    }

    async fn worker(&self) -> (Store<Postgres>, Option<Proxy>) {
        let backend = Postgres::connect_with(&self.url, 1)
            .await
            .expect("connect as the application");
        (Store::new(backend, self.table()), None)
    }

    async fn trace(&self) -> Vec<TraceEntry> {
        let client = crate::cluster::connect(&self.trace_url).await;
        read_trace(&client, "JobTrace").await
    }

    async fn teardown(&self) {}
}

/// What a run saw.
pub struct Run {
    pub recorded: Recorded,
    pub failovers: Vec<Failover>,
    pub verdict: Verdict,
    /// Workers held across a failover (at least one each) with a lease whose row the
    /// driver took over.
    pub held: usize,
}

/// Runs the workload on a new primary and standby through `failovers` promotions;
/// `None` when PostgreSQL's binaries are missing here (and `CI` is not set).
pub async fn run(stamp: bool, failovers: usize, seed: u64) -> Option<Run> {
    let cluster = Cluster::start(Options {
        standby: true,
        ..Options::default()
    })
    .await?;
    let bench = FailoverBench {
        url: cluster.app_url(),
        trace_url: cluster.superuser_url(),
        stamp,
    };
    let settings = Settings {
        mode: Mode::Fenced,
        workers: 6,
        claimers: 1,
        rows: 6,
        ttl: Duration::from_millis(600),
        // An upper bound: the driver ends the run after its last failover.
        duration: Duration::from_secs(300),
        seed,
        pause: 0.1,
        wire: 0.0,
        // Fenced transactions too; the promotions, not an advancer, end the epochs.
        transactions: 0.3,
        caller_connections: 0.0,
        autocommit_attempts: 0.0,
        advance_every: None,
    };
    let gate = Arc::new(Gate::default());
    let cluster = Arc::new(Mutex::new(cluster));
    let driver = {
        let gate = Arc::clone(&gate);
        let cluster = Arc::clone(&cluster);
        let table = bench.table();
        let thief = settings.workers;
        tokio::spawn(async move {
            // The run ends with the driver, also when the driver fails.
            let _finish = Finish(Arc::clone(&gate));
            let mut cluster = cluster.lock().await;
            drive(&mut cluster, &gate, &table, thief, failovers).await
        })
    };
    let mut recorded = run_gated(&bench, &settings, Some(Arc::clone(&gate))).await;
    let (failovers, thefts, held) = driver.await.expect("the driver");
    recorded.calls.extend(thefts);
    let trace = bench.trace().await;
    let verdict = check_across(&recorded.calls, &trace, &failovers);
    Report {
        backend: bench.name(),
        mode: settings.mode,
        seed,
        duration: Duration::from_micros(recorded.calls.iter().map(|c| c.end_us).max().unwrap_or(0)),
        workers: settings.workers,
        rows: settings.rows,
        faults: recorded.faults,
        failovers: failovers.len(),
        transactions: recorded.transactions,
        caller: recorded.caller,
        verdict: &verdict,
    }
    .emit();
    drop(cluster);
    Some(Run {
        recorded,
        failovers,
        verdict,
        held,
    })
}

/// Finishes the gate's run when dropped.
struct Finish(Arc<Gate>);

impl Drop for Finish {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// The driver: `count` failovers, as the module says. Returns them, the driver's own
/// acquisitions (recorded as calls of worker `thief`), and how many held workers' rows
/// it took over.
async fn drive(
    cluster: &mut Cluster,
    gate: &Gate,
    table: &FencedTable,
    thief: usize,
    count: usize,
) -> (Vec<Failover>, Vec<Call>, usize) {
    let mut failovers = Vec::new();
    let mut thefts = Vec::new();
    let mut held_total = 0;
    tokio::time::sleep(BETWEEN).await;
    for _ in 0..count {
        let on_primary = Store::new(
            Postgres::connect_with(&Cluster::app_url_of(cluster.primary()), 1)
                .await
                .expect("connect to the primary"),
            table.clone(),
        );
        // 1. Held workers, their leases renewed; replication cut. Until a worker is
        // at work under a live lease, the workload goes on a little longer.
        let (quiet, held) = loop {
            let quiet = gate.quiesce().await;
            let mut held = Vec::new();
            for (worker, lease) in gate.at_work() {
                if held.len() == HELD {
                    break;
                }
                if move_expiry(&on_primary, &lease, HELD_TTL, true).await {
                    gate.hold(worker);
                    held.push(lease);
                }
            }
            if !held.is_empty() {
                break (quiet, held);
            }
            drop(quiet);
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        cluster.replayed().await;
        cluster.cut().await;
        let cut_us = gate.micros();
        drop(quiet);

        // 2. On the primary alone: the held leases end there, and their rows are
        // taken over.
        for lease in &held {
            assert!(
                move_expiry(&on_primary, lease, Duration::ZERO, false).await,
                "a held worker's lease moved on while it was held"
            );
            let start_us = gate.micros();
            let taken = on_primary
                .try_acquire(lease.row, Duration::from_secs(60))
                .await
                .expect("take a held worker's row over");
            let end_us = gate.micros();
            thefts.push(Call {
                worker: thief,
                row: lease.row,
                op: Op::Acquire,
                generation: taken.as_ref().map_or(0, |l| l.generation()),
                write_id: None,
                lease_us: start_us,
                start_us,
                end_us,
                seen: if taken.is_some() {
                    Seen::Applied
                } else {
                    Seen::Refused
                },
            });
            held_total += usize::from(taken.is_some());
        }
        tokio::time::sleep(BETWEEN).await;

        // 3. The primary killed, the standby promoted, everyone on.
        let quiet = gate.quiesce().await;
        let kill_us = gate.micros();
        drop(on_primary);
        cluster.fail_over().await;
        failovers.push(Failover { cut_us, kill_us });
        gate.release_all();
        drop(quiet);

        // 4. The old primary rebuilt while the workload runs.
        cluster.rebuild().await;
        tokio::time::sleep(BETWEEN).await;
    }
    (failovers, thefts, held_total)
}

/// Moves the expiry of `lease`'s row to `ttl` from the database's clock (`renew`) or
/// into the past, where the row still holds `lease` (and, for a renewal, is unexpired,
/// as the protocol's renewal requires). Returns whether it did.
async fn move_expiry(store: &Store<Postgres>, lease: &AtWork, ttl: Duration, renew: bool) -> bool {
    let expiry = if renew {
        format!(
            "clock_timestamp() + interval '{} milliseconds'",
            ttl.as_millis()
        )
    } else {
        "clock_timestamp() - interval '1 hour'".to_owned()
    };
    let live = if renew {
        " AND \"LeaseUntilUtc\" > clock_timestamp()"
    } else {
        ""
    };
    let sql = format!(
        "UPDATE \"Job\" SET \"LeaseUntilUtc\" = {expiry} WHERE \"JobId\" = $1 \
         AND \"Generation\" = $2 AND \"LeaseOwner\" = $3{live}"
    );
    let rows = store
        .backend()
        .execute(
            &sql,
            &[
                Value::I64(lease.row),
                Value::I64(lease.generation),
                Value::Uuid(lease.owner),
            ],
        )
        .await
        .expect("move a held lease's expiry");
    rows == 1
}
