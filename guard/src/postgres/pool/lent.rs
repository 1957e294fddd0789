//! A connection of the pool lent for a fenced transaction ([`Lend`]): its `BEGIN` and
//! the server's timeouts pipelined with its first statement, and a count of the
//! statements sent on it that could have ended its transaction.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::connection::Connection;
use super::{Ahead, Postgres, execute_on, query_row_on, query_rows_on};
use crate::dialect::kind::Dialect;
use crate::error::Result;
use crate::executor::{Executor, GuardOnly, InTransaction, Lend};
use crate::pool::control::{commit_held, may_end_a_transaction};
use crate::pool::{Checkout, Deadline};
use crate::value::Value;

/// A connection of a [`Postgres`] pool, lent for a fenced transaction.
#[cfg(feature = "postgres")]
pub struct LentPostgres {
    conn: tokio::sync::Mutex<Checkout<Connection>>,
    deadline: Deadline,
    /// The transaction's `BEGIN` until it is sent, with the next statement.
    begin: std::sync::Mutex<Option<&'static str>>,
    /// When the server's timeouts were last set.
    bounded_at: std::sync::Mutex<Option<Instant>>,
    /// How many statements sent on the connection could have ended its transaction:
    /// every batch, and each statement whose first word controls a transaction
    /// ([`may_end_a_transaction`]).
    may_have_ended: AtomicU64,
    /// Whether every statement that could end the transaction is refused
    /// ([`Lend::hold_commits`]).
    commits_held: AtomicBool,
}

/// How much of a fenced transaction's timeout may pass before the server's timeouts
/// are set again: a tenth. Each statement runs, and each pause between statements
/// lasts, at most the time left when they were last set, so the server ends a
/// transaction at most this late past its deadline.
const REBOUND_AFTER: u32 = 10;

impl std::fmt::Debug for LentPostgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LentPostgres").finish_non_exhaustive()
    }
}

impl Lend for Postgres {
    type Lent = LentPostgres;

    async fn lend(&self) -> Result<LentPostgres> {
        Ok(LentPostgres {
            conn: tokio::sync::Mutex::new(self.checkout().await?),
            deadline: Deadline::default(),
            begin: std::sync::Mutex::new(None),
            bounded_at: std::sync::Mutex::new(None),
            may_have_ended: AtomicU64::new(0),
            commits_held: AtomicBool::new(false),
        })
    }

    fn give_back(lent: LentPostgres) {
        lent.conn.into_inner().give_back();
    }

    /// Each statement reads the time left, and fails past the deadline, before anything
    /// is sent (`ahead_of`).
    const BOUNDS_STATEMENTS: bool = true;

    /// The server ends the transaction at the deadline too, at most a tenth of the
    /// timeout late: the transaction's first statement, and the first after each tenth
    /// of the timeout, is sent after, and pipelined with, a `SET LOCAL` of
    /// `statement_timeout` and `idle_in_transaction_session_timeout` to the time left
    /// (in the same batch as the `BEGIN`),
    /// so neither a long statement nor a pause between statements outlives it by more.
    fn bound(lent: &LentPostgres, deadline: Instant, timeout: Duration) {
        lent.deadline.set(deadline, timeout);
    }

    /// Sent with the transaction's first statement, and the server's timeouts, before
    /// either answer is read: beginning, setting the bound and checking the lease cost
    /// one round trip, as the `BEGIN` of a plain transaction does.
    fn begin(
        lent: &LentPostgres,
        begin: &'static str,
        _: GuardOnly,
    ) -> impl Future<Output = Result<()>> + Send {
        *lent.pending_begin() = Some(begin);
        std::future::ready(Ok(()))
    }

    /// The count of statements sent that could have ended the transaction. Only what
    /// is sent through the connection's executor can end it: PostgreSQL ends a
    /// transaction block only on a statement of its own (`COMMIT`, `ROLLBACK`, `END`,
    /// `ABORT`, `PREPARE TRANSACTION`, and their `AND CHAIN` forms), which no function,
    /// procedure or `DO` block can run inside one, and an error leaves the transaction
    /// aborted, not ended, until such a statement; a session the server ends takes its
    /// connection with it.
    fn transaction_mark(lent: &LentPostgres) -> Option<u64> {
        Some(lent.may_have_ended.load(Ordering::Relaxed))
    }

    /// The same statements that move the [mark](Lend::transaction_mark) are refused
    /// while commits are held: every batch, and each statement whose first word
    /// controls a transaction. Nothing else ends a transaction block.
    const HOLDS_COMMITS: bool = true;

    fn hold_commits(lent: &LentPostgres, held: bool, _: GuardOnly) {
        lent.commits_held.store(held, Ordering::Relaxed);
    }
}

impl InTransaction for LentPostgres {}

impl LentPostgres {
    /// The `BEGIN` not sent yet, if any.
    fn pending_begin(&self) -> std::sync::MutexGuard<'_, Option<&'static str>> {
        self.begin
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The connection, for the statement `sql`, and what is due ahead of it (the
    /// `BEGIN`, the server's timeouts); `sql` counted first if it may end the
    /// transaction ([`Lend::transaction_mark`]), or refused if it may while commits
    /// are held.
    async fn ahead_of(
        &self,
        sql: &str,
    ) -> Result<(
        tokio::sync::MutexGuard<'_, Checkout<Connection>>,
        Ahead<'static>,
    )> {
        let may_end = may_end_a_transaction(sql);
        // Refused before the time left is read: that read marks the server's timeouts
        // as sent with this statement.
        if may_end && self.commits_held.load(Ordering::Relaxed) {
            return Err(commit_held());
        }
        let timeouts = self.time_left()?;
        if may_end {
            self.may_have_ended.fetch_add(1, Ordering::Relaxed);
        }
        let conn = self.conn.lock().await;
        let begin = self.pending_begin().take();
        Ok((conn, Ahead { begin, timeouts }))
    }

    /// [`Error::TransactionTimedOut`] past the deadline; before it, the time left in
    /// milliseconds when the server's timeouts are due to be set (see
    /// [`Lend::bound`]); `None` when they are not, or the transaction is unbounded.
    fn time_left(&self) -> Result<Option<u32>> {
        let now = Instant::now();
        let Some((left, timeout)) = self.deadline.remaining_at(now)? else {
            return Ok(None);
        };
        let mut bounded_at = self
            .bounded_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if bounded_at.is_some_and(|at| now.duration_since(at) < timeout / REBOUND_AFTER) {
            return Ok(None);
        }
        *bounded_at = Some(now);
        // At least 1 ms: 0 would switch the timeouts off.
        let ms = left.as_millis().clamp(1, i32::MAX as u128);
        Ok(Some(u32::try_from(ms).unwrap_or(i32::MAX as u32)))
    }
}

impl Executor for LentPostgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        let (mut conn, ahead) = self.ahead_of(sql).await?;
        execute_on(conn.conn(), sql, params, ahead).await
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        let (mut conn, ahead) = self.ahead_of(sql).await?;
        query_row_on(conn.conn(), sql, params, ahead).await
    }

    async fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let (mut conn, ahead) = self.ahead_of(sql).await?;
        query_rows_on(conn.conn(), sql, params, ahead).await
    }

    /// The transaction's own statements (`BEGIN`, `COMMIT`, `ROLLBACK`): never refused
    /// for the deadline, so that a timed-out transaction can still be rolled back. A
    /// `BEGIN` not sent yet goes first, in the same batch. Refused while commits are
    /// held ([`Lend::hold_commits`]).
    async fn execute_batch(&self, sql: &str) -> Result<()> {
        if self.commits_held.load(Ordering::Relaxed) {
            return Err(commit_held());
        }
        // Any batch may hold a statement that ends the transaction.
        self.may_have_ended.fetch_add(1, Ordering::Relaxed);
        let mut conn = self.conn.lock().await;
        let begin = self.pending_begin().take();
        let client = conn.conn().client();
        match begin {
            Some(begin) => client.batch_execute(&format!("{begin}; {sql}")).await?,
            None => client.batch_execute(sql).await?,
        }
        Ok(())
    }
}
