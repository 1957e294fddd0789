//! A point-in-time restore: a base backup taken, leases acquired and written after it,
//! a restore point, then one of them taken over; the cluster restored from the backup
//! to the restore point by archive recovery, which ends on a new timeline. The
//! restored rows hold the leases of before the takeover again, live, and the takeover
//! is gone: without an operator step only the timeline stamp tells them apart.

use std::time::Duration;

use fenced_guard::{Key, Lease, Outcome, Postgres, Store};
use uuid::Uuid;

use crate::cluster::{Cluster, Options};
use crate::support::row::{expire, payload};
use crate::takeover::table;

const TTL: Duration = Duration::from_secs(120);

/// What the run saw after the restore.
#[derive(Debug)]
pub struct Seen {
    pub timelines: (i64, i64),
    /// The writes, after the restore, of A and C (leases from after the backup and
    /// before the restore point) and of B (A's successor, after the restore point).
    pub a_write: Outcome,
    pub c_write: Outcome,
    pub b_write: Outcome,
    /// A new acquisition of A's row after the restore: its generation and its write;
    /// `None` when the row was not free.
    pub again: Option<(i64, Outcome)>,
}

pub async fn run(stamp: bool) -> Option<Seen> {
    let mut cluster = Cluster::start(Options {
        archive: true,
        ..Options::default()
    })
    .await?;
    let store = Store::new(
        Postgres::connect_with(&cluster.app_url(), 2)
            .await
            .expect("connect"),
        table(stamp),
    );
    store.create_schema().await.expect("create the schema");
    let (k1, k2) = (Key::from(Uuid::new_v4()), Key::from(Uuid::new_v4()));
    for key in [&k1, &k2] {
        store.provision(key.clone()).await.expect("provision");
    }
    let backup = cluster.base_backup().await;

    let a = acquire(&store, &k1).await;
    let c = acquire(&store, &k2).await;
    assert_eq!(write(&store, &a, "A").await, Outcome::Applied);
    assert_eq!(write(&store, &c, "C").await, Outcome::Applied);
    Cluster::superuser(cluster.primary())
        .await
        .batch_execute("SELECT pg_create_restore_point('fenced')")
        .await
        .expect("make a restore point");
    expire(&store, &k1).await;
    let b = acquire(&store, &k1).await;
    assert_eq!(b.generation(), 2);
    assert_eq!(write(&store, &b, "B").await, Outcome::Applied);
    assert_eq!(write(&store, &a, "A late").await, Outcome::Refused);
    cluster.archived().await;

    let before = cluster.timeline().await;
    cluster.restore(&backup, "fenced").await;
    let after = cluster.timeline().await;

    let a_write = write(&store, &a, "A after").await;
    let c_write = write(&store, &c, "C after").await;
    let b_write = write(&store, &b, "B after").await;
    let again = match store.try_acquire(k1.clone(), TTL).await.expect("acquire") {
        Some(lease) => Some((lease.generation(), write(&store, &lease, "again").await)),
        None => None,
    };
    Some(Seen {
        timelines: (before, after),
        a_write,
        c_write,
        b_write,
        again,
    })
}

async fn acquire(store: &Store<Postgres>, key: &Key) -> Lease {
    store
        .try_acquire(key.clone(), TTL)
        .await
        .expect("acquire")
        .expect("the row is free")
}

async fn write(store: &Store<Postgres>, lease: &Lease, text: &str) -> Outcome {
    store
        .update(lease, &payload(text))
        .await
        .unwrap_or_else(|e| panic!("write {text:?}: {e}"))
}
