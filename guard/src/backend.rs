//! The executor contract, and one pooled executor per database behind its feature.
//!
//! An [`Executor`] runs statements with bound parameters. The protocol
//! ([`Store`](crate::Store)) is written once over it. A [`Backend`] is an executor that
//! can be shared between tasks: the guard's own pools ([`Postgres`], [`Sqlite`],
//! [`Mssql`]). The caller's own connections are executors too
//! ([`crate::connection`]).
//!
//! This module only gathers them under the path users import: the contract lives in
//! `executor.rs`, below everything, and each pool in its database's folder
//! (`postgres/pool.rs`, `sqlite/pool.rs`, `mssql/pool.rs`), beside that database's
//! statements and the caller's executors; what the pools share is in `pool/`.

// Each public type of a backend also carries its feature's `cfg` itself, though its
// module has it: rustdoc carries only an item's own `cfg` into the documentation of the
// `fenced` crate, which inlines these types, as their feature badge.
#[cfg(feature = "mssql")]
pub use crate::mssql::pool::{LentMssql, Mssql, MssqlOptions};
#[cfg(feature = "postgres")]
pub use crate::postgres::pool::{LentPostgres, PooledClient, Postgres};
#[cfg(feature = "sqlite")]
pub use crate::sqlite::pool::{LentSqlite, Sqlite, SqliteExecution, SqliteOptions};

pub use crate::executor::{Backend, Executor, InTransaction};
