//! The lease keeper: renews a lease in the background and fails closed the moment
//! authority is lost.
//!
//! A [`Keeper`] owns a tokio task that renews its [`Lease`] every `ttl × fraction`
//! (default one third of the ttl). The moment a renewal is refused, or no renewal can
//! succeed before the lease's [local deadline](Lease::local_deadline), it
//! [revokes](Lease::revoke) the lease and cancels the [`CancellationToken`] handed to the
//! work. From then on every fenced write, publication and renewal through that lease, or
//! any clone of it, is [`Outcome::Refused`] locally, without a
//! round trip.
//!
//! ```
//! # #[cfg(feature = "sqlite")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use fenced_guard::{ColumnType, FencedTable, Keeper, Outcome, Sqlite, Store, Value};
//!
//! let dir = tempfile::tempdir()?;
//! let table = FencedTable::builder().column("Payload", ColumnType::Text).build()?;
//! let store = Store::new(Sqlite::open(dir.path().join("reports.db")).await?, table);
//! store.create_schema().await?;
//! let report = uuid::Uuid::new_v4();
//! store.provision(report).await?;
//!
//! let lease = store
//!     .try_acquire(report, Duration::from_secs(30))
//!     .await?
//!     .expect("a freshly provisioned row is free");
//! // Renews every 10 s (a third of the ttl) until stopped or until authority is lost.
//! let keeper = Keeper::start(&store, &lease);
//! let stop = keeper.token().clone();
//!
//! // The work watches the token and gives up when it is cancelled.
//! let body = tokio::select! {
//!     () = stop.cancelled() => None,
//!     body = async { "report body".to_owned() } => Some(body),
//! };
//!
//! // Whatever the keeper saw, the fence decides: a lost lease is refused here, locally.
//! if let Some(body) = body {
//!     let outcome = store.publish_and_release(&lease, &[("Payload", Value::from(body))]).await?;
//!     assert_eq!(outcome, Outcome::Applied);
//! }
//! assert!(keeper.stop().await.is_none(), "authority was never lost");
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "sqlite"))]
//! # fn main() {}
//! ```
//!
//! # What the keeper cannot do
//!
//! - **A paused process cannot renew.** A garbage-collection pause, a stopped container
//!   or a suspended virtual machine stops the keeper together with the work; when the
//!   process resumes, the lease may be long gone and the work does not know yet. The
//!   keeper notices at its next renewal, which is too late to stop a write the work
//!   sends first. That write is refused by the database, not by the keeper.
//! - **Cancellation is cooperative.** Cancelling the token stops nothing by itself: work
//!   that never looks at it runs on. What the keeper does enforce is that every write
//!   through the revoked lease is refused locally.
//! - **The fence is what actually protects the row.** The keeper keeps a healthy worker's
//!   lease alive and stops a worker early; it proves nothing about ownership. Its clock
//!   is the local one, and a renewal it counts as in time may still arrive after the
//!   database's expiry. Every write is judged by the database against generation, owner
//!   and the database's clock, whether or not a keeper runs.
//! - **It protects only what goes through the lease.** A blob, an email or an external
//!   API call made by the work is not revoked with the lease.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::executor::Backend;
use crate::lease::Lease;
use crate::outcome::Outcome;
use crate::store::Store;

/// Why a [`Keeper`] gave up its lease. For logs: whichever it is, the worker no longer
/// holds the row and its work must be discarded.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Loss {
    /// A renewal reached the database and matched no row: the lease expired, was
    /// released, or a successor acquired the row. Also reported when the lease had been
    /// revoked locally by someone else (the renewal was then not sent).
    Refused,
    /// The local deadline came while a renewal was still in flight (or before one could
    /// be sent), so no renewal could succeed in time, and none had failed with an error
    /// since the last that succeeded.
    Deadline,
    /// Renewals failed with errors until the local deadline (a retry may still have been
    /// in flight then), or with an error that retrying cannot fix (a key of the wrong
    /// type, an invalid ttl).
    Errors {
        /// How many renewals failed since the last one that succeeded.
        attempts: u32,
        /// The last error.
        last: Arc<Error>,
    },
}

impl fmt::Display for Loss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Loss::Refused => f.write_str("lease renewal refused"),
            Loss::Deadline => f.write_str("lease deadline passed before a renewal could complete"),
            Loss::Errors { attempts, .. } => {
                write!(f, "lease renewal failed {attempts} times in a row")
            }
        }
    }
}

impl std::error::Error for Loss {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Loss::Errors { last, .. } => Some(&**last),
            Loss::Refused | Loss::Deadline => None,
        }
    }
}

/// The default fraction of the ttl between renewals.
pub const DEFAULT_RENEW_FRACTION: f64 = 1.0 / 3.0;

/// How often a [`Keeper`] renews, and how it retries after an error. Made by
/// [`Keeper::builder`]; validated when a keeper is started.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeeperBuilder {
    renew_fraction: f64,
    retry_interval: Option<Duration>,
}

impl Default for KeeperBuilder {
    fn default() -> Self {
        KeeperBuilder {
            renew_fraction: DEFAULT_RENEW_FRACTION,
            retry_interval: None,
        }
    }
}

impl KeeperBuilder {
    /// The time between renewals as a fraction of the lease's ttl, strictly between 0
    /// and 1. Default [`DEFAULT_RENEW_FRACTION`] (one third): a 30 s lease is renewed
    /// every 10 s, which leaves two renewal periods for retries before the local
    /// deadline.
    pub fn renew_fraction(mut self, fraction: f64) -> Self {
        self.renew_fraction = fraction;
        self
    }

    /// The pause before retrying a renewal that failed with an error. Retries go on
    /// until the local deadline; a pause that would end past it ends at it, and the
    /// keeper then fails closed. Default: a quarter of the renewal interval, at most 1 s.
    /// Any length is accepted: one longer than the lease's ttl means in effect no retry.
    pub fn retry_interval(mut self, interval: Duration) -> Self {
        self.retry_interval = Some(interval);
        self
    }

    /// Checks the settings against a lease's ttl and returns the renewal and retry
    /// intervals.
    pub(crate) fn intervals(&self, ttl: Duration) -> Result<(Duration, Duration)> {
        let f = self.renew_fraction;
        if !(f.is_finite() && f > 0.0 && f < 1.0) {
            return Err(Error::Config(format!(
                "a keeper's renew fraction must be strictly between 0 and 1, got {f}"
            )));
        }
        // `Duration::mul_f64` panics on overflow; a ttl near `Duration::MAX` may round
        // up in `f64`, so the product is checked instead.
        let renew = Duration::try_from_secs_f64(ttl.as_secs_f64() * f).map_err(|_| {
            Error::Config(format!(
                "a renew fraction of {f} of a {ttl:?} ttl is not a representable interval"
            ))
        })?;
        if renew.is_zero() {
            return Err(Error::Config(format!(
                "a renew fraction of {f} of a {ttl:?} ttl leaves no time between renewals"
            )));
        }
        let retry = match self.retry_interval {
            Some(retry) if retry.is_zero() => {
                return Err(Error::Config(
                    "a keeper's retry interval must be longer than zero".into(),
                ));
            }
            Some(retry) => retry,
            None => (renew / 4).clamp(Duration::from_millis(1), Duration::from_secs(1)),
        };
        Ok((renew, retry))
    }

    /// Starts a keeper for `lease` with a new cancellation token.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a renew fraction not strictly between 0 and 1, or a zero
    /// retry interval.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, like [`tokio::spawn`].
    pub fn start<B: Backend + Clone>(&self, store: &Store<B>, lease: &Lease) -> Result<Keeper> {
        self.start_with(store, lease, CancellationToken::new())
    }

    /// Starts a keeper for `lease` that cancels `token` when authority is lost; for
    /// example `shutdown.child_token()`, so that the work stops on shutdown too.
    ///
    /// # Errors
    ///
    /// As for [`start`](KeeperBuilder::start).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, like [`tokio::spawn`].
    pub fn start_with<B: Backend + Clone>(
        &self,
        store: &Store<B>,
        lease: &Lease,
        token: CancellationToken,
    ) -> Result<Keeper> {
        let (renew, retry) = self.intervals(lease.ttl())?;
        Ok(Keeper::spawn(store, lease, token, renew, retry))
    }
}

/// Renews a [`Lease`] in the background and fails closed the moment authority is lost:
/// it revokes the lease and cancels the work's [`CancellationToken`].
///
/// See the [module documentation](crate::keeper) for an example and for what a keeper
/// cannot do. Dropping the keeper or [stopping](Keeper::stop) it ends the renewals; it
/// neither revokes nor releases the lease, which stays valid until its expiry. Giving
/// the row back through the lease or a clone ([`Store::release`] or
/// [`Store::publish_and_release`] applied) ends the keeper too, without a loss: its
/// token is not cancelled.
#[derive(Debug)]
pub struct Keeper {
    lease: Lease,
    token: CancellationToken,
    shared: Arc<Shared>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    loss: OnceLock<Loss>,
    lost: CancellationToken,
}

impl Keeper {
    /// Starts a keeper with the default settings (a renewal every third of the ttl) and
    /// a new cancellation token.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, like [`tokio::spawn`].
    pub fn start<B: Backend + Clone>(store: &Store<B>, lease: &Lease) -> Keeper {
        let builder = KeeperBuilder::default();
        match builder.intervals(lease.ttl()) {
            Ok((renew, retry)) => {
                Keeper::spawn(store, lease, CancellationToken::new(), renew, retry)
            }
            // A store never issues a ttl under 1 ms, and a third of 1 ms is not zero.
            // A lease assembled by hand with a zero ttl is already past its deadline.
            Err(_) => Keeper::spawn(
                store,
                lease,
                CancellationToken::new(),
                Duration::from_millis(1),
                Duration::from_millis(1),
            ),
        }
    }

    /// Settings for a keeper: renewal fraction and retry interval.
    pub fn builder() -> KeeperBuilder {
        KeeperBuilder::default()
    }

    fn spawn<B: Backend + Clone>(
        store: &Store<B>,
        lease: &Lease,
        token: CancellationToken,
        renew: Duration,
        retry: Duration,
    ) -> Keeper {
        let shared = Arc::new(Shared::default());
        let stop = CancellationToken::new();
        let task = tokio::spawn(keep(
            store.clone(),
            lease.clone(),
            token.clone(),
            Arc::clone(&shared),
            stop.clone(),
            renew,
            retry,
        ));
        Keeper {
            lease: lease.clone(),
            token,
            shared,
            stop,
            task: Some(task),
        }
    }

    /// The lease kept (a clone sharing its revocation and deadline).
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// The token cancelled when authority is lost: hand it to the work. It is also
    /// cancelled when its parent is, if it was made with
    /// [`child_token`](CancellationToken::child_token); that is not a loss.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Why authority was lost, once it was; `None` while the keeper holds the lease.
    pub fn loss(&self) -> Option<Loss> {
        self.shared.loss.get().cloned()
    }

    /// Waits until authority is lost and says why. When it returns, the lease is revoked
    /// and the work's token cancelled. Never completes while renewals keep succeeding,
    /// nor once the lease was released.
    pub async fn lost(&self) -> Loss {
        self.shared.lost.cancelled().await;
        self.loss().unwrap_or(Loss::Refused)
    }

    /// Ends the renewals and waits for the task to finish. Returns why authority was
    /// lost, if it was. The lease is neither revoked nor released.
    pub async fn stop(mut self) -> Option<Loss> {
        self.stop.cancel();
        if let Some(task) = self.task.take()
            && let Err(error) = task.await
            && error.is_panic()
        {
            std::panic::resume_unwind(error.into_panic());
        }
        self.loss()
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The keeper's task.
async fn keep<B: Backend>(
    store: Store<B>,
    lease: Lease,
    token: CancellationToken,
    shared: Arc<Shared>,
    stop: CancellationToken,
    renew: Duration,
    retry: Duration,
) {
    let ttl = lease.ttl();
    let loss = loop {
        // The next renewal is due `renew` after the last successful one was sent: the
        // local deadline is that instant plus the ttl.
        let due = lease
            .local_deadline()
            .checked_sub(ttl.saturating_sub(renew))
            .unwrap_or_else(Instant::now);
        tokio::select! {
            () = stop.cancelled() => return,
            () = lease.released() => return,
            () = tokio::time::sleep_until(due.into()) => {}
        }
        match renew_in_time(&store, &lease, &stop, retry).await {
            Some(Ok(())) => {}
            // A renewal refused because the holder gave the row back meanwhile is the
            // lease's end, not a loss.
            Some(Err(_)) if lease.is_released() => return,
            Some(Err(loss)) => break loss,
            None => return,
        }
    };
    lease.revoke();
    tracing::warn!(
        table = %store.table().name(),
        key = %lease.key(),
        generation = lease.generation(),
        error = &loss as &dyn std::error::Error,
        "lease lost; the work is cancelled and every write through the lease is refused"
    );
    // In this order: whoever wakes up on the work's token finds a reason, and whoever
    // wakes up in `Keeper::lost` finds the lease revoked and the work's token cancelled.
    let _ = shared.loss.set(loss);
    token.cancel();
    shared.lost.cancel();
}

/// One renewal, retried after errors until the local deadline. `None` when stopped.
async fn renew_in_time<B: Backend>(
    store: &Store<B>,
    lease: &Lease,
    stop: &CancellationToken,
    retry: Duration,
) -> Option<std::result::Result<(), Loss>> {
    let mut attempts = 0u32;
    let mut last: Option<Error> = None;
    // At the deadline: the errors since the last success, if there were any.
    let lost = |attempts: u32, last: Option<Error>| match last {
        Some(error) => Loss::Errors {
            attempts,
            last: Arc::new(error),
        },
        None => Loss::Deadline,
    };
    loop {
        // Read again each time: a clone of the lease may have been renewed meanwhile.
        let deadline = lease.local_deadline();
        if Instant::now() >= deadline {
            return Some(Err(lost(attempts, last)));
        }
        let attempt = tokio::time::timeout_at(deadline.into(), store.renew(lease));
        let error = tokio::select! {
            () = stop.cancelled() => return None,
            () = lease.released() => return None,
            result = attempt => match result {
                Err(_elapsed) => return Some(Err(lost(attempts, last))),
                Ok(Ok(Outcome::Applied)) => return Some(Ok(())),
                Ok(Ok(Outcome::Refused)) => return Some(Err(Loss::Refused)),
                Ok(Err(error)) => error,
            },
        };
        attempts = attempts.saturating_add(1);
        tracing::debug!(
            key = %lease.key(),
            generation = lease.generation(),
            attempts,
            error = &error as &dyn std::error::Error,
            "lease renewal failed"
        );
        if matches!(error, Error::KeyType { .. } | Error::InvalidTtl { .. }) {
            // Retrying cannot fix these.
            return Some(Err(Loss::Errors {
                attempts,
                last: Arc::new(error),
            }));
        }
        last = Some(error);
        // Never sleep past the deadline: the loop then fails closed with the last error.
        let pause = retry.min(deadline.saturating_duration_since(Instant::now()));
        tokio::select! {
            () = stop.cancelled() => return None,
            () = tokio::time::sleep(pause) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_default_to_a_third_and_a_quarter_of_that() {
        let (renew, retry) = KeeperBuilder::default()
            .intervals(Duration::from_secs(30))
            .unwrap();
        assert_eq!(renew, Duration::from_secs(10));
        assert_eq!(retry, Duration::from_secs(1));
        let (renew, retry) = KeeperBuilder::default()
            .intervals(Duration::from_millis(1200))
            .unwrap();
        assert_eq!(renew, Duration::from_millis(400));
        assert_eq!(retry, Duration::from_millis(100));
    }

    #[test]
    fn settings_are_validated() {
        for bad in [0.0, 1.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
            let result = Keeper::builder()
                .renew_fraction(bad)
                .intervals(Duration::from_secs(30));
            assert!(matches!(result, Err(Error::Config(_))), "{bad}: {result:?}");
        }
        let zero_retry = Keeper::builder()
            .retry_interval(Duration::ZERO)
            .intervals(Duration::from_secs(30));
        assert!(matches!(zero_retry, Err(Error::Config(_))));
        let zero_ttl = Keeper::builder().intervals(Duration::ZERO);
        assert!(matches!(zero_ttl, Err(Error::Config(_))));
        let (renew, retry) = Keeper::builder()
            .renew_fraction(0.5)
            .retry_interval(Duration::from_millis(7))
            .intervals(Duration::from_secs(2))
            .unwrap();
        assert_eq!(
            (renew, retry),
            (Duration::from_secs(1), Duration::from_millis(7))
        );
    }

    #[test]
    fn a_loss_names_its_cause_and_keeps_the_error_as_source() {
        use std::error::Error as _;
        let loss = Loss::Errors {
            attempts: 3,
            last: Arc::new(Error::UnexpectedResult("boom".into())),
        };
        assert_eq!(loss.to_string(), "lease renewal failed 3 times in a row");
        assert_eq!(
            loss.source().map(ToString::to_string).as_deref(),
            Some("unexpected result from the database: boom")
        );
        assert!(Loss::Refused.source().is_none());
        assert!(Loss::Deadline.source().is_none());
    }
}
