//! The lease: one acquisition of a fenced row.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::value::Key;
use crate::wait::saturating_add;

/// One acquisition of a fenced row: its key, the generation the acquisition installed,
/// and the random owner that identifies this acquisition.
///
/// A `Lease` is a claim, not a permission: every write made with it is judged by the
/// database against the row's current generation, owner and expiry. Clones share the
/// revocation flag and the local deadline.
#[derive(Clone, Debug)]
pub struct Lease {
    key: Key,
    owner: Uuid,
    generation: i64,
    epoch: Option<i64>,
    ttl: Duration,
    acquired_at: Instant,
    shared: Arc<Shared>,
}

/// What clones of a lease share: one allocation per acquisition.
#[derive(Debug)]
struct Shared {
    local_deadline: Mutex<Instant>,
    revoked: AtomicBool,
    /// Cancelled once the row was given back through the lease: a release or a
    /// publish-and-release that applied. Ends the lease's keeper.
    released: CancellationToken,
}

impl Lease {
    /// Assembles a lease from its parts, for example one that was persisted. The fence
    /// still decides whether it is valid. `acquired_at` should be taken *before* the
    /// acquiring statement was sent.
    ///
    /// Never panics: a local deadline past what an [`Instant`] can represent (a `ttl`
    /// of [`Duration::MAX`]) saturates to the latest one. Such a ttl is refused when
    /// the lease is renewed ([`Error::InvalidTtl`](crate::Error::InvalidTtl)).
    pub fn from_parts(
        key: Key,
        owner: Uuid,
        generation: i64,
        ttl: Duration,
        acquired_at: Instant,
    ) -> Self {
        Lease {
            key,
            owner,
            generation,
            epoch: None,
            ttl,
            acquired_at,
            shared: Arc::new(Shared {
                local_deadline: Mutex::new(saturating_add(acquired_at, ttl)),
                revoked: AtomicBool::new(false),
                released: CancellationToken::new(),
            }),
        }
    }

    /// The key of the fenced row.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The random owner of this acquisition.
    pub fn owner(&self) -> Uuid {
        self.owner
    }

    /// The generation this acquisition installed.
    pub fn generation(&self) -> i64 {
        self.generation
    }

    /// The stamp the acquisition wrote on the row, when known (`None` for a lease
    /// assembled with [`from_parts`](Lease::from_parts)): the recovery epoch, and on
    /// PostgreSQL the server's timeline with it (`epoch * 1_000_000 + timeline`,
    /// taken apart by [`dialect::split_stamp`](crate::dialect::split_stamp)). For
    /// diagnostics only: the fence checks the row's stamp against the current one,
    /// which covers the lease's (see [`fence_predicate`](crate::fence_predicate)).
    pub fn epoch(&self) -> Option<i64> {
        self.epoch
    }

    pub(crate) fn with_epoch(mut self, epoch: Option<i64>) -> Self {
        self.epoch = epoch;
        self
    }

    /// The time to live asked for at acquisition and at each renewal.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The local instant taken just before the acquiring statement was sent.
    pub fn acquired_at(&self) -> Instant {
        self.acquired_at
    }

    /// A conservative local deadline: `acquired_at + ttl`, moved forward by each
    /// successful renewal (from an instant taken before the renewal was sent). The
    /// database's clock, not this one, decides; this is for scheduling renewals and
    /// giving up early.
    pub fn local_deadline(&self) -> Instant {
        *self
            .shared
            .local_deadline
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn extend_local_deadline(&self, deadline: Instant) {
        let mut current = self
            .shared
            .local_deadline
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if deadline > *current {
            *current = deadline;
        }
    }

    /// Revokes the lease locally, for this value and all its clones: every later fenced
    /// write, publication and renewal through it returns
    /// [`Outcome::Refused`](crate::Outcome::Refused) without a round trip. Release still
    /// reaches the database, so that a revoked lease can give the row back.
    pub fn revoke(&self) {
        self.shared.revoked.store(true, Ordering::SeqCst);
    }

    /// `true` once [`revoke`](Lease::revoke) was called on this lease or a clone.
    pub fn is_revoked(&self) -> bool {
        self.shared.revoked.load(Ordering::SeqCst)
    }

    /// `true` once the row was given back through this lease or a clone:
    /// [`Store::release`](crate::Store::release) or
    /// [`Store::publish_and_release`](crate::Store::publish_and_release) (or their
    /// `_op` forms) applied. A [`Keeper`](crate::Keeper) of the lease then ends, without
    /// reporting a loss.
    pub fn is_released(&self) -> bool {
        self.shared.released.is_cancelled()
    }

    pub(crate) fn mark_released(&self) {
        self.shared.released.cancel();
    }

    /// Completes once the lease [is released](Lease::is_released).
    pub(crate) async fn released(&self) {
        self.shared.released.cancelled().await;
    }
}

/// What a fenced row says about its lease, read by
/// [`Store::inspect`](crate::Store::inspect) in one statement, by the database's clock.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseState {
    /// The owner installed by the last acquisition; `None` once released, or before
    /// the first acquisition. An owner whose lease has expired is still shown: see
    /// [`is_held`](LeaseState::is_held).
    pub holder: Option<Uuid>,
    /// The row's generation: how many times it was acquired.
    pub generation: i64,
    /// The expiry, in milliseconds since the Unix epoch by the database's clock;
    /// `None` once released, or before the first acquisition.
    pub expires_at_ms: Option<i64>,
    /// The database's clock when the row was read, in milliseconds since the Unix
    /// epoch.
    pub now_ms: i64,
    /// The generation that last published (0: none).
    pub published_generation: i64,
    /// The stamp the row's last acquisition wrote: the recovery epoch, and on
    /// PostgreSQL the server's timeline with it (see [`Lease::epoch`]).
    pub epoch: i64,
    /// The stamp an acquisition would write now, which every fenced statement
    /// requires; `None` when the epoch table has no row.
    pub current_epoch: Option<i64>,
}

impl LeaseState {
    /// Time left before the lease expires, by the database's clock; `None` when no
    /// lease is set or it has expired.
    pub fn remaining(&self) -> Option<Duration> {
        let left = self.expires_at_ms?.checked_sub(self.now_ms)?;
        (left > 0).then(|| Duration::from_millis(left.unsigned_abs()))
    }

    /// Whether an acquisition now would be refused: an owner is set, the lease has not
    /// expired by the database's clock, and it was acquired in the current epoch (and,
    /// on PostgreSQL, on the server's current timeline).
    pub fn is_held(&self) -> bool {
        self.holder.is_some()
            && self.remaining().is_some()
            && self.current_epoch == Some(self.epoch)
    }

    /// Whether `lease`'s generation and owner are the row's.
    pub fn is_of(&self, lease: &Lease) -> bool {
        self.generation == lease.generation() && self.holder == Some(lease.owner())
    }
}

/// Anything that carries a [`Lease`]: the lease itself, references and smart pointers
/// to one, and an application's own newtype (`struct ReportLease(Lease)`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not carry a lease",
    label = "this must be a `Lease`, a reference to one, or a type that implements `AsLease`",
    note = "for your own lease type, implement `fenced::AsLease` and return the `Lease` it wraps"
)]
pub trait AsLease {
    /// The lease carried.
    fn as_lease(&self) -> &Lease;
}

impl AsLease for Lease {
    fn as_lease(&self) -> &Lease {
        self
    }
}

impl<T: AsLease + ?Sized> AsLease for &T {
    fn as_lease(&self) -> &Lease {
        (**self).as_lease()
    }
}

impl<T: AsLease + ?Sized> AsLease for Box<T> {
    fn as_lease(&self) -> &Lease {
        (**self).as_lease()
    }
}

impl<T: AsLease + ?Sized> AsLease for Arc<T> {
    fn as_lease(&self) -> &Lease {
        (**self).as_lease()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_revocation() {
        let lease = Lease::from_parts(
            Key::BigInt(1),
            Uuid::new_v4(),
            1,
            Duration::from_secs(1),
            Instant::now(),
        );
        let clone = lease.clone();
        assert!(!clone.is_revoked());
        lease.revoke();
        assert!(clone.is_revoked());
    }

    #[test]
    fn local_deadline_only_moves_forward() {
        let start = Instant::now();
        let lease = Lease::from_parts(
            Key::BigInt(1),
            Uuid::new_v4(),
            1,
            Duration::from_secs(10),
            start,
        );
        assert_eq!(lease.local_deadline(), start + Duration::from_secs(10));
        lease.extend_local_deadline(start + Duration::from_secs(5));
        assert_eq!(lease.local_deadline(), start + Duration::from_secs(10));
        lease
            .clone()
            .extend_local_deadline(start + Duration::from_secs(20));
        assert_eq!(lease.local_deadline(), start + Duration::from_secs(20));
    }
}
