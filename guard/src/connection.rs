//! The protocol on connections the service already has.
//!
//! A service keeps its own pools, drivers and transactions. [`Store::on`] runs the
//! store's statements (rendered once, for its dialect) on one of them instead of the
//! guard's own pool:
//!
//! | driver | what [`Store::on`] takes |
//! |---|---|
//! | tokio-postgres (`postgres`) | `&Client`, `&Transaction<'_>`; `&mut Transaction<'_>` for a fence |
//! | rusqlite (`sqlite`) | `&Connection`, `&Transaction<'_>` |
//! | tiberius (`mssql`) | `&mut Client<S>` |
//! | sqlx (`sqlx-postgres`) | `&PgPool`, `&mut PgConnection`, `&mut Transaction<'_, Postgres>` |
//! | sqlx (`sqlx-sqlite`) | `&SqlitePool`, `&mut SqliteConnection`, `&mut Transaction<'_, Sqlite>` |
//!
//! sqlx's pools are [`Backend`](crate::Backend)s: `Store::new(SqlxPgPool::from(pool),
//! table)` runs everything, keepers included, on the service's own pool.
//!
//! On a connection with a transaction open, every statement runs inside it: a fenced
//! write commits or rolls back with the caller's own statements. [`Store::fence`]
//! checks a lease inside such a transaction and locks its row until the transaction
//! ends ([`crate::transaction`]).
//!
//! A rusqlite connection is synchronous, and so are the statements run on it: each
//! future is ready when first polled. Synchronous code drives it with any executor's
//! `block_on`.
//!
//! Like [`crate::backend`], this module only gathers the executors under the path
//! users import: each lives in its database's folder (`postgres/caller.rs`,
//! `sqlite/caller.rs`, `mssql/caller.rs`, and `sqlx/` for sqlx's two databases), and
//! [`IntoExecutor`] with the rest of the contract in `executor.rs`.
//!
//! [`Store::on`]: crate::Store::on
//! [`Store::fence`]: crate::Store::fence

// Each public type of a backend also carries its feature's `cfg` itself, though its
// module has it: rustdoc carries only an item's own `cfg` into the documentation of the
// `fenced` crate, which inlines these types, as their feature badge.
#[cfg(feature = "mssql")]
pub use crate::mssql::caller::TiberiusClient;
#[cfg(feature = "postgres")]
pub use crate::postgres::caller::{PostgresClient, PostgresTransaction};
#[cfg(feature = "sqlite")]
pub use crate::sqlite::caller::RusqliteConnection;
#[cfg(feature = "sqlx-postgres")]
pub use crate::sqlx::{SqlxPgConnection, SqlxPgPool};
#[cfg(feature = "sqlx-sqlite")]
pub use crate::sqlx::{SqlxSqliteConnection, SqlxSqlitePool};

pub use crate::executor::IntoExecutor;
