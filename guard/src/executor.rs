//! The executor contract, at the bottom of the guard: what the protocol
//! ([`Store`](crate::Store), [`transaction`](crate::transaction), claims and renewals)
//! is written over, and what each database's pool and each caller's connection
//! implements.
//!
//! An [`Executor`] runs statements with bound parameters. A [`Backend`] is an executor
//! that can be shared between tasks; an [`InTransaction`] one runs inside a transaction
//! that stays open while it is borrowed; a [`Lend`] pool lends one of its connections
//! for a fenced transaction; [`IntoExecutor`] wraps a connection of the caller's. Nothing
//! here names a database: each database's folder (`postgres/`, `sqlite/`, `mssql/`,
//! `sqlx/`) implements these traits, and the protocol never names those folders.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::dialect::kind::Dialect;
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
        FirstI64 {
            row: self.query_row(sql, params),
        }
    }
}

pin_project_lite::pin_project! {
    /// [`Executor::query_i64`]'s future: the row's future held once. An `async` block
    /// awaiting it would hold it twice (captured, then pinned), and `rows`, the
    /// future of every fenced write, holds this one.
    struct FirstI64<F> {
        #[pin]
        row: F,
    }
}

impl<F: Future<Output = Result<Option<Vec<Value>>>>> Future for FirstI64<F> {
    type Output = Result<Option<i64>>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let row = std::task::ready!(self.project().row.poll(cx))?;
        std::task::Poll::Ready(match row {
            None => Ok(None),
            Some(row) => match row.first() {
                Some(Value::I64(v)) => Ok(Some(*v)),
                other => Err(Error::UnexpectedResult(format!(
                    "expected one integer column, got {other:?}"
                ))),
            },
        })
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

/// A connection, transaction or pool of the caller's, which [`Store::on`] runs the
/// protocol on. Implemented for the types in the table of
/// [`connection`](crate::connection).
///
/// [`Store::on`]: crate::Store::on
pub trait IntoExecutor {
    /// The executor that runs statements on it.
    type Executor: Executor;

    /// Wraps it; nothing is sent.
    fn into_executor(self) -> Self::Executor;
}

/// A value only the guard can make. A [`Lend`] method that takes one can be written by
/// any pool, and called by the guard alone: beginning a lent connection's transaction
/// and holding its commits are what a fenced transaction's proof rests on.
///
/// So a caller holding a fenced transaction's connection (`tx.store().backend()`)
/// cannot send a `COMMIT` ahead of its next statement as a `BEGIN`, or let the held
/// commits of a [`DeferredTransaction`](crate::DeferredTransaction) go:
///
/// ```compile_fail
/// # #[cfg(not(feature = "postgres"))] compile_error!("needs the postgres feature");
/// # #[cfg(feature = "postgres")]
/// use fenced_guard::{GuardOnly, Lend, Postgres};
///
/// # #[cfg(feature = "postgres")]
/// fn commit_around(lent: &<Postgres as Lend>::Lent) {
///     let _ = Postgres::begin(lent, "COMMIT", GuardOnly(()));
/// }
/// ```
#[derive(Debug)]
pub struct GuardOnly(());

impl GuardOnly {
    pub(crate) const TOKEN: GuardOnly = GuardOnly(());
}

/// A guard's pool that can lend one of its connections for a
/// [`FencedTransaction`](crate::FencedTransaction).
///
/// A lent connection that is not given back (a transaction dropped without commit or
/// rollback, a cancelled statement) is closed: the server rolls its transaction back.
pub trait Lend: Backend {
    /// One connection of the pool, held for a transaction.
    type Lent: InTransaction + Send + Sync;

    /// Takes a connection from the pool.
    fn lend(&self) -> impl Future<Output = Result<Self::Lent>> + Send;

    /// Returns a connection with no transaction open to the pool.
    fn give_back(lent: Self::Lent);

    /// Begins the transaction on `lent` with `begin`
    /// ([`dialect::begin`](crate::dialect::begin)). The default sends it and waits for
    /// its answer; PostgreSQL's pool sends it with the transaction's first statement
    /// instead, pipelined, so that beginning costs no round trip of its own, and
    /// SQLite's runs it in the same call as that statement: an error of `begin` is then
    /// that statement's error.
    fn begin(
        lent: &Self::Lent,
        begin: &'static str,
        _: GuardOnly,
    ) -> impl Future<Output = Result<()>> + Send {
        lent.execute_batch(begin)
    }

    /// Bounds the transaction on `lent` by `deadline` (`timeout` after it began):
    /// past it, every statement but the transaction's end fails with
    /// [`Error::TransactionTimedOut`] unsent. Where the database can, it ends the
    /// transaction itself at the deadline. The default does nothing: the
    /// [`Fenced`](crate::Fenced) then checks its own statements only.
    fn bound(lent: &Self::Lent, deadline: Instant, timeout: Duration) {
        let _ = (lent, deadline, timeout);
    }

    /// Whether [`bound`](Lend::bound) makes the lent connection itself refuse, unsent,
    /// every statement past the deadline but those of `execute_batch`, which runs the
    /// transaction's own `BEGIN`, `COMMIT` and `ROLLBACK`. The
    /// [`Fenced`](crate::Fenced) then leaves that check of its statements to the
    /// connection, and the clock is read once per statement rather than twice. `false`
    /// (the default): the `Fenced` checks them itself.
    const BOUNDS_STATEMENTS: bool = false;

    /// A mark of the transaction open on `lent` that moves once that transaction ends,
    /// read without a query; `None` (the default) where the pool keeps none.
    ///
    /// A fenced transaction reads it once its lease is checked and locked (a deferred
    /// one, once begun, its commits held). While the mark has not moved, a statement
    /// runs in that very transaction, whose lock (or held commits) already fences it,
    /// so a check of the lease sent before the statement (SQLite's) is skipped, and so
    /// is asking the driver whether a transaction is open; once it has moved, every
    /// statement checks the lease again. A pool that returns `Some` must move it on
    /// every end of a transaction, however caused.
    fn transaction_mark(lent: &Self::Lent) -> Option<u64> {
        let _ = lent;
        None
    }

    /// Whether [`hold_commits`](Lend::hold_commits) keeps every commit of the
    /// transaction on a lent connection out but the guard's own. A
    /// [`DeferredTransaction`](crate::DeferredTransaction) takes its lease's lock with
    /// its fenced write only on such a pool, which must keep a
    /// [mark](Lend::transaction_mark) too; on any other (the default, `false`) it takes
    /// it first, as [`Store::transaction`](crate::Store::transaction) does.
    const HOLDS_COMMITS: bool = false;

    /// While `held`, nothing sent on `lent` commits its transaction: a statement that
    /// could end it is refused unsent ([`Error::StatementRefused`]), or its commit is
    /// turned into a rollback. The guard holds commits while a deferred transaction's
    /// lease is not yet checked, and lets them go just before its own `COMMIT` or
    /// `ROLLBACK`. Only read where [`HOLDS_COMMITS`](Lend::HOLDS_COMMITS); the default
    /// does nothing.
    fn hold_commits(lent: &Self::Lent, held: bool, _: GuardOnly) {
        let _ = (lent, held);
    }
}
