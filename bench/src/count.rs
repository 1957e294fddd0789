//! `fenced-bench count`: the client's instructions per transaction, counted by
//! valgrind's callgrind, for the plain transaction, the plain transaction with the
//! guard's check-and-lock (*checked*) and the guard's fenced transaction, on SQLite and
//! PostgreSQL.
//!
//! A count is the same for the same binary and inputs whatever else the machine does,
//! so it tells apart what a timed ratio's noise hides: the guard's own work against
//! *checked*, its bound. Each kind runs in a process of its own under callgrind, twice:
//! with the warm-up transactions alone and with the counted ones added, so that
//! starting, connecting, preparing and the first transaction's work cancel out. On
//! SQLite that is all the work (the database runs in the process); on PostgreSQL it is
//! the client's share, and the server's is counted apart: the same runs, the client
//! natively, against a cluster of the benchmark's own whose backends run under
//! callgrind ([`server`]).
//!
//! Each process runs on a current-thread runtime, so that no idle worker thread adds
//! instructions of its own.
//!
//! Two more pairs are counted the same way, the client's and the server's: claims of
//! one row against `try_acquire`s of a random key, on a table of [`CLAIM_ROWS`] rows;
//! and the lease cycle (acquire, publish, release) through a store kept on the caller's
//! own client against the same statements prepared once on the driver.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::paths::Kind;

mod server;

/// What to count.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// Transactions counted, after the warm-up.
    pub(crate) transactions: u64,
    /// Transactions run before the counted ones, in both runs.
    pub(crate) warmup: u64,
    /// The PostgreSQL server, unless skipped.
    pub(crate) postgres: Option<String>,
    /// Whether to count the PostgreSQL server's instructions too, on a cluster of its
    /// own.
    pub(crate) server: bool,
    /// Where the SQLite files go.
    pub(crate) sqlite_dir: PathBuf,
}

/// A database the transactions run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Database {
    Sqlite,
    Postgres,
}

/// Whose instructions a count is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Counter {
    /// SQLite's process: the whole transaction.
    Sqlite,
    /// The PostgreSQL client's process.
    PostgresClient,
    /// The PostgreSQL server's backends.
    PostgresServer,
}

impl Counter {
    fn label(self) -> &'static str {
        match self {
            Counter::Sqlite => "SQLite",
            Counter::PostgresClient => "PostgreSQL, client",
            Counter::PostgresServer => "PostgreSQL, server",
        }
    }
}

impl From<Database> for Counter {
    fn from(database: Database) -> Counter {
        match database {
            Database::Sqlite => Counter::Sqlite,
            Database::Postgres => Counter::PostgresClient,
        }
    }
}

/// The rows of the table the leases' counts claim from.
const CLAIM_ROWS: i64 = 100_000;

/// Two ways of doing the same work with a lease, counted against each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Comparison {
    /// A claim of one row against a `try_acquire` of a random free key.
    Leases,
    /// The lease cycle on the caller's client against the raw driver.
    Cycles,
}

impl Comparison {
    /// The labels of the way measured and of the way it is set against.
    fn labels(self) -> [&'static str; 2] {
        match self {
            Comparison::Leases => ["claim of one row", "try_acquire of a random key"],
            Comparison::Cycles => [
                "lease cycle on the caller's client",
                "lease cycle on the raw driver, prepared once",
            ],
        }
    }
}

/// Instructions per lease each way of a comparison, the client's or the server's.
#[derive(Clone, Copy, Debug)]
struct Compared {
    counter: Counter,
    comparison: Comparison,
    /// The way measured: a claim, or the cycle on the caller's client.
    this: f64,
    /// The way it is set against: `try_acquire`, or the raw driver.
    against: f64,
}

/// How a counted process takes its leases (`count-one --leases`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Taken {
    /// Claims of one row.
    Claim,
    /// `try_acquire` of a random key.
    TryAcquire,
}

impl Taken {
    const ALL: [Taken; 2] = [Taken::Claim, Taken::TryAcquire];
}

/// Where a counted process runs its lease cycles (`count-one --cycles`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Cycled {
    /// Through a store kept on the process's own client.
    OnClient,
    /// The same statements prepared once on tokio-postgres.
    Raw,
}

impl Cycled {
    const ALL: [Cycled; 2] = [Cycled::OnClient, Cycled::Raw];
}

/// One kind's count: instructions per transaction.
#[derive(Clone, Copy, Debug)]
struct Counted {
    counter: Counter,
    kind: Kind,
    per_transaction: f64,
}

/// Counts every kind on every database asked for and returns the table, in Markdown.
pub(crate) async fn run(settings: &Settings, log: &mut dyn FnMut(&str)) -> Result<String> {
    let exe = std::env::current_exe().map_err(|source| Error::Io {
        path: "the benchmark's own executable".into(),
        source,
    })?;
    let out = tempfile::tempdir().map_err(|source| Error::Io {
        path: std::env::temp_dir().display().to_string(),
        source,
    })?;
    let mut databases = vec![Database::Sqlite];
    if settings.postgres.is_some() {
        databases.push(Database::Postgres);
    }
    let mut counted = Vec::new();
    let mut compared = Vec::new();
    for database in databases {
        for kind in Kind::ALL {
            log(&format!(
                "count: {} transactions, {}",
                kind.label(),
                Counter::from(database).label()
            ));
            let run_of = |transactions: u64| {
                let mut args = one_args(database, transactions);
                args.push(format!("--kind={}", arg_name(kind)));
                args.extend([
                    "--sqlite-dir".into(),
                    settings.sqlite_dir.display().to_string(),
                ]);
                let name = format!("{database:?}-{}-{transactions}", kind.label());
                instructions(&exe, out.path(), &name, &args, settings.postgres.as_deref())
            };
            let warm = run_of(settings.warmup)?;
            let all = run_of(settings.warmup + settings.transactions)?;
            counted.push(Counted {
                counter: database.into(),
                kind,
                per_transaction: per_transaction(warm, all, settings.transactions)?,
            });
        }
    }
    if let Some(postgres) = &settings.postgres {
        log(&format!(
            "count: claims of one row and try_acquire, lease cycles on the caller's \
             client and on the raw driver, {}",
            Counter::PostgresClient.label()
        ));
        compared.extend(count_client_leases(&exe, out.path(), settings, postgres).await?);
        if settings.server {
            let (server, leases) = count_server(settings, log).await?;
            counted.extend(server);
            compared.extend(leases);
        }
    }
    Ok(markdown(settings, &counted, &compared))
}

/// The client's instructions per lease: taken, on a table of [`CLAIM_ROWS`] rows of the
/// benchmark's own on `postgres`, and cycled, on a table of one row; each way in
/// processes of its own, as the transactions' counts run.
async fn count_client_leases(
    exe: &Path,
    out: &Path,
    settings: &Settings,
    postgres: &str,
) -> Result<[Compared; 2]> {
    let place = crate::paths::place::PgPlace::setup(postgres, false).await?;
    let measured = async {
        let queue = place.table("Queue", CLAIM_ROWS).await?;
        let leases = per_lease(settings, Taken::ALL, async |taken, leases| {
            let mut args = one_args(Database::Postgres, leases);
            args.push(format!("--leases={}", arg_name(taken)));
            args.push(format!("--table={}", queue.name()));
            args.push(format!("--rows={CLAIM_ROWS}"));
            let name = format!("leases-{}-{leases}", arg_name(taken));
            instructions(exe, out, &name, &args, Some(&place.config))
        })
        .await?;
        let lease = place.table("CycleLease", 1).await?;
        let cycles = per_lease(settings, Cycled::ALL, async |cycled, cycles| {
            let mut args = one_args(Database::Postgres, cycles);
            args.push(format!("--cycles={}", arg_name(cycled)));
            args.push(format!("--table={}", lease.name()));
            let name = format!("cycles-{}-{cycles}", arg_name(cycled));
            instructions(exe, out, &name, &args, Some(&place.config))
        })
        .await?;
        Ok::<_, Error>([
            Compared::of(Counter::PostgresClient, Comparison::Leases, leases),
            Compared::of(Counter::PostgresClient, Comparison::Cycles, cycles),
        ])
    }
    .await;
    place.teardown().await?;
    measured
}

impl Compared {
    fn of(counter: Counter, comparison: Comparison, [this, against]: [f64; 2]) -> Compared {
        Compared {
            counter,
            comparison,
            this,
            against,
        }
    }
}

/// Instructions per lease each of two `ways`, `run_of(way, leases)` counting a run of
/// `leases`: the warm-up's alone, then with the counted leases added.
async fn per_lease<W: Copy>(
    settings: &Settings,
    ways: [W; 2],
    mut run_of: impl AsyncFnMut(W, u64) -> Result<u64>,
) -> Result<[f64; 2]> {
    let mut per_lease = [0.0; 2];
    for (way, per) in ways.into_iter().zip(&mut per_lease) {
        let warm = run_of(way, settings.warmup).await?;
        let all = run_of(way, settings.warmup + settings.transactions).await?;
        *per = per_transaction(warm, all, settings.transactions)?;
    }
    Ok(per_lease)
}

/// The arguments every counted process takes.
fn one_args(database: Database, transactions: u64) -> Vec<String> {
    vec![
        "count-one".into(),
        format!("--database={}", arg_name(database)),
        format!("--transactions={transactions}"),
    ]
}

/// The PostgreSQL server's instructions per transaction of each kind, on a cluster of
/// the benchmark's own: each kind's runs (with the warm-up alone, then with the
/// counted transactions added) in connections of their own, as the client's count
/// runs them. Then as many leases taken by claims of one row and by `try_acquire`
/// (leases of 1 ms, from [`CLAIM_ROWS`] rows), and as many lease cycles on the caller's
/// client and on the raw driver, as `fenced-bench paths` sets them.
async fn count_server(
    settings: &Settings,
    log: &mut dyn FnMut(&str),
) -> Result<(Vec<Counted>, [Compared; 2])> {
    log("count: starting a PostgreSQL cluster of its own under callgrind");
    let server = server::CountedServer::start().await?;
    let config = server.config();
    let mut counted = Vec::new();
    for kind in Kind::ALL {
        log(&format!(
            "count: {} transactions, {}",
            kind.label(),
            Counter::PostgresServer.label()
        ));
        let run_of = |transactions: u64| {
            server.instructions(crate::paths::postgres_transactions(
                &config,
                kind,
                transactions,
            ))
        };
        let warm = run_of(settings.warmup).await?;
        let all = run_of(settings.warmup + settings.transactions).await?;
        counted.push(Counted {
            counter: Counter::PostgresServer,
            kind,
            per_transaction: per_transaction(warm, all, settings.transactions)?,
        });
    }
    log(&format!(
        "count: claims of one row and try_acquire, lease cycles on the caller's client \
         and on the raw driver, {}",
        Counter::PostgresServer.label()
    ));
    let place = crate::paths::place::PgPlace::setup(&config, false).await?;
    let measured = async {
        let queue = place.table("Queue", CLAIM_ROWS).await?;
        let leases = per_lease(settings, Taken::ALL, async |taken, leases| {
            server
                .instructions(crate::paths::acquisitions(
                    &place.config,
                    &queue,
                    CLAIM_ROWS,
                    taken == Taken::Claim,
                    leases,
                ))
                .await
        })
        .await?;
        let lease = place.table("CycleLease", 1).await?;
        let cycles = per_lease(settings, Cycled::ALL, async |cycled, cycles| {
            server
                .instructions(crate::paths::cycles(
                    &place.config,
                    &lease,
                    cycled == Cycled::OnClient,
                    cycles,
                ))
                .await
        })
        .await?;
        Ok::<_, Error>([
            Compared::of(Counter::PostgresServer, Comparison::Leases, leases),
            Compared::of(Counter::PostgresServer, Comparison::Cycles, cycles),
        ])
    }
    .await;
    place.teardown().await?;
    Ok((counted, measured?))
}

/// The instructions of one counted process (`count-one` with `args`) under callgrind,
/// its output named after `name`; `postgres` is the server it connects to.
fn instructions(
    exe: &Path,
    out: &Path,
    name: &str,
    args: &[String],
    postgres: Option<&str>,
) -> Result<u64> {
    let file = out.join(format!("{name}.out"));
    let mut command = Command::new("valgrind");
    command
        .arg("--tool=callgrind")
        // Only the counted process's own messages on its standard error.
        .arg("--quiet")
        .arg(format!("--callgrind-out-file={}", file.display()))
        .arg(exe)
        .args(args);
    if let Some(postgres) = postgres {
        command.env("FENCED_PG_URL", postgres);
    }
    let output = command.output().map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            Error::Usage(
                "`fenced-bench count` runs each kind under valgrind's callgrind, and \
                 `valgrind` was not found: install valgrind"
                    .into(),
            )
        } else {
            Error::Spawn(source)
        }
    })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
        return Err(Error::Protocol(format!(
            "the counted run {name} failed ({}): {}",
            output.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        )));
    }
    let text = std::fs::read_to_string(&file).map_err(|source| Error::Io {
        path: file.display().to_string(),
        source,
    })?;
    totals(&text).ok_or_else(|| {
        Error::Protocol(format!(
            "no instruction total in callgrind's output {}",
            file.display()
        ))
    })
}

/// `value`'s name on the command line, as clap parses it back in `count-one`.
fn arg_name(value: impl clap::ValueEnum) -> String {
    value
        .to_possible_value()
        .map(|name| name.get_name().to_owned())
        .unwrap_or_default()
}

/// The total of instructions in callgrind's output: its `totals:` line, or the
/// `summary:` line older versions write.
fn totals(text: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line
            .strip_prefix("totals:")
            .or_else(|| line.strip_prefix("summary:"))?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Instructions per counted transaction: the run with them less the warm-up's alone.
fn per_transaction(warm: u64, all: u64, transactions: u64) -> Result<f64> {
    if transactions == 0 || all <= warm {
        return Err(Error::Protocol(format!(
            "{transactions} counted transactions took no instructions ({warm} warm, \
             {all} in all)"
        )));
    }
    #[allow(clippy::cast_precision_loss)]
    Ok((all - warm) as f64 / transactions as f64)
}

/// The counts as a table, each kind also against the plain and the *checked*
/// transaction of its database as a ratio of instructions (theirs over its: below 1
/// costs more, as a throughput ratio reads).
fn markdown(settings: &Settings, counted: &[Counted], compared: &[Compared]) -> String {
    let of = |counter: Counter, kind: Kind| {
        counted
            .iter()
            .find(|c| c.counter == counter && c.kind == kind)
            .map(|c| c.per_transaction)
    };
    let mut table = format!(
        "Instructions per transaction, counted by callgrind: {} transactions after {} of \
         warm-up, each kind in a process of its own. *plain / this*, *checked / this*: \
         the other's instructions over this one's.\n\n\
         | database | transaction | instructions | plain / this | checked / this |\n\
         |---|---|--:|--:|--:|\n",
        settings.transactions, settings.warmup
    );
    for c in counted {
        let ratio = |other: Option<f64>| match other {
            Some(other) => format!("{:.3}", other / c.per_transaction),
            None => "–".into(),
        };
        let _ = writeln!(
            table,
            "| {} | {} | {:.0} | {} | {} |",
            c.counter.label(),
            c.kind.label(),
            c.per_transaction,
            ratio(of(c.counter, Kind::Plain)),
            ratio(of(c.counter, Kind::Checked)),
        );
    }
    if !compared.is_empty() {
        let _ = write!(
            table,
            "\nInstructions per lease, {} after {} of warm-up: taken by a claim of one row \
             or a `try_acquire` of a random key (leases of 1 ms from {CLAIM_ROWS} rows); \
             and cycled (acquire, publish, release) through a store on the caller's own \
             client or on the raw driver, statements prepared once. *against / this*: the \
             second way's instructions over the first's.\n\n\
             | database | lease | instructions | against / this |\n\
             |---|---|--:|--:|\n",
            settings.transactions, settings.warmup,
        );
        for c in compared {
            let [this, against] = c.comparison.labels();
            let _ = write!(
                table,
                "| {counter} | {this} | {:.0} | {:.3} |\n\
                 | {counter} | {against} | {:.0} | 1.000 |\n",
                c.this,
                c.against / c.this,
                c.against,
                counter = c.counter.label(),
            );
        }
    }
    table
}

/// The process `run` counts: `transactions` of `kind` on `database`, then nothing else.
pub(crate) async fn run_one(
    database: Database,
    kind: Kind,
    transactions: u64,
    postgres: &str,
    sqlite_dir: &Path,
) -> Result<()> {
    match database {
        Database::Sqlite => crate::paths::sqlite_transactions(sqlite_dir, kind, transactions).await,
        Database::Postgres => {
            crate::paths::postgres_transactions(postgres, kind, transactions).await
        }
    }
}

/// The process `run` counts for leases taken: `leases` taken as `taken` on the
/// benchmark's table `table` of `rows` rows on `postgres`, then nothing else.
pub(crate) async fn run_one_leases(
    taken: Taken,
    table: &str,
    rows: i64,
    leases: u64,
    postgres: &str,
) -> Result<()> {
    let table = crate::workload::table(table)?;
    crate::paths::acquisitions(postgres, &table, rows, taken == Taken::Claim, leases).await
}

/// The process `run` counts for lease cycles: `cycles` on the first row of the
/// benchmark's table `table` on `postgres`, where `cycled` says, then nothing else.
pub(crate) async fn run_one_cycles(
    cycled: Cycled,
    table: &str,
    cycles: u64,
    postgres: &str,
) -> Result<()> {
    let table = crate::workload::table(table)?;
    crate::paths::cycles(postgres, &table, cycled == Cycled::OnClient, cycles).await
}

#[cfg(test)]
mod tests {
    use clap::ValueEnum as _;

    use super::*;

    #[test]
    fn the_total_is_read_from_either_line_and_nothing_else() {
        let current = "version: 1\ncmd: x\nevents: Ir\nfl=(1) a\n0 5\ntotals: 811602445\n";
        assert_eq!(totals(current), Some(811_602_445));
        assert_eq!(totals("events: Ir\nsummary: 42 7\n"), Some(42));
        // Negative controls: no total line, or one that is not a number.
        assert_eq!(totals("events: Ir\nfl=(1) totals.rs\n0 5\n"), None);
        assert_eq!(totals("totals: many\n"), None);
    }

    #[test]
    fn each_kind_and_database_is_passed_by_the_name_clap_reads() {
        for kind in Kind::ALL {
            assert_eq!(Kind::from_str(&arg_name(kind), false), Ok(kind));
        }
        for database in [Database::Sqlite, Database::Postgres] {
            assert_eq!(Database::from_str(&arg_name(database), false), Ok(database));
        }
        // Negative control: a table label is not a name clap reads.
        assert!(Database::from_str(Counter::PostgresClient.label(), false).is_err());
    }

    #[test]
    fn a_count_is_the_counted_runs_difference_per_transaction() {
        assert_eq!(per_transaction(1_000, 41_000, 100).unwrap(), 400.0);
        assert!(per_transaction(1_000, 1_000, 100).is_err());
        assert!(per_transaction(1_000, 900, 100).is_err());
        assert!(per_transaction(1_000, 2_000, 0).is_err());
    }

    /// Ten counted after one of warm-up, on no database.
    fn settings() -> Settings {
        Settings {
            transactions: 10,
            warmup: 1,
            postgres: None,
            server: false,
            sqlite_dir: PathBuf::from("/tmp"),
        }
    }

    #[test]
    fn the_table_sets_each_kind_against_plain_and_checked() {
        let settings = settings();
        let counted = [
            (Kind::Plain, 30_000.0),
            (Kind::Checked, 36_000.0),
            (Kind::Fenced, 40_000.0),
        ]
        .map(|(kind, per_transaction)| Counted {
            counter: Counter::Sqlite,
            kind,
            per_transaction,
        });
        let table = markdown(&settings, &counted, &[]);
        assert!(
            table.contains("| SQLite | plain | 30000 | 1.000 | 1.200 |"),
            "{table}"
        );
        assert!(
            table.contains("| SQLite | fenced | 40000 | 0.750 | 0.900 |"),
            "{table}"
        );
        // Negative control: a database with no plain count has no ratio to it.
        let alone = markdown(&settings, &counted[2..], &[]);
        assert!(
            alone.contains("| SQLite | fenced | 40000 | – | – |"),
            "{alone}"
        );
        assert!(!alone.contains("per lease"), "{alone}");
    }

    #[test]
    fn the_leases_table_sets_each_way_against_the_other() {
        let settings = settings();
        let compared = [
            Compared::of(
                Counter::PostgresClient,
                Comparison::Leases,
                [20_000.0, 16_000.0],
            ),
            Compared::of(
                Counter::PostgresServer,
                Comparison::Leases,
                [200_000.0, 170_000.0],
            ),
            Compared::of(
                Counter::PostgresServer,
                Comparison::Cycles,
                [400_000.0, 360_000.0],
            ),
        ];
        let table = markdown(&settings, &[], &compared);
        for row in [
            "| PostgreSQL, client | claim of one row | 20000 | 0.800 |",
            "| PostgreSQL, client | try_acquire of a random key | 16000 | 1.000 |",
            "| PostgreSQL, server | claim of one row | 200000 | 0.850 |",
            "| PostgreSQL, server | lease cycle on the caller's client | 400000 | 0.900 |",
            "| PostgreSQL, server | lease cycle on the raw driver, prepared once | 360000 | 1.000 |",
        ] {
            assert!(table.contains(row), "{row} is not in\n{table}");
        }
        // Negative control: the client counted no cycles.
        assert!(
            !table.contains("| PostgreSQL, client | lease cycle"),
            "{table}"
        );
    }

    #[test]
    fn a_counted_process_of_leases_reads_back_its_arguments() {
        for taken in Taken::ALL {
            assert_eq!(Taken::from_str(&arg_name(taken), false), Ok(taken));
        }
        for cycled in Cycled::ALL {
            assert_eq!(Cycled::from_str(&arg_name(cycled), false), Ok(cycled));
        }
        // Negative control: the method's own spelling is not a name clap reads.
        assert!(Taken::from_str("try_acquire", false).is_err());
    }
}
