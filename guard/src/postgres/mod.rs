//! PostgreSQL, all of it in one place: its text of the protocol's statements
//! (`dialect.rs`, always built, since [`crate::dialect`] renders every database's
//! statements), and behind the `postgres` feature the guard's own pool (`Postgres`,
//! `pool.rs`) and the service's tokio-postgres clients and transactions as executors
//! (`caller.rs`), both sending their statements as `sending.rs` does.
//!
//! The protocol never names this module: it runs over the executor contract
//! (`executor.rs`), and [`crate::dialect`], where the dialect is chosen, is the one
//! place that reaches this text.

#[cfg(feature = "postgres")]
pub(crate) mod caller;
pub(crate) mod dialect;
#[cfg(feature = "postgres")]
pub(crate) mod pool;
#[cfg(feature = "postgres")]
pub(crate) mod sending;
