//! `fenced-bench paths`: the paths an existing service takes through the guard, each
//! against the same work on the driver alone, as ratios of two sides alternated in one
//! run.
//!
//! - **client**: the lease cycle (acquire, publish, release) on each worker's own
//!   client (`store.on(&client)`) against the same statements prepared once on the
//!   raw driver; PostgreSQL (tokio-postgres) and SQL Server (tiberius).
//! - **transaction**: a fenced transaction of the guard's pool (`Store::transaction`:
//!   the check, three lines inserted, a fenced update of the lease's row, commit)
//!   against the same statements in a plain transaction of the driver's; PostgreSQL,
//!   SQLite (`BEGIN IMMEDIATE`, both of the guard's execution modes) and SQL Server;
//!   and, on PostgreSQL and SQLite, the plain transaction with the guard's
//!   check-and-lock statement added, on the driver, against the plain one: what that
//!   one statement costs, a bound on the fenced transaction's ratio.
//! - **sqlx**: the same transaction on a caller's sqlx connection, fenced
//!   (`store.on(&mut tx).fence(..)`) against plain.
//! - **claim**: claiming one row (`Store::claim`) against `try_acquire` of a random
//!   free key, both with leases of 1 ms, from a large table (PostgreSQL).
//!
//! `--control` runs every comparison's first side against itself: the noise floor.

mod claim;
mod client;
pub(crate) mod place;
mod sqlx;
mod transaction;

pub(crate) use claim::acquisitions;
pub(crate) use client::cycles;
pub(crate) use transaction::{Kind, postgres_transactions, sqlite_transactions};

use std::fmt::Write as _;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::measure::{Summary, Timing, figure};
use crate::scale::ServerCpu;
use crate::suite::sign_test;

/// What to run.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) postgres: String,
    /// The SQL Server (or TDS server) to measure too, if any.
    pub(crate) mssql: Option<String>,
    /// Where the SQLite file goes.
    pub(crate) sqlite_dir: PathBuf,
    pub(crate) durable: bool,
    pub(crate) workers: Vec<usize>,
    pub(crate) timing: Timing,
    pub(crate) repeats: usize,
    pub(crate) control: bool,
    pub(crate) parts: Vec<Part>,
    /// Rows of the claiming comparison's table.
    pub(crate) claim_rows: i64,
}

/// A part of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Part {
    /// The lease cycle on the caller's client against the raw driver.
    Client,
    /// A fenced transaction of the guard's pool against a plain one.
    Transaction,
    /// A fence in the caller's sqlx transaction against none.
    Sqlx,
    /// Claiming one row against `try_acquire` of a free key.
    Claim,
}

/// Which side of a comparison runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// The guard's path.
    Guard,
    /// The driver alone.
    Driver,
}

/// One measured run of one side.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    pub(crate) summary: Summary,
    /// The database server's CPU time per operation, in microseconds (NaN where not
    /// measured: a server on another machine, or none).
    pub(crate) server_us: f64,
}

impl Run {
    /// `summary`, with the server's CPU time over the window (`None`: not measured).
    pub(crate) fn of(summary: Summary, server_ns: Option<u64>, measured: Duration) -> Run {
        let ops = summary.cycles_per_sec * measured.as_secs_f64();
        let server_us = match server_ns {
            Some(ns) if ops > 0.0 => ns as f64 / 1e3 / ops,
            _ => f64::NAN,
        };
        Run { summary, server_us }
    }
}

/// A comparison that can run either side once.
pub(crate) trait Pair {
    /// What it is called in the tables.
    fn name(&self) -> Name;

    /// One measured run of `side` with `workers` workers.
    fn run(&self, side: Side, workers: usize, timing: Timing) -> impl Future<Output = Result<Run>>;
}

/// How a comparison is named in the tables, and its target.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Name {
    /// The guard's path (the comparison's first side).
    pub(crate) path: &'static str,
    /// What it is set against (the second side).
    pub(crate) against: &'static str,
    pub(crate) database: &'static str,
    /// What one operation is: a cycle, a transaction, a lease.
    pub(crate) unit: &'static str,
    /// The least ratio of the first side to the second that meets the goal.
    pub(crate) target: Option<f64>,
}

/// A comparison's runs at one worker count.
#[derive(Clone, Debug)]
pub(crate) struct Measured {
    pub(crate) name: Name,
    pub(crate) workers: usize,
    pub(crate) guard: Vec<Run>,
    pub(crate) driver: Vec<Run>,
}

impl Measured {
    fn median(runs: &[Run]) -> (Summary, f64) {
        let summary = Summary::median(&runs.iter().map(|r| r.summary).collect::<Vec<_>>());
        let mut server: Vec<f64> = runs
            .iter()
            .map(|r| r.server_us)
            .filter(|v| !v.is_nan())
            .collect();
        server.sort_by(f64::total_cmp);
        let server = match server.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => server[n / 2],
            n => (server[n / 2 - 1] + server[n / 2]) / 2.0,
        };
        (summary, server)
    }

    /// The guard's operations per second over the driver's, of the medians.
    pub(crate) fn ratio(&self) -> f64 {
        Self::median(&self.guard).0.cycles_per_sec / Self::median(&self.driver).0.cycles_per_sec
    }

    /// Each repeat's ratio, its two runs made one right after the other.
    pub(crate) fn pair_ratios(&self) -> Vec<f64> {
        self.guard
            .iter()
            .zip(&self.driver)
            .map(|(g, d)| g.summary.cycles_per_sec / d.summary.cycles_per_sec)
            .filter(|r| r.is_finite())
            .collect()
    }
}

/// Runs `pair` at every worker count, `repeats` times per side, alternating which side
/// runs first; in a control run the driver's side runs the guard's path again.
pub(crate) async fn compare<P: Pair>(
    pair: &P,
    settings: &Settings,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Measured>> {
    let mut all = Vec::new();
    for &workers in &settings.workers {
        let mut measured = Measured {
            name: pair.name(),
            workers,
            guard: Vec::new(),
            driver: Vec::new(),
        };
        for repeat in 0..settings.repeats {
            let guard_first = repeat % 2 == 0;
            for guard in [guard_first, !guard_first] {
                let side = if guard || settings.control {
                    Side::Guard
                } else {
                    Side::Driver
                };
                let run = pair.run(side, workers, settings.timing).await?;
                if guard {
                    measured.guard.push(run);
                } else {
                    measured.driver.push(run);
                }
            }
            let name = pair.name();
            log(&format!(
                "paths: {} on {}, {workers} workers, repeat {} of {}: {:.0} against {:.0} {}s/s",
                name.path,
                name.database,
                repeat + 1,
                settings.repeats,
                measured
                    .guard
                    .last()
                    .map_or(f64::NAN, |r| r.summary.cycles_per_sec),
                measured
                    .driver
                    .last()
                    .map_or(f64::NAN, |r| r.summary.cycles_per_sec),
                name.unit,
            ));
        }
        all.push(measured);
    }
    Ok(all)
}

/// The run's results.
#[derive(Debug, Default)]
pub(crate) struct Results {
    /// The servers measured, each named once however many parts ran on it.
    versions: Vec<String>,
    pub(crate) measured: Vec<Measured>,
}

impl Results {
    /// Names a server a part ran on, unless an earlier part named it already.
    pub(crate) fn ran_on(&mut self, version: String) {
        if !self.versions.contains(&version) {
            self.versions.push(version);
        }
    }
}

/// Runs every part asked for.
pub(crate) async fn run(settings: &Settings, log: &mut dyn FnMut(&str)) -> Result<Results> {
    let mut results = Results::default();
    let wants = |part| settings.parts.contains(&part);
    if wants(Part::Client) {
        client::run(settings, &mut results, log).await?;
    }
    if wants(Part::Transaction) {
        transaction::run(settings, &mut results, log).await?;
    }
    if wants(Part::Sqlx) {
        sqlx::run(settings, &mut results, log).await?;
    }
    if wants(Part::Claim) {
        claim::run(settings, &mut results, log).await?;
    }
    Ok(results)
}

/// The database server's CPU time over a measured window, of the backends serving the
/// connections named `application_name` (PostgreSQL on this machine); nothing where
/// there is no monitor.
pub(crate) struct ServerClock<'a> {
    monitor: Option<&'a tokio_postgres::Client>,
    application_name: &'a str,
    started: std::sync::Mutex<Option<(ServerCpu, u64)>>,
}

impl<'a> ServerClock<'a> {
    pub(crate) fn of(monitor: &'a tokio_postgres::Client, application_name: &'a str) -> Self {
        ServerClock {
            monitor: Some(monitor),
            application_name,
            started: std::sync::Mutex::new(None),
        }
    }

    /// A clock that measures nothing: a server whose processes this machine cannot see.
    pub(crate) fn none() -> ServerClock<'static> {
        ServerClock {
            monitor: None,
            application_name: "",
            started: std::sync::Mutex::new(None),
        }
    }

    /// At the window's start: finds the backends, reads their CPU time.
    pub(crate) async fn start(&self) {
        let Some(monitor) = self.monitor else {
            return;
        };
        let Ok(cpu) = ServerCpu::of(monitor, self.application_name).await else {
            return;
        };
        if let Some(now) = cpu.now() {
            *self.lock() = Some((cpu, now));
        }
    }

    /// At the window's end: nanoseconds since [`start`](ServerClock::start).
    pub(crate) fn stop(&self) -> Option<u64> {
        let (cpu, at) = self.lock().take()?;
        cpu.now().map(|now| now.saturating_sub(at))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(ServerCpu, u64)>> {
        self.started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The results as Markdown.
pub(crate) fn markdown(settings: &Settings, results: &Results) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}; each figure the median of {} runs of {:.1} s per side after {:.1} s of warm-up, \
         sides alternated{}. *ratio*: the path's operations per second over those of what it \
         is set against; *pairs*: the lowest and highest ratio of one repeat's two runs; \
         *target*: the pairs reaching it, and the sign test's p. CPU: this process's, and \
         the database server's backends' (PostgreSQL), per operation.\n",
        results.versions.join("; "),
        settings.repeats,
        settings.timing.measured.as_secs_f64(),
        settings.timing.warmup.as_secs_f64(),
        if settings.control {
            "; **control run**: both sides ran the guard's path"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "| path (per) | against | database | workers | path /s | against /s | ratio | pairs | target | path CPU µs | against CPU µs | path server µs | against server µs | path p50 ms | against p50 ms |"
    );
    let _ = writeln!(
        out,
        "|---|---|---|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|"
    );
    for m in &results.measured {
        let (g, g_server) = Measured::median(&m.guard);
        let (d, d_server) = Measured::median(&m.driver);
        let pairs = m.pair_ratios();
        let range = pairs
            .iter()
            .fold(None, |range: Option<(f64, f64)>, &r| match range {
                None => Some((r, r)),
                Some((low, high)) => Some((low.min(r), high.max(r))),
            })
            .map_or("–".to_owned(), |(low, high)| {
                format!("{low:.2}–{high:.2}")
            });
        let target = match m.name.target {
            Some(target) if !pairs.is_empty() => {
                let reaching = pairs.iter().filter(|&&r| r >= target).count();
                format!(
                    "≥ {target} {}, in {reaching} of {} pairs (p {:.2})",
                    if m.ratio() >= target { "met" } else { "missed" },
                    pairs.len(),
                    sign_test(reaching, pairs.len())
                )
            }
            _ => "–".to_owned(),
        };
        let against = if settings.control {
            "the same path again"
        } else {
            m.name.against
        };
        let _ = writeln!(
            out,
            "| {} ({}) | {against} | {} | {} | {:.0} | {:.0} | {} | {range} | {target} | {} | {} | {} | {} | {} | {} |",
            m.name.path,
            m.name.unit,
            m.name.database,
            m.workers,
            g.cycles_per_sec,
            d.cycles_per_sec,
            figure(m.ratio(), 3),
            figure(g.cpu_us_per_cycle, 1),
            figure(d.cpu_us_per_cycle, 1),
            figure(g_server, 1),
            figure(d_server, 1),
            figure(g.p50_ms, 3),
            figure(d.p50_ms, 3),
        );
    }
    out
}

/// Runs `attempt` `count` times one after another, as a counted process does; each
/// must take its lease, else the error says `what` found none.
pub(crate) async fn each_taken(
    count: u64,
    what: &str,
    mut attempt: impl AsyncFnMut() -> Result<bool>,
) -> Result<()> {
    for _ in 0..count {
        if !attempt().await? {
            return Err(protocol(format!("{what} took no lease")));
        }
    }
    Ok(())
}

/// A benchmark error for an operation the driver's side refused or miscounted.
pub(crate) fn protocol(what: impl Into<String>) -> Error {
    Error::Protocol(what.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parts that ran on the same server name it once; other servers keep their place.
    #[test]
    fn a_server_is_named_once_however_many_parts_ran_on_it() {
        let mut results = Results::default();
        for version in ["PostgreSQL 15", "SQLite 3", "PostgreSQL 15", "TDS"] {
            results.ran_on(version.to_owned());
        }
        assert_eq!(results.versions, ["PostgreSQL 15", "SQLite 3", "TDS"]);
    }
}
