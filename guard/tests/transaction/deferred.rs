//! Deferred transactions (`Store::deferred_transaction`): the lease checked and its row
//! locked by the transaction's fenced write of that row, or at its commit. Where the
//! pool cannot hold commits (SQL Server), the lock is taken first, and the schedules
//! say what they then expect.

use std::sync::Arc;
use std::time::Duration;

use fenced_guard::{Dialect, Error, Executor, Lend, OperationOutcome, Outcome, Store, Value};
use uuid::Uuid;

use crate::suite::{Fixture, TIMEOUT, TTL, reports, setup, until_expired};
use crate::support::lines::{insert_line, insert_plainly, line_count};
use crate::support::row::{expire, payload, payload_column, select};

/// Whether the place's pool holds commits, so that a deferred transaction's lock waits
/// for its fenced write.
fn holds_commits<F: Fixture>() -> bool
where
    F::Backend: Lend,
{
    <F::Backend as Lend>::HOLDS_COMMITS
}

/// A line inserted through the transaction's `Fenced`.
async fn add_line<E: Executor>(fenced: &fenced_guard::Fenced<'_, E>, insert: &str, line: &str) {
    let key = fenced.lease().key();
    let rows = fenced
        .execute(insert, &[Value::from(key), Value::from(line)])
        .await
        .expect("insert a line");
    assert_eq!(rows, 1);
}

/// The lines, a publication and an operation id commit together; the publication is
/// the lock. A second transaction whose publication is refused, this generation having
/// published, is checked at its commit, and commits too: the lease holds.
pub async fn a_deferred_transaction_commits_with_its_fenced_write<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let lease = store.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
    let insert = insert_line(&*place, &store);
    let op = Uuid::new_v4();

    let tx = store
        .deferred_transaction(&lease, TIMEOUT)
        .await
        .expect("begin")
        .expect("the lease holds");
    assert_eq!(tx.is_locked(), !holds_commits::<F>());
    assert_eq!(tx.record(op).await.unwrap(), OperationOutcome::Applied);
    for line in ["line 0", "line 1", "line 2"] {
        add_line(&tx, &insert, line).await;
    }
    assert_eq!(
        tx.publish(&payload("published")).await.unwrap(),
        Outcome::Applied
    );
    assert!(tx.is_locked());
    assert_eq!(tx.commit().await.unwrap(), Outcome::Applied);
    assert_eq!(line_count(&*place, &store, &key).await, 3);
    let column = payload_column(store.dialect());
    assert_eq!(
        select(&store, &key, &[column]).await,
        vec![Value::from("published")]
    );
    assert_eq!(
        store.resolve(op).await.unwrap(),
        fenced_guard::Resolution::Applied {
            generation: lease.generation()
        }
    );

    let tx = store
        .deferred_transaction(&lease, TIMEOUT)
        .await
        .unwrap()
        .unwrap();
    add_line(&tx, &insert, "line 3").await;
    // Refused by the publish-once predicate, not by the lease: the commit's own check
    // still passes, as `DeferredTransaction::publish` says.
    assert_eq!(
        tx.publish(&payload("again")).await.unwrap(),
        Outcome::Refused
    );
    assert_eq!(tx.commit().await.unwrap(), Outcome::Applied);
    assert_eq!(line_count(&*place, &store, &key).await, 4);
    assert_eq!(
        select(&store, &key, &[payload_column(store.dialect())]).await,
        vec![Value::from("published")]
    );
}

/// The article's schedule: A's lease expires and B acquires; A comes back and writes
/// its lines in a deferred transaction. Its publication is refused and its commit rolls
/// back, as is a commit with no fenced write; nothing of A's lands, and B's own
/// deferred transaction then commits (the row was not left locked). Negative control:
/// A's line through a plain transaction lands.
pub async fn a_stale_deferred_transaction_writes_nothing<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let a = store.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
    expire(&store, &key).await;
    let b = store.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
    let insert = insert_line(&*place, &store);

    for publish_first in [true, false] {
        let begun = store.deferred_transaction(&a, TIMEOUT).await.unwrap();
        let Some(tx) = begun else {
            assert!(
                !holds_commits::<F>(),
                "a pool that holds commits checked the lease first"
            );
            continue;
        };
        assert!(
            holds_commits::<F>(),
            "a pool without held commits began unchecked"
        );
        add_line(&tx, &insert, "stale").await;
        if publish_first {
            assert_eq!(
                tx.publish(&payload("stale")).await.unwrap(),
                Outcome::Refused
            );
            assert!(!tx.is_locked());
        }
        assert_eq!(tx.commit().await.unwrap(), Outcome::Refused);
    }
    assert_eq!(line_count(&*place, &store, &key).await, 0);
    assert!(store.inspect(key.clone()).await.unwrap().is_of(&b));

    let tx = store
        .deferred_transaction(&b, TIMEOUT)
        .await
        .unwrap()
        .unwrap();
    add_line(&tx, &insert, "b's line").await;
    assert_eq!(tx.publish(&payload("b")).await.unwrap(), Outcome::Applied);
    assert_eq!(tx.commit().await.unwrap(), Outcome::Applied);
    assert_eq!(line_count(&*place, &store, &key).await, 1);

    // Negative control: A's line through a plain transaction lands.
    insert_plainly(&*place, &store, &key, "stale").await;
    assert_eq!(
        line_count(&*place, &store, &key).await,
        2,
        "the negative control wrote nothing: the test could not tell a stale write"
    );
}

/// Until its lease is locked, nothing commits a deferred transaction but its own
/// commit: a `COMMIT` sent around the guard on the store's executor, as a batch or as a
/// statement, however spelled, is refused unsent, and the line written before it is
/// not visible to anyone else. Negative control: the same batch on a plain lent
/// connection commits its line.
pub async fn a_commit_around_a_deferred_transaction_is_refused<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let lease = store.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
    let insert = insert_line(&*place, &store);
    let d = store.dialect();
    let tx = store
        .deferred_transaction(&lease, TIMEOUT)
        .await
        .unwrap()
        .unwrap();
    add_line(&tx, &insert, "early").await;
    let raw = tx.store().backend();
    let spellings = [
        fenced_guard::dialect::commit(d),
        "commit",
        "END",
        "  /* a note */ COMMIT",
        "ROLLBACK",
        "SAVEPOINT s",
    ];
    for sql in spellings {
        let batch = raw.execute_batch(sql).await;
        assert!(
            matches!(batch, Err(Error::StatementRefused { .. })),
            "{sql} as a batch: {batch:?}"
        );
        let statement = raw.execute(sql, &[]).await;
        assert!(
            matches!(statement, Err(Error::StatementRefused { .. })),
            "{sql} as a statement: {statement:?}"
        );
    }
    let through_fenced = tx.execute(fenced_guard::dialect::commit(d), &[]).await;
    assert!(
        matches!(through_fenced, Err(Error::StatementRefused { .. })),
        "{through_fenced:?}"
    );
    assert_eq!(
        line_count(&*place, &store, &key).await,
        0,
        "the line committed before the lease was checked"
    );
    // The transaction is still the one the guard began: its commit checks and lands.
    add_line(&tx, &insert, "after").await;
    assert_eq!(tx.commit().await.unwrap(), Outcome::Applied);
    assert_eq!(line_count(&*place, &store, &key).await, 2);

    // Negative control: on a plain lent connection the same batch commits.
    insert_plainly(&*place, &store, &key, "control").await;
    assert_eq!(
        line_count(&*place, &store, &key).await,
        3,
        "the control's commit did not land: the test could not tell a refusal"
    );
}

/// The fenced write locks the row: once it is applied, B's acquisition of the expired
/// lease waits for A's commit, and then finds A's lines and generation. Negative
/// control (PostgreSQL, where nothing else holds the row): before the fenced write, B
/// acquires at once, and A's write and commit are refused.
pub async fn the_fenced_write_locks_the_row_until_the_commit<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let insert = insert_line(&*place, &store);
    let lease = store
        .try_acquire(key.clone(), Duration::from_secs(3))
        .await
        .unwrap()
        .unwrap();
    let tx = store
        .deferred_transaction(&lease, TIMEOUT)
        .await
        .unwrap()
        .unwrap();
    for line in ["line 0", "line 1", "line 2"] {
        add_line(&tx, &insert, line).await;
    }
    assert_eq!(tx.update(&payload("a")).await.unwrap(), Outcome::Applied);

    let waiter = place.connect().await;
    let marker = place.marker(&waiter).await;
    let successor = Store::new(waiter, reports(&*place));
    until_expired(&successor, &key).await;
    let b = tokio::spawn({
        let key = key.clone();
        async move { successor.try_acquire(key, TTL).await }
    });
    place.until_blocked(&marker).await;
    assert!(
        !b.is_finished(),
        "B acquired while A's fenced write held the row"
    );
    assert_eq!(tx.commit().await.unwrap(), Outcome::Applied);
    let b = b
        .await
        .unwrap()
        .unwrap()
        .expect("the row is free after A's commit");
    assert_eq!(b.generation(), lease.generation() + 1);
    assert_eq!(line_count(&*place, &store, &key).await, 3);

    if store.dialect() != Dialect::Postgres {
        return;
    }
    // Negative control: before its fenced write, B's lease is not kept from C.
    let tx = store
        .deferred_transaction(&b, TIMEOUT)
        .await
        .unwrap()
        .unwrap();
    add_line(&tx, &insert, "stale").await;
    expire(&store, &key).await;
    let c = tokio::time::timeout(Duration::from_secs(10), store.try_acquire(key.clone(), TTL))
        .await
        .expect("C waited for an unlocked row")
        .unwrap()
        .expect("the row is free");
    assert_eq!(
        tx.update(&payload("stale")).await.unwrap(),
        Outcome::Refused
    );
    assert_eq!(tx.commit().await.unwrap(), Outcome::Refused);
    assert!(store.inspect(key.clone()).await.unwrap().is_of(&c));
    assert_eq!(line_count(&*place, &store, &key).await, 3);
}

/// An epoch advance waits for a deferred transaction whose fenced write is applied (the
/// write holds the epoch's row shared), and the lease is refused once it is through.
/// Negative control (PostgreSQL): the same write without the epoch's lock
/// (`dialect::update`) lets an advance through while its transaction is open.
pub async fn an_epoch_advance_waits_for_a_deferred_fenced_write<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let lease = store.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
    let tx = store
        .deferred_transaction(&lease, TIMEOUT)
        .await
        .unwrap()
        .unwrap();
    add_line(&tx, &insert_line(&*place, &store), "line 0").await;
    assert_eq!(tx.update(&payload("a")).await.unwrap(), Outcome::Applied);

    let waiter = place.connect().await;
    let marker = place.marker(&waiter).await;
    let advancer = Store::new(waiter, reports(&*place));
    let advance = tokio::spawn(async move { advancer.advance_epoch().await });
    place.until_blocked(&marker).await;
    assert!(
        !advance.is_finished(),
        "the epoch advanced while a deferred transaction's fenced write was open"
    );
    assert_eq!(tx.commit().await.unwrap(), Outcome::Applied);
    advance.await.unwrap().expect("the advance, once it ended");
    assert!(store.transaction(&lease, TIMEOUT).await.unwrap().is_none());
    assert_eq!(line_count(&*place, &store, &key).await, 1);

    let d = store.dialect();
    if d != Dialect::Postgres {
        return;
    }
    let lease = store.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
    let column = fenced_guard::Identifier::new("Payload").unwrap();
    let unlocked = fenced_guard::dialect::update(d, store.table(), &[&column]);
    assert_ne!(
        unlocked,
        fenced_guard::dialect::update_locking(d, store.table(), &[&column]),
        "the deferred write no longer locks the epoch"
    );
    let plain = store.backend().lend().await.unwrap();
    plain
        .execute_batch(fenced_guard::dialect::begin(d))
        .await
        .unwrap();
    let mut params = vec![Value::from("control")];
    params.extend(crate::support::lease::lock_params(&lease));
    assert_eq!(plain.execute(&unlocked, &params).await.unwrap(), 1);
    let advanced = tokio::time::timeout(Duration::from_secs(10), store.advance_epoch()).await;
    assert!(
        matches!(advanced, Ok(Ok(_))),
        "the negative control's advance did not go through: the test could not tell"
    );
    plain
        .execute_batch(fenced_guard::dialect::rollback(d))
        .await
        .unwrap();
    F::Backend::give_back(plain);
}

/// A deferred transaction that outlives its timeout commits nothing, and leaves the row
/// free.
pub async fn a_deferred_transaction_past_its_timeout_commits_nothing<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let lease = store.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
    let insert = insert_line(&*place, &store);
    // Long enough for a new connection's first statements on Babelfish.
    let timeout = Duration::from_secs(3);
    let tx = store
        .deferred_transaction(&lease, timeout)
        .await
        .unwrap()
        .unwrap();
    add_line(&tx, &insert, "line 0").await;
    tokio::time::sleep(timeout + Duration::from_millis(200)).await;
    let late = tx.publish(&payload("late")).await;
    assert!(
        matches!(late, Err(Error::TransactionTimedOut { .. })),
        "{late:?}"
    );
    let committed = tx.commit().await;
    assert!(
        matches!(committed, Err(Error::TransactionTimedOut { .. })),
        "{committed:?}"
    );
    assert_eq!(line_count(&*place, &store, &key).await, 0);
    assert_eq!(store.release(&lease).await.unwrap(), Outcome::Applied);
}

/// A deferred transaction dropped before its commit leaves nothing, and the pool's next
/// transaction commits as usual.
pub async fn a_dropped_deferred_transaction_leaves_nothing<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let lease = store.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
    let insert = insert_line(&*place, &store);
    let tx = store
        .deferred_transaction(&lease, TIMEOUT)
        .await
        .unwrap()
        .unwrap();
    add_line(&tx, &insert, "dropped").await;
    drop(tx);
    assert_eq!(line_count(&*place, &store, &key).await, 0);
    let tx = store
        .deferred_transaction(&lease, TIMEOUT)
        .await
        .unwrap()
        .unwrap();
    add_line(&tx, &insert, "kept").await;
    assert_eq!(tx.update(&payload("kept")).await.unwrap(), Outcome::Applied);
    assert_eq!(tx.commit().await.unwrap(), Outcome::Applied);
    assert_eq!(line_count(&*place, &store, &key).await, 1);
}

/// Generates the deferred schedules for one backend, in a module of their own.
#[macro_export]
macro_rules! deferred_transactions {
    ($setup:path) => {
        $crate::deferred_transactions!(@ $setup;
            a_deferred_transaction_commits_with_its_fenced_write,
            a_stale_deferred_transaction_writes_nothing,
            the_fenced_write_locks_the_row_until_the_commit,
            an_epoch_advance_waits_for_a_deferred_fenced_write,
            a_deferred_transaction_past_its_timeout_commits_nothing,
            a_dropped_deferred_transaction_leaves_nothing,
        );
    };
    // Where the pool holds commits until the lease is locked.
    (holding_commits $setup:path) => {
        $crate::deferred_transactions!($setup);
        $crate::deferred_transactions!(@ $setup;
            a_commit_around_a_deferred_transaction_is_refused,
        );
    };
    (@ $setup:path; $($name:ident,)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let Some(place) = $setup().await else { return };
            let place = std::sync::Arc::new(place);
            let run =
                tokio::spawn($crate::deferred::$name(std::sync::Arc::clone(&place))).await;
            $crate::support::Place::teardown(&*place).await;
            if let Err(error) = run {
                std::panic::resume_unwind(error.into_panic());
            }
        }
    )*};
}
