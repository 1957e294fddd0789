//! Fixtures shared by the guard's test binaries (`conformance`, `faults`, `keeper`):
//! PostgreSQL at `FENCED_PG_URL` with a schema of its own per test, a SQLite file in a
//! temporary directory, and raw reads and writes of a fenced row that go around the
//! protocol.
//!
//! Each test binary compiles this module on its own and uses only part of it, so the
//! binaries include it with dead code allowed.

use std::future::Future;

use fenced_guard::Backend;

pub mod lease;
pub mod lines;
#[cfg(feature = "mssql")]
pub mod mssql;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod row;
pub mod runtime;
#[cfg(feature = "sqlite")]
pub mod sqlite;

/// A fresh, isolated place for one test's tables: a PostgreSQL schema of its own, or a
/// SQLite file of its own.
pub trait Place: Send + Sync + 'static {
    type Backend: Backend + Clone;

    /// A new backend with its own connections: one per simulated worker.
    fn connect(&self) -> impl Future<Output = Self::Backend> + Send;

    /// The name `table` has in this place.
    fn qualified(&self, table: &str) -> String;

    /// Drops whatever the test created in this place.
    fn teardown(&self) -> impl Future<Output = ()> + Send;
}
