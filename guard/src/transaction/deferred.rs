//! Deferred transactions: a fenced transaction whose lease is checked, and its row
//! locked, by the transaction's own fenced write of that row, or else at its commit,
//! rather than by a statement of its own first.
//!
//! A transaction that ends by publishing (or updating) the lease's row already sends a
//! statement that checks the lease and locks the row: the write. With the epoch's row
//! held shared in the same statement, that write is the check-and-lock, and the
//! transaction needs no other. What it writes before the lock commits only if the lock
//! passes, since nothing but the guard's own commit can commit it:
//!
//! - the pool holds the transaction's commits until the lease is locked
//!   ([`Lend::hold_commits`]): on PostgreSQL and SQLite a statement that could end the
//!   transaction, sent around the guard (`tx.store().backend()`), is refused, and
//!   SQLite's commit hook turns any commit that still happens into a rollback;
//! - [`DeferredTransaction::commit`] checks and locks the lease first when no fenced
//!   write has, and rolls back instead of committing when it no longer holds.
//!
//! What it gives up against [`Store::transaction`]: until the lock, a successor may
//! acquire, and the stale holder learns it at its fenced write or its commit, not at its
//! first statement; its statements meanwhile may wait for rows the successor writes, or
//! hold rows it waits for, until the transaction ends (within its timeout). On a pool
//! that cannot hold commits ([`Lend::HOLDS_COMMITS`] false: SQL Server's) it takes the
//! lock first, as [`Store::transaction`] does.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{Begun, Ending, Fenced, ReadMark, end_lent, ended};
use crate::dialect;
use crate::error::Result;
use crate::executor::{Executor, GuardOnly, Lend};
use crate::lease::AsLease;
use crate::outcome::Outcome;
use crate::store::{LockingWrite, Store};
use crate::trace;
use crate::value::Value;

/// A fenced transaction on a connection of the guard's pool whose lease is checked and
/// locked by its fenced write of the lease's row
/// ([`update`](DeferredTransaction::update), [`publish`](DeferredTransaction::publish),
/// [`publish_and_release`](DeferredTransaction::publish_and_release)), or else at its
/// [`commit`](DeferredTransaction::commit); made by [`Store::deferred_transaction`].
/// See [the module](crate::transaction#deferred-transactions).
///
/// Derefs to [`Fenced`], whose methods run statements inside it, with the same
/// refusals. Dropped without a commit or a rollback, its connection is closed and the
/// server rolls it back.
#[derive(Debug)]
pub struct DeferredTransaction<'l, B: Lend> {
    fenced: Fenced<'l, B::Lent>,
    /// Whether the lease is checked and its row locked in the transaction.
    locked: AtomicBool,
}

impl<'l, B: Lend> Deref for DeferredTransaction<'l, B> {
    type Target = Fenced<'l, B::Lent>;

    fn deref(&self) -> &Self::Target {
        &self.fenced
    }
}

impl<B: Lend> DeferredTransaction<'_, B> {
    /// Whether the lease has been checked and its row locked in the transaction: by a
    /// fenced write of this transaction's that was applied, or, on a pool that cannot
    /// hold commits, by its first statement.
    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }

    /// [`Store::update`] of the lease's row inside the transaction, holding the epoch's
    /// row shared until it ends: applied, it is the transaction's check-and-lock.
    ///
    /// `Refused`: the lease no longer holds (or was revoked locally); the transaction
    /// will not commit ([`commit`](DeferredTransaction::commit) rolls back).
    ///
    /// # Errors
    ///
    /// As for [`Store::update`]; [`Error::NotInTransaction`](crate::Error::NotInTransaction)
    /// when the transaction has ended; [`Error::TransactionTimedOut`](crate::Error::TransactionTimedOut)
    /// past its timeout (nothing is sent).
    pub async fn update(&self, assignments: &[(&str, Value)]) -> Result<Outcome> {
        self.write("update", LockingWrite::Update, assignments)
            .await
    }

    /// [`Store::publish`] of the lease's row inside the transaction, as
    /// [`update`](DeferredTransaction::update) is: applied, it is the transaction's
    /// check-and-lock. `Refused` means what it means for [`Store::publish`]: where the
    /// lease was lost, the commit will roll back; where this generation had already
    /// published (a retry after a lost acknowledgement), the lease still holds and the
    /// commit would commit the rest, so roll back.
    ///
    /// # Errors
    ///
    /// As for [`update`](DeferredTransaction::update).
    pub async fn publish(&self, assignments: &[(&str, Value)]) -> Result<Outcome> {
        self.write("publish", LockingWrite::Publish, assignments)
            .await
    }

    /// [`Store::publish_and_release`] inside the transaction, as
    /// [`publish`](DeferredTransaction::publish) is. The release commits with the
    /// transaction: until then the row stays locked.
    ///
    /// # Errors
    ///
    /// As for [`update`](DeferredTransaction::update).
    pub async fn publish_and_release(&self, assignments: &[(&str, Value)]) -> Result<Outcome> {
        self.write(
            "publish_and_release",
            LockingWrite::PublishAndRelease,
            assignments,
        )
        .await
    }

    async fn write(
        &self,
        step: &'static str,
        write: LockingWrite,
        assignments: &[(&str, Value)],
    ) -> Result<Outcome> {
        let fenced = &self.fenced;
        fenced.statement_in_time()?;
        // Before the lock, the write must land in the transaction the guard began: the
        // lock it takes is the transaction's. Once locked (or locked first), the write
        // fences itself, as any fenced write does.
        if !self.is_locked() && !fenced.in_the_locked_transaction() {
            return Err(fenced.has_ended());
        }
        let lease = fenced.lease;
        let span = trace::step(
            step,
            fenced.store.table(),
            lease.key(),
            Some(lease.generation()),
        );
        let outcome = trace::traced(span, fenced.store.write_locking(lease, write, assignments))
            .await
            .map_err(ended)?;
        if outcome.is_applied() && !self.is_locked() {
            self.locked.store(true, Ordering::Relaxed);
            // Locked: a commit sent around the guard from now on commits under the
            // lock, as in a transaction locked first.
            B::hold_commits(fenced.store.backend(), false, GuardOnly::TOKEN);
        }
        Ok(outcome)
    }

    /// Commits, if the lease holds: `Applied` when the transaction committed;
    /// `Refused` when no fenced write of the transaction locked the lease and, checked
    /// now, it no longer holds: the transaction was rolled back and nothing of it was
    /// written.
    ///
    /// # Errors
    ///
    /// [`Error::TransactionTimedOut`](crate::Error::TransactionTimedOut) past the
    /// timeout: the transaction was rolled back instead.
    /// [`Error::NotInTransaction`](crate::Error::NotInTransaction) when the
    /// transaction ended before its lease was locked (SQLite rolled it back after an
    /// error): nothing of it was written. Any database error: the connection is then
    /// closed, which rolls back an open transaction; after an error of the commit
    /// itself the outcome is unknown, as for any statement whose answer is lost.
    pub async fn commit(self) -> Result<Outcome> {
        let lease = self.fenced.lease;
        let span = trace::step(
            "commit",
            self.fenced.store.table(),
            lease.key(),
            Some(lease.generation()),
        );
        trace::traced(span, self.end_checked()).await
    }

    /// Rolls back: nothing of the transaction is written.
    ///
    /// # Errors
    ///
    /// Any database error; the connection is then closed, which rolls back as well.
    pub async fn rollback(self) -> Result<()> {
        B::hold_commits(self.fenced.store.backend(), false, GuardOnly::TOKEN);
        end_lent::<B>(self.fenced, Ending::Rollback).await
    }

    /// The commit: the check-and-lock first unless the transaction holds it, then the
    /// guard's `COMMIT`, or a rollback.
    async fn end_checked(self) -> Result<Outcome> {
        let fenced = self.fenced;
        let backend = fenced.store.backend();
        if let Err(timed_out) = fenced.in_time() {
            B::hold_commits(backend, false, GuardOnly::TOKEN);
            // The news is the timeout, not the rollback's own failure: the server, or
            // SQLite's watchdog, may have ended the transaction already.
            let _ = end_lent::<B>(fenced, Ending::Rollback).await;
            return Err(timed_out);
        }
        if !self.locked.load(Ordering::Relaxed) {
            if !fenced.in_the_locked_transaction() {
                let ended = fenced.has_ended();
                B::hold_commits(backend, false, GuardOnly::TOKEN);
                end_lent::<B>(fenced, Ending::Rollback).await?;
                return Err(ended);
            }
            let lease = fenced.lease;
            // An error here leaves the transaction open with commits held: the
            // connection is dropped with `fenced`, and closing it rolls back.
            let locked = fenced
                .store
                .lock_row(lease, Begun::ByGuard, fenced.lock_name)
                .await?;
            if locked.is_refused() {
                B::hold_commits(backend, false, GuardOnly::TOKEN);
                end_lent::<B>(fenced, Ending::Rollback).await?;
                return Ok(Outcome::Refused);
            }
        }
        B::hold_commits(backend, false, GuardOnly::TOKEN);
        end_lent::<B>(fenced, Ending::Commit).await?;
        Ok(Outcome::Applied)
    }
}

impl<B: Executor> Store<B> {
    /// Begins a [`DeferredTransaction`] on a connection of the guard's pool: a fenced
    /// transaction whose lease is checked, and its row locked, by its fenced write of
    /// the lease's row, or else at its commit; see
    /// [the module](crate::transaction#deferred-transactions). Nothing is sent yet: on
    /// PostgreSQL the `BEGIN` and the server's bound go out with the first statement.
    /// On a pool that cannot hold commits ([`Lend::HOLDS_COMMITS`]: SQL Server's), or
    /// keeps no [mark](Lend::transaction_mark) of its transactions, the lease is checked
    /// and locked first, as by [`Store::transaction`].
    ///
    /// `None`: the lease was revoked locally, or (locked first) no longer holds.
    ///
    /// `timeout` bounds the transaction as for [`Store::transaction`].
    ///
    /// # Errors
    ///
    /// As for [`Store::transaction`].
    pub async fn deferred_transaction<'l>(
        &self,
        lease: &'l (impl AsLease + ?Sized),
        timeout: Duration,
    ) -> Result<Option<DeferredTransaction<'l, B>>>
    where
        B: Lend,
    {
        if !B::HOLDS_COMMITS {
            return Ok(self
                .transaction(lease, timeout)
                .await?
                .map(|tx| DeferredTransaction {
                    fenced: tx.fenced,
                    locked: AtomicBool::new(true),
                }));
        }
        let lease = lease.as_lease();
        if !self.admit_transaction(lease, timeout)? {
            return Ok(None);
        }
        let deadline = crate::wait::saturating_add(Instant::now(), timeout);
        let lent = self.backend().lend().await?;
        B::bound(&lent, deadline, timeout);
        B::begin(&lent, dialect::begin(self.dialect()), GuardOnly::TOKEN).await?;
        let mut fenced = self.begun(lent, lease, (deadline, timeout));
        let read: ReadMark<B::Lent> = B::transaction_mark;
        // The transaction the guard began: until its mark moves, nothing has ended it.
        let Some(begun) = read(fenced.store.backend()) else {
            // A pool that holds commits but keeps no mark cannot tell that: the lease
            // is checked and locked now, as by `transaction`.
            let locked = fenced
                .store
                .lock_row(lease, Begun::ByGuard, fenced.lock_name);
            if locked.await?.is_refused() {
                end_lent::<B>(fenced, Ending::Rollback).await?;
                return Ok(None);
            }
            return Ok(Some(DeferredTransaction {
                fenced,
                locked: AtomicBool::new(true),
            }));
        };
        B::hold_commits(fenced.store.backend(), true, GuardOnly::TOKEN);
        fenced.mark = Some((read, begun));
        Ok(Some(DeferredTransaction {
            fenced,
            locked: AtomicBool::new(false),
        }))
    }
}
