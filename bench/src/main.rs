//! `fenced-bench`: the guard against the raw drivers, and the fused cycle against the
//! article's three statements, measured as ratios within one run.
//!
//! ```text
//! cargo run --release -p fenced-bench -- [--quick] [--seconds N] [--repeats N]
//!     [--workers 1,8,32] [--svg PATH] [--markdown PATH] [--no-postgres] [--no-sqlite]
//!     [--durable] [--sqlite-dir DIR] [--sqlite-execution in-place,hand-off] [--control]
//! ```
//!
//! PostgreSQL is found through `FENCED_PG_URL` (default
//! `host=127.0.0.1 port=5432 user=postgres dbname=test`); the benchmark makes its own
//! schema and drops it. SQLite runs on a file in a temporary directory, once per guard
//! execution mode listed by `--sqlite-execution` (default both, `in-place` first):
//! `in-place` runs each statement on the runtime thread that awaits it, `hand-off` inside
//! `tokio::task::block_in_place` (the guard's default); each mode's plan has its own raw
//! runs. `--control` runs each comparison's first side against itself, to show the
//! machine's noise. Figures are printed, never asserted. See `BENCHMARKS.md`.
//!
//! `fenced-bench scale` measures leases at scale on PostgreSQL instead: batched renewal
//! against a statement per lease, the batch keeper under stolen leases, a 1,000,000-row
//! table against a small one, and claiming against a loop of `try_acquire` (see
//! `scale.rs` and `fenced-bench scale --help`). `fenced-bench stamp` measures the
//! fenced write on PostgreSQL with the server's timeline in its fence and without
//! (`stamp.rs`, `fenced-bench stamp --help`). `fenced-bench paths` sets the paths an
//! existing service takes (its own clients and transactions, the guard's fenced
//! transactions, claiming) against the same work on the driver alone (`paths/`,
//! `fenced-bench paths --help`). `fenced-bench count` counts instructions per
//! transaction with valgrind's callgrind, the client's and the PostgreSQL server's:
//! plain, with the guard's check, and fenced; and both per lease claimed or acquired
//! (`count.rs`, `fenced-bench count --help`).

mod chart;
mod check;
mod count;
mod error;
mod measure;
mod paths;
mod postgres;
mod report;
mod scale;
mod sqlite;
mod stamp;
mod suite;
mod workload;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::error::Error;
use crate::sqlite::Execution;
use crate::suite::Settings;

/// The default PostgreSQL connection string.
const DEFAULT_PG: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

/// Measures the lease cycle through the guard and through the raw drivers, on
/// PostgreSQL and SQLite, and prints throughput, latency and their ratios.
#[derive(Debug, Parser)]
#[command(name = "fenced-bench", version)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Short runs (0.3 s, 0.2 s of warm-up, one repeat) to try the harness.
    #[arg(long)]
    quick: bool,
    /// Length of each measured window, in seconds (default 2; 0.3 with --quick).
    #[arg(long)]
    seconds: Option<f64>,
    /// Warm-up before each window, in seconds (default 0.5; 0.2 with --quick).
    #[arg(long)]
    warmup: Option<f64>,
    /// Runs of each side of each comparison; the median is reported (default 3; 1
    /// with --quick).
    #[arg(long)]
    repeats: Option<usize>,
    /// Worker counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
    workers: Vec<usize>,
    /// Where to write the throughput chart (SVG).
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Where to write the tables (Markdown), besides standard output.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Skip PostgreSQL.
    #[arg(long)]
    no_postgres: bool,
    /// Skip SQLite.
    #[arg(long)]
    no_sqlite: bool,
    /// Let every commit wait for the disk: PostgreSQL's `synchronous_commit` stays on
    /// and the SQLite file goes to the system's temporary directory. By default the
    /// benchmark's PostgreSQL sessions turn `synchronous_commit` off and the SQLite file
    /// lives on `/dev/shm` (memory), so that the figures measure the code and not the
    /// disk's flush, which is the same for both sides.
    #[arg(long)]
    durable: bool,
    /// Directory of the SQLite file (default: `/dev/shm`, or the temporary directory
    /// with `--durable` or where `/dev/shm` does not exist).
    #[arg(long)]
    sqlite_dir: Option<PathBuf>,
    /// The guard's SQLite execution modes to measure, comma-separated, run in the order
    /// given: `in-place` (each statement runs on the runtime thread that awaits it) and
    /// `hand-off` (inside `tokio::task::block_in_place`, the guard's default). Each mode
    /// runs the whole SQLite plan, with its own raw runs, on the same file.
    #[arg(
        long,
        value_enum,
        value_name = "MODES",
        value_delimiter = ',',
        default_value = "in-place,hand-off",
        hide_possible_values = true
    )]
    sqlite_execution: Vec<Execution>,
    /// A control run: the second side of every comparison runs the first side's code
    /// again (the guard against the guard, the fused cycle against the fused cycle),
    /// alternated and summarised as in a real run. Every true ratio is then 1: how far
    /// the printed ratios stray from 1 is how far this machine's noise alone moves a
    /// ratio of this many repeats.
    #[arg(long)]
    control: bool,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Leases at scale on PostgreSQL: batched renewal against a statement per lease,
    /// the batch keeper under stolen leases, a 1,000,000-row table against a small one,
    /// and claiming against a loop of `try_acquire`. Prints ratios.
    Scale(ScaleArgs),
    /// The fenced write on PostgreSQL with the server's timeline stamped in its fence
    /// against the same write without it, alternated. Prints the ratio.
    Stamp(StampArgs),
    /// The paths a service takes (its own clients, the guard's fenced transactions, a
    /// fence in its sqlx transaction, claiming) against the same work on the driver
    /// alone, alternated. Prints ratios. SQL Server too when `FENCED_MSSQL_URL` is set.
    Paths(PathsArgs),
    /// Instructions per transaction, counted by valgrind's callgrind: the plain
    /// transaction, the plain one with the guard's check-and-lock, and the guard's
    /// fenced transaction, on SQLite and PostgreSQL (the client, and the server on a
    /// cluster of its own); and the client's and the server's per lease: claimed or
    /// acquired, and cycled on the caller's client or on the raw driver. Needs
    /// `valgrind`.
    Count(CountArgs),
    /// One counted process of `count`, run under callgrind.
    #[command(hide = true)]
    CountOne(CountOneArgs),
}

/// The count's options.
#[derive(Debug, clap::Args)]
struct CountArgs {
    /// Transactions counted in each kind's run, after the warm-up.
    #[arg(long, default_value_t = 5_000)]
    transactions: u64,
    /// Transactions before the counted ones, in both of a kind's runs.
    #[arg(long, default_value_t = 20)]
    warmup: u64,
    /// Skip PostgreSQL.
    #[arg(long)]
    no_postgres: bool,
    /// Skip the PostgreSQL server's count, which starts a cluster of its own (needs the
    /// server's binaries: `FENCED_PG_BIN`, or the newest `/usr/lib/postgresql/*/bin`).
    #[arg(long)]
    no_server: bool,
    /// Where to write the table (Markdown), besides standard output.
    #[arg(long)]
    markdown: Option<PathBuf>,
}

impl CountArgs {
    fn settings(&self) -> Result<count::Settings, Error> {
        if self.transactions == 0 {
            return Err(Error::Usage("--transactions must be at least 1".into()));
        }
        Ok(count::Settings {
            transactions: self.transactions,
            warmup: self.warmup,
            postgres: (!self.no_postgres).then(postgres_url),
            server: !self.no_server,
            sqlite_dir: sqlite_dir(false),
        })
    }
}

/// The options of one counted process: transactions of a kind, leases taken, or lease
/// cycles.
#[derive(Debug, clap::Args)]
struct CountOneArgs {
    #[arg(long, value_enum)]
    database: count::Database,
    #[arg(long, value_enum, required_unless_present_any = ["leases", "cycles"])]
    kind: Option<paths::Kind>,
    /// How the leases are taken, on `--table` of `--rows` rows (PostgreSQL).
    #[arg(long, value_enum, requires_all = ["table", "rows"], conflicts_with = "kind")]
    leases: Option<count::Taken>,
    /// Where the lease cycles run, on `--table`'s first row (PostgreSQL).
    #[arg(
        long,
        value_enum,
        requires = "table",
        conflicts_with_all = ["kind", "leases"]
    )]
    cycles: Option<count::Cycled>,
    #[arg(long)]
    table: Option<String>,
    #[arg(long)]
    rows: Option<i64>,
    /// Transactions, leases, or cycles.
    #[arg(long)]
    transactions: u64,
    #[arg(long, required_unless_present_any = ["leases", "cycles"])]
    sqlite_dir: Option<PathBuf>,
}

/// What `count-one` takes, should clap have let through a mix it cannot run.
fn count_one_usage() -> anyhow::Error {
    anyhow::Error::from(Error::Usage(
        "count-one takes --kind and --sqlite-dir, --leases with --table and --rows, or \
         --cycles with --table"
            .into(),
    ))
}

/// The PostgreSQL server: `FENCED_PG_URL`, or the default.
fn postgres_url() -> String {
    std::env::var("FENCED_PG_URL").unwrap_or_else(|_| DEFAULT_PG.to_owned())
}

/// Where a SQLite file goes: `/dev/shm` (memory) unless `durable` or missing, else the
/// system's temporary directory.
fn sqlite_dir(durable: bool) -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    if !durable && shm.is_dir() {
        shm
    } else {
        std::env::temp_dir()
    }
}

/// The paths benchmark's options.
#[derive(Debug, clap::Args)]
struct PathsArgs {
    /// Short windows (0.3 s, 0.2 s of warm-up, one repeat) and a small claiming table,
    /// to try the harness (as CI does).
    #[arg(long)]
    quick: bool,
    /// Which parts to run, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "client,transaction,sqlx,claim"
    )]
    parts: Vec<paths::Part>,
    /// Length of each measured window, in seconds.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Warm-up before each window, in seconds.
    #[arg(long, default_value_t = 0.5)]
    warmup: f64,
    /// Runs of each side; medians are reported.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Worker counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,8")]
    workers: Vec<usize>,
    /// Rows of the claiming comparison's table.
    #[arg(long, default_value_t = 100_000)]
    claim_rows: i64,
    /// A control run: every comparison's first side against itself, to show the
    /// machine's noise.
    #[arg(long)]
    control: bool,
    /// Let every commit wait for the disk (`synchronous_commit` on; the SQLite file in
    /// the system's temporary directory rather than `/dev/shm`).
    #[arg(long)]
    durable: bool,
    /// Skip SQL Server even when `FENCED_MSSQL_URL` is set.
    #[arg(long)]
    no_mssql: bool,
    /// Where to write the table (Markdown), besides standard output.
    #[arg(long)]
    markdown: Option<PathBuf>,
}

impl PathsArgs {
    fn settings(&self) -> Result<paths::Settings, Error> {
        if self.claim_rows < 1 {
            return Err(Error::Usage("--claim-rows must be at least 1".into()));
        }
        let workers = worker_counts(self.repeats, &self.workers)?;
        let quick = self.quick;
        Ok(paths::Settings {
            postgres: postgres_url(),
            mssql: if self.no_mssql {
                None
            } else {
                std::env::var("FENCED_MSSQL_URL").ok()
            },
            sqlite_dir: sqlite_dir(self.durable),
            durable: self.durable,
            workers,
            timing: measure::Timing {
                warmup: window(if quick { 0.2 } else { self.warmup }, "warmup", true)?,
                measured: window(if quick { 0.3 } else { self.seconds }, "seconds", false)?,
            },
            repeats: if quick { 1 } else { self.repeats },
            control: self.control,
            parts: self.parts.clone(),
            claim_rows: if quick {
                self.claim_rows.min(10_000)
            } else {
                self.claim_rows
            },
        })
    }
}

/// The stamp benchmark's options.
#[derive(Debug, clap::Args)]
struct StampArgs {
    /// Short windows (0.3 s, 0.2 s of warm-up, one repeat), to try the harness.
    #[arg(long)]
    quick: bool,
    /// Length of each measured window, in seconds.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Warm-up before each window, in seconds.
    #[arg(long, default_value_t = 0.5)]
    warmup: f64,
    /// Runs of each side; medians are reported.
    #[arg(long, default_value_t = 9)]
    repeats: usize,
    /// Worker counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,8")]
    workers: Vec<usize>,
    /// A control run: both sides without the stamp, to show the machine's noise.
    #[arg(long)]
    control: bool,
    /// Let every commit wait for the disk (`synchronous_commit` on).
    #[arg(long)]
    durable: bool,
    /// Where to write the table (Markdown), besides standard output.
    #[arg(long)]
    markdown: Option<PathBuf>,
}

impl StampArgs {
    fn settings(&self) -> Result<stamp::Settings, Error> {
        let workers = worker_counts(self.repeats, &self.workers)?;
        let quick = self.quick;
        Ok(stamp::Settings {
            postgres: postgres_url(),
            durable: self.durable,
            workers,
            timing: measure::Timing {
                warmup: window(if quick { 0.2 } else { self.warmup }, "warmup", true)?,
                measured: window(if quick { 0.3 } else { self.seconds }, "seconds", false)?,
            },
            repeats: if quick { 1 } else { self.repeats },
            control: self.control,
        })
    }
}

/// The scale benchmark's options. The defaults fit a 2-core machine (about 4 minutes).
#[derive(Debug, clap::Args)]
struct ScaleArgs {
    /// Small sizes and short windows (about 30 s), to try the harness.
    #[arg(long)]
    quick: bool,
    /// Which parts to run, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "renewal,keeper,size,claim"
    )]
    parts: Vec<scale::Part>,
    /// Lease counts of the renewal comparison, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    leases: Vec<usize>,
    /// The ttl whose third is the keepers' cadence, in seconds, for statements per
    /// second (the comparison's own leases live long enough to outlive every round).
    #[arg(long, default_value_t = 30.0)]
    ttl: f64,
    /// Rounds of each side of the renewal comparison.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Tasks (and connections) renewing one lease per statement.
    #[arg(long, default_value_t = 32)]
    per_lease_tasks: usize,
    /// Statements (and connections) in flight for batched renewal and the keeper.
    #[arg(long, default_value_t = fenced_guard::renewal::DEFAULT_IN_FLIGHT)]
    in_flight: usize,
    /// Leases kept by the batch keeper (default: the largest of --leases).
    #[arg(long)]
    keeper_leases: Option<usize>,
    /// The batch keeper's leases' ttl, in seconds.
    #[arg(long, default_value_t = 9.0)]
    keeper_ttl: f64,
    /// Leases stolen from under the batch keeper (at most 1,000).
    #[arg(long, default_value_t = 100)]
    steal: usize,
    /// Rows of the large table.
    #[arg(long, default_value_t = 1_000_000)]
    big_rows: i64,
    /// The large table's fillfactor, 10 to 100 (default: PostgreSQL's, 100).
    #[arg(long, value_parser = clap::value_parser!(u8).range(10..=100))]
    fillfactor: Option<u8>,
    /// Tasks of the table-size comparison; the small table has one row per task.
    #[arg(long, default_value_t = 256)]
    tasks: usize,
    /// Connections of the table-size comparison.
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Measured window of the table-size and claiming runs, in seconds.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Warm-up before each window, in seconds.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Runs of each side of the table-size and claiming comparisons.
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Rows of the claiming comparison.
    #[arg(long, default_value_t = 100_000)]
    claim_rows: i64,
    /// Workers of the claiming comparison.
    #[arg(long, default_value_t = 32)]
    claim_workers: usize,
    /// Claim batch sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,10,100")]
    claim_batches: Vec<usize>,
    /// Let every commit wait for the disk (`synchronous_commit` on).
    #[arg(long)]
    durable: bool,
    /// Where to write the tables (Markdown), besides standard output.
    #[arg(long)]
    markdown: Option<PathBuf>,
}

impl ScaleArgs {
    fn settings(&self) -> Result<scale::Settings, Error> {
        let secs = |v: f64, what: &str| {
            if v.is_finite() && v > 0.0 && v <= 3600.0 {
                Ok(Duration::from_secs_f64(v))
            } else {
                Err(Error::Usage(format!(
                    "--{what} must be more than 0 and at most 3600 seconds, not {v}"
                )))
            }
        };
        let positive = |v: usize, what: &str| {
            if v == 0 {
                Err(Error::Usage(format!("--{what} must be at least 1")))
            } else {
                Ok(v)
            }
        };
        let quick = self.quick;
        let leases = if quick {
            vec![1_000, 5_000]
        } else {
            self.leases.clone()
        };
        if leases.is_empty() || leases.contains(&0) {
            return Err(Error::Usage(
                "--leases must list counts of at least 1".into(),
            ));
        }
        if self.claim_batches.is_empty() || self.claim_batches.contains(&0) {
            return Err(Error::Usage(
                "--claim-batches must list sizes of at least 1".into(),
            ));
        }
        let big_rows = if quick { 50_000 } else { self.big_rows };
        let tasks = positive(if quick { 64 } else { self.tasks }, "tasks")?;
        if big_rows < tasks as i64 {
            return Err(Error::Usage("--big-rows must be at least --tasks".into()));
        }
        let largest = leases.iter().copied().max().unwrap_or(1);
        Ok(scale::Settings {
            postgres: postgres_url(),
            durable: self.durable,
            leases,
            ttl: secs(self.ttl, "ttl")?,
            rounds: positive(if quick { 1 } else { self.rounds }, "rounds")?,
            per_lease_tasks: positive(self.per_lease_tasks, "per-lease-tasks")?,
            in_flight: positive(self.in_flight, "in-flight")?,
            keeper_leases: positive(self.keeper_leases.unwrap_or(largest), "keeper-leases")?,
            keeper_ttl: secs(if quick { 3.0 } else { self.keeper_ttl }, "keeper-ttl")?,
            steal: positive(if quick { 10 } else { self.steal }, "steal")?,
            big_rows,
            fillfactor: self.fillfactor,
            tasks,
            connections: positive(self.connections, "connections")?,
            warmup: secs(if quick { 0.3 } else { self.warmup }, "warmup")?,
            measured: secs(if quick { 0.5 } else { self.seconds }, "seconds")?,
            repeats: positive(if quick { 1 } else { self.repeats }, "repeats")?,
            claim_rows: if quick {
                10_000
            } else {
                self.claim_rows.max(1)
            },
            claim_workers: positive(self.claim_workers, "claim-workers")?,
            claim_batches: self.claim_batches.clone(),
            parts: self.parts.clone(),
        })
    }
}

impl Args {
    fn settings(&self) -> Result<Settings, Error> {
        let seconds = |given: Option<f64>, normal: f64, quick: f64, what: &str| {
            let v = given.unwrap_or(if self.quick { quick } else { normal });
            if v.is_finite() && (0.0..=3600.0).contains(&v) {
                Ok(Duration::from_secs_f64(v))
            } else {
                Err(Error::Usage(format!(
                    "--{what} must be between 0 and 3600 seconds, not {v}"
                )))
            }
        };
        let measured = seconds(self.seconds, 2.0, 0.3, "seconds")?;
        if measured.is_zero() {
            return Err(Error::Usage("--seconds must be more than 0".into()));
        }
        let warmup = seconds(self.warmup, 0.5, 0.2, "warmup")?;
        let repeats = self.repeats.unwrap_or(if self.quick { 1 } else { 3 });
        let workers = worker_counts(repeats, &self.workers)?;
        let postgres = (!self.no_postgres).then(postgres_url);
        let sqlite = (!self.no_sqlite).then(|| {
            self.sqlite_dir
                .clone()
                .unwrap_or_else(|| sqlite_dir(self.durable))
        });
        // In the order given; a mode listed twice is measured once.
        let mut sqlite_executions = Vec::new();
        for &execution in &self.sqlite_execution {
            if !sqlite_executions.contains(&execution) {
                sqlite_executions.push(execution);
            }
        }
        Ok(Settings {
            measured,
            warmup,
            repeats,
            workers,
            postgres,
            sqlite,
            sqlite_executions,
            durable: self.durable,
            control: self.control,
        })
    }
}

fn write_file(path: &PathBuf, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })
}

async fn run_scale(args: &ScaleArgs) -> anyhow::Result<()> {
    let settings = args.settings()?;
    let results = scale::run(&settings, &mut |line| eprintln!("{line}")).await?;
    let tables = scale::markdown(&settings, &results);
    if let Some(path) = &args.markdown {
        write_file(path, &tables)?;
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(tables.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

async fn run_stamp(args: &StampArgs) -> anyhow::Result<()> {
    let settings = args.settings()?;
    let results = stamp::run(&settings, &mut |line| eprintln!("{line}")).await?;
    let table = stamp::markdown(&settings, &results);
    if let Some(path) = &args.markdown {
        write_file(path, &table)?;
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(table.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

async fn run_paths(args: &PathsArgs) -> anyhow::Result<()> {
    let settings = args.settings()?;
    let results = paths::run(&settings, &mut |line| eprintln!("{line}")).await?;
    let table = paths::markdown(&settings, &results);
    if let Some(path) = &args.markdown {
        write_file(path, &table)?;
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(table.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

async fn run_count(args: &CountArgs) -> anyhow::Result<()> {
    let settings = args.settings()?;
    let table = count::run(&settings, &mut |line| eprintln!("{line}")).await?;
    if let Some(path) = &args.markdown {
        write_file(path, &table)?;
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(table.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

async fn run(args: Args) -> anyhow::Result<()> {
    match &args.command {
        Some(Command::Scale(scale)) => return run_scale(scale).await,
        Some(Command::Stamp(stamp)) => return run_stamp(stamp).await,
        Some(Command::Paths(paths)) => return run_paths(paths).await,
        Some(Command::Count(count)) => return run_count(count).await,
        Some(Command::CountOne(one)) => {
            let postgres = postgres_url();
            match (one.kind, one.leases, one.cycles, &one.table, one.rows) {
                (Some(kind), None, None, _, _) => {
                    let Some(sqlite_dir) = &one.sqlite_dir else {
                        return Err(count_one_usage());
                    };
                    count::run_one(one.database, kind, one.transactions, &postgres, sqlite_dir)
                        .await?;
                }
                (None, Some(taken), None, Some(table), Some(rows)) => {
                    count::run_one_leases(taken, table, rows, one.transactions, &postgres).await?;
                }
                (None, None, Some(cycled), Some(table), _) => {
                    count::run_one_cycles(cycled, table, one.transactions, &postgres).await?;
                }
                _ => return Err(count_one_usage()),
            }
            return Ok(());
        }
        None => {}
    }
    let settings = args.settings()?;
    let results = suite::run(&settings, &mut |line| eprintln!("{line}")).await?;
    let tables = report::markdown(&settings, &results);
    if let Some(path) = &args.markdown {
        write_file(path, &tables)?;
    }
    if let Some(path) = &args.svg {
        write_file(path, &chart::svg(&results))?;
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(tables.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    // A counted process runs on one thread, so that no idle worker adds instructions.
    let mut builder = if matches!(args.command, Some(Command::CountOne(_))) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("fenced-bench: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            let usage = matches!(e.downcast_ref::<Error>(), Some(Error::Usage(_)));
            eprintln!("fenced-bench: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(if usage { 2 } else { 1 })
        }
    }
}

/// A window of `v` seconds for `--what`: more than 0 (or 0 where `zero`), at most an
/// hour.
fn window(v: f64, what: &str, zero: bool) -> Result<Duration, Error> {
    if v.is_finite() && (v > 0.0 || (zero && v == 0.0)) && v <= 3600.0 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(Error::Usage(format!(
            "--{what} must be {} and at most 3600 seconds, not {v}",
            if zero { "0 or more" } else { "more than 0" }
        )))
    }
}

/// `--repeats` and `--workers`, checked; the worker counts sorted, each once.
fn worker_counts(repeats: usize, workers: &[usize]) -> Result<Vec<usize>, Error> {
    if repeats == 0 {
        return Err(Error::Usage("--repeats must be at least 1".into()));
    }
    if workers.is_empty() || workers.iter().any(|&w| w == 0 || w > 1024) {
        return Err(Error::Usage(
            "--workers must list worker counts between 1 and 1024".into(),
        ));
    }
    let mut workers = workers.to_vec();
    workers.sort_unstable();
    workers.dedup();
    Ok(workers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite_executions(args: &[&str]) -> Result<Vec<Execution>, clap::Error> {
        let args =
            Args::try_parse_from(std::iter::once("fenced-bench").chain(args.iter().copied()))?;
        Ok(args.settings().expect("valid settings").sqlite_executions)
    }

    #[test]
    fn sqlite_executions_default_to_both_in_place_first() {
        assert_eq!(
            sqlite_executions(&[]).unwrap(),
            [Execution::InPlace, Execution::HandOff]
        );
    }

    #[test]
    fn sqlite_executions_keep_the_given_order_once_each() {
        macro_rules! case {
            ($given:expr => $expected:expr) => {
                assert_eq!(
                    sqlite_executions(&["--sqlite-execution", $given]).unwrap(),
                    $expected,
                    "--sqlite-execution {}",
                    $given
                );
            };
        }
        case!("in-place" => [Execution::InPlace]);
        case!("hand-off" => [Execution::HandOff]);
        case!("hand-off,in-place" => [Execution::HandOff, Execution::InPlace]);
        case!("in-place,hand-off,in-place" => [Execution::InPlace, Execution::HandOff]);
    }

    /// The subcommand `name` with `args`, parsed.
    fn parsed(name: &str, args: &[&str]) -> Option<Command> {
        Args::try_parse_from(
            ["fenced-bench", name]
                .into_iter()
                .chain(args.iter().copied()),
        )
        .expect("parses")
        .command
    }

    /// `count-one` with `args`: its options, or clap's refusal.
    fn count_one(args: &[&str]) -> Result<CountOneArgs, clap::Error> {
        let parsed = Args::try_parse_from(
            [
                "fenced-bench",
                "count-one",
                "--database=postgres",
                "--transactions=3",
            ]
            .into_iter()
            .chain(args.iter().copied()),
        )?;
        match parsed.command {
            Some(Command::CountOne(one)) => Ok(one),
            _ => panic!("no count-one subcommand"),
        }
    }

    #[test]
    fn a_counted_process_takes_one_kind_of_work() {
        let kind = count_one(&["--kind=fenced", "--sqlite-dir=/tmp"]).unwrap();
        assert_eq!(kind.kind, Some(paths::Kind::Fenced));
        let leases = count_one(&["--leases=claim", "--table=s.Queue", "--rows=10"]).unwrap();
        assert_eq!(leases.leases, Some(count::Taken::Claim));
        let cycles = count_one(&["--cycles=on-client", "--table=s.CycleLease"]).unwrap();
        assert_eq!(
            (cycles.cycles, cycles.table.as_deref()),
            (Some(count::Cycled::OnClient), Some("s.CycleLease"))
        );
        // Negative controls: cycles without their table, two kinds of work at once, and
        // no work at all.
        for refused in [
            &["--cycles=raw"][..],
            &["--cycles=raw", "--leases=claim", "--table=t", "--rows=1"],
            &[
                "--cycles=raw",
                "--kind=plain",
                "--table=t",
                "--sqlite-dir=/tmp",
            ],
            &[],
        ] {
            assert!(count_one(refused).is_err(), "{refused:?} was taken");
        }
    }

    fn scale(args: &[&str]) -> Result<scale::Settings, Error> {
        match parsed("scale", args) {
            Some(Command::Scale(scale)) => scale.settings(),
            _ => panic!("no scale subcommand"),
        }
    }

    #[test]
    fn the_scale_benchmark_defaults_to_the_issue_sizes() {
        let settings = scale(&[]).unwrap();
        assert_eq!(settings.leases, [10_000, 100_000]);
        assert_eq!(settings.keeper_leases, 100_000);
        assert_eq!(
            (settings.big_rows, settings.tasks, settings.connections),
            (1_000_000, 256, 32)
        );
        assert_eq!((settings.claim_rows, settings.claim_workers), (100_000, 32));
        assert_eq!(settings.claim_batches, [1, 10, 100]);
        assert_eq!(settings.parts.len(), 4);
        let quick = scale(&["--quick", "--parts", "renewal"]).unwrap();
        assert_eq!(quick.parts, [scale::Part::Renewal]);
        assert!(quick.leases.iter().all(|&n| n <= 5_000));
    }

    #[test]
    fn the_scale_benchmark_refuses_empty_sizes() {
        for bad in [
            &["--leases", "0"][..],
            &["--claim-batches", "0"],
            &["--tasks", "0"],
            &["--ttl", "0"],
            &["--big-rows", "10", "--tasks", "20"],
        ] {
            assert!(
                matches!(scale(bad), Err(Error::Usage(_))),
                "accepted {bad:?}"
            );
        }
    }

    fn stamp(args: &[&str]) -> Result<stamp::Settings, Error> {
        match parsed("stamp", args) {
            Some(Command::Stamp(stamp)) => stamp.settings(),
            _ => panic!("no stamp subcommand"),
        }
    }

    #[test]
    fn the_stamp_benchmark_takes_its_workers_and_refuses_nonsense() {
        let settings = stamp(&["--workers", "8,1,8"]).unwrap();
        assert_eq!(settings.workers, [1, 8]);
        assert_eq!(settings.repeats, 9);
        assert_eq!(stamp(&["--quick"]).unwrap().repeats, 1);
        for bad in [
            &["--repeats", "0"][..],
            &["--workers", "0"],
            &["--seconds", "0"],
            &["--warmup=-1"],
        ] {
            assert!(
                matches!(stamp(bad), Err(Error::Usage(_))),
                "accepted {bad:?}"
            );
        }
    }

    fn paths(args: &[&str]) -> Result<paths::Settings, Error> {
        match parsed("paths", args) {
            Some(Command::Paths(paths)) => paths.settings(),
            _ => panic!("no paths subcommand"),
        }
    }

    fn count(args: &[&str]) -> Result<count::Settings, Error> {
        match parsed("count", args) {
            Some(Command::Count(count)) => count.settings(),
            _ => panic!("no count subcommand"),
        }
    }

    #[test]
    fn the_count_takes_its_sizes_and_refuses_no_transactions() {
        let settings = count(&[]).unwrap();
        assert_eq!((settings.transactions, settings.warmup), (5_000, 20));
        assert!(settings.postgres.is_some() && settings.server);
        let small = count(&["--transactions", "7", "--warmup", "0", "--no-postgres"]).unwrap();
        assert_eq!((small.transactions, small.warmup), (7, 0));
        assert!(small.postgres.is_none());
        let client_only = count(&["--no-server"]).unwrap();
        assert!(client_only.postgres.is_some() && !client_only.server);
        assert!(matches!(
            count(&["--transactions", "0"]),
            Err(Error::Usage(_))
        ));
    }

    #[test]
    fn the_paths_benchmark_takes_its_sizes_and_refuses_nonsense() {
        let settings = paths(&["--no-mssql"]).unwrap();
        assert_eq!(settings.workers, [1, 8]);
        assert_eq!((settings.repeats, settings.claim_rows), (5, 100_000));
        assert_eq!(settings.parts.len(), 4);
        assert!(settings.mssql.is_none());
        let quick = paths(&["--quick", "--parts", "claim,client"]).unwrap();
        assert_eq!(quick.repeats, 1);
        assert!(quick.claim_rows <= 10_000);
        assert_eq!(quick.parts, [paths::Part::Claim, paths::Part::Client]);
        for bad in [
            &["--repeats", "0"][..],
            &["--workers", "0"],
            &["--seconds", "0"],
            &["--claim-rows", "0"],
        ] {
            assert!(
                matches!(paths(bad), Err(Error::Usage(_))),
                "accepted {bad:?}"
            );
        }
    }

    #[test]
    fn unknown_sqlite_executions_are_rejected() {
        for given in ["blocking", "in_place", "in-place,", "in-place,bogus", ""] {
            let e = sqlite_executions(&["--sqlite-execution", given])
                .expect_err(&format!("accepted --sqlite-execution {given:?}"));
            assert_eq!(e.kind(), clap::error::ErrorKind::InvalidValue, "{given:?}");
            // Exit code 2, as for the benchmark's own usage errors.
            assert_eq!(e.exit_code(), 2, "{given:?}");
        }
    }
}
