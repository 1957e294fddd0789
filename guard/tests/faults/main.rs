//! Fault tests: the fence under pauses, lost acknowledgements and restores.
//!
//! - `proxy`: a TCP proxy in front of PostgreSQL or SQL Server (TDS) that passes,
//!   delays, or cuts a connection before a statement reaches the server or after it
//!   committed.
//! - `history`: workers that acquire, pause past their ttl, get cut, resume and write;
//!   every call recorded, every accepted write traced by the database in the same
//!   statement.
//! - `checker`: the properties the history must keep, each with a hand-made violating
//!   history that shows it can fail.
//! - `scenario`: the fenced history must pass the checker, the naive one must not.
//! - `acknowledgement`: a publication whose reply was lost is an error, and its
//!   operation id resolves as applied; one cut before the server resolves as not
//!   applied; one delayed past expiry is refused by the database's clock. On
//!   PostgreSQL and SQL Server. (The restore test is in the conformance suite, on
//!   every backend.)
//!
//! `FENCED_HISTORY_SECS` lengthens the fenced runs (default 3 s per backend),
//! `FENCED_HISTORY_SEED` replays a seed, `FENCED_HISTORY_REPORT_DIR` says where the
//! JSON reports go. PostgreSQL must be reachable (`FENCED_PG_URL`, default
//! `host=127.0.0.1 port=5432 user=postgres dbname=test`): the tests fail otherwise.
//! The SQL Server tests run at `FENCED_MSSQL_URL`; without it they say that they did
//! not run, unless `CI` is set: then they fail.

#![allow(missing_docs, unreachable_pub)]
#![cfg_attr(
    not(all(feature = "sqlite", feature = "postgres", feature = "mssql")),
    allow(dead_code)
)]

mod checker;
// The failover tests drive their workers through all of it.
#[allow(dead_code)]
mod gate;
mod history;
// Shared with the `round_trips` binary, which counts round trips with it.
#[allow(dead_code)]
mod proxy;
mod report;
mod scenario;

pub use support::runtime::block_on;

// Each test binary compiles the shared fixtures on its own and uses only part of them.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

#[cfg(any(feature = "postgres", feature = "mssql"))]
mod acknowledgement;
#[cfg(feature = "mssql")]
mod mssql;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "postgres")]
mod on_postgres {
    use crate::postgres::PgBench;
    use crate::scenario::{fenced_history_holds, naive_history_is_caught};

    // On `block_on`'s larger stacks, as SQL Server's: a fenced transaction inside a
    // worker's faulted call nests past 2 MiB in a debug build.
    #[test]
    fn fenced_history_under_pauses_and_cuts_passes_the_checker() {
        crate::block_on(fenced_history_holds(PgBench::setup, true));
    }

    #[test]
    fn naive_history_is_caught_by_the_checker() {
        crate::block_on(naive_history_is_caught(PgBench::setup));
    }
}

#[cfg(feature = "mssql")]
mod on_mssql {
    use crate::mssql::MssqlBench;
    use crate::scenario::{fenced_history_holds, naive_history_is_caught};

    async fn bench() -> MssqlBench {
        MssqlBench::setup()
            .await
            .expect("FENCED_MSSQL_URL was set a moment ago")
    }

    #[test]
    fn fenced_history_under_pauses_and_cuts_passes_the_checker() {
        if crate::support::mssql::url().is_none() {
            return;
        }
        crate::block_on(fenced_history_holds(bench, true));
    }

    #[test]
    fn naive_history_is_caught_by_the_checker() {
        if crate::support::mssql::url().is_none() {
            return;
        }
        crate::block_on(naive_history_is_caught(bench));
    }
}

#[cfg(feature = "sqlite")]
mod on_sqlite {
    use crate::scenario::{fenced_history_holds, naive_history_is_caught};
    use crate::sqlite::SqliteBench;

    #[test]
    fn fenced_history_under_pauses_passes_the_checker() {
        crate::block_on(fenced_history_holds(
            || async { SqliteBench::setup() },
            false,
        ));
    }

    #[test]
    fn naive_history_is_caught_by_the_checker() {
        crate::block_on(naive_history_is_caught(|| async { SqliteBench::setup() }));
    }
}
