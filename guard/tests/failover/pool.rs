//! The guard's pool on a connection string naming the primary and the standby
//! follows the primary across a failover: the dead connections are dropped, new ones
//! reach the new primary (also once the old one is back as a standby, first in the
//! list), and nothing is reported applied that was not: the statement running when
//! the primary died fails as possibly committed, and its operation id resolves as not
//! applied on the new primary.

use std::time::Duration;

use fenced_guard::{OperationOutcome, Postgres, Resolution, Store};
use tokio_postgres::Client;
use uuid::Uuid;

use crate::cluster::{Cluster, Options, wait_for};
use crate::support::row::payload;
use crate::takeover::table;

const TTL: Duration = Duration::from_secs(120);
const CONNECTIONS: usize = 4;

/// What the run saw; the test asserts on it.
#[derive(Debug)]
pub struct Seen {
    /// The new primary's port.
    pub new_primary: u16,
    /// The ports the pool's connections reached after the failover.
    pub pooled_ports: Vec<u16>,
    /// The in-flight publication: whether it failed as possibly committed, how its
    /// operation id resolved afterwards, and the row's published generation.
    pub in_flight_failed_as_in_doubt: bool,
    pub in_flight_resolution: Resolution,
    pub in_flight_row_published: i64,
    /// The acquisitions after the failover, one per row: each `Some` generation, or
    /// an error's text.
    pub acquisitions: Vec<Result<Option<i64>, String>>,
    /// Of the rows acquired after the failover, how many the new primary shows held
    /// by the lease the client was given.
    pub acquisitions_present: usize,
    /// The port a new pool's first connection reached once the old primary was back
    /// as a standby, first in the host list.
    pub fresh_pool_port: u16,
}

pub async fn run() -> Option<Seen> {
    let mut cluster = Cluster::start(Options {
        standby: true,
        ..Options::default()
    })
    .await?;
    let backend = Postgres::connect_with(&cluster.app_url(), CONNECTIONS)
        .await
        .expect("connect through every host");
    let store = Store::new(backend, table(true));
    store.create_schema().await.expect("create the schema");
    let keys: Vec<Uuid> = (0..8).map(|_| Uuid::new_v4()).collect();
    for key in &keys {
        store.provision(*key).await.expect("provision");
    }
    // Every pooled connection open, on the primary.
    let clients = hold_all(CONNECTIONS, || store.backend().client()).await;
    drop(clients);
    assert_eq!(store.backend().idle_connections(), CONNECTIONS);

    // A publication held by a row lock when the primary dies.
    let held = store
        .try_acquire(keys[0], TTL)
        .await
        .expect("acquire")
        .expect("free");
    let locker = Cluster::superuser(cluster.primary()).await;
    locker
        .batch_execute("BEGIN")
        .await
        .expect("begin the locking transaction");
    locker
        .execute(
            "SELECT 1 FROM \"Report\" WHERE \"ReportId\" = $1 FOR UPDATE",
            &[&keys[0]],
        )
        .await
        .expect("lock the row");
    let op = Uuid::new_v4();
    let publishing = {
        let store = store.clone();
        let held = held.clone();
        tokio::spawn(async move { store.publish_op(&held, op, &payload("in flight")).await })
    };
    let observer = Cluster::superuser(cluster.primary()).await;
    wait_for("the publication to wait for the row lock", || {
        lock_waits(&observer)
    })
    .await;

    cluster.fail_over().await;
    let in_flight = publishing.await.expect("the publication's task");
    let in_flight_failed_as_in_doubt = match &in_flight {
        Err(error) => error.may_have_committed(),
        Ok(outcome) => panic!("the publication in flight came back {outcome:?}"),
    };
    assert!(
        !matches!(in_flight, Ok(OperationOutcome::Applied)),
        "reported applied"
    );

    // Every row at once: as many statements as the pool has connections, and more.
    let mut tasks = Vec::new();
    for key in keys.iter().skip(1) {
        let store = store.clone();
        let key = *key;
        tasks.push(tokio::spawn(async move {
            store
                .try_acquire(key, TTL)
                .await
                .map(|lease| lease.map(|l| (l.generation(), l.owner())))
                .map_err(|e| e.to_string())
        }));
    }
    let mut acquisitions = Vec::new();
    let mut acquisitions_present = 0;
    let primary = Cluster::superuser(cluster.primary()).await;
    for (key, task) in keys.iter().skip(1).zip(tasks) {
        let result = task.await.expect("an acquisition's task");
        if let Ok(Some((generation, owner))) = &result {
            let row = primary
                .query_one(
                    "SELECT \"Generation\", \"LeaseOwner\" FROM \"Report\" WHERE \"ReportId\" = $1",
                    &[key],
                )
                .await
                .expect("read the row");
            if row.get::<_, i64>(0) == *generation && row.get::<_, Option<Uuid>>(1) == Some(*owner)
            {
                acquisitions_present += 1;
            }
        }
        acquisitions.push(result.map(|lease| lease.map(|(generation, _)| generation)));
    }
    let in_flight_resolution = store.resolve(op).await.expect("resolve the publication");
    let in_flight_row_published: i64 = primary
        .query_one(
            "SELECT \"PublishedGeneration\" FROM \"Report\" WHERE \"ReportId\" = $1",
            &[&keys[0]],
        )
        .await
        .expect("read the row")
        .get(0);
    let clients = hold_all(CONNECTIONS, || store.backend().client()).await;
    let mut pooled_ports = Vec::new();
    for client in &clients {
        pooled_ports.push(server_port(client).await);
    }
    drop(clients);

    // The old primary back as a standby, first in the host list: skipped.
    cluster.rebuild().await;
    let fresh = Postgres::connect_with(&cluster.app_url(), 1)
        .await
        .expect("connect through every host");
    let fresh_pool_port = server_port(&fresh.client().await.expect("a connection")).await;
    Some(Seen {
        new_primary: cluster.primary().port(),
        pooled_ports,
        in_flight_failed_as_in_doubt,
        in_flight_resolution,
        in_flight_row_published,
        acquisitions,
        acquisitions_present,
        fresh_pool_port,
    })
}

/// `n` values from `make`, each taken while the ones before are held: `n` pooled
/// connections at once.
async fn hold_all<T, F, Fut>(n: usize, make: F) -> Vec<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = fenced_guard::Result<T>>,
{
    let mut all = Vec::new();
    for _ in 0..n {
        all.push(make().await.expect("a pooled connection"));
    }
    all
}

/// Whether an application statement waits for a lock on the primary.
async fn lock_waits(observer: &Client) -> bool {
    observer
        .query_opt(
            "SELECT 1 FROM pg_stat_activity WHERE usename = 'app' AND wait_event_type = 'Lock'",
            &[],
        )
        .await
        .expect("read pg_stat_activity")
        .is_some()
}

/// The port of the server `client` is connected to.
async fn server_port(client: &Client) -> u16 {
    let port: i32 = client
        .query_one("SELECT inet_server_port()", &[])
        .await
        .expect("ask the server its port")
        .get(0);
    u16::try_from(port).expect("a port")
}
