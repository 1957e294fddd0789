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
//! the client's share only, not the server's.
//!
//! Each process runs on a current-thread runtime, so that no idle worker thread adds
//! instructions of its own.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::paths::Kind;

/// What to count.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// Transactions counted, after the warm-up.
    pub(crate) transactions: u64,
    /// Transactions run before the counted ones, in both runs.
    pub(crate) warmup: u64,
    /// The PostgreSQL server, unless skipped.
    pub(crate) postgres: Option<String>,
    /// Where the SQLite files go.
    pub(crate) sqlite_dir: PathBuf,
}

/// A database the transactions run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Database {
    Sqlite,
    Postgres,
}

impl Database {
    fn label(self) -> &'static str {
        match self {
            Database::Sqlite => "SQLite",
            Database::Postgres => "PostgreSQL (client only)",
        }
    }
}

/// One kind's count: instructions per transaction.
#[derive(Clone, Copy, Debug)]
struct Counted {
    database: Database,
    kind: Kind,
    per_transaction: f64,
}

/// Counts every kind on every database asked for and returns the table, in Markdown.
pub(crate) fn run(settings: &Settings, log: &mut dyn FnMut(&str)) -> Result<String> {
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
    for database in databases {
        for kind in Kind::ALL {
            log(&format!(
                "count: {} transactions, {}",
                kind.label(),
                database.label()
            ));
            let run_of = |transactions: u64| {
                instructions(&exe, out.path(), settings, database, kind, transactions)
            };
            let warm = run_of(settings.warmup)?;
            let all = run_of(settings.warmup + settings.transactions)?;
            counted.push(Counted {
                database,
                kind,
                per_transaction: per_transaction(warm, all, settings.transactions)?,
            });
        }
    }
    Ok(markdown(settings, &counted))
}

/// The instructions of one process that runs `transactions` of `kind` on `database`
/// under callgrind.
fn instructions(
    exe: &Path,
    out: &Path,
    settings: &Settings,
    database: Database,
    kind: Kind,
    transactions: u64,
) -> Result<u64> {
    let file = out.join(format!("{database:?}-{}-{transactions}.out", kind.label()));
    let mut command = Command::new("valgrind");
    command
        .arg("--tool=callgrind")
        // Only the counted process's own messages on its standard error.
        .arg("--quiet")
        .arg(format!("--callgrind-out-file={}", file.display()))
        .arg(exe)
        .arg("count-one")
        .arg(format!("--database={}", arg_name(database)))
        .arg(format!("--kind={}", arg_name(kind)))
        .arg(format!("--transactions={transactions}"))
        .arg("--sqlite-dir")
        .arg(&settings.sqlite_dir);
    if let Some(postgres) = &settings.postgres {
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
            "the counted run of {} transactions on {} failed ({}): {}",
            kind.label(),
            database.label(),
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
fn markdown(settings: &Settings, counted: &[Counted]) -> String {
    let of = |database: Database, kind: Kind| {
        counted
            .iter()
            .find(|c| c.database == database && c.kind == kind)
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
            c.database.label(),
            c.kind.label(),
            c.per_transaction,
            ratio(of(c.database, Kind::Plain)),
            ratio(of(c.database, Kind::Checked)),
        );
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
        assert!(Database::from_str(Database::Postgres.label(), false).is_err());
    }

    #[test]
    fn a_count_is_the_counted_runs_difference_per_transaction() {
        assert_eq!(per_transaction(1_000, 41_000, 100).unwrap(), 400.0);
        assert!(per_transaction(1_000, 1_000, 100).is_err());
        assert!(per_transaction(1_000, 900, 100).is_err());
        assert!(per_transaction(1_000, 2_000, 0).is_err());
    }

    #[test]
    fn the_table_sets_each_kind_against_plain_and_checked() {
        let settings = Settings {
            transactions: 10,
            warmup: 1,
            postgres: None,
            sqlite_dir: PathBuf::from("/tmp"),
        };
        let counted = [
            (Kind::Plain, 30_000.0),
            (Kind::Checked, 36_000.0),
            (Kind::Fenced, 40_000.0),
        ]
        .map(|(kind, per_transaction)| Counted {
            database: Database::Sqlite,
            kind,
            per_transaction,
        });
        let table = markdown(&settings, &counted);
        assert!(
            table.contains("| SQLite | plain | 30000 | 1.000 | 1.200 |"),
            "{table}"
        );
        assert!(
            table.contains("| SQLite | fenced | 40000 | 0.750 | 0.900 |"),
            "{table}"
        );
        // Negative control: a database with no plain count has no ratio to it.
        let alone = markdown(&settings, &counted[2..]);
        assert!(
            alone.contains("| SQLite | fenced | 40000 | – | – |"),
            "{alone}"
        );
    }
}
