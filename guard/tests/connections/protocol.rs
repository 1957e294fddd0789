//! What every caller-owned connection must run: the protocol's autocommitted steps, and
//! the refusals of a stale lease.

use std::time::Duration;

use fenced_guard::{Executor, InTransaction, Key, Lease, OperationOutcome, Outcome, Store};
use uuid::Uuid;

use crate::support::Place;
use crate::support::lines::{insert_line, line_count};
use crate::support::row::{expire, payload};

pub const TTL: Duration = Duration::from_secs(60);

/// Provision, acquire, renew, update (to a null too, when `nulls`), update with an
/// operation id, inspect: each step on `store`'s executor. Returns the lease.
pub async fn protocol<E: Executor>(store: &Store<E>, key: &Key, nulls: bool) -> Lease {
    assert!(store.provision(key.clone()).await.expect("provision"));
    let lease = store
        .try_acquire(key.clone(), TTL)
        .await
        .expect("acquire")
        .expect("the row is free");
    assert!(
        store
            .try_acquire(key.clone(), TTL)
            .await
            .expect("acquire")
            .is_none()
    );
    assert_eq!(store.renew(&lease).await.expect("renew"), Outcome::Applied);
    assert_eq!(
        store
            .update(&lease, &payload("draft"))
            .await
            .expect("update"),
        Outcome::Applied
    );
    // A null is bound with no type where the driver lets the server infer it.
    if nulls {
        assert_eq!(
            store
                .update(&lease, &[("Payload", fenced_guard::Value::Null)])
                .await
                .expect("update to null"),
            Outcome::Applied
        );
    }
    let op = Uuid::new_v4();
    assert_eq!(
        store
            .update_op(&lease, op, &payload("draft 2"))
            .await
            .expect("update_op"),
        OperationOutcome::Applied
    );
    assert!(
        store
            .inspect(key.clone())
            .await
            .expect("inspect")
            .is_of(&lease)
    );
    lease
}

/// Once `lease` has expired and a successor acquired, its writes are refused; the
/// successor publishes and releases.
pub async fn stale_is_refused<E: Executor>(store: &Store<E>, key: &Key, lease: &Lease) {
    expire(store, key).await;
    let successor = store
        .try_acquire(key.clone(), TTL)
        .await
        .expect("acquire")
        .expect("the expired row is free");
    assert_eq!(successor.generation(), lease.generation() + 1);
    assert_eq!(
        store
            .publish(lease, &payload("stale"))
            .await
            .expect("publish"),
        Outcome::Refused
    );
    assert_eq!(
        store
            .publish_and_release(&successor, &payload("final"))
            .await
            .expect("publish"),
        Outcome::Applied
    );
}

/// Inside the caller's transaction, on `store` (made by [`Store::on`] for it): checks
/// and locks `lease`'s row, writes line `line`, and publishes. `false` when the fence
/// refused, and nothing was written.
pub async fn fenced_lines<E: InTransaction>(
    place: &impl Place,
    store: Store<E>,
    lease: &Lease,
    line: &str,
) -> bool {
    let insert = insert_line(place, &store);
    let Some(fenced) = store.fence(lease).await.expect("fence") else {
        return false;
    };
    let rows = fenced
        .execute(&insert, &[lease.key().into(), line.into()])
        .await
        .expect("insert a line");
    assert_eq!(rows, 1);
    assert_eq!(
        fenced
            .store()
            .update(lease, &payload(line))
            .await
            .expect("update"),
        Outcome::Applied
    );
    true
}

/// A's lease expires and B acquires, on `other`: what every "then A writes" schedule
/// starts from. Returns B's lease.
pub async fn superseded<E: Executor>(other: &Store<E>, key: &Key, a: &Lease) -> Lease {
    expire(other, key).await;
    let b = other
        .try_acquire(key.clone(), TTL)
        .await
        .expect("acquire")
        .expect("the expired row is free");
    assert_eq!(b.generation(), a.generation() + 1);
    b
}

/// Whether `result` is the refusal of a fence or statement outside its transaction.
pub fn not_in_transaction<T: std::fmt::Debug>(result: &fenced_guard::Result<T>) -> bool {
    matches!(result, Err(fenced_guard::Error::NotInTransaction(_)))
}

/// How many lines `key` has, read through `store`.
pub async fn lines<E: Executor>(place: &impl Place, store: &Store<E>, key: &Key) -> i64 {
    line_count(place, store, key).await
}

/// The fenced table of these tests, in `place`.
pub fn reports(place: &impl Place) -> fenced_guard::FencedTable {
    fenced_guard::FencedTable::builder()
        .table(place.qualified("Report"))
        .column("Payload", fenced_guard::ColumnType::Text)
        .build()
        .expect("valid test table")
}
