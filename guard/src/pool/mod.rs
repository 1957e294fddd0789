//! A small connection pool: a bounded number of connections, idle ones kept for reuse,
//! and a checkout that discards its connection unless explicitly given back.
//!
//! Giving back is the only way a connection returns to the pool, so a connection whose
//! future was dropped mid-statement (a cancellation, a timeout, a panic), or that its
//! backend judged unusable after an error, is closed and never reused.
//!
//! Shared by the guard's pools of each database (`postgres/pool.rs`, `sqlite/pool.rs`,
//! `mssql/pool.rs`), with the prepared statements a connection keeps (`kept.rs`) and
//! the deadline of a lent connection's fenced transaction ([`Deadline`]).

#[cfg(any(feature = "postgres", feature = "sqlite"))]
pub(crate) mod control;
#[cfg(any(feature = "postgres", feature = "sqlite"))]
pub(crate) mod kept;

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::error::{Error, Result};

/// How long a statement waits for a pooled connection by default: 30 s, as sqlx's
/// `acquire_timeout`.
#[cfg_attr(
    not(any(feature = "postgres", feature = "sqlite", feature = "mssql")),
    allow(dead_code)
)]
pub(crate) const DEFAULT_CHECKOUT_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections of type `T`, at most `max` at a time.
///
/// One mutex guards both the idle connections and the count of slots taken, so that
/// taking an idle connection and giving it back cost one lock each. A task waiting for
/// a slot waits on `freed`, which every checkout's end signals.
///
/// Each connection lives in a box of its own from its opening to its closing: a
/// statement takes it from the pool and gives it back, and a driver's connection is a
/// few hundred bytes, which would otherwise be copied at each of those steps.
pub(crate) struct Pool<T> {
    state: Mutex<State<T>>,
    freed: Notify,
    max: usize,
}

struct State<T> {
    idle: Vec<Box<T>>,
    /// Slots held by checkouts (and by checkouts still opening their connection).
    taken: usize,
}

impl<T> Pool<T> {
    /// A pool of at most `max` (at least 1) connections.
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Pool {
            state: Mutex::new(State {
                idle: Vec::new(),
                taken: 0,
            }),
            freed: Notify::new(),
            max: max.max(1),
        })
    }

    fn state(&self) -> MutexGuard<'_, State<T>> {
        // The state is consistent between any two statements of the code below, so a
        // panic elsewhere while the lock was held leaves nothing half done.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a free slot, then takes an idle connection or opens one with `open`.
    pub(crate) async fn checkout<F, Fut>(self: &Arc<Self>, open: F) -> Result<Checkout<T>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let idle = loop {
            // Registered before the state is read, so that a slot freed in between
            // still wakes this task.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut state = self.state();
                if state.taken < self.max {
                    state.taken += 1;
                    break state.idle.pop();
                }
            }
            freed.await;
        };
        // From here the slot is this checkout's: if opening fails or is cancelled, the
        // checkout's drop frees it.
        let mut checkout = Checkout {
            conn: idle,
            pool: Arc::clone(self),
            reuse: false,
        };
        if checkout.conn.is_none() {
            checkout.conn = Some(Box::new(open().await?));
        }
        Ok(checkout)
    }

    /// [`Pool::checkout`], given up after `timeout` with [`Error::PoolTimedOut`]: the
    /// wait for a free slot and the opening of a connection together. Saturates: a
    /// timeout too long for the timer ([`Duration::MAX`]) waits as long as it takes.
    #[cfg_attr(
        not(any(feature = "postgres", feature = "sqlite", feature = "mssql")),
        allow(dead_code)
    )]
    pub(crate) async fn checkout_within<F, Fut>(
        self: &Arc<Self>,
        timeout: Duration,
        open: F,
    ) -> Result<Checkout<T>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        match tokio::time::timeout(timeout, self.checkout(open)).await {
            Ok(checkout) => checkout,
            Err(_elapsed) => Err(Error::PoolTimedOut { timeout }),
        }
    }

    /// Takes an idle connection at once, if one is idle and a slot is free, without a
    /// future to poll: the common case of a statement costs one lock. `None` when the
    /// caller must wait or open one: then [`Pool::checkout`].
    #[cfg(any(test, feature = "postgres", feature = "sqlite", feature = "mssql"))]
    pub(crate) fn take_idle(self: &Arc<Self>) -> Option<Checkout<T>> {
        let conn = {
            let mut state = self.state();
            if state.taken >= self.max {
                return None;
            }
            let conn = state.idle.pop()?;
            state.taken += 1;
            conn
        };
        Some(Checkout {
            conn: Some(conn),
            pool: Arc::clone(self),
            reuse: false,
        })
    }

    /// How many connections are idle.
    #[cfg(any(test, feature = "postgres"))]
    pub(crate) fn idle_len(&self) -> usize {
        self.state().idle.len()
    }

    /// Ends a checkout: frees its slot, keeps `conn` for reuse if given, and wakes one
    /// task waiting for a slot.
    fn end_checkout(&self, conn: Option<Box<T>>) {
        {
            let mut state = self.state();
            state.taken -= 1;
            if let Some(conn) = conn {
                state.idle.push(conn);
            }
        }
        self.freed.notify_one();
    }
}

/// A connection taken from a [`Pool`]. Dropped without [`Checkout::give_back`], it
/// closes the connection instead of returning it.
pub(crate) struct Checkout<T> {
    /// `None` only while [`Pool::checkout`] opens the connection.
    conn: Option<Box<T>>,
    pool: Arc<Pool<T>>,
    /// Set by [`Checkout::give_back`]: the drop returns the connection for reuse.
    reuse: bool,
}

impl<T> Checkout<T> {
    /// The connection.
    pub(crate) fn conn(&mut self) -> &mut T {
        self.conn
            .as_mut()
            .expect("a checkout holds its connection until given back")
    }

    /// The connection, shared.
    #[cfg(any(feature = "postgres", feature = "mssql"))]
    pub(crate) fn conn_ref(&self) -> &T {
        self.conn
            .as_ref()
            .expect("a checkout holds its connection until given back")
    }

    /// Returns the connection to the pool for reuse: call only after a statement
    /// completed cleanly.
    pub(crate) fn give_back(mut self) {
        self.reuse = true;
    }
}

impl<T> Drop for Checkout<T> {
    fn drop(&mut self) {
        let conn = self.conn.take();
        if self.reuse {
            self.pool.end_checkout(conn);
        } else {
            if conn.is_some() {
                tracing::debug!("closing a connection after an error or a cancellation");
            }
            // Closed before its slot is freed, so that no more than `max` connections
            // are ever open.
            drop(conn);
            self.pool.end_checkout(None);
        }
    }
}

/// When a lent connection's fenced transaction times out; unset on a connection that
/// is not bounded. Every pool's lent connection keeps one ([`Lend::bound`](crate::Lend::bound)).
#[derive(Debug, Default)]
pub(crate) struct Deadline(OnceLock<(Instant, Duration)>);

impl Deadline {
    pub(crate) fn set(&self, deadline: Instant, timeout: Duration) {
        let _ = self.0.set((deadline, timeout));
    }

    /// The time left, `None` when unbounded; [`Error::TransactionTimedOut`] once past.
    #[cfg_attr(not(any(feature = "sqlite", feature = "mssql")), allow(dead_code))]
    pub(crate) fn remaining(&self) -> Result<Option<Duration>> {
        Ok(self.remaining_of()?.map(|(left, _)| left))
    }

    /// The time left and the whole timeout, as [`remaining`](Deadline::remaining).
    pub(crate) fn remaining_of(&self) -> Result<Option<(Duration, Duration)>> {
        self.remaining_at(Instant::now())
    }

    /// [`remaining_of`](Deadline::remaining_of) at `now`, for a caller that reads the
    /// clock for more than this.
    pub(crate) fn remaining_at(&self, now: Instant) -> Result<Option<(Duration, Duration)>> {
        match self.0.get() {
            None => Ok(None),
            Some(&(deadline, timeout)) => deadline
                .checked_duration_since(now)
                .filter(|left| !left.is_zero())
                .map(|left| Some((left, timeout)))
                // Made only when past: every statement of a transaction asks.
                .ok_or_else(|| Error::TransactionTimedOut { timeout }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    struct Opener(AtomicU32);

    impl Opener {
        async fn open(&self) -> Result<u32> {
            Ok(self.0.fetch_add(1, Ordering::SeqCst))
        }
    }

    #[tokio::test]
    async fn a_connection_given_back_is_reused() {
        let pool = Pool::new(2);
        let opener = Opener(AtomicU32::new(0));
        let mut first = pool.checkout(|| opener.open()).await.unwrap();
        assert_eq!(*first.conn(), 0);
        first.give_back();
        assert_eq!(pool.idle_len(), 1);
        let mut again = pool.checkout(|| opener.open()).await.unwrap();
        assert_eq!(*again.conn(), 0, "reused, not reopened");
    }

    #[tokio::test]
    async fn an_idle_connection_is_taken_at_once_only_within_the_limit() {
        let pool = Pool::new(1);
        let opener = Opener(AtomicU32::new(0));
        assert!(pool.take_idle().is_none(), "nothing is idle yet");
        pool.checkout(|| opener.open()).await.unwrap().give_back();
        let mut taken = pool.take_idle().expect("the idle connection");
        assert_eq!(*taken.conn(), 0);
        assert!(pool.take_idle().is_none(), "the only slot is taken");
        taken.give_back();
        let taken = pool.take_idle().expect("given back, idle again");
        drop(taken); // as after an error: closed, its slot freed
        assert!(
            pool.take_idle().is_none(),
            "a closed connection is not idle"
        );
        let mut next = pool.checkout(|| opener.open()).await.unwrap();
        assert_eq!(*next.conn(), 1, "the freed slot opened a new connection");
    }

    #[tokio::test]
    async fn a_connection_not_given_back_is_never_reused() {
        let pool = Pool::new(2);
        let opener = Opener(AtomicU32::new(0));
        let first = pool.checkout(|| opener.open()).await.unwrap();
        drop(first); // as after an error
        assert_eq!(pool.idle_len(), 0);
        let mut next = pool.checkout(|| opener.open()).await.unwrap();
        assert_eq!(*next.conn(), 1, "a new connection was opened");
    }

    #[tokio::test]
    async fn a_cancelled_statement_discards_its_connection() {
        let pool = Pool::new(1);
        let opener = Opener(AtomicU32::new(0));
        pool.checkout(|| opener.open()).await.unwrap().give_back();
        assert_eq!(pool.idle_len(), 1);
        tokio::select! {
            biased;
            () = async {
                let checkout = pool.checkout(|| opener.open()).await.unwrap();
                std::future::pending::<()>().await; // the statement never completes
                checkout.give_back();
            } => unreachable!("the statement never completes"),
            () = async {} => {}
        }
        assert_eq!(
            pool.idle_len(),
            0,
            "the cancelled checkout's connection is gone"
        );
        let mut next = pool.checkout(|| opener.open()).await.unwrap();
        assert_eq!(
            *next.conn(),
            1,
            "the slot was freed and a new connection opened"
        );
    }

    /// Resolves within 5 s, or fails the test: a safety net against a hang, not a
    /// measure of time.
    async fn soon<F: Future>(what: &str, f: F) -> F::Output {
        tokio::time::timeout(std::time::Duration::from_secs(5), f)
            .await
            .unwrap_or_else(|_| panic!("{what} did not happen"))
    }

    /// A task that waits for a checkout and returns its connection: an idle one, or one
    /// opened as `opened`.
    fn spawn_checkout(pool: &Arc<Pool<u32>>, opened: u32) -> tokio::task::JoinHandle<u32> {
        let pool = Arc::clone(pool);
        tokio::spawn(async move {
            *pool
                .checkout(|| async move { Ok(opened) })
                .await
                .unwrap()
                .conn()
        })
    }

    #[tokio::test]
    async fn a_waiting_checkout_gets_the_connection_given_back() {
        let pool = Pool::new(1);
        let opener = Opener(AtomicU32::new(0));
        let held = pool.checkout(|| opener.open()).await.unwrap();
        let waiter = spawn_checkout(&pool, 99);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "waits while the only slot is taken");
        held.give_back();
        let got = soon("the waiter's wake-up", waiter).await.unwrap();
        assert_eq!(got, 0, "the connection given back, not a new one");
    }

    #[tokio::test]
    async fn a_cancelled_waiter_does_not_keep_the_slot_from_the_next() {
        let pool = Pool::new(1);
        let opener = Opener(AtomicU32::new(0));
        let held = pool.checkout(|| opener.open()).await.unwrap();
        let cancelled = spawn_checkout(&pool, 98);
        let next = spawn_checkout(&pool, 99);
        tokio::task::yield_now().await;
        cancelled.abort();
        drop(held); // as after an error: closed, its slot freed
        let got = soon("the second waiter's wake-up", next).await.unwrap();
        assert_eq!(got, 99, "the freed slot opened a new connection");
    }

    #[tokio::test]
    async fn a_checkout_gives_up_after_its_timeout() {
        let pool = Pool::new(1);
        let held = pool.checkout(|| async { Ok(1_u32) }).await.unwrap();
        let timeout = Duration::from_millis(20);
        let waited = soon(
            "the checkout's timeout",
            pool.checkout_within(timeout, || async { Ok(2) }),
        )
        .await;
        assert!(
            matches!(waited, Err(Error::PoolTimedOut { timeout: t }) if t == timeout),
            "{:?}",
            waited.map(|_| ())
        );
        held.give_back();
        let mut next = pool
            .checkout_within(Duration::MAX, || async { Ok(3) })
            .await
            .unwrap();
        assert_eq!(*next.conn(), 1, "the slot is free again once given back");
    }

    #[tokio::test]
    async fn a_failed_open_frees_its_slot() {
        let pool = Pool::<u32>::new(1);
        let refused = pool
            .checkout(|| async { Err(Error::Config("refused".into())) })
            .await;
        assert!(refused.is_err());
        let mut next = soon(
            "a checkout after the failure",
            pool.checkout(|| async { Ok(7) }),
        )
        .await
        .unwrap();
        assert_eq!(*next.conn(), 7);
    }
}
