//! Fault tests: the fence under pauses, lost acknowledgements and restores.
//!
//! - `proxy`: a TCP proxy in front of PostgreSQL that passes, delays, or cuts a
//!   connection before a statement reaches the server or after it committed.
//! - `history`: workers that acquire, pause past their ttl, get cut, resume and write;
//!   every call recorded, every accepted write traced by the database in the same
//!   statement.
//! - `checker`: the properties the history must keep, each with a hand-made violating
//!   history that shows it can fail.
//! - `scenario`: the fenced history must pass the checker, the naive one must not.
//! - `acknowledgement`: a publication whose reply was lost is an error, and its
//!   operation id resolves as applied; one cut before the server resolves as not
//!   applied. (The restore test is in the conformance suite, on every backend.)
//!
//! `FENCED_HISTORY_SECS` lengthens the fenced runs (default 3 s per backend),
//! `FENCED_HISTORY_SEED` replays a seed, `FENCED_HISTORY_REPORT_DIR` says where the
//! JSON reports go. PostgreSQL must be reachable (`FENCED_PG_URL`, default
//! `host=127.0.0.1 port=5432 user=postgres dbname=test`): the tests fail otherwise.

#![allow(missing_docs, unreachable_pub)]
#![cfg_attr(not(all(feature = "sqlite", feature = "postgres")), allow(dead_code))]

mod checker;
mod history;
mod proxy;
mod report;
mod scenario;

// Each test binary compiles the shared fixtures on its own and uses only part of them.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

#[cfg(feature = "postgres")]
mod acknowledgement;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "postgres")]
mod on_postgres {
    use crate::postgres::PgBench;
    use crate::scenario::{fenced_history_holds, naive_history_is_caught};

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn fenced_history_under_pauses_and_cuts_passes_the_checker() {
        fenced_history_holds(PgBench::setup, true).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn naive_history_is_caught_by_the_checker() {
        naive_history_is_caught(PgBench::setup).await;
    }
}

#[cfg(feature = "sqlite")]
mod on_sqlite {
    use crate::scenario::{fenced_history_holds, naive_history_is_caught};
    use crate::sqlite::SqliteBench;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn fenced_history_under_pauses_passes_the_checker() {
        fenced_history_holds(|| async { SqliteBench::setup() }, false).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn naive_history_is_caught_by_the_checker() {
        naive_history_is_caught(|| async { SqliteBench::setup() }).await;
    }
}
