//! Where a claim of one row starts looking on PostgreSQL: a block of the table drawn
//! by the client, at random among the blocks the table took when its size was last
//! read.
//!
//! Drawn in the statement instead, the start (the table's size, `random()`, the row
//! position built from them) cost the server about 37,000 instructions a claim, a
//! sixth of a `try_acquire` (`BENCHMARKS.md`). A size read a while ago is good enough:
//! the start only spreads the claims of many workers over the table, and a claim looks
//! through every block whatever it is, up to the table's end and then before the start.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::Rng as _;

/// How long a table's size, once read, is drawn from before one claim reads it again.
pub(crate) const SIZE_READ_EVERY: Duration = Duration::from_secs(10);

/// The size claims of one row draw their start from, shared by a store's clones and
/// its views on other connections.
#[derive(Debug)]
pub(crate) struct Starts {
    since: Instant,
    /// The table's blocks at the last read; 0 until one.
    blocks: AtomicU64,
    /// Milliseconds after `since` from which the size is to be read again: 0 at first,
    /// and again after a failed read.
    due: AtomicU64,
}

impl Default for Starts {
    fn default() -> Self {
        Starts {
            since: Instant::now(),
            blocks: AtomicU64::new(0),
            due: AtomicU64::new(0),
        }
    }
}

impl Starts {
    /// Whether the caller is to read the table's size now: for the first claim, and
    /// for one claim each [`SIZE_READ_EVERY`] after, however many run at once.
    pub(crate) fn read_due(&self) -> bool {
        let now = millis(self.since.elapsed());
        let due = self.due.load(Ordering::Relaxed);
        now >= due
            && self
                .due
                .compare_exchange(
                    due,
                    now.saturating_add(millis(SIZE_READ_EVERY)).max(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
    }

    /// Records the size read: `blocks` (a size below 0 cannot be, and counts as none).
    pub(crate) fn read(&self, blocks: i64) {
        self.blocks
            .store(u64::try_from(blocks).unwrap_or(0), Ordering::Relaxed);
    }

    /// A read that failed: the next claim reads again.
    pub(crate) fn read_failed(&self) {
        self.due.store(0, Ordering::Relaxed);
    }

    /// A block drawn at random among those of the last read; 0 before any.
    pub(crate) fn draw(&self) -> u64 {
        match self.blocks.load(Ordering::Relaxed) {
            0 => 0,
            blocks => rand::rng().random_range(0..blocks),
        }
    }
}

/// The row position a claim starts at, as PostgreSQL writes a `tid`: the block's first.
pub(crate) fn position(block: u64) -> String {
    format!("({block},0)")
}

fn millis(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_caller_reads_the_size_until_it_is_due_again() {
        let starts = Starts::default();
        assert!(starts.read_due(), "the first claim reads");
        assert!(!starts.read_due(), "one read at a time");
        starts.read_failed();
        assert!(starts.read_due(), "a failed read is tried again");
        assert!(!starts.read_due());
    }

    #[test]
    fn starts_are_drawn_among_the_blocks_read() {
        let starts = Starts::default();
        assert_eq!(starts.draw(), 0, "nothing read: the table's start");
        starts.read(-1);
        assert_eq!(starts.draw(), 0);
        starts.read(4);
        let drawn: std::collections::BTreeSet<u64> = (0..200).map(|_| starts.draw()).collect();
        assert_eq!(
            drawn,
            (0..4).collect(),
            "every block, and none past the last"
        );
        assert_eq!(position(3), "(3,0)");
    }
}
