//! The schedules on SQL Server, at `FENCED_MSSQL_URL`; a waiter is seen blocked in
//! `sys.dm_exec_requests`, or on Babelfish, which has no such view, in PostgreSQL's
//! `pg_stat_activity` (its sessions are PostgreSQL backends, `@@SPID` their pid).

use std::time::Duration;

use fenced_guard::{Executor, Mssql, Value};

use crate::suite::Fixture;
use crate::support::mssql::TestSchema;

async fn setup() -> Option<TestSchema> {
    TestSchema::create("fenced_tx_", 2).await
}

impl Fixture for TestSchema {
    async fn marker(&self, waiter: &Mssql) -> Value {
        let spid = waiter
            .query_i64("SELECT CAST(@@SPID AS bigint)", &[])
            .await
            .expect("the waiter's session id")
            .expect("a session id");
        Value::I64(spid)
    }

    async fn until_blocked(&self, marker: &Value) {
        let sql = if crate::support::mssql::is_babelfish(self.admin()).await {
            "SELECT CAST(COUNT(*) AS bigint) FROM pg_catalog.pg_stat_activity \
             WHERE pid = @P1 AND wait_event_type = 'Lock'"
        } else {
            "SELECT CAST(COUNT(*) AS bigint) FROM sys.dm_exec_requests \
             WHERE session_id = @P1 AND blocking_session_id <> 0"
        };
        for _ in 0..3_000 {
            let waiting = self
                .admin()
                .query_i64(sql, std::slice::from_ref(marker))
                .await
                .expect("read the lock view");
            if waiting == Some(1) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the waiter never waited for the row lock");
    }
}

crate::transactions!(with_epoch_lock setup);

/// SQL Server's pool holds no commits: a deferred transaction takes its lock first.
mod deferred {
    use super::setup;

    crate::deferred_transactions!(setup);
}

mod bound {
    use std::sync::Arc;
    use std::time::Duration;

    use fenced_guard::{Executor, Key, Lease, Lend, Mssql, Store, Value};

    use crate::suite::{reports, setup};
    use crate::support::Place;
    use crate::support::lines::{insert_line, line_count};
    use crate::support::mssql::TestSchema;

    const LEASE_TTL: Duration = Duration::from_secs(1);
    const TIMEOUT: Duration = Duration::from_secs(2);
    /// How long the holder keeps its transaction: far past `TIMEOUT`.
    const HOLD: Duration = Duration::from_secs(30);

    /// Acquires `key` once its lease has expired by the database's clock, waiting for
    /// the row as long as another transaction holds it.
    async fn acquire_within(store: &Store<Mssql>, key: &Key) -> Lease {
        loop {
            if let Some(lease) = store
                .try_acquire(key.clone(), Duration::from_secs(60))
                .await
                .expect("acquire")
            {
                return lease;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The holder of a fenced transaction with a 2 s timeout writes a line and hangs,
    /// never ending it; its 1 s lease expires. A successor's acquisition, which waits
    /// for the row, goes through while the holder still holds its `FencedTransaction`:
    /// the guard closed the connection at the deadline, and the server rolled the
    /// transaction back, line included. Negative control: a lent connection whose
    /// transaction has no bound keeps the successor waiting well past the timeout.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_timeout_bounds_a_successors_wait() {
        let Some(place) = TestSchema::create("fenced_bound_", 2).await else {
            return;
        };
        let place = Arc::new(place);
        let (store, key) = setup(&*place).await;
        let lease = store
            .try_acquire(key.clone(), LEASE_TTL)
            .await
            .unwrap()
            .unwrap();
        let tx = store.transaction(&lease, TIMEOUT).await.unwrap().unwrap();
        tx.execute(
            &insert_line(&*place, &store),
            &[Value::from(&key), Value::from("held")],
        )
        .await
        .unwrap();

        let successor = Store::new(place.connect().await, reports(&*place));
        let next = tokio::time::timeout(HOLD, acquire_within(&successor, &key))
            .await
            .expect("the successor waited as long as the holder held its transaction");
        assert_eq!(next.generation(), lease.generation() + 1);
        // The holder still holds its transaction, which the server rolled back.
        assert!(tx.commit().await.is_err(), "committed past its timeout");
        assert_eq!(line_count(&*place, &store, &key).await, 0);

        // Negative control: a transaction on a lent connection with no bound.
        assert!(successor.release(&next).await.unwrap().is_applied());
        let lease = store
            .try_acquire(key.clone(), LEASE_TTL)
            .await
            .unwrap()
            .unwrap();
        let plain = store.backend().lend().await.unwrap();
        plain.execute_batch("BEGIN TRANSACTION").await.unwrap();
        let lock = fenced_guard::dialect::lock(store.dialect(), store.table());
        let locked = plain
            .execute(&lock, &crate::support::lease::mssql_lock_params(&lease))
            .await
            .unwrap();
        assert_eq!(locked, 1);
        let waiter = tokio::spawn({
            let (successor, key) = (successor.clone(), key.clone());
            async move { acquire_within(&successor, &key).await }
        });
        tokio::time::sleep(3 * TIMEOUT).await;
        assert!(
            !waiter.is_finished(),
            "the negative control's successor acquired: the test could not tell"
        );
        plain.execute_batch("ROLLBACK TRANSACTION").await.unwrap();
        Mssql::give_back(plain);
        waiter.await.unwrap();
        place.teardown().await;
    }
}

/// The suite's store on `place`, and a lease on its row held for a minute.
async fn held_a_minute(place: &TestSchema) -> (fenced_guard::Store<Mssql>, fenced_guard::Lease) {
    let (store, key) = crate::suite::setup(place).await;
    let lease = store
        .try_acquire(key, Duration::from_secs(60))
        .await
        .unwrap()
        .expect("the row is free");
    (store, lease)
}

/// A session's isolation level outlives its transactions, so a connection of the
/// guard's pool can be left at `SNAPSHOT` (here by a batch sent on it), which reads the
/// epoch as of its snapshot; the check-and-lock of `Store::transaction` does not ask
/// the session's level. Its `BEGIN` sets `READ COMMITTED`: inside the fenced
/// transaction the level is 2. Negative control: on the same session, left at
/// `SNAPSHOT`, a transaction begun with `BEGIN TRANSACTION` alone runs at 5.
#[tokio::test]
async fn a_fenced_transaction_begins_read_committed_whatever_its_session_was_left_at() {
    use crate::support::Place;
    use fenced_guard::Lend;

    const LEVEL: &str = "SELECT CAST(transaction_isolation_level AS bigint), \
                         CAST(@@SPID AS bigint) FROM sys.dm_exec_sessions \
                         WHERE session_id = @@SPID";
    let Some(place) = TestSchema::create("fenced_isolation_", 1).await else {
        return;
    };
    // SQL Server needs snapshot isolation allowed; Babelfish has it without.
    let _ = place
        .admin()
        .execute_batch("ALTER DATABASE CURRENT SET ALLOW_SNAPSHOT_ISOLATION ON")
        .await;
    let (store, lease) = held_a_minute(&place).await;

    let lent = store.backend().lend().await.unwrap();
    lent.execute_batch("SET TRANSACTION ISOLATION LEVEL SNAPSHOT")
        .await
        .unwrap();
    lent.execute_batch("BEGIN TRANSACTION").await.unwrap();
    let control = lent.query_row(LEVEL, &[]).await.unwrap().expect("a row");
    lent.execute_batch("ROLLBACK TRANSACTION").await.unwrap();
    Mssql::give_back(lent);
    assert_eq!(
        control[0],
        Value::I64(5),
        "the session was not left at SNAPSHOT"
    );

    // The pool has one connection: the fenced transaction takes the same session.
    let tx = store
        .transaction(&lease, Duration::from_secs(30))
        .await
        .unwrap()
        .expect("the lease holds");
    let inside = tx.query_row(LEVEL, &[]).await.unwrap().expect("a row");
    tx.rollback().await.unwrap();
    assert_eq!(
        inside[1], control[1],
        "another session: the test could not tell"
    );
    assert_eq!(
        inside[0],
        Value::I64(2),
        "the fenced transaction ran at {inside:?}"
    );
    place.teardown().await;
}

/// The check-and-lock of `Store::transaction` leaves out the refusal of a batch with no
/// transaction open, since the guard sends it right after its own `BEGIN`; were none
/// open, it would still lock nothing: the epoch's application lock, owned by the
/// transaction, is not granted (51003), and no transaction is left open to hold the
/// row's lock. Negative control: inside a transaction the same statement locks the row.
#[tokio::test]
async fn the_guards_check_and_lock_with_no_transaction_open_locks_nothing() {
    use crate::support::Place;
    use fenced_guard::Lend;

    let Some(place) = TestSchema::create("fenced_unbegun_", 1).await else {
        return;
    };
    let (store, lease) = held_a_minute(&place).await;
    let lock = fenced_guard::dialect::lock_after_begin(store.dialect(), store.table());
    let params = crate::support::lease::mssql_lock_params(&lease);

    let lent = store.backend().lend().await.unwrap();
    let unbegun = lent.execute(&lock, &params).await;
    let code = unbegun.as_ref().err().and_then(|e| e.database_code());
    assert_eq!(code.as_deref(), Some("51003"), "{unbegun:?}");
    let open = lent
        .query_i64("SELECT CAST(@@TRANCOUNT AS bigint)", &[])
        .await
        .unwrap();
    assert_eq!(open, Some(0), "the check-and-lock left a transaction open");

    // Negative control: in a transaction, the row is locked.
    lent.execute_batch("BEGIN TRANSACTION").await.unwrap();
    let locked = lent.execute(&lock, &params).await.unwrap();
    lent.execute_batch("ROLLBACK TRANSACTION").await.unwrap();
    Mssql::give_back(lent);
    assert_eq!(locked, 1, "the negative control locked nothing");
    place.teardown().await;
}
