//! The executor contract, and one pooled executor per database behind its feature.
//!
//! An [`Executor`] runs statements with bound parameters. The protocol
//! ([`Store`](crate::Store)) is written once over it. A [`Backend`] is an executor that
//! can be shared between tasks: the guard's own pools ([`Postgres`], [`Sqlite`],
//! [`Mssql`]). The caller's own connections are executors too
//! ([`crate::connection`]).
//!
//! This module only gathers them under the path users import: the contract lives in
//! `executor.rs`, below everything, and each pool in its database's folder.

#[cfg(any(feature = "postgres", feature = "sqlite"))]
pub(crate) mod kept;
#[cfg(feature = "mssql")]
pub(crate) mod mssql;
#[cfg(any(feature = "mssql", feature = "postgres", feature = "sqlite"))]
mod pool;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

// Each public type of a backend also carries its feature's `cfg` itself, though its
// module has it: rustdoc carries only an item's own `cfg` into the documentation of the
// `fenced` crate, which inlines these types, as their feature badge.
#[cfg(feature = "mssql")]
pub use mssql::{LentMssql, Mssql, MssqlOptions};
#[cfg(feature = "postgres")]
pub use postgres::{LentPostgres, PooledClient, Postgres};
#[cfg(feature = "sqlite")]
pub use sqlite::{LentSqlite, Sqlite, SqliteExecution, SqliteOptions};

pub use crate::executor::{Backend, Executor, InTransaction};
