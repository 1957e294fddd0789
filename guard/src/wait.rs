//! How long [`Store::acquire`](crate::Store::acquire) keeps trying, and how it backs off.

use std::time::{Duration, Instant};

use rand::Rng;

/// Waiting options for [`Store::acquire`](crate::Store::acquire): a deadline and a
/// jittered exponential backoff between attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    deadline: Instant,
    initial_backoff: Duration,
    max_backoff: Duration,
}

impl Wait {
    /// Keeps trying until `deadline`.
    pub fn until(deadline: Instant) -> Self {
        Wait {
            deadline,
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(1),
        }
    }

    /// Keeps trying for `timeout` from now. A timeout too long for an [`Instant`]
    /// (such as [`Duration::MAX`]) saturates: the deadline is the latest instant the
    /// platform can represent from now, which in effect waits forever.
    pub fn timeout(timeout: Duration) -> Self {
        Wait::until(saturating_add(Instant::now(), timeout))
    }

    /// The first backoff; each later one doubles up to the maximum. Default 50 ms. Any
    /// length is accepted: no sleep lasts past the deadline.
    pub fn initial_backoff(mut self, backoff: Duration) -> Self {
        self.initial_backoff = backoff;
        self
    }

    /// The longest backoff. Default 1 s.
    pub fn max_backoff(mut self, backoff: Duration) -> Self {
        self.max_backoff = backoff;
        self
    }

    /// The deadline.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The backoff before attempt `attempt + 1` (0-based), before jitter.
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(16)).unwrap_or(u32::MAX);
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff.max(self.initial_backoff))
    }

    /// The jittered sleep before the next attempt: uniformly between half and all of the
    /// backoff, and never past the deadline.
    pub(crate) fn sleep_for(&self, attempt: u32, now: Instant) -> Duration {
        let backoff = self.backoff(attempt);
        let nanos = u64::try_from(backoff.as_nanos()).unwrap_or(u64::MAX);
        let jittered = Duration::from_nanos(rand::rng().random_range(nanos / 2..=nanos));
        jittered.min(self.deadline.saturating_duration_since(now))
    }
}

/// `instant + duration`, or the latest instant the platform can represent past
/// `instant` when the sum overflows: never panics.
pub(crate) fn saturating_add(instant: Instant, duration: Duration) -> Instant {
    if let Some(sum) = instant.checked_add(duration) {
        return sum;
    }
    // Halving finds a representable step in at most 64 + 30 tries; a zero step always is.
    let mut step = duration;
    let mut latest = instant;
    while !step.is_zero() {
        match latest.checked_add(step) {
            Some(later) => latest = later,
            None => step /= 2,
        }
    }
    latest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_too_far_saturates() {
        let now = Instant::now();
        let far = saturating_add(now, Duration::MAX);
        assert!(far > now + Duration::from_secs(100 * 365 * 24 * 3600));
        assert_eq!(
            saturating_add(now, Duration::from_secs(1)),
            now + Duration::from_secs(1)
        );
        assert!(Wait::timeout(Duration::MAX).deadline() >= far);
    }

    #[test]
    fn backoff_doubles_up_to_the_maximum() {
        let wait = Wait::timeout(Duration::from_secs(60))
            .initial_backoff(Duration::from_millis(10))
            .max_backoff(Duration::from_millis(70));
        let steps: Vec<u128> = (0..5).map(|a| wait.backoff(a).as_millis()).collect();
        assert_eq!(steps, [10, 20, 40, 70, 70]);
    }

    #[test]
    fn sleep_is_jittered_within_bounds_and_never_past_the_deadline() {
        let now = Instant::now();
        let wait = Wait::until(now + Duration::from_millis(30))
            .initial_backoff(Duration::from_millis(100))
            .max_backoff(Duration::from_millis(100));
        assert!(wait.sleep_for(0, now) <= Duration::from_millis(30));
        let far =
            Wait::until(now + Duration::from_secs(60)).initial_backoff(Duration::from_millis(100));
        for _ in 0..100 {
            let d = far.sleep_for(0, now);
            assert!(
                d >= Duration::from_millis(50) && d <= Duration::from_millis(100),
                "{d:?}"
            );
        }
    }
}
