//! The cost of the server's timeline in the fence, on PostgreSQL: the fenced write
//! (`Store::update` under a held lease, worker `i` on row `i`) of a table that stamps
//! the timeline against the same write of a table that does not
//! (`FencedTableBuilder::stamp_timeline(false)`), the two sides alternated, as a
//! ratio. The stamp's statement reads `pg_walfile_name(pg_current_wal_lsn())` once;
//! everything else is the same on both sides, the client's work included, so the
//! server's CPU time per write (its backends' `/proc/<pid>/schedstat`) is the closest
//! figure to the stamp's own cost.
//!
//! Beside it, the epoch subquery alone, as each table's statements render it,
//! evaluated [`EVALUATIONS`] times in a PL/pgSQL loop on the server, the two sides
//! alternated: the time per evaluation, whose difference is what the stamp adds to
//! every fenced statement (once; twice to an acquisition).

use std::time::Duration;

use std::time::Instant;

use fenced_guard::{Dialect, FencedTable, Lease, Postgres, Store, Value, dialect};

use crate::error::{Error, Result};
use crate::measure::{self, Cycle, Summary, Timing, Window};
use crate::postgres::{connect, with_parameter};
use crate::scale::ServerCpu;
use crate::suite::sign_test;
use crate::workload::{PAYLOAD, PAYLOAD_COLUMN};

/// What to run.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) postgres: String,
    pub(crate) durable: bool,
    pub(crate) workers: Vec<usize>,
    pub(crate) timing: Timing,
    pub(crate) repeats: usize,
    /// Both sides without the stamp: the machine's noise.
    pub(crate) control: bool,
}

/// One side's measured runs and the server's CPU time per write in each.
#[derive(Clone, Debug, Default)]
pub(crate) struct Side {
    runs: Vec<Summary>,
    server_us: Vec<f64>,
}

impl Side {
    pub(crate) fn median(&self) -> Summary {
        Summary::median(&self.runs)
    }

    /// The median server CPU time per write, in microseconds (NaN when not measured).
    pub(crate) fn server_us(&self) -> f64 {
        median(&self.server_us)
    }
}

/// The median of `values`, leaving NaN out (NaN for none).
fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The comparison at one worker count.
#[derive(Clone, Debug)]
pub(crate) struct Comparison {
    pub(crate) workers: usize,
    /// With the stamp (without it, in a control run).
    pub(crate) stamped: Side,
    pub(crate) unstamped: Side,
}

impl Comparison {
    /// Writes per second with the stamp over without it.
    pub(crate) fn ratio(&self) -> f64 {
        self.stamped.median().cycles_per_sec / self.unstamped.median().cycles_per_sec
    }

    /// Each repeat's ratio, its two runs made one right after the other.
    pub(crate) fn pair_ratios(&self) -> Vec<f64> {
        self.stamped
            .runs
            .iter()
            .zip(&self.unstamped.runs)
            .map(|(s, u)| s.cycles_per_sec / u.cycles_per_sec)
            .collect()
    }
}

/// How many times a run of the subquery comparison evaluates each side's subquery.
pub(crate) const EVALUATIONS: u32 = 200_000;

/// The epoch subquery alone: nanoseconds per evaluation of each side, one per repeat.
#[derive(Clone, Debug, Default)]
pub(crate) struct Subquery {
    pub(crate) stamped_ns: Vec<f64>,
    pub(crate) unstamped_ns: Vec<f64>,
}

impl Subquery {
    /// The medians of both sides, in nanoseconds per evaluation.
    pub(crate) fn medians(&self) -> (f64, f64) {
        (median(&self.stamped_ns), median(&self.unstamped_ns))
    }
}

/// The run's results.
#[derive(Clone, Debug)]
pub(crate) struct Results {
    pub(crate) version: String,
    pub(crate) comparisons: Vec<Comparison>,
    pub(crate) subquery: Subquery,
}

/// A worker's fenced write under the lease it holds on its own row.
struct Write {
    store: Store<Postgres>,
    lease: Lease,
}

impl Cycle for Write {
    async fn attempt(&mut self, _key: i64) -> Result<bool> {
        let payload = [(PAYLOAD_COLUMN, Value::from(PAYLOAD))];
        if self.store.update(&self.lease, &payload).await?.is_applied() {
            Ok(true)
        } else {
            Err(Error::Protocol(
                "a fenced write was refused under a lease held for the whole run".into(),
            ))
        }
    }
}

/// The lease every run writes under: longer than any run.
const HELD_FOR: Duration = Duration::from_secs(3600);

/// One table: its store and a held lease per worker.
struct Target {
    table: FencedTable,
    leases: Vec<Lease>,
    application_name: String,
}

/// Runs the comparison at every worker count, alternating which side runs first.
pub(crate) async fn run(settings: &Settings, log: &mut dyn FnMut(&str)) -> Result<Results> {
    let config = if settings.durable {
        settings.postgres.clone()
    } else {
        with_parameter(&settings.postgres, "options", "-c synchronous_commit=off")
    };
    let monitor = connect(&config).await?;
    let version: String = monitor
        .query_one("SHOW server_version", &[])
        .await?
        .try_get(0)?;
    let schema = format!("fenced_stamp_{}", std::process::id());
    monitor
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .await?;
    let result = async {
        let most = settings.workers.iter().copied().max().unwrap_or(1);
        let stamped = target(&config, &schema, "Stamped", !settings.control, most).await?;
        let unstamped = target(&config, &schema, "Unstamped", false, most).await?;
        let mut comparisons = Vec::new();
        for &workers in &settings.workers {
            let mut comparison = Comparison {
                workers,
                stamped: Side::default(),
                unstamped: Side::default(),
            };
            for repeat in 0..settings.repeats {
                log(&format!(
                    "stamp: {workers} workers, repeat {} of {}",
                    repeat + 1,
                    settings.repeats
                ));
                let order = if repeat % 2 == 0 {
                    [(&stamped, true), (&unstamped, false)]
                } else {
                    [(&unstamped, false), (&stamped, true)]
                };
                for (target, is_stamped) in order {
                    let (summary, server_us) =
                        measure_once(&config, &monitor, target, workers, settings.timing).await?;
                    let side = if is_stamped {
                        &mut comparison.stamped
                    } else {
                        &mut comparison.unstamped
                    };
                    side.runs.push(summary);
                    side.server_us.push(server_us);
                }
            }
            comparisons.push(comparison);
        }
        let mut subquery = Subquery::default();
        for repeat in 0..settings.repeats {
            log(&format!(
                "stamp: the epoch subquery alone, repeat {} of {}",
                repeat + 1,
                settings.repeats
            ));
            let order = if repeat % 2 == 0 {
                [(&stamped, true), (&unstamped, false)]
            } else {
                [(&unstamped, false), (&stamped, true)]
            };
            for (target, is_stamped) in order {
                let ns = evaluate(&monitor, &target.table).await?;
                if is_stamped {
                    subquery.stamped_ns.push(ns);
                } else {
                    subquery.unstamped_ns.push(ns);
                }
            }
        }
        Ok::<_, Error>((comparisons, subquery))
    }
    .await;
    monitor
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await?;
    let (comparisons, subquery) = result?;
    Ok(Results {
        version,
        comparisons,
        subquery,
    })
}

/// Nanoseconds per evaluation of `table`'s epoch subquery, as its statements render
/// it, in a PL/pgSQL loop of [`EVALUATIONS`] on the server (the client waits for the
/// loop's one statement).
async fn evaluate(monitor: &tokio_postgres::Client, table: &FencedTable) -> Result<f64> {
    let subquery = dialect::epoch_subquery(Dialect::Postgres, table);
    let sql = format!(
        "DO $fenced$ DECLARE x bigint; BEGIN FOR i IN 1..{EVALUATIONS} LOOP x := {subquery}; \
         END LOOP; END $fenced$"
    );
    let started = Instant::now();
    monitor.batch_execute(&sql).await?;
    Ok(started.elapsed().as_nanos() as f64 / f64::from(EVALUATIONS))
}

/// Creates table `name` in `schema` (stamping the timeline or not), provisions a row
/// per worker and takes a lease on each, held for the whole run.
async fn target(
    config: &str,
    schema: &str,
    name: &str,
    stamp: bool,
    rows: usize,
) -> Result<Target> {
    let table = crate::workload::table_builder(&format!("{schema}.{name}"))
        .stamp_timeline(stamp)
        .build()?;
    let store = Store::new(Postgres::connect_with(config, 1).await?, table.clone());
    store.create_schema().await?;
    let mut leases = Vec::with_capacity(rows);
    for key in 1..=i64::try_from(rows).unwrap_or(i64::MAX) {
        store.provision(key).await?;
        let lease = store
            .try_acquire(key, HELD_FOR)
            .await?
            .ok_or_else(|| Error::Protocol(format!("row {key} of {name} was not free")))?;
        leases.push(lease);
    }
    Ok(Target {
        table,
        leases,
        application_name: format!("fenced-stamp-{}", name.to_lowercase()),
    })
}

/// One measured run of `target` with `workers` workers on a pool of their own: the
/// summary and the server's CPU time per write, in microseconds.
async fn measure_once(
    config: &str,
    monitor: &tokio_postgres::Client,
    target: &Target,
    workers: usize,
    timing: Timing,
) -> Result<(Summary, f64)> {
    let named = with_parameter(config, "application_name", &target.application_name);
    let store = Store::new(
        Postgres::connect_with(&named, workers).await?,
        target.table.clone(),
    );
    let cycles: Vec<Write> = target.leases[..workers]
        .iter()
        .map(|lease| Write {
            store: store.clone(),
            lease: lease.clone(),
        })
        .collect();
    let window: Window = timing.start();
    let (_, tally, cpu, start, ()) = measure::run_async(
        cycles,
        |i| i64::try_from(i + 1).unwrap_or(i64::MAX),
        window,
        || async {
            let server = ServerCpu::of(monitor, &target.application_name).await;
            let at = server.as_ref().ok().and_then(ServerCpu::now);
            (server, at)
        },
        || std::future::ready(()),
    )
    .await?;
    let server_ns = match start {
        (Ok(server), Some(at)) => server.now().map(|now| now.saturating_sub(at)),
        _ => None,
    };
    let summary = Summary::of(tally, window.measured(), cpu);
    let writes = summary.cycles_per_sec * window.measured().as_secs_f64();
    let server_us = match server_ns {
        Some(ns) if writes > 0.0 => ns as f64 / 1e3 / writes,
        _ => f64::NAN,
    };
    Ok((summary, server_us))
}

/// The results as Markdown.
pub(crate) fn markdown(settings: &Settings, results: &Results) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let (a, b) = if settings.control {
        ("unstamped", "unstamped again")
    } else {
        ("stamped", "unstamped")
    };
    let _ = writeln!(
        out,
        "PostgreSQL {}; the fenced write (`Store::update` under a held lease, one row per \
         worker), {} runs of {:.1} s per side after {:.1} s of warm-up, sides alternated; \
         medians. Server CPU: the backends' own, per write.\n",
        results.version,
        settings.repeats,
        settings.timing.measured.as_secs_f64(),
        settings.timing.warmup.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "| workers | {a} writes/s | {b} writes/s | {a}/{b} | pairs | pairs ≥ 1 (p) | {a} server CPU µs/write | {b} server CPU µs/write | {a} p50 ms | {b} p50 ms |"
    );
    let _ = writeln!(out, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for c in &results.comparisons {
        let pairs = c.pair_ratios();
        let finite: Vec<f64> = pairs.iter().copied().filter(|r| r.is_finite()).collect();
        let (low, high) = finite
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), r| {
                (l.min(*r), h.max(*r))
            });
        let reaching = finite.iter().filter(|r| **r >= 1.0).count();
        let (s, u) = (c.stamped.median(), c.unstamped.median());
        let _ = writeln!(
            out,
            "| {} | {:.0} | {:.0} | {:.3} | {low:.2}–{high:.2} | {reaching} of {} ({:.2}) | {:.1} | {:.1} | {:.3} | {:.3} |",
            c.workers,
            s.cycles_per_sec,
            u.cycles_per_sec,
            c.ratio(),
            finite.len(),
            if finite.is_empty() {
                f64::NAN
            } else {
                sign_test(reaching, finite.len())
            },
            c.stamped.server_us(),
            c.unstamped.server_us(),
            s.p50_ms,
            u.p50_ms,
        );
    }
    let (stamped, unstamped) = results.subquery.medians();
    let _ = writeln!(
        out,
        "\nThe epoch subquery alone, evaluated {EVALUATIONS} times in a PL/pgSQL loop, {} \
         runs per side, alternated; medians:\n",
        settings.repeats
    );
    let _ = writeln!(
        out,
        "| {a} µs/evaluation | {b} µs/evaluation | difference µs |\n|--:|--:|--:|\n| {:.3} | {:.3} | {:.3} |",
        stamped / 1e3,
        unstamped / 1e3,
        (stamped - unstamped) / 1e3
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(cycles_per_sec: f64) -> Summary {
        Summary {
            cycles_per_sec,
            p50_ms: 1.0,
            p99_ms: 1.0,
            cpu_us_per_cycle: 1.0,
            refused_per_cycle: 0.0,
        }
    }

    #[test]
    fn the_ratio_is_of_the_medians_and_pairs_are_per_repeat() {
        let c = Comparison {
            workers: 1,
            stamped: Side {
                runs: vec![summary(90.0), summary(100.0), summary(95.0)],
                server_us: vec![10.0, f64::NAN, 12.0],
            },
            unstamped: Side {
                runs: vec![summary(100.0), summary(100.0), summary(100.0)],
                server_us: vec![9.0, 9.0, 9.0],
            },
        };
        assert_eq!(c.ratio(), 0.95);
        assert_eq!(c.pair_ratios(), vec![0.9, 1.0, 0.95]);
        assert_eq!(c.stamped.server_us(), 11.0);
        assert!(Side::default().server_us().is_nan());
    }
}
