//! The conformance suite: the article's schedules, written once in `suite.rs`, run
//! against every available backend. PostgreSQL must be reachable (the tests fail
//! otherwise), SQLite always runs, SQL Server runs when `FENCED_MSSQL_URL` is set.

#![allow(missing_docs, unreachable_pub)]
#![cfg_attr(
    not(any(feature = "sqlite", feature = "postgres", feature = "mssql")),
    allow(dead_code)
)]

#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod classification;
mod suite;

// Each test binary compiles the shared fixtures on its own and uses only part of them.
#[allow(dead_code)]
#[path = "../support/mod.rs"]
mod support;

#[cfg(feature = "mssql")]
mod mssql;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
