//! The failover of the issue: A holds a row, A's lease ends on the primary and B takes
//! the row over there, the primary dies (`SIGKILL`) and the standby is promoted; then A
//! writes, through the same multi-host pool, with no operator step.
//!
//! With asynchronous replication cut before B's takeover, the promoted standby never
//! saw it: A's generation is the row's again, and its lease looks live there. Only the
//! server's timeline, stamped with the epoch, tells that A's lease is from before the
//! promotion. With synchronous replication (`remote_apply`) the standby had B's
//! takeover before it was acknowledged, and the generation alone refuses A.
//!
//! A's lease ends on the primary by its expiry moved into the past there alone, as
//! the conformance suite moves an expiry: it stands for the primary's clock running
//! ahead of the standby's (or for A's lease ended there in another way), which is what
//! lets the standby still see A's lease live when A comes back.

use std::time::Duration;

use fenced_guard::{ColumnType, FencedTable, Key, Lease, Outcome, Postgres, Store};
use uuid::Uuid;

use crate::cluster::{Cluster, Options};
use crate::support::row::{expire, payload};

/// A's and B's leases: long enough to outlive the failover.
const TTL: Duration = Duration::from_secs(120);

/// How the standby is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replication {
    /// Asynchronous, and cut once A's lease is on the standby: nothing after reaches
    /// it, B's takeover included.
    AsynchronousCut,
    /// Synchronous: every commit returns once the standby has applied it.
    Synchronous,
}

/// What the schedule saw after the failover.
#[derive(Debug)]
pub struct Seen {
    /// The timeline before and after the promotion.
    pub timelines: (i64, i64),
    /// A's write, then A's renewal, through A's lease from before the failover.
    pub a_write: Outcome,
    pub a_renewal: Outcome,
    /// B's write through B's lease from before the failover.
    pub b_write: Outcome,
    /// With nothing else to do, B acquires again and writes: the generation it got and
    /// its write. `None` when the row was not free (B's lease still held it).
    pub b_again: Option<(i64, Outcome)>,
    /// The row on the new primary at the end: generation and payload.
    pub row: (i64, Option<String>),
}

/// The report table, with or without the timeline stamp.
pub fn table(stamp: bool) -> FencedTable {
    FencedTable::builder()
        .table("Report")
        .column("Payload", ColumnType::Text)
        .stamp_timeline(stamp)
        .build()
        .expect("a valid table")
}

/// Runs the schedule on a new primary and standby; `None` when PostgreSQL's binaries
/// are missing here (and `CI` is not set).
pub async fn run(replication: Replication, stamp: bool) -> Option<Seen> {
    let mut cluster = Cluster::start(Options {
        standby: true,
        ..Options::default()
    })
    .await?;
    if replication == Replication::Synchronous {
        cluster.synchronous().await;
    }
    let store = Store::new(
        Postgres::connect_with(&cluster.app_url(), 2)
            .await
            .expect("connect through every host"),
        table(stamp),
    );
    // The test's own hand on the primary alone, for A's expiry there.
    let on_primary = Store::new(
        Postgres::connect_with(&Cluster::app_url_of(cluster.primary()), 1)
            .await
            .expect("connect to the primary"),
        table(stamp),
    );
    store.create_schema().await.expect("create the schema");
    let key = Key::from(Uuid::new_v4());
    store
        .provision(key.clone())
        .await
        .expect("provision the row");

    let a = acquire(&store, &key).await;
    assert_eq!(a.generation(), 1);
    assert_eq!(write(&store, &a, "A before").await, Outcome::Applied);
    if replication == Replication::AsynchronousCut {
        cluster.replayed().await;
        cluster.cut().await;
    }
    expire(&on_primary, &key).await;
    let b = acquire(&store, &key).await;
    assert_eq!(b.generation(), 2, "B takes the row over on the primary");
    assert_eq!(write(&store, &b, "B before").await, Outcome::Applied);
    assert_eq!(
        store.renew(&a).await.expect("A's renewal"),
        Outcome::Refused,
        "on the primary, B's takeover refuses A"
    );

    let before = cluster.timeline().await;
    cluster.fail_over().await;
    let after = cluster.timeline().await;

    let a_write = write(&store, &a, "A after").await;
    let a_renewal = store.renew(&a).await.expect("A's renewal");
    let b_write = write(&store, &b, "B after").await;
    let b_again = match store.try_acquire(key.clone(), TTL).await.expect("acquire") {
        Some(lease) => Some((lease.generation(), write(&store, &lease, "B again").await)),
        None => None,
    };
    let row = read(&cluster, &key).await;
    Some(Seen {
        timelines: (before, after),
        a_write,
        a_renewal,
        b_write,
        b_again,
        row,
    })
}

async fn acquire(store: &Store<Postgres>, key: &Key) -> Lease {
    store
        .try_acquire(key.clone(), TTL)
        .await
        .expect("acquire")
        .expect("the row is free")
}

/// A fenced write of `text`; an error fails the test: after the failover the pool must
/// reach the new primary, not report its dead connections.
async fn write(store: &Store<Postgres>, lease: &Lease, text: &str) -> Outcome {
    store
        .update(lease, &payload(text))
        .await
        .unwrap_or_else(|e| panic!("write {text:?}: {e}"))
}

/// The row's generation and payload on the primary.
async fn read(cluster: &Cluster, key: &Key) -> (i64, Option<String>) {
    let Key::Uuid(key) = key else {
        unreachable!("the report table's keys are uuids")
    };
    let row = Cluster::superuser(cluster.primary())
        .await
        .query_one(
            "SELECT \"Generation\", \"Payload\" FROM \"Report\" WHERE \"ReportId\" = $1",
            &[key],
        )
        .await
        .expect("read the row");
    (row.get(0), row.get(1))
}
