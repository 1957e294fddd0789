//! One task per pool that ends its lent transactions at their deadlines.
//!
//! SQLite has no bound of its own on a transaction, so the guard ends one that outlives
//! its timeout: it interrupts a statement still running and rolls back, freeing the
//! write lock for a successor. A task spawned for each transaction cost about 9 µs of a
//! 13 µs fenced transaction (the spawn, and waking the runtime's parked thread for it,
//! then again to cancel it). Here a transaction only enters its deadline into the pool's
//! table, under a mutex, and leaves it when it ends. One task sleeps until the earliest
//! deadline entered, and is woken only for a deadline earlier than that: with one timeout
//! for every transaction, deadlines come in order and it wakes about once per timeout.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Instant;

use tokio::sync::Notify;

use super::prepared::PreparedConnection;
use crate::pool::Checkout;

/// The deadlines of a pool's lent transactions, and the task that enforces them.
pub(super) struct Watchdog {
    state: Mutex<State>,
    /// Wakes the task: a deadline earlier than the one it sleeps until, or the pool
    /// gone.
    wake: Arc<Notify>,
}

#[derive(Default)]
struct State {
    /// Each open transaction's deadline, in order; the second part tells equal
    /// deadlines apart.
    due: BTreeMap<(Instant, u64), Due>,
    entered: u64,
    /// Whether the task is running, and until when it sleeps (`None`: until woken).
    running: bool,
    sleeping_until: Option<Instant>,
    /// How many times a transaction started or woke the task.
    #[cfg(test)]
    wakes: u64,
}

/// What ending a transaction at its deadline needs.
pub(super) struct Due {
    pub(super) conn: Weak<Mutex<Checkout<PreparedConnection>>>,
    pub(super) interrupt: Arc<rusqlite::InterruptHandle>,
}

/// A transaction's deadline in the table, taken out when this is dropped: when the
/// transaction ends, before its connection goes back to the pool.
pub(super) struct Watch {
    watchdog: Arc<Watchdog>,
    key: (Instant, u64),
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.watchdog.state().due.remove(&self.key);
    }
}

impl Drop for Watchdog {
    /// The pool is gone: the task, which holds no strong reference, wakes and ends.
    fn drop(&mut self) {
        self.wake.notify_one();
    }
}

impl Watchdog {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Watchdog {
            state: Mutex::new(State::default()),
            wake: Arc::new(Notify::new()),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Enters `due` to be ended at `deadline`, starting the task on the current tokio
    /// runtime if it is not running (the first transaction, or the runtime that ran
    /// it has shut down).
    pub(super) fn watch(self: &Arc<Self>, deadline: Instant, due: Due) -> Watch {
        let mut state = self.state();
        let key = (deadline, state.entered);
        state.entered += 1;
        state.due.insert(key, due);
        if !state.running {
            state.running = true;
            state.sleeping_until = Some(deadline);
            let stopped = Stopped(Arc::downgrade(self));
            tokio::spawn(run(stopped, Arc::clone(&self.wake)));
            #[cfg(test)]
            {
                state.wakes += 1;
            }
        } else if state.sleeping_until.is_none_or(|until| deadline < until) {
            state.sleeping_until = Some(deadline);
            self.wake.notify_one();
            #[cfg(test)]
            {
                state.wakes += 1;
            }
        }
        Watch {
            watchdog: Arc::clone(self),
            key,
        }
    }

    /// Interrupts every transaction whose deadline has passed, takes it out of the
    /// table and returns it for its rollback; and the next deadline, if any.
    ///
    /// The interrupt is sent under the table's lock: a transaction that ended took its
    /// deadline out under the same lock before giving its connection back, so the
    /// interrupt never reaches a statement of the connection's next user.
    fn expire(&self, now: Instant) -> (Vec<Due>, Option<Instant>) {
        let mut state = self.state();
        let mut expired = Vec::new();
        while let Some(entry) = state.due.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let due = entry.remove();
            due.interrupt.interrupt();
            expired.push(due);
        }
        let next = state.due.keys().next().map(|(at, _)| *at);
        state.sleeping_until = next;
        (expired, next)
    }
}

/// The task: ends what is due, sleeps until the next deadline or a wake, and ends once
/// the pool is gone. It holds the table only weakly, so that the pool can go.
///
/// `stopped` is dropped with the task's future, whether the task returned, or its
/// runtime shut down (even before it first ran): the next transaction starts another.
async fn run(stopped: Stopped, wake: Arc<Notify>) {
    let watchdog = stopped.0.clone();
    loop {
        let woken = wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let Some(strong) = watchdog.upgrade() else {
            return;
        };
        let (expired, next) = strong.expire(Instant::now());
        drop(strong);
        for due in expired {
            roll_back(due);
        }
        match next {
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at.into()) => {}
                    () = woken => {}
                }
            }
            None => woken.await,
        }
    }
}

struct Stopped(Weak<Watchdog>);

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Some(watchdog) = self.0.upgrade() {
            let mut state = watchdog.state();
            state.running = false;
            state.sleeping_until = None;
        }
    }
}

/// Rolls back the transaction interrupted at its deadline, on the blocking pool: the
/// connection's lock waits for the interrupted statement to return. A connection given
/// back meanwhile is no longer reachable; one that has no transaction open is left.
fn roll_back(due: Due) {
    tokio::task::spawn_blocking(move || {
        let Some(conn) = due.conn.upgrade() else {
            return;
        };
        let mut checkout = conn.lock().unwrap_or_else(PoisonError::into_inner);
        let conn = checkout.conn().conn();
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
    });
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn due(conn: &rusqlite::Connection) -> Due {
        Due {
            conn: Weak::new(),
            interrupt: Arc::new(conn.get_interrupt_handle()),
        }
    }

    /// Transactions with one timeout, one after another as a worker runs them, wake
    /// the task once in all: each deadline is later than the one it sleeps until.
    /// Negative control: deadlines that come earlier each time wake it every time.
    #[tokio::test]
    async fn deadlines_in_order_wake_the_task_once() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let start = Instant::now() + Duration::from_secs(60);
        let wakes = |deadlines: &mut dyn Iterator<Item = Instant>| {
            let watchdog = Watchdog::new();
            for deadline in deadlines {
                drop(watchdog.watch(deadline, due(&conn)));
            }
            let state = watchdog.state();
            assert!(
                state.due.is_empty(),
                "an ended transaction left its deadline"
            );
            state.wakes
        };
        let ms = Duration::from_millis;
        assert_eq!(wakes(&mut (0..1000).map(|i| start + ms(i))), 1);
        assert_eq!(wakes(&mut (0..1000).map(|i| start - ms(i))), 1000);
    }

    /// A deadline that passes interrupts its transaction's running statement; one taken
    /// out first (the transaction ended) does not.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_passed_deadline_interrupts_and_an_ended_one_does_not() {
        let watchdog = Watchdog::new();
        for ended in [true, false] {
            let conn = rusqlite::Connection::open_in_memory().unwrap();
            let watch = watchdog.watch(Instant::now() + Duration::from_millis(50), due(&conn));
            let watch = if ended {
                drop(watch);
                None
            } else {
                Some(watch)
            };
            // Half a second of work or more, running as the deadline passes.
            let counted = tokio::task::spawn_blocking(move || {
                conn.query_row(
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) \
                     SELECT count(*) FROM (SELECT i FROM n LIMIT 3000000)",
                    [],
                    |row| row.get::<_, i64>(0),
                )
            })
            .await
            .unwrap();
            match counted {
                Ok(count) => assert!(ended, "ran to its end past its deadline: {count}"),
                Err(error) => assert!(
                    !ended
                        && error.sqlite_error_code()
                            == Some(rusqlite::ErrorCode::OperationInterrupted),
                    "{error}"
                ),
            }
            drop(watch);
        }
    }
}
