//! The executor contract, and one pooled executor per database behind its feature.
//!
//! An [`Executor`] runs statements with bound parameters. The protocol
//! ([`Store`](crate::Store)) is written once over it. A [`Backend`] is an executor that
//! can be shared between tasks: the guard's own pools ([`Postgres`], [`Sqlite`],
//! [`Mssql`]). The caller's own connections are executors too
//! ([`crate::connection`]).

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

use std::future::Future;

// Each public type of a backend also carries its feature's `cfg` itself, though its
// module has it: rustdoc carries only an item's own `cfg` into the documentation of the
// `fenced` crate, which inlines these types, as their feature badge.
#[cfg(feature = "mssql")]
pub use mssql::{LentMssql, Mssql, MssqlOptions};
#[cfg(feature = "postgres")]
pub use postgres::{LentPostgres, PooledClient, Postgres};
#[cfg(feature = "sqlite")]
pub use sqlite::{LentSqlite, Sqlite, SqliteExecution, SqliteOptions};

use crate::dialect::Dialect;
use crate::error::{Error, Result};
use crate::value::Value;

/// Runs statements with bound parameters on a database: a pool of connections, or one
/// connection (or transaction) that the caller owns.
///
/// On a pool, each call is one autocommitted statement on a pooled connection; on a
/// single connection, each call runs there, inside whatever transaction is open on it.
/// Every driver, network or SQL error is returned as an [`Error`]; nothing is folded
/// into "no rows".
pub trait Executor {
    /// The SQL dialect this backend speaks.
    fn dialect(&self) -> Dialect;

    /// Runs a statement and returns the number of rows it affected.
    fn execute(&self, sql: &str, params: &[Value]) -> impl Future<Output = Result<u64>> + Send;

    /// Runs a statement and returns its first row, if any, decoded into [`Value`]s.
    /// Integers of every width decode to [`Value::I64`].
    fn query_row(
        &self,
        sql: &str,
        params: &[Value],
    ) -> impl Future<Output = Result<Option<Vec<Value>>>> + Send;

    /// Runs a statement and returns every row it produced, decoded as by
    /// [`query_row`](Executor::query_row); on SQL Server, the rows of the batch's last
    /// result set. Batched renewal ([`Store::renew_many`](crate::Store::renew_many),
    /// [`BatchKeeper`](crate::BatchKeeper)) and claiming
    /// ([`Store::claim`](crate::Store::claim)) read their per-row outcomes with it.
    ///
    /// The default refuses with [`Error::Config`]: an executor written before this
    /// method cannot claim or batch, but runs every single-row operation as before.
    fn query_rows(
        &self,
        sql: &str,
        params: &[Value],
    ) -> impl Future<Output = Result<Vec<Vec<Value>>>> + Send {
        let _ = (sql, params);
        std::future::ready(Err(Error::Config(format!(
            "this {} executor cannot return several rows",
            self.dialect()
        ))))
    }

    /// Whether a transaction is open on the connection, where the driver tells it
    /// without a round trip; `None` where it does not (a pool, a type that proves one,
    /// a database that checks it in the statement). A [`Fenced`](crate::Fenced) sends
    /// nothing once this says `false`.
    fn transaction_open(&self) -> Option<bool> {
        None
    }

    /// Runs one or more statements without parameters, such as schema DDL.
    fn execute_batch(&self, sql: &str) -> impl Future<Output = Result<()>> + Send;

    /// Runs `write`; when it changed exactly one row, runs `record` in the same
    /// transaction; then commits, or rolls back on any error. Returns the number of rows
    /// `write` changed. This is how a fenced write records its operation id on a
    /// database whose dialect has no single statement for it (SQLite); the other
    /// dialects record in the write's own statement and never call this.
    ///
    /// The default refuses with [`Error::Config`]: a backend that cannot run a
    /// transaction cannot record operations atomically.
    fn execute_then_record(
        &self,
        write: &str,
        write_params: &[Value],
        record: &str,
        record_params: &[Value],
    ) -> impl Future<Output = Result<u64>> + Send {
        let _ = (write, write_params, record, record_params);
        std::future::ready(Err(Error::Config(format!(
            "this {} executor cannot record an operation in the write's transaction",
            self.dialect()
        ))))
    }

    /// Runs a statement that returns at most one row holding one integer, such as
    /// acquire's new generation.
    fn query_i64(
        &self,
        sql: &str,
        params: &[Value],
    ) -> impl Future<Output = Result<Option<i64>>> + Send {
        let row = self.query_row(sql, params);
        async move {
            match row.await? {
                None => Ok(None),
                Some(row) => match row.first() {
                    Some(Value::I64(v)) => Ok(Some(*v)),
                    other => Err(Error::UnexpectedResult(format!(
                        "expected one integer column, got {other:?}"
                    ))),
                },
            }
        }
    }
}

/// An [`Executor`] whose statements all run inside one transaction that stays open
/// while it is borrowed: what [`Store::fence`](crate::Store::fence) takes and a
/// [`Fenced`](crate::Fenced) runs on.
///
/// Implemented where the type proves it (tokio-postgres's and sqlx's `Transaction`, the
/// connections the guard's pools lend for [`Store::transaction`](crate::Store::transaction)),
/// and where the guard checks it: a rusqlite connection before every statement
/// ([`Executor::transaction_open`]), a tiberius client inside every statement
/// (`@@TRANCOUNT`). Never for a pool, whose every statement is a transaction of its
/// own.
pub trait InTransaction: Executor {}

/// An [`Executor`] that tasks can share and keep: what a [`Store`](crate::Store) needs
/// for a [`Keeper`](crate::Keeper) or a spawned task. Every `Send + Sync + 'static`
/// executor is one: the guard's pools, and cloneable pools of the caller's such as
/// sqlx's.
pub trait Backend: Executor + Send + Sync + 'static {}

impl<T: Executor + Send + Sync + 'static> Backend for T {}
