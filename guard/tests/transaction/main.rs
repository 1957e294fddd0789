//! Fenced transactions: a transaction whose first statement checks a lease and locks its
//! row, and deferred ones, whose fenced write of the row does. The schedules are driven by barriers and by the database's own view of who waits
//! for a lock (`pg_stat_activity`, a SQLite write probe, `sys.dm_exec_requests`), never
//! by sleeping and hoping. PostgreSQL must be reachable; SQLite always runs; SQL Server
//! runs when `FENCED_MSSQL_URL` is set (and must, when `CI` is set).

#![allow(missing_docs, unreachable_pub)]

mod deferred;
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
