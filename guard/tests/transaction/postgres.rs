//! The schedules on PostgreSQL; a waiter is seen waiting in `pg_stat_activity`.

use std::time::Duration;

use fenced_guard::{Executor, Postgres, Value};

use crate::suite::Fixture;
use crate::support::postgres::TestSchema;

/// Two connections per backend: a fenced transaction holds one.
async fn setup() -> Option<TestSchema> {
    Some(TestSchema::create("fenced_tx_", 2).await)
}

impl Fixture for TestSchema {
    async fn marker(&self, waiter: &Postgres) -> Value {
        let row = waiter
            .query_row("SELECT pg_backend_pid()", &[])
            .await
            .expect("the waiter's process id");
        row.and_then(|row| row.into_iter().next())
            .expect("a process id")
    }

    async fn until_blocked(&self, marker: &Value) {
        let sql = "SELECT CAST(count(*) AS bigint) FROM pg_stat_activity \
                   WHERE pid = $1 AND wait_event_type = 'Lock'";
        // Bounded: a waiter that never blocks fails the test rather than hanging it.
        for _ in 0..3_000 {
            let waiting = self
                .admin()
                .query_i64(sql, std::slice::from_ref(marker))
                .await
                .expect("read pg_stat_activity");
            if waiting == Some(1) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the waiter never waited for the row lock");
    }
}

crate::transactions!(with_epoch_lock setup);

mod deferred {
    use super::setup;

    crate::deferred_transactions!(holding_commits setup);
}

mod bound {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use fenced_guard::{Executor, Lend, Postgres, Store, Value};

    use crate::suite::{reports, setup};
    use crate::support::Place;
    use crate::support::postgres::TestSchema;
    use crate::support::row::payload;

    const LEASE_TTL: Duration = Duration::from_secs(1);
    const TIMEOUT: Duration = Duration::from_secs(2);
    /// How long the holder keeps its transaction, writing: far past `TIMEOUT`.
    const HOLD: Duration = Duration::from_secs(30);

    /// The holder of a fenced transaction with a 2 s timeout writes through
    /// `Fenced::store()` every 300 ms and never ends it; its 1 s lease expires. A
    /// successor's acquisition, which waits for the row, goes through while the holder
    /// still holds its `FencedTransaction`: the server ended the transaction at its
    /// deadline, and the holder's writes past it were refused. Negative control: with
    /// the server's timeouts set once, at `BEGIN` (as before), the successor still
    /// waits well past the timeout.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_timeout_bounds_a_successors_wait() {
        let place = Arc::new(TestSchema::create("fenced_bound_", 2).await);
        let (store, key) = setup(&*place).await;
        let lease = store
            .try_acquire(key.clone(), LEASE_TTL)
            .await
            .unwrap()
            .unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let holder = tokio::spawn({
            let (store, lease, done) = (store.clone(), lease.clone(), Arc::clone(&done));
            async move {
                let tx = store.transaction(&lease, TIMEOUT).await.unwrap().unwrap();
                let mut refused = 0;
                let started = std::time::Instant::now();
                // Until a write of its was refused and the successor has acquired.
                while !(refused > 0 && done.load(Ordering::SeqCst)) && started.elapsed() < HOLD {
                    if tx.store().update(&lease, &payload("held")).await.is_err() {
                        refused += 1;
                    }
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                (refused, tx.commit().await)
            }
        });
        let successor = Store::new(place.connect().await, reports(&*place));
        let next = tokio::time::timeout(HOLD, successor.acquire_within(&key))
            .await
            .expect("the successor waited as long as the holder held its transaction");
        assert!(
            !holder.is_finished(),
            "the holder let go before the successor acquired"
        );
        done.store(true, Ordering::SeqCst);
        let (refused, committed) = holder.await.unwrap();
        assert!(
            refused > 0,
            "no write of the holder's past the timeout was refused"
        );
        assert!(
            committed.is_err(),
            "the holder's transaction committed past its timeout"
        );
        assert_eq!(next.generation(), lease.generation() + 1);

        // Negative control: the timeouts set once, at BEGIN.
        let lease = successor.try_acquire(key.clone(), LEASE_TTL).await.unwrap();
        assert!(lease.is_none(), "the successor's lease is held");
        assert!(successor.release(&next).await.unwrap().is_applied());
        let lease = store
            .try_acquire(key.clone(), LEASE_TTL)
            .await
            .unwrap()
            .unwrap();
        let plain = store.backend().lend().await.unwrap();
        plain.execute_batch("BEGIN").await.unwrap();
        plain
            .query_row(
                "SELECT set_config('statement_timeout', $1, true), \
                 set_config('idle_in_transaction_session_timeout', $1, true)",
                &[Value::Text(TIMEOUT.as_millis().to_string())],
            )
            .await
            .unwrap();
        let lock = fenced_guard::dialect::lock(store.dialect(), store.table());
        let locked = plain
            .query_row(&lock, &crate::support::lease::lock_params(&lease))
            .await
            .unwrap();
        assert!(locked.is_some());
        let waiter = tokio::spawn({
            let (successor, key) = (
                Store::new(place.connect().await, reports(&*place)),
                key.clone(),
            );
            async move { successor.acquire_within(&key).await }
        });
        for _ in 0..(3 * TIMEOUT.as_millis() / 300) {
            let update = fenced_guard::dialect::lock(store.dialect(), store.table());
            plain
                .query_row(&update, &crate::support::lease::lock_params(&lease))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        assert!(
            !waiter.is_finished(),
            "the negative control's successor acquired: the test could not tell"
        );
        plain.execute_batch("ROLLBACK").await.unwrap();
        Postgres::give_back(plain);
        waiter.await.unwrap();
        place.teardown().await;
    }

    trait AcquireWithin {
        fn acquire_within(
            &self,
            key: &fenced_guard::Key,
        ) -> impl Future<Output = fenced_guard::Lease> + Send;
    }

    impl AcquireWithin for Store<Postgres> {
        /// Acquires `key` once its lease has expired by the database's clock, waiting
        /// for the row as long as another transaction holds it.
        async fn acquire_within(&self, key: &fenced_guard::Key) -> fenced_guard::Lease {
            loop {
                if let Some(lease) = self
                    .try_acquire(key.clone(), Duration::from_secs(60))
                    .await
                    .expect("acquire")
                {
                    return lease;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}
