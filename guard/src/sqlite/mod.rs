//! SQLite, all of it in one place: its text of the protocol's statements
//! (`dialect.rs`, always built, since [`crate::dialect`] renders every database's
//! statements), and behind the `sqlite` feature the guard's own pool (`Sqlite`,
//! `pool.rs`), the service's rusqlite connections as executors (`caller.rs`), and how
//! both bind and decode values (`value.rs`) and run a prepared statement (`rows.rs`).
//!
//! The protocol never names this module: it runs over the executor contract
//! (`executor.rs`), and [`crate::dialect`], where the dialect is chosen, is the one
//! place that reaches this text.

#[cfg(feature = "sqlite")]
pub(crate) mod caller;
pub(crate) mod dialect;
#[cfg(feature = "sqlite")]
pub(crate) mod pool;
#[cfg(feature = "sqlite")]
mod rows;
#[cfg(feature = "sqlite")]
mod value;
