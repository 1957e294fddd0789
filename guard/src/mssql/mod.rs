//! SQL Server, all of it in one place: its text of the protocol's statements
//! (`dialect.rs`, always built, since [`crate::dialect`] renders every database's
//! statements), and behind the `mssql` feature the guard's own pool (`Mssql`,
//! `pool.rs`), the service's tiberius clients as executors (`caller.rs`), and how both
//! send parameters (`params.rs`) and values and read rows back (`value.rs`).
//!
//! The protocol never names this module: it runs over the executor contract
//! (`executor.rs`), and [`crate::dialect`], where the dialect is chosen, is the one
//! place that reaches this text. (The stored procedures, [`crate::MssqlProcedures`],
//! are a public part of [`crate::dialect`] and stay there.)

#[cfg(feature = "mssql")]
pub(crate) mod caller;
pub(crate) mod dialect;
#[cfg(feature = "mssql")]
mod params;
#[cfg(feature = "mssql")]
pub(crate) mod pool;
#[cfg(feature = "mssql")]
mod value;
