//! Leases through the protocol: taking a free row, and checking that a lease no longer
//! writes.

use std::time::Duration;

use fenced_guard::{Backend, Key, Lease, Outcome, Store, Value};

use super::row::payload;

/// Acquires the free row under `key` with `ttl`; panics when it is not free.
pub async fn acquire<B: Backend>(store: &Store<B>, key: &Key, ttl: Duration) -> Lease {
    store
        .try_acquire(key.clone(), ttl)
        .await
        .expect("acquire")
        .expect("the row is free")
}

/// Asserts that an update and a publication of `text`, and a renewal, under `lease` are
/// each refused.
pub async fn assert_writes_refused<B: Backend>(store: &Store<B>, lease: &Lease, text: &str) {
    let update = store.update(lease, &payload(text)).await.unwrap();
    assert_eq!(update, Outcome::Refused, "the update");
    let publication = store.publish(lease, &payload(text)).await.unwrap();
    assert_eq!(publication, Outcome::Refused, "the publication");
    let renewal = store.renew(lease).await.unwrap();
    assert_eq!(renewal, Outcome::Refused, "the renewal");
}

/// The check-and-lock statement's parameters for `lease`: key, generation, owner.
pub fn lock_params(lease: &Lease) -> [Value; 3] {
    [
        Value::from(lease.key()),
        Value::I64(lease.generation()),
        Value::Uuid(lease.owner()),
    ]
}

/// SQL Server's check-and-lock parameters for `lease`: those of [`lock_params`], then a
/// fresh name for the transaction's own lock.
pub fn mssql_lock_params(lease: &Lease) -> [Value; 4] {
    let [key, generation, owner] = lock_params(lease);
    [key, generation, owner, Value::Uuid(uuid::Uuid::new_v4())]
}
