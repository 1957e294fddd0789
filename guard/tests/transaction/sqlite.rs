//! The schedules on SQLite. SQLite's lock is the database's write lock: a probe
//! connection that cannot take it, with no busy timeout, shows it held.

use std::time::Duration;

use fenced_guard::{Sqlite, SqliteOptions, Value};

use crate::suite::Fixture;
use crate::support::sqlite::TempDatabase;

/// A busy timeout long enough that the waiter is still waiting when the holder commits.
async fn setup() -> Option<TempDatabase> {
    Some(TempDatabase::with_options(
        "transaction.db",
        SqliteOptions::default().busy_timeout(Duration::from_secs(30)),
    ))
}

impl Fixture for TempDatabase {
    async fn marker(&self, _waiter: &Sqlite) -> Value {
        Value::Null
    }

    /// The write lock is held by another connection; the waiter, whose statement needs
    /// it, has had its first try.
    async fn until_blocked(&self, _marker: &Value) {
        let probe = rusqlite::Connection::open(self.path()).expect("open a probe");
        let held = probe.execute_batch("BEGIN IMMEDIATE");
        assert!(
            held.as_ref()
                .is_err_and(|e| e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)),
            "the write lock is not held: {held:?}"
        );
        // The waiter's task runs on the other worker thread; its first try finds the
        // lock held. Were it not to run before the commit, the test would only be weaker.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

crate::transactions!(with_epoch_lock setup);

mod deferred {
    use super::setup;

    crate::deferred_transactions!(holding_commits setup);
}

/// The schedules again with the lent connection's statements run in place on the
/// runtime's threads, its `BEGIN IMMEDIATE` sleeping its task while the lock is held.
mod in_place {
    use std::time::Duration;

    use fenced_guard::{SqliteExecution, SqliteOptions};

    use crate::support::sqlite::TempDatabase;

    async fn setup() -> Option<TempDatabase> {
        Some(TempDatabase::with_options(
            "transaction.db",
            SqliteOptions::default()
                .busy_timeout(Duration::from_secs(30))
                .execution(SqliteExecution::InPlace),
        ))
    }

    crate::transactions!(with_epoch_lock setup);

    mod deferred {
        use super::setup;

        crate::deferred_transactions!(holding_commits setup);
    }
}

mod bound {
    use std::time::Duration;

    use fenced_guard::{Executor, Key, Lease, Lend, Sqlite, SqliteOptions, Store, Value};

    use crate::suite::{reports, setup};
    use crate::support::Place;
    use crate::support::lines::{insert_line, line_count};
    use crate::support::sqlite::TempDatabase;

    const LEASE_TTL: Duration = Duration::from_secs(1);
    const TIMEOUT: Duration = Duration::from_secs(2);
    /// How long the holder keeps its transaction: far past `TIMEOUT`.
    const HOLD: Duration = Duration::from_secs(30);

    /// Acquires `key` once its lease has expired, trying again while another
    /// connection holds the write lock past the busy timeout.
    async fn acquire_within(store: &Store<Sqlite>, key: &Key) -> Lease {
        loop {
            match store
                .try_acquire(key.clone(), Duration::from_secs(60))
                .await
            {
                Ok(Some(lease)) => return lease,
                Ok(None) => {}
                Err(error) if error.database_code().as_deref() == Some("5") => {}
                Err(error) => panic!("acquire: {error}"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The holder of a fenced transaction with a 2 s timeout writes a line and hangs,
    /// never ending it; its 1 s lease expires. A successor, which needs the database's
    /// write lock, acquires while the holder still holds its `FencedTransaction`: at the
    /// deadline the guard rolled the transaction back, line included. Negative control:
    /// a lent connection whose transaction has no bound keeps the successor out well
    /// past the timeout.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_timeout_bounds_a_successors_wait() {
        let place = TempDatabase::with_options(
            "bound.db",
            SqliteOptions::default().busy_timeout(Duration::from_millis(500)),
        );
        let (store, key) = setup(&place).await;
        let lease = store
            .try_acquire(key.clone(), LEASE_TTL)
            .await
            .unwrap()
            .unwrap();
        let tx = store.transaction(&lease, TIMEOUT).await.unwrap().unwrap();
        tx.execute(
            &insert_line(&place, &store),
            &[Value::from(&key), Value::from("held")],
        )
        .await
        .unwrap();

        let successor = Store::new(place.connect().await, reports(&place));
        let next = tokio::time::timeout(HOLD, acquire_within(&successor, &key))
            .await
            .expect("the successor waited as long as the holder held its transaction");
        assert_eq!(next.generation(), lease.generation() + 1);
        assert!(tx.commit().await.is_err(), "committed past its timeout");
        assert_eq!(line_count(&place, &store, &key).await, 0);

        // Negative control: a transaction on a lent connection with no bound.
        assert!(successor.release(&next).await.unwrap().is_applied());
        let plain = store.backend().lend().await.unwrap();
        plain.execute_batch("BEGIN IMMEDIATE").await.unwrap();
        let waiter = tokio::spawn({
            let (successor, key) = (successor.clone(), key.clone());
            async move { acquire_within(&successor, &key).await }
        });
        tokio::time::sleep(3 * TIMEOUT).await;
        assert!(
            !waiter.is_finished(),
            "the negative control's successor acquired: the test could not tell"
        );
        plain.execute_batch("ROLLBACK").await.unwrap();
        Sqlite::give_back(plain);
        waiter.await.unwrap();
    }
}

/// A fenced transaction on the guard's pool checks its lease without writing: its
/// `BEGIN IMMEDIATE` holds the database's write lock already. Counted by a trigger that
/// records every update of the fenced table: a fenced transaction that checks its lease
/// and commits records none. Negative control: the check-and-lock of a transaction the
/// caller began (an `UPDATE` of the generation to itself), in the same kind of
/// transaction, records one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_transaction_checks_its_lease_without_writing() {
    use fenced_guard::{Executor, Lend, dialect};

    let place = TempDatabase::new("check.db");
    let (store, key) = crate::suite::setup(&place).await;
    let lease = store
        .try_acquire(key, Duration::from_secs(60))
        .await
        .unwrap()
        .expect("the row is free");
    let table = store.table().name().quoted(store.dialect());
    store
        .backend()
        .execute_batch(&format!(
            "CREATE TABLE Updates (n INTEGER NOT NULL); \
             CREATE TRIGGER counted AFTER UPDATE ON {table} BEGIN INSERT INTO Updates VALUES (1); END"
        ))
        .await
        .unwrap();
    let updates = async || {
        store
            .backend()
            .query_i64("SELECT COUNT(*) FROM Updates", &[])
            .await
            .unwrap()
            .unwrap()
    };
    let tx = store
        .transaction(&lease, Duration::from_secs(30))
        .await
        .unwrap()
        .expect("the lease holds");
    tx.commit().await.unwrap();
    assert_eq!(updates().await, 0, "the fenced transaction's check wrote");

    let lent = store.backend().lend().await.unwrap();
    lent.execute_batch(dialect::begin(store.dialect()))
        .await
        .unwrap();
    let lock = dialect::lock(store.dialect(), store.table());
    let params = crate::support::lease::lock_params(&lease);
    assert_eq!(lent.execute(&lock, &params).await.unwrap(), 1);
    lent.execute_batch(dialect::commit(store.dialect()))
        .await
        .unwrap();
    Sqlite::give_back(lent);
    assert_eq!(
        updates().await,
        1,
        "the caller's check-and-lock was not counted: the test could not tell"
    );
}
