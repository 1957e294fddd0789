//! Distributed-lock fencing that the database enforces.
//!
//! A lease can expire while the code that took it is still running: a paused worker
//! wakes up after its successor has published and overwrites the newer result. fenced
//! keeps the lease's *generation* in the protected row itself, so that every write
//! carries the generation, the owner and an expiry check against the database's clock in
//! its own `WHERE` clause, and a superseded worker's write matches no row.
//!
//! This crate is the one an application depends on. It re-exports
//!
//! - the runtime guard ([`fenced_guard`]): [`Store`], [`Lease`], [`FencedTable`] and the
//!   backends for PostgreSQL, SQLite and SQL Server;
//! - the [`fenced_write`] attribute ([`fenced_macros`]): a repository method that writes a
//!   fenced table does not compile unless it takes the lease, and its SQL gets the fence.
//!
//! The third part, `fenced-lint`, is a command-line tool for CI: it finds writes that
//! bypass the fence in `.sql` files and in SQL inside Rust code.
//!
//! # One declaration of the fenced tables
//!
//! The application's `fenced.toml` names each fenced table and its columns once
//! ([`declaration`]). `#[fenced_write(table = "jobs")]` takes the columns from it at
//! compile time, [`table!`]`("jobs")` builds the [`FencedTable`], `fenced-lint` checks
//! SQL against it, and `fenced schema --dialect postgres` (feature `cli`) prints the
//! DDL for a migration file ([`Declarations::schema`]).
//!
//! # Features
//!
//! No database is on by default: a service names the ones it uses, and builds no other
//! driver.
//!
//! ```toml
//! [dependencies]
//! fenced = { version = "0.1", features = ["sqlx-postgres"] }
//! ```
//!
//! | feature | what it adds |
//! |---|---|
//! | `postgres` | [`Postgres`], tokio-postgres with a pool of its own; the service's tokio-postgres clients and transactions ([`connection::PostgresClient`]) |
//! | `sqlite` | [`Sqlite`], rusqlite with SQLite bundled (C, compiled by the build); the service's rusqlite connections ([`connection::RusqliteConnection`]) |
//! | `mssql` | [`Mssql`], tiberius over TCP with rustls; the service's tiberius clients ([`connection::TiberiusClient`]) |
//! | `sqlx-postgres` | the protocol on the service's sqlx `PgPool`, connections and transactions ([`connection::SqlxPgPool`], [`connection::SqlxPgConnection`]) |
//! | `sqlx-sqlite` | the same on sqlx's SQLite ([`connection::SqlxSqlitePool`], [`connection::SqlxSqliteConnection`]) |
//! | `cli` | the `fenced` command, `fenced schema` (no driver): `cargo install fenced --features cli` |
//!
//! # A service on sqlx
//!
//! Enable `sqlx-postgres` (or `sqlx-sqlite`) and keep the service's pool: no second pool
//! and no other driver. `Store::new(SqlxPgPool::from(pool.clone()), table)` makes the
//! pool the store's own, for acquiring, renewing and publishing; [`Store::on`] runs the
//! same protocol on one of the service's connections or transactions, and
//! [`Store::fence`] checks a lease inside the service's own transaction, so that
//! everything it writes commits only while the lease holds. The [`connection`] module
//! lists what each connection type runs the protocol on; the README's
//! [sqlx example](https://github.com/fenced-rs/fenced#your-connections-your-transactions)
//! publishes a report and its lines in one sqlx transaction.
//!
//! # Example
//!
//! The article's cycle on embedded SQLite (feature `sqlite`): acquire, publish once,
//! release.
//!
//! ```
//! # #[cfg(feature = "sqlite")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use fenced::{ColumnType, FencedTable, Outcome, Sqlite, Store, Value};
//!
//! let dir = tempfile::tempdir()?;
//! let table = FencedTable::builder().column("Payload", ColumnType::Text).build()?;
//! let store = Store::new(Sqlite::open(dir.path().join("reports.db")).await?, table);
//! store.create_schema().await?;
//!
//! let report = uuid::Uuid::new_v4();
//! store.provision(report).await?;
//!
//! let a = store.try_acquire(report, Duration::from_secs(30)).await?.expect("free");
//! // While A holds the lease, nobody else can take it.
//! assert!(store.try_acquire(report, Duration::from_secs(30)).await?.is_none());
//!
//! let published = store.publish(&a, &[("Payload", Value::from("A's report"))]).await?;
//! assert_eq!(published, Outcome::Applied);
//! // Once per generation: a second publication by the same lease is refused.
//! let again = store.publish(&a, &[("Payload", Value::from("again"))]).await?;
//! assert_eq!(again, Outcome::Refused);
//!
//! assert_eq!(store.release(&a).await?, Outcome::Applied);
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "sqlite"))]
//! # fn main() {}
//! ```

// docs.rs (`[package.metadata.docs.rs]`) shows each feature-gated item's feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(inline)]
pub use fenced_guard::*;
#[doc(inline)]
pub use fenced_macros::*;

/// The runtime guard, for paths such as `fenced::fenced_guard::dialect`.
pub use fenced_guard;
/// The `#[fenced_write]` attribute's crate.
pub use fenced_macros;

/// The README's Rust examples, compiled as doctests so that the README stays true.
#[cfg(all(doctest, feature = "postgres"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
