//! The protocol on connections the caller owns ([`Store::on`]): the same statements,
//! on each driver's client, connection, transaction or pool, and a fenced transaction
//! inside the caller's own transaction. PostgreSQL must be reachable; SQLite always
//! runs; SQL Server runs when `FENCED_MSSQL_URL` is set (and must, when `CI` is set).

#![allow(missing_docs, unreachable_pub)]

mod defence;
mod protocol;

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
#[cfg(any(feature = "sqlx-postgres", feature = "sqlx-sqlite"))]
mod sqlx;
