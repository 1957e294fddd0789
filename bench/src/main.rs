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

mod chart;
mod check;
mod error;
mod measure;
mod postgres;
mod report;
mod sqlite;
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
        if repeats == 0 {
            return Err(Error::Usage("--repeats must be at least 1".into()));
        }
        if self.workers.is_empty() || self.workers.iter().any(|&w| w == 0 || w > 1024) {
            return Err(Error::Usage(
                "--workers must list worker counts between 1 and 1024".into(),
            ));
        }
        let mut workers = self.workers.clone();
        workers.sort_unstable();
        workers.dedup();
        let postgres = (!self.no_postgres)
            .then(|| std::env::var("FENCED_PG_URL").unwrap_or_else(|_| DEFAULT_PG.to_owned()));
        let sqlite = (!self.no_sqlite).then(|| {
            self.sqlite_dir.clone().unwrap_or_else(|| {
                let shm = PathBuf::from("/dev/shm");
                if !self.durable && shm.is_dir() {
                    shm
                } else {
                    std::env::temp_dir()
                }
            })
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

async fn run(args: Args) -> anyhow::Result<()> {
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
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
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
