//! A small connection pool: a bounded number of connections, idle ones kept for reuse,
//! and a checkout that discards its connection unless explicitly given back.
//!
//! Giving back is the only way a connection returns to the pool, so a connection whose
//! statement failed, or whose future was dropped mid-statement (a cancellation or a
//! timeout), is closed and never reused.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{Error, Result};

/// Connections of type `T`, at most `max` at a time.
pub(crate) struct Pool<T> {
    idle: Mutex<Vec<T>>,
    permits: Arc<Semaphore>,
}

impl<T> Pool<T> {
    /// A pool of at most `max` (at least 1) connections.
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Pool {
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(max.max(1))),
        })
    }

    /// Waits for a free slot, then takes an idle connection or opens one with `open`.
    pub(crate) async fn checkout<F, Fut>(self: &Arc<Self>, open: F) -> Result<Checkout<T>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| Error::Config("the connection pool is closed".into()))?;
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let conn = match idle {
            Some(conn) => conn,
            None => open().await?,
        };
        Ok(Checkout {
            conn: Some(conn),
            pool: Arc::clone(self),
            _permit: permit,
        })
    }

    /// Takes an idle connection at once, if one is idle and a slot is free, without a
    /// future to poll: the common case of a statement costs a lock and two reference
    /// counts. `None` when the caller must wait or open one: then [`Pool::checkout`].
    #[cfg(any(test, feature = "postgres", feature = "sqlite"))]
    pub(crate) fn take_idle(self: &Arc<Self>) -> Option<Checkout<T>> {
        let permit = Arc::clone(&self.permits).try_acquire_owned().ok()?;
        // Without an idle connection the permit is dropped here, and so given back.
        let conn = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()?;
        Some(Checkout {
            conn: Some(conn),
            pool: Arc::clone(self),
            _permit: permit,
        })
    }

    /// How many connections are idle.
    #[cfg(any(test, feature = "postgres"))]
    pub(crate) fn idle_len(&self) -> usize {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// A connection taken from a [`Pool`]. Dropped without [`Checkout::give_back`], it
/// closes the connection instead of returning it.
pub(crate) struct Checkout<T> {
    conn: Option<T>,
    pool: Arc<Pool<T>>,
    _permit: OwnedSemaphorePermit,
}

impl<T> Checkout<T> {
    /// The connection.
    pub(crate) fn conn(&mut self) -> &mut T {
        self.conn
            .as_mut()
            .expect("a checkout holds its connection until given back")
    }

    /// The connection, shared.
    #[cfg(feature = "postgres")]
    pub(crate) fn conn_ref(&self) -> &T {
        self.conn
            .as_ref()
            .expect("a checkout holds its connection until given back")
    }

    /// Returns the connection to the pool for reuse: call only after a statement
    /// completed cleanly.
    pub(crate) fn give_back(mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(conn);
        }
    }
}

impl<T> Drop for Checkout<T> {
    fn drop(&mut self) {
        if self.conn.take().is_some() {
            tracing::debug!("closing a connection after an error or a cancellation");
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
}
