//! A unit of work under a lease: acquire, keep, run, publish, release.
//!
//! [`Work`] is the article's `FencedReportRebuilder` as a library: it acquires the row
//! (one attempt, or waiting up to a timeout), starts a [`Keeper`](crate::Keeper), runs the caller's
//! async closure with the lease and the keeper's [`CancellationToken`], publishes what
//! the closure returns (once per generation, fenced), and releases the row on a
//! separate, bounded timeout. A release that fails is logged with `tracing::warn!`, not
//! returned: the lease will expire. Errors of the acquisition and of the publication
//! are returned; with [`Work::publication_retries`] a publication whose answer was lost
//! is first sent again under an operation id, which settles whether it was published.
//!
//! ```
//! # #[cfg(feature = "sqlite")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use fenced_guard::{ColumnType, Completion, FencedTable, Sqlite, Store, Value, Work};
//!
//! let dir = tempfile::tempdir()?;
//! let table = FencedTable::builder().column("Payload", ColumnType::Text).build()?;
//! let store = Store::new(Sqlite::open(dir.path().join("reports.db")).await?, table);
//! store.create_schema().await?;
//! let report = uuid::Uuid::new_v4();
//! store.provision(report).await?;
//!
//! let rebuild = Work::new(&store).ttl(Duration::from_secs(30));
//! let done = rebuild
//!     .run(report, |lease, stop| async move {
//!         // Build the report; give up when `stop` is cancelled (authority lost).
//!         if stop.is_cancelled() {
//!             return Err("cancelled");
//!         }
//!         let body = format!("report built under generation {}", lease.generation());
//!         Ok(vec![("Payload", Value::from(body))])
//!     })
//!     .await?;
//! match done {
//!     Completion::Published { generation } => assert_eq!(generation, 1),
//!     Completion::NotAcquired => { /* another worker holds the row */ }
//!     Completion::Refused { loss } => { /* log "publication refused", and `loss` if any */ }
//!     Completion::Failed { error, .. } => return Err(error.into()),
//!     _ => {}
//! }
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "sqlite"))]
//! # fn main() {}
//! ```
//!
//! # What it does not do
//!
//! The work runs in the caller's task. If the work panics, or the future returned by
//! [`Work::run`] is dropped, nothing is published and the release is skipped: the row
//! stays held until its lease expires. Cancellation is cooperative (see
//! [`keeper`](crate::keeper)); what the work writes outside the fenced row (a blob, an
//! email, an API call) is not protected by the lease.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::executor::Backend;
use crate::keeper::{KeeperBuilder, Loss};
use crate::lease::Lease;
use crate::outcome::Outcome;
use crate::store::Store;
use crate::value::{Key, Value};
use crate::wait::Wait;

/// The default lease ttl of a [`Work`]: 30 s, as in the article.
pub const DEFAULT_WORK_TTL: Duration = Duration::from_secs(30);

/// The default bound on the release after the work: 5 s, as in the article.
pub const DEFAULT_RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// How [`Work::run`] ended, apart from the errors it returns.
#[must_use = "a refused or failed unit of work published nothing; the caller must act on it"]
#[derive(Debug)]
#[non_exhaustive]
pub enum Completion<E> {
    /// The row was not acquired: it is held by an unexpired lease. The work did not
    /// run. (A row that does not exist is [`Error::NotProvisioned`].)
    NotAcquired,
    /// The work's result was published under this generation.
    Published {
        /// The generation the publication carried.
        generation: i64,
    },
    /// The work finished but its publication was refused: by the database (the lease
    /// expired, was superseded, or this generation already published) or locally,
    /// because the keeper had lost authority. Discard the work; build again under a new
    /// lease.
    Refused {
        /// Why the keeper lost authority, if it did before the publication.
        loss: Option<Loss>,
    },
    /// The work returned an error. Nothing was published; the row was released.
    Failed {
        /// The work's own error.
        error: E,
        /// Why the keeper lost authority, if it did while the work ran; the work may
        /// have failed because its token was cancelled.
        loss: Option<Loss>,
    },
}

/// Runs units of work under leases on one [`Store`]: acquire, keep, run, publish,
/// release. Holds settings only; one `Work` can run any number of keys, one after
/// another or concurrently.
///
/// See the [module documentation](crate::work) for an example.
#[derive(Debug)]
pub struct Work<'s, B> {
    store: &'s Store<B>,
    ttl: Duration,
    acquire_timeout: Option<Duration>,
    cancel: Option<CancellationToken>,
    keeper: KeeperBuilder,
    release_timeout: Duration,
    publish_and_release: bool,
    publication_retries: u32,
}

impl<B> Clone for Work<'_, B> {
    fn clone(&self) -> Self {
        Work {
            store: self.store,
            ttl: self.ttl,
            acquire_timeout: self.acquire_timeout,
            cancel: self.cancel.clone(),
            keeper: self.keeper,
            release_timeout: self.release_timeout,
            publish_and_release: self.publish_and_release,
            publication_retries: self.publication_retries,
        }
    }
}

impl<'s, B: Backend + Clone> Work<'s, B> {
    /// Work on `store` with the default settings.
    pub fn new(store: &'s Store<B>) -> Self {
        Work {
            store,
            ttl: DEFAULT_WORK_TTL,
            acquire_timeout: None,
            cancel: None,
            keeper: KeeperBuilder::default(),
            release_timeout: DEFAULT_RELEASE_TIMEOUT,
            publish_and_release: false,
            publication_retries: 0,
        }
    }

    /// The lease's ttl. Default [`DEFAULT_WORK_TTL`] (30 s). Validated by
    /// [`run`](Work::run): one under 1 ms or above [`MAX_TTL`](crate::MAX_TTL)
    /// ([`Duration::MAX`] included) is [`Error::InvalidTtl`], before anything is sent.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Waits up to `timeout` for the row, with the backoff of [`Wait`]'s defaults.
    /// Default: one attempt, no waiting. A timeout too long for an `Instant`
    /// ([`Duration::MAX`]) saturates, as in [`Wait::timeout`]: it waits in effect forever.
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = Some(timeout);
        self
    }

    /// A parent token, for example the service's shutdown token: once it is cancelled,
    /// no row is acquired ([`Error::Cancelled`]); cancelling it ends a wait for the row
    /// (the same error) and cancels the
    /// token handed to the work (which then decides what to do; a cancellation by the
    /// parent is not a loss of authority). Default: none.
    pub fn cancel(mut self, parent: &CancellationToken) -> Self {
        self.cancel = Some(parent.clone());
        self
    }

    /// The keeper's settings. Default: [`KeeperBuilder::default`], a renewal every
    /// third of the ttl.
    pub fn keeper(mut self, keeper: KeeperBuilder) -> Self {
        self.keeper = keeper;
        self
    }

    /// The bound on the release after the work, separate from every other timeout and
    /// from cancellation. Default [`DEFAULT_RELEASE_TIMEOUT`] (5 s). A timeout too long
    /// for an `Instant` ([`Duration::MAX`]) saturates: the release is then unbounded.
    pub fn release_timeout(mut self, timeout: Duration) -> Self {
        self.release_timeout = timeout;
        self
    }

    /// Publishes and releases in one statement (see
    /// [`Store::publish_and_release`]) instead of publishing and then releasing.
    /// Default `false`. A refused or failed publication is still followed by a release.
    pub fn publish_and_release(mut self, yes: bool) -> Self {
        self.publish_and_release = yes;
        self
    }

    /// Settles a publication whose answer was lost. With `retries` above zero the
    /// publication carries an operation id ([`Store::publish_op`], recorded in the
    /// outcomes table that [`Store::create_schema`] creates), and when it fails without
    /// a clear answer (the network, a closed connection: [`Error::may_have_committed`])
    /// it is sent again with the same id, up to `retries` more times. The id makes
    /// every attempt safe: an attempt that finds the first one committed answers
    /// "already applied", and the work ends [`Completion::Published`]; one that finds
    /// the lease gone and nothing published ends [`Completion::Refused`]. An error the
    /// database answered with (an unknown column, say), or one found before anything
    /// was sent, is returned at once: nothing was published.
    ///
    /// Default 0: one attempt, no operation id, and an error leaves the caller not
    /// knowing whether the work was published.
    ///
    /// ```
    /// # #[cfg(feature = "sqlite")]
    /// # async fn example(store: fenced_guard::Store<fenced_guard::Sqlite>) {
    /// use fenced_guard::Work;
    ///
    /// let rebuild = Work::new(&store).publication_retries(2);
    /// # let _ = rebuild;
    /// # }
    /// ```
    pub fn publication_retries(mut self, retries: u32) -> Self {
        self.publication_retries = retries;
        self
    }

    /// Runs `work` under a lease on `key`.
    ///
    /// Acquires the row (see [`acquire_timeout`](Work::acquire_timeout)); if it is not
    /// acquired, returns [`Completion::NotAcquired`] without running the work. Otherwise
    /// starts a [`Keeper`](crate::Keeper) and calls `work` with the lease and the
    /// keeper's token, which is cancelled the moment authority is lost. When the work
    /// returns `Ok(columns)`, the keeper is stopped and `columns` are published (once per
    /// generation, fenced: [`Store::publish`]); a lease the keeper lost is refused
    /// locally. Then, whatever happened after the acquisition, the row is released on
    /// its own timeout.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTtl`] for an invalid [ttl](Work::ttl), then [`Error::Config`] for
    /// invalid keeper settings, before anything is sent; every error of [`Store::try_acquire`] and
    /// [`Store::acquire`], and [`Error::Cancelled`] when the [parent
    /// token](Work::cancel) is cancelled before the row is acquired;
    /// every error of [`Store::publish`], returned after the release was attempted. A
    /// publication error does not prove that nothing was published; with
    /// [`publication_retries`](Work::publication_retries), one that persists through
    /// every attempt is [`Error::PublicationUnsettled`], which names the operation id
    /// to [`resolve`](Store::resolve). Release errors are logged, never returned.
    pub async fn run<F, Fut, S, E>(&self, key: impl Into<Key>, work: F) -> Result<Completion<E>>
    where
        F: FnOnce(Lease, CancellationToken) -> Fut,
        Fut: Future<Output = std::result::Result<Vec<(S, Value)>, E>>,
        S: AsRef<str>,
    {
        // An invalid ttl, then invalid keeper settings, fail before anything is sent.
        crate::store::ttl_millis(self.ttl)?;
        self.keeper.intervals(self.ttl)?;
        if self
            .cancel
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
        {
            return Err(Error::Cancelled);
        }
        let key = key.into();
        let lease = match self.acquire_timeout {
            None => self.store.try_acquire(key, self.ttl).await?,
            Some(timeout) => {
                let cancel = self.cancel.clone().unwrap_or_default();
                self.store
                    .acquire(key, self.ttl, &Wait::timeout(timeout), &cancel)
                    .await?
            }
        };
        let Some(lease) = lease else {
            return Ok(Completion::NotAcquired);
        };

        let token = match &self.cancel {
            Some(parent) => parent.child_token(),
            None => CancellationToken::new(),
        };
        let keeper = self.keeper.start_with(self.store, &lease, token.clone())?;
        let result = work(lease.clone(), token).await;

        let loss = keeper.stop().await;
        let columns = match result {
            Ok(columns) => columns,
            Err(error) => {
                self.release(&lease).await;
                return Ok(Completion::Failed { error, loss });
            }
        };
        let assignments: Vec<(&str, Value)> = columns
            .iter()
            .map(|(name, value)| (name.as_ref(), value.clone()))
            .collect();
        let published = self.publish(&lease, &assignments).await;
        let released = self.publish_and_release && matches!(published, Ok(Outcome::Applied));
        if !released {
            self.release(&lease).await;
        }
        match published? {
            Outcome::Applied => Ok(Completion::Published {
                generation: lease.generation(),
            }),
            Outcome::Refused => {
                tracing::warn!(
                    table = %self.store.table().name(),
                    key = %lease.key(),
                    generation = lease.generation(),
                    loss = loss.as_ref().map(tracing::field::display),
                    "publication refused"
                );
                Ok(Completion::Refused { loss })
            }
        }
    }

    /// Publishes `assignments` under `lease`, as the settings say: once, or with an
    /// operation id and up to [`publication_retries`](Work::publication_retries) more
    /// attempts. `Applied` when the publication is in effect, by this attempt or an
    /// earlier one (whose `publish_and_release` released the row too).
    async fn publish(&self, lease: &Lease, assignments: &[(&str, Value)]) -> Result<Outcome> {
        if self.publication_retries == 0 {
            return if self.publish_and_release {
                self.store.publish_and_release(lease, assignments).await
            } else {
                self.store.publish(lease, assignments).await
            };
        }
        let op = Uuid::new_v4();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let attempt = if self.publish_and_release {
                self.store
                    .publish_and_release_op(lease, op, assignments)
                    .await
            } else {
                self.store.publish_op(lease, op, assignments).await
            };
            match attempt {
                Ok(outcome) if outcome.is_in_effect() => return Ok(Outcome::Applied),
                Ok(_) => return Ok(Outcome::Refused),
                Err(error) if !error.may_have_committed() => return Err(error),
                Err(error) if attempts > self.publication_retries => {
                    return Err(Error::PublicationUnsettled {
                        op,
                        attempts,
                        source: Box::new(error),
                    });
                }
                Err(error) => tracing::warn!(
                    table = %self.store.table().name(),
                    key = %lease.key(),
                    generation = lease.generation(),
                    %op,
                    attempt = attempts,
                    error = &error as &dyn std::error::Error,
                    "publication failed; sending it again with the same operation id"
                ),
            }
        }
    }

    /// Gives the row back on its own bounded timeout; logs a failure instead of
    /// returning it.
    async fn release(&self, lease: &Lease) {
        match tokio::time::timeout(self.release_timeout, self.store.release(lease)).await {
            Ok(Ok(Outcome::Applied)) => {}
            Ok(Ok(Outcome::Refused)) => tracing::debug!(
                table = %self.store.table().name(),
                key = %lease.key(),
                generation = lease.generation(),
                "release refused: the lease was already released or superseded"
            ),
            Ok(Err(error)) => tracing::warn!(
                table = %self.store.table().name(),
                key = %lease.key(),
                generation = lease.generation(),
                error = &error as &dyn std::error::Error,
                "release failed; the lease will expire"
            ),
            Err(_elapsed) => tracing::warn!(
                table = %self.store.table().name(),
                key = %lease.key(),
                generation = lease.generation(),
                timeout = ?self.release_timeout,
                "release timed out; the lease will expire"
            ),
        }
    }
}
