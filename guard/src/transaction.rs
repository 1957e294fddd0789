//! Fenced transactions: several statements, on any tables, committed only while a
//! lease holds.
//!
//! A fenced write is one statement on the lease's own row. A report with its lines, a
//! result with its outbox message, a repair of three tables need a transaction instead.
//! Its first statement checks the lease (key, generation, owner, unexpired by the
//! database's clock, current recovery epoch) and locks the lease's row until the
//! transaction ends. A successor's acquisition needs that row, so it cannot happen
//! while the transaction is open: everything the transaction writes, on any table,
//! commits before the next generation exists, or not at all.
//!
//! The lock, not the clock, fences what follows the check: a lease that expires while
//! its transaction is open still commits, since no successor could acquire meanwhile.
//! What bounds the transaction is a timeout its caller sets.
//!
//! Three ways to have one:
//! - [`Store::transaction`] on the guard's own pool: it begins, checks, and
//!   [commits](FencedTransaction::commit) within the timeout given.
//! - [`Store::deferred_transaction`] on the guard's own pool: the check-and-lock is the
//!   transaction's own fenced write of the lease's row, or its commit's; see
//!   [Deferred transactions](#deferred-transactions).
//! - [`Store::fence`] inside a transaction the caller opened on their own connection
//!   ([`Store::on`]); the caller commits, and bounds it.
//!
//! # What the lock costs
//!
//! While the transaction is open, the lease's row is locked: a successor's acquisition,
//! and this lease's own renewal from another connection (a [`Keeper`](crate::Keeper)),
//! wait for it to end. Keep a fenced transaction well within the lease's ttl. What a
//! waiting acquirer sees:
//! - PostgreSQL and SQL Server: its `UPDATE` waits for the row, then reads it as the
//!   transaction left it; bound the wait with the acquirer's own `lock_timeout` /
//!   `SET LOCK_TIMEOUT` if needed.
//! - SQLite: the write lock is the database's; another connection's write waits for its
//!   busy timeout, then fails with `SQLITE_BUSY`.
//!
//! The lock also holds the epoch, shared: an [`advance_epoch`](Store::advance_epoch)
//! waits for every open fenced transaction, and a transaction whose snapshot is older
//! than an advance cannot pass the check. PostgreSQL locks the epoch's row `FOR SHARE`
//! (an old snapshot fails with a serialization error); SQL Server takes the epoch's
//! application lock shared (`sp_getapplock`, which an advance takes exclusively) and
//! refuses a caller's `SNAPSHOT` transaction (error 51002), where [`Store::transaction`]
//! begins `READ COMMITTED`; SQLite's single writer has it anyway.
//!
//! [`Store::transaction`]'s timeout bounds the whole transaction, every statement
//! included ([`Fenced::store`]'s too): past it, each fails with
//! [`Error::TransactionTimedOut`] unsent, and the commit rolls back instead. On
//! PostgreSQL the server enforces it as well: with the transaction's first statement,
//! and again once a tenth of the timeout has passed, pipelined with the statement, the
//! transaction's `statement_timeout` and `idle_in_transaction_session_timeout` are set
//! to the time left, so a holder that hangs, or keeps writing, is disconnected at most a
//! tenth of the timeout past the deadline and its transaction rolled back. SQL Server
//! and SQLite have no such setting, so the guard ends the transaction itself at the
//! deadline: on SQL Server it closes the connection (the server rolls back, cancelling
//! a statement still running); on SQLite it interrupts a running statement and rolls
//! back. Either way a holder that hangs holds the lock no longer than the timeout. In
//! the caller's own transaction ([`Store::fence`]), the caller bounds it.
//!
//! # What a `Fenced` refuses
//!
//! [`Store::fence`] takes only an [`InTransaction`] executor: a pool does not compile,
//! and a connection with no transaction open is [`Error::NotInTransaction`]. A
//! [`Fenced`]'s statements are read by their database's lexer before they are sent:
//! transaction control, and a write naming the lease's table, its epoch table or its
//! operations table, or another fenced table
//! ([`FencedTable::protected_tables`](crate::FencedTable::protected_tables)), are
//! [`Error::StatementRefused`]. The lock is what fences them, so
//! a statement that ended the transaction would leave every later one unfenced; on
//! rusqlite each statement first checks that its transaction is still open (on the
//! guard's pool, by the lent connection's count of ended transactions while it stands).
//!
//! Behind the lock, every statement that can write checks the lease again as part of
//! itself: key, generation, owner and current epoch of the lease's row (on PostgreSQL
//! in its `WITH` clause, on SQLite in a query just before it, in its transaction). On
//! SQL Server every statement checks, in its batch, that its transaction still holds
//! the application lock the check-and-lock took once it had locked the row, named for
//! that lock alone: a transaction begun again holds none. Should the transaction have
//! ended under the `Fenced` (a `COMMIT` sent around it on the caller's own handle or
//! through [`Store::backend`], an [`InTransaction`] executor that has no transaction),
//! a stale holder's statement still fails, [`Error::NotInTransaction`], and writes
//! nothing. On PostgreSQL a statement that can write and cannot take a `WITH` clause
//! (`CALL`, `DO`, `COPY`, DDL) is refused. A function that writes, called from a plain
//! `SELECT`, is not seen as a write.
//!
//! On the guard's own pool ([`Store::transaction`]) PostgreSQL and SQLite spare that
//! check while the transaction is provably the one the lease was locked in: the lent
//! connection counts what could have ended it ([`Lend::transaction_mark`]: on SQLite
//! every commit and rollback, by SQLite's own hooks; on PostgreSQL every batch and
//! every statement beginning with a word that controls a transaction, the only ways a
//! transaction block ends there). Until that count moves, the row lock fences each
//! statement, which is sent as written; from then on, each checks the lease itself.
//! SQL Server, where an error can roll a transaction back by itself, checks every time.

//!
//! # Deferred transactions
//!
//! A transaction that ends by publishing (or updating) the lease's row sends a
//! statement that checks the lease and locks the row anyway: the write. A
//! [`DeferredTransaction`] makes that write its check-and-lock, holding the epoch's row
//! shared as the check does, and sends no statement of its own: on PostgreSQL its
//! `BEGIN` and the server's bound go with its first statement, so it waits for one round
//! trip fewer than a plain transaction, and costs the server what one does and the
//! bound's `SET LOCAL`s and the epoch's share lock.
//!
//! ```no_run
//! # async fn run(store: &fenced_guard::Store<fenced_guard::Postgres>, lease: &fenced_guard::Lease) -> fenced_guard::Result<()> {
//! use fenced_guard::{Outcome, Value};
//!
//! let Some(tx) = store.deferred_transaction(lease, std::time::Duration::from_secs(5)).await? else {
//!     return Ok(()); // revoked
//! };
//! tx.execute("INSERT INTO report_line (report, line) VALUES ($1, $2)", &[
//!     lease.key().into(),
//!     "line 1".into(),
//! ])
//! .await?;
//! // The lock. Refused: the lease was lost, or this generation already published.
//! if tx.publish(&[("payload", Value::from("the report"))]).await? == Outcome::Refused {
//!     return tx.rollback().await;
//! }
//! tx.commit().await?; // `Applied`: the lines and the publication landed
//! # Ok(()) }
//! ```
//!
//! What it writes before the lock commits only with the lock: until then the pool holds
//! the transaction's commits ([`Lend::hold_commits`]; a `COMMIT` sent around the guard
//! is refused, and on SQLite any commit is turned into a rollback), and
//! [`commit`](DeferredTransaction::commit) checks and locks the lease itself when no
//! fenced write of the transaction did, rolling back instead when it no longer holds
//! (`Outcome::Refused`).
//! The price: a stale holder learns that it is stale at its fenced write or its commit,
//! not at its first statement, and until then its statements may wait for, or hold,
//! rows a successor writes (within the transaction's timeout). SQL Server's pool holds
//! no commits: there it locks first, as [`Store::transaction`] does.
//!
//! # Operation ids
//!
//! A transaction whose commit acknowledgement is lost (a connection cut, a timeout)
//! may or may not have committed. [`Fenced::record`], called first, records an
//! operation id in the outcomes table inside the transaction: it commits with the
//! transaction's writes or not at all, so [`Store::resolve`] then tells whether they
//! landed, and a retry with the same id finds
//! [`OperationOutcome::AlreadyApplied`] and rolls back instead of writing twice:
//!
//! ```no_run
//! # async fn run(store: &fenced_guard::Store<fenced_guard::Postgres>, lease: &fenced_guard::Lease, op: uuid::Uuid) -> fenced_guard::Result<()> {
//! use fenced_guard::OperationOutcome;
//!
//! let Some(tx) = store.transaction(lease, std::time::Duration::from_secs(5)).await? else {
//!     return Ok(()); // the lease is gone
//! };
//! match tx.record(op).await? {
//!     OperationOutcome::Applied => {
//!         tx.execute("INSERT INTO report_line (report, line) VALUES ($1, $2)", &[
//!             lease.key().into(),
//!             "line 1".into(),
//!         ])
//!         .await?;
//!         tx.commit().await?; // on an error here: `store.resolve(op)`
//!     }
//!     // An earlier attempt committed; or the lease no longer holds.
//!     OperationOutcome::AlreadyApplied { .. } | OperationOutcome::Refused => {
//!         tx.rollback().await?
//!     }
//! }
//! # Ok(()) }
//! ```

use std::ops::Deref;
use std::time::{Duration, Instant};

use crate::dialect;
use crate::dialect::recheck::Recheck;
use crate::error::{Error, Result};
pub use crate::executor::Lend;
use crate::executor::{Executor, GuardOnly, InTransaction};
use crate::lease::{AsLease, Lease};
use crate::operation::{OperationOutcome, Resolution};
use crate::outcome::Outcome;
use crate::store::Store;
use crate::trace;
use crate::value::Value;

mod deferred;
pub use deferred::DeferredTransaction;

/// A transaction in which a lease was checked and its row locked, or, in a
/// [`DeferredTransaction`], will be before anything of it commits: the proof a fenced
/// transaction's statements need. Its statements run on the transaction's connection.
///
/// Made by [`Store::fence`] (the caller's transaction), [`Store::transaction`] (the
/// guard's pool, as the [`FencedTransaction`] that derefs to it) or
/// [`Store::deferred_transaction`] (as the [`DeferredTransaction`] that derefs to it).
#[derive(Debug)]
pub struct Fenced<'l, E> {
    store: Store<E>,
    lease: &'l Lease,
    /// When a transaction of the guard's pool times out; `None` in the caller's own.
    deadline: Option<(Instant, Duration)>,
    /// Whether the lent connection itself refuses every statement past the deadline
    /// ([`Lend::BOUNDS_STATEMENTS`]): each statement's check of the clock is then left
    /// to it. The commit is checked here either way.
    statements_bounded: bool,
    /// How to read the pool's [transaction mark](Lend::transaction_mark), and what it
    /// read once the lease was locked; `None` in the caller's own transaction.
    mark: Option<(ReadMark<E>, u64)>,
    /// SQL Server: the name of the application lock the check-and-lock took in this
    /// transaction, which each statement's check asks for ([`dialect::still_fenced`]).
    lock_name: Option<uuid::Uuid>,
}

/// Reads a lent connection's [transaction mark](Lend::transaction_mark).
type ReadMark<E> = fn(&E) -> Option<u64>;

impl<'l, E: Executor> Fenced<'l, E> {
    /// The lease checked.
    pub fn lease(&self) -> &'l Lease {
        self.lease
    }

    /// The store on the transaction's connection, for the protocol's writes on the
    /// lease's own table ([`Store::update`], [`Store::publish`] and the others) inside
    /// the transaction.
    pub fn store(&self) -> &Store<E> {
        &self.store
    }

    /// [`Error::TransactionTimedOut`] once a transaction of the guard's pool has outlived
    /// its timeout.
    fn in_time(&self) -> Result<()> {
        match self.deadline {
            Some((deadline, timeout)) if Instant::now() >= deadline => {
                Err(Error::TransactionTimedOut { timeout })
            }
            _ => Ok(()),
        }
    }

    /// [`in_time`](Fenced::in_time) for a statement, unless the lent connection checks
    /// its statements itself: one read of the clock per statement, not two.
    fn statement_in_time(&self) -> Result<()> {
        if self.statements_bounded {
            return Ok(());
        }
        self.in_time()
    }

    /// Why a statement finds its transaction ended: the timeout, when the pool ended
    /// the transaction at the deadline (SQLite's rollback), else its end.
    fn has_ended(&self) -> Error {
        match self.in_time() {
            Err(timed_out) => timed_out,
            Ok(()) => Error::NotInTransaction(
                "the fenced transaction has ended: its statements would run unfenced",
            ),
        }
    }

    /// Runs a statement, on any table but those only the guard writes, inside the
    /// transaction, with `params` bound; returns the number of rows it changed.
    ///
    /// Refused before it is sent ([`Error::StatementRefused`]): a statement that
    /// controls the transaction (`COMMIT`, `ROLLBACK`, `BEGIN`, `END`, savepoints),
    /// whose lock fences every statement in it, and one that names the lease's table,
    /// its epoch table or its operations table and can write (write the lease's table
    /// through [`store`](Fenced::store)); on PostgreSQL, one that can write and cannot
    /// take a `WITH` clause. Where the driver tells whether the transaction is still
    /// open (rusqlite), that is checked first, unless the pool's count of ended
    /// transactions already shows it open. A statement that can write checks, as
    /// part of itself, that the lease's row still carries the lease (on SQL Server,
    /// every statement, that its transaction still holds the lock it took; see
    /// [What a `Fenced` refuses](crate::transaction#what-a-fenced-refuses)).
    ///
    /// # Errors
    ///
    /// [`Error::StatementRefused`]; [`Error::NotInTransaction`] when the transaction
    /// has ended; [`Error::TransactionTimedOut`] past the timeout of
    /// [`Store::transaction`] (nothing is sent); any database error. The transaction is
    /// then in the state the database leaves it in: on PostgreSQL, aborted until
    /// rolled back.
    pub async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        let checked = self.checked(sql, params).await?;
        let (sql, params) = checked.as_ref().map_or((sql, params), |(s, p)| (s, p));
        self.store
            .backend()
            .execute(sql, params)
            .await
            .map_err(ended)
    }

    /// Runs a statement inside the transaction and returns its first row.
    ///
    /// # Errors
    ///
    /// As for [`execute`](Fenced::execute), whose refusals it shares.
    pub async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        let checked = self.checked(sql, params).await?;
        let (sql, params) = checked.as_ref().map_or((sql, params), |(s, p)| (s, p));
        self.store
            .backend()
            .query_row(sql, params)
            .await
            .map_err(ended)
    }

    /// Records operation id `op` in the outcomes table inside the transaction, so that
    /// it commits with the transaction's writes or not at all; see
    /// [Operation ids](crate::transaction#operation-ids). Call it first, before the
    /// transaction's writes: [`OperationOutcome::AlreadyApplied`] means an earlier
    /// attempt with `op` committed, and this transaction must roll back rather than
    /// write a second time.
    ///
    /// [`OperationOutcome::Refused`]: the lease's row no longer carries the lease (the
    /// transaction ended under the `Fenced`); nothing was recorded. A concurrent attempt
    /// with the same `op` that has not committed yet is waited for, as its lock
    /// requires.
    ///
    /// # Errors
    ///
    /// [`Error::OperationReused`] when `op` was applied to another key;
    /// [`Error::NotInTransaction`] when the transaction has ended;
    /// [`Error::TransactionTimedOut`] past the timeout of [`Store::transaction`]; any
    /// database error.
    pub async fn record(&self, op: uuid::Uuid) -> Result<OperationOutcome> {
        self.statement_in_time()?;
        if self.store.backend().transaction_open() == Some(false) {
            return Err(self.has_ended());
        }
        let params = [
            Value::Uuid(op),
            Value::from(self.lease.key()),
            Value::I64(self.lease.generation()),
            Value::Uuid(self.lease.owner()),
        ];
        let sql = &self.store.statements().record_in_transaction;
        let recorded = match self.store.backend().execute(sql, &params).await {
            Ok(rows) => rows == 1,
            // SQL Server without its lock hints (Babelfish): two attempts raced to the
            // key, and the other committed.
            Err(error) if crate::operation::is_unique_violation(&error) => false,
            Err(error) => return Err(ended(error)),
        };
        if recorded {
            return Ok(OperationOutcome::Applied);
        }
        Ok(match self.store.resolve_on(op, self.lease).await? {
            Resolution::Applied { generation } => OperationOutcome::AlreadyApplied { generation },
            Resolution::NotApplied => OperationOutcome::Refused,
        })
    }

    /// Whether the pool's mark says the transaction is still the one the lease was
    /// checked and locked in.
    fn in_the_locked_transaction(&self) -> bool {
        self.mark
            .is_some_and(|(read, locked)| read(self.store.backend()) == Some(locked))
    }

    /// The checks every caller statement passes before it is sent, and the statement as
    /// it is sent: where it carries its own check of the lease ([`dialect::recheck`]),
    /// its new text with the lease's parameters after the caller's. On SQLite the check
    /// runs here, just before the statement.
    #[allow(clippy::type_complexity)]
    async fn checked(&self, sql: &str, params: &[Value]) -> Result<Option<(String, Vec<Value>)>> {
        self.statement_in_time()?;
        let dialect = self.store.dialect();
        let table = self.store.table();
        let reading = dialect::reading::read(dialect, sql, self.store.shared_table());
        if let Some(reason) = reading.refusal {
            return Err(Error::StatementRefused { reason });
        }
        // The transaction the lease was locked in, by the pool's own count: its lock
        // fences the statement. The count moves on every end of a transaction, so
        // while it stands the transaction is open, and the driver need not be asked.
        let locked = self.in_the_locked_transaction();
        if !locked && self.store.backend().transaction_open() == Some(false) {
            return Err(self.has_ended());
        }
        let lease = || {
            [
                Value::from(self.lease.key()),
                Value::I64(self.lease.generation()),
                Value::Uuid(self.lease.owner()),
            ]
        };
        match dialect::recheck::recheck(dialect, table, sql, reading.shape, params.len(), locked)
            .map_err(|reason| Error::StatementRefused { reason })?
        {
            Recheck::Unneeded => Ok(None),
            Recheck::Before => {
                let check = &self.store.statements().still_fenced;
                match self.store.backend().query_row(check, &lease()).await? {
                    Some(_) => Ok(None),
                    None => Err(Error::NotInTransaction(LEASE_LOST)),
                }
            }
            Recheck::Within(checked) => {
                let mut all = Vec::with_capacity(params.len() + 3);
                all.extend_from_slice(params);
                match self.lock_name {
                    Some(name) => all.push(Value::Uuid(name)),
                    None => all.extend(lease()),
                }
                Ok(Some((checked, all)))
            }
        }
    }
}

/// The name of the application lock a check-and-lock takes on SQL Server, drawn anew
/// for each: a transaction holds it only if the lock passed in that very transaction.
/// `None` elsewhere.
fn lock_name(dialect: dialect::Dialect) -> Option<uuid::Uuid> {
    (dialect == dialect::Dialect::Mssql).then(uuid::Uuid::new_v4)
}

/// Who began the transaction a lease is checked and locked in: which check-and-lock
/// statement it takes ([`dialect::lock_after_begin`] or [`dialect::lock`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Begun {
    /// [`Store::transaction`], with [`dialect::begin`].
    ByGuard,
    /// The caller, on their own connection ([`Store::fence`]).
    ByCaller,
}

/// Why a statement whose own check found the lease gone was not run.
const LEASE_LOST: &str =
    "the lease's row no longer carries the lease: the fenced transaction ended";

/// A statement's own check that its fenced transaction is still open, and its lease's
/// row still carries the lease (SQL Server's errors 51000 and 51001, PostgreSQL's
/// missing relation named for it), as the error it means.
fn ended(error: Error) -> Error {
    match error.database_code().as_deref() {
        Some("51000") => Error::NotInTransaction(
            "the fenced transaction has ended: its statements would run unfenced",
        ),
        Some("51001") => Error::NotInTransaction(LEASE_LOST),
        Some("42P01") if error.to_string().contains(dialect::LEASE_LOST) => {
            Error::NotInTransaction(LEASE_LOST)
        }
        _ => error,
    }
}

/// A fenced transaction on a connection of the guard's pool ([`Store::transaction`]).
///
/// Derefs to [`Fenced`], whose methods run statements inside it. Ends with
/// [`commit`](FencedTransaction::commit) or [`rollback`](FencedTransaction::rollback);
/// dropped without either (a cancellation, a panic, an early return), its connection is
/// closed and the server rolls it back.
#[derive(Debug)]
pub struct FencedTransaction<'l, B: Lend> {
    fenced: Fenced<'l, B::Lent>,
}

impl<'l, B: Lend> Deref for FencedTransaction<'l, B> {
    type Target = Fenced<'l, B::Lent>;

    fn deref(&self) -> &Self::Target {
        &self.fenced
    }
}

impl<B: Lend> FencedTransaction<'_, B> {
    /// Commits, within the timeout the transaction was begun with.
    ///
    /// # Errors
    ///
    /// [`Error::TransactionTimedOut`] past the timeout: the transaction was rolled back
    /// instead. Any database error: the connection is then closed, which rolls back an
    /// open transaction; after an error of the commit itself the outcome is unknown, as
    /// for any statement whose answer is lost.
    pub async fn commit(self) -> Result<()> {
        let lease = self.fenced.lease;
        let span = trace::step(
            "commit",
            self.fenced.store.table(),
            lease.key(),
            Some(lease.generation()),
        );
        trace::traced(span, self.end(Ending::Commit)).await
    }

    /// Rolls back: nothing of the transaction is written.
    ///
    /// # Errors
    ///
    /// Any database error; the connection is then closed, which rolls back as well.
    pub async fn rollback(self) -> Result<()> {
        self.end(Ending::Rollback).await
    }

    /// [`end_lent`]'s own future, not one that awaits it: a future more in every commit
    /// cost instructions a transaction.
    fn end(self, ending: Ending) -> impl Future<Output = Result<()>> {
        end_lent::<B>(self.fenced, ending)
    }
}

/// Ends a transaction on a lent connection as asked, except that a commit past the
/// deadline rolls back and fails; then gives the connection back. One future for every
/// ending: a commit that awaited a rollback of its own would hold the transaction, and
/// a statement's future, twice.
async fn end_lent<B: Lend>(fenced: Fenced<'_, B::Lent>, ending: Ending) -> Result<()> {
    let timed_out = match ending {
        Ending::Commit => fenced.in_time().err(),
        Ending::Rollback => None,
    };
    let dialect = fenced.store.dialect();
    let statement = match (ending, &timed_out) {
        (Ending::Commit, None) => dialect::commit(dialect),
        _ => dialect::rollback(dialect),
    };
    let store = fenced.store;
    let ended = store.backend().execute_batch(statement).await;
    // A connection whose ending failed is dropped, not given back: closing it rolls
    // back what is still open (on PostgreSQL the server may have ended the session
    // already).
    if ended.is_ok() {
        B::give_back(store.into_executor());
    }
    match timed_out {
        Some(timed_out) => Err(timed_out),
        None => ended,
    }
}

/// How [`FencedTransaction::end`] was asked to end the transaction.
#[derive(Clone, Copy)]
enum Ending {
    Commit,
    Rollback,
}

impl<B: InTransaction> Store<B> {
    /// Checks that `lease` holds (as a fenced write does: key, generation, owner,
    /// unexpired by the database's clock, current epoch) and locks its row until the
    /// enclosing transaction ends; see [`crate::transaction`].
    ///
    /// Call it first in a transaction the caller opened on their own connection, on the
    /// store [`Store::on`] made for it (which it takes); every statement of the
    /// transaction is then fenced by it, on any table. `None` means the lease no longer
    /// holds: roll the transaction back.
    ///
    /// It takes only a transaction ([`InTransaction`]): a tokio-postgres or sqlx
    /// `Transaction`, a rusqlite connection with a transaction open, a tiberius client
    /// after `BEGIN TRANSACTION`. Outside a transaction the lock would end with the
    /// statement and fence nothing, so a pool does not compile and a connection with
    /// no transaction open is refused:
    ///
    /// ```compile_fail
    /// # #[cfg(not(feature = "postgres"))] compile_error!("needs the postgres feature");
    /// # #[cfg(feature = "postgres")]
    /// # async fn run(store: fenced_guard::Store<fenced_guard::Postgres>, lease: &fenced_guard::Lease) {
    /// let on_the_pool = store.fence(lease).await; // a pool is no transaction
    /// # }
    /// ```
    ///
    /// ```compile_fail
    /// # #[cfg(not(feature = "postgres"))] compile_error!("needs the postgres feature");
    /// # #[cfg(feature = "postgres")]
    /// # async fn run(store: &fenced_guard::Store<fenced_guard::Postgres>, client: &fenced_guard::tokio_postgres::Client, lease: &fenced_guard::Lease) -> fenced_guard::Result<()> {
    /// let on_the_client = store.on(client)?.fence(lease).await?; // take `client.transaction()`
    /// # Ok(()) }
    /// ```
    ///
    /// A tokio-postgres transaction is taken by `&mut`, so that nothing can send
    /// `COMMIT` through it around the `Fenced` (`store.on(&mut tx)`):
    ///
    /// ```compile_fail
    /// # #[cfg(not(feature = "postgres"))] compile_error!("needs the postgres feature");
    /// # #[cfg(feature = "postgres")]
    /// # async fn run(store: &fenced_guard::Store<fenced_guard::Postgres>, client: &mut fenced_guard::tokio_postgres::Client, lease: &fenced_guard::Lease) -> fenced_guard::Result<()> {
    /// let tx = client.transaction().await.unwrap();
    /// let shared = store.on(&tx)?.fence(lease).await?; // `&mut tx`
    /// tx.batch_execute("COMMIT").await.unwrap(); // what a shared borrow would allow
    /// # Ok(()) }
    /// ```
    ///
    /// ```compile_fail
    /// # #[cfg(not(feature = "postgres"))] compile_error!("needs the postgres feature");
    /// # #[cfg(feature = "postgres")]
    /// # async fn run(store: &fenced_guard::Store<fenced_guard::Postgres>, client: &mut fenced_guard::tokio_postgres::Client, lease: &fenced_guard::Lease) -> fenced_guard::Result<()> {
    /// let mut tx = client.transaction().await.unwrap();
    /// let fenced = store.on(&mut tx)?.fence(lease).await?;
    /// tx.batch_execute("COMMIT").await.unwrap(); // `tx` is borrowed by `fenced`
    /// drop(fenced);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::NotInTransaction`] on a connection with no transaction open (nothing is
    /// sent where the driver tells; on SQL Server the statement checks `@@TRANCOUNT`
    /// itself); [`Error::KeyType`]; any database error.
    pub async fn fence<'l>(
        self,
        lease: &'l (impl AsLease + ?Sized),
    ) -> Result<Option<Fenced<'l, B>>> {
        let lease = lease.as_lease();
        if self.backend().transaction_open() == Some(false) {
            return Err(Error::NotInTransaction(
                "a fence needs a transaction open on the connection",
            ));
        }
        let span = trace::step("fence", self.table(), lease.key(), Some(lease.generation()));
        let lock_name = lock_name(self.dialect());
        let locked = trace::traced(span, self.lock_row(lease, Begun::ByCaller, lock_name))
            .await
            .map_err(|error| match error.database_code().as_deref() {
                Some("51000") => {
                    Error::NotInTransaction("a fence needs a transaction open on the connection")
                }
                _ => error,
            })?;
        Ok(match locked {
            Outcome::Applied => Some(Fenced {
                store: self,
                lease,
                deadline: None,
                statements_bounded: false,
                mark: None,
                lock_name,
            }),
            Outcome::Refused => None,
        })
    }
}

impl<B: Executor> Store<B> {
    /// Begins a transaction on a connection of the guard's pool, checks `lease` and
    /// locks its row ([`Store::fence`]); see [`crate::transaction`]. `None` means the
    /// lease no longer holds: the transaction was rolled back and the connection given
    /// back.
    ///
    /// On PostgreSQL the `BEGIN`, the server's bound and the check go out together and
    /// cost one round trip, as a plain transaction's `BEGIN` does.
    ///
    /// `timeout` bounds how long the transaction may stay open, and so how long a
    /// successor may wait for the row: past it, a statement or the commit rolls back
    /// and fails, and on PostgreSQL the server itself ends a transaction that stays open
    /// longer.
    ///
    /// # Errors
    ///
    /// [`Error::KeyType`]; [`Error::Config`] for a zero timeout; any database error,
    /// including a pool timeout.
    pub async fn transaction<'l>(
        &self,
        lease: &'l (impl AsLease + ?Sized),
        timeout: Duration,
    ) -> Result<Option<FencedTransaction<'l, B>>>
    where
        B: Lend,
    {
        let lease = lease.as_lease();
        if !self.admit_transaction(lease, timeout)? {
            return Ok(None);
        }
        // Lent and begun here, not in a function shared with `deferred_transaction`: a
        // future awaited inside this one cost a SQLite transaction 1,500 instructions
        // (3.7%, counted by `fenced-bench count`).
        let deadline = crate::wait::saturating_add(Instant::now(), timeout);
        let lent = self.backend().lend().await?;
        B::bound(&lent, deadline, timeout);
        B::begin(&lent, dialect::begin(self.dialect()), GuardOnly::TOKEN).await?;
        let mut fenced = self.begun(lent, lease, (deadline, timeout));
        let span = trace::step(
            "transaction",
            self.table(),
            lease.key(),
            Some(lease.generation()),
        );
        let locked = fenced
            .store
            .lock_row(lease, Begun::ByGuard, fenced.lock_name);
        match trace::traced(span, locked).await? {
            Outcome::Applied => {
                let read: ReadMark<B::Lent> = B::transaction_mark;
                fenced.mark = read(fenced.store.backend()).map(|locked| (read, locked));
                Ok(Some(FencedTransaction { fenced }))
            }
            Outcome::Refused => {
                end_lent::<B>(fenced, Ending::Rollback).await?;
                Ok(None)
            }
        }
    }

    /// The checks before a transaction of the guard's pool is begun; `false` for a
    /// lease revoked locally, for which none is.
    fn admit_transaction(&self, lease: &Lease, timeout: Duration) -> Result<bool> {
        self.no_procedure("a fenced transaction")?;
        self.check_key(lease.key())?;
        if timeout.is_zero() {
            return Err(Error::Config(
                "a fenced transaction's timeout must not be zero".into(),
            ));
        }
        Ok(!lease.is_revoked())
    }

    /// The transaction just begun on `lent`, bounded by `deadline`, its lease not
    /// checked yet.
    fn begun<'l>(
        &self,
        lent: B::Lent,
        lease: &'l Lease,
        (deadline, timeout): (Instant, Duration),
    ) -> Fenced<'l, B::Lent>
    where
        B: Lend,
    {
        Fenced {
            store: self.with_executor(lent),
            lease,
            deadline: Some((deadline, timeout)),
            statements_bounded: B::BOUNDS_STATEMENTS,
            mark: None,
            lock_name: lock_name(self.dialect()),
        }
    }

    /// The check-and-lock statement: `Applied` when the lease holds and its row is now
    /// locked. On SQL Server it also takes the transaction's own lock, named
    /// `lock_name` ([`lock_name`]).
    pub(crate) async fn lock_row(
        &self,
        lease: &Lease,
        begun: Begun,
        lock_name: Option<uuid::Uuid>,
    ) -> Result<Outcome> {
        self.no_procedure("a fenced transaction")?;
        self.check_key(lease.key())?;
        if lease.is_revoked() {
            return Ok(Outcome::Refused);
        }
        let mut params = Vec::with_capacity(4);
        params.extend([
            Value::from(lease.key()),
            Value::I64(lease.generation()),
            Value::Uuid(lease.owner()),
        ]);
        params.extend(lock_name.map(Value::Uuid));
        // PostgreSQL's lock, and SQLite's after `BEGIN IMMEDIATE`, are `SELECT`s that
        // return the row; the others `UPDATE` it.
        let statements = self.statements();
        let (sql, returns_row) = match (self.dialect(), begun) {
            (dialect::Dialect::Sqlite, Begun::ByGuard) => (&statements.lock_after_begin, true),
            (dialect::Dialect::Mssql, Begun::ByGuard) => (&statements.lock_after_begin, false),
            (dialect::Dialect::Postgres, _) => (&statements.lock, true),
            _ => (&statements.lock, false),
        };
        let locked = if returns_row {
            self.backend().query_row(sql, &params).await?.is_some()
        } else {
            self.backend().execute(sql, &params).await? == 1
        };
        Ok(if locked {
            Outcome::Applied
        } else {
            Outcome::Refused
        })
    }
}
