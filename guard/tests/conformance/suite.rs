//! The schedules, generic over the backend. Each one drives the interleaving with
//! oneshot channels, barriers and raw UPDATEs that move the expiry into the past, and
//! asserts the durable state by reading the row back.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use fenced_guard::{
    Backend, CancellationToken, ColumnType, Dialect, Error, Executor, FencedSql, FencedTable, Key,
    KeyType, Lease, OperationOutcome, Outcome, Resolution, Store, Value, Wait, fence_predicate,
    publish_once_assignment, publish_once_predicate,
};
use tokio::sync::{Barrier, oneshot};
use uuid::Uuid;

use crate::support::Place;
use crate::support::lease::{self, assert_writes_refused};
use crate::support::row::{self, expire, payload, payload_column};

/// A long ttl: expiry in these tests is moved by the test, never waited for.
pub const TTL: Duration = Duration::from_secs(300);

/// A fresh, isolated place to run one schedule: its own schema, file or table.
pub trait Fixture: Send + Sync + 'static {
    type Backend: Backend;

    /// A new backend with its own connections: one per simulated worker.
    fn connect(&self) -> impl Future<Output = Self::Backend> + Send;

    /// The fenced table, with a `Payload` text column.
    fn table(&self) -> FencedTable;

    /// The name of another table in the fixture's place, for `suffix` in `bigint` and
    /// `text`, and their epoch and outcomes tables (`bigint_epoch`, `bigint_ops`, …),
    /// dropped by the teardown too.
    fn other_table(&self, suffix: &str) -> String;

    /// Drops whatever the fixture created.
    fn teardown(&self) -> impl Future<Output = ()> + Send;
}

/// A PostgreSQL schema or a SQLite file holds the suite's tables under their own names,
/// and is dropped whole.
impl<P: Place> Fixture for P {
    type Backend = P::Backend;

    async fn connect(&self) -> P::Backend {
        Place::connect(self).await
    }

    fn table(&self) -> FencedTable {
        report_table(&self.qualified("ReportPublication"))
    }

    fn other_table(&self, suffix: &str) -> String {
        self.qualified(&format!("Report_{suffix}"))
    }

    async fn teardown(&self) {
        Place::teardown(self).await;
    }
}

/// Builds the fenced table named `name` with the article's columns and `Payload`.
pub fn report_table(name: &str) -> FencedTable {
    FencedTable::builder()
        .table(name)
        .published_at_column("PublishedAtUtc")
        .column("Payload", ColumnType::Text)
        .build()
        .expect("valid test table")
}

/// Generates one `#[tokio::test]` per schedule for a backend. `$setup` is an async
/// function returning `Option<Fixture>`; `None` means the backend is not available
/// and the test says so and returns.
#[macro_export]
macro_rules! conformance {
    ($setup:path) => {
        $crate::conformance!(@ $setup;
            handover_refuses_the_expired_owner,
            negative_control_unfenced_write_overwrites_the_successor,
            late_release_leaves_the_successor_untouched,
            publish_after_expiry_without_successor_is_refused,
            second_publish_with_the_same_lease_is_refused,
            acquire_while_held_is_none_and_after_expiry_bumps_the_generation,
            release_then_acquire_keeps_the_generation_rising,
            late_renewal_is_refused,
            sixteen_workers_race_and_exactly_one_acquires,
            negative_control_unguarded_acquire_lets_every_worker_in,
            sql_error_is_an_error_not_a_refusal,
            missing_row_is_not_acquired,
            inspect_reports_the_lease_by_the_database_clock,
            publish_and_release_frees_the_row,
            fenced_update_and_caller_sql,
            caller_publication_is_fenced_and_once,
            revoked_lease_is_refused_locally,
            key_type_mismatch_is_an_error,
            bigint_and_text_keys_are_fenced_too,
            acquire_waits_until_the_holder_releases,
            acquire_gives_up_at_the_deadline,
            acquire_stops_when_cancelled,
            operation_applied_resolves_applied,
            operation_refused_or_unknown_resolves_not_applied,
            retry_of_an_applied_operation_does_not_apply_twice,
            an_operation_id_belongs_to_one_key,
            concurrent_attempts_of_one_operation_apply_once,
            outcomes_survive_later_writes,
            restored_row_image_is_refused_after_the_epoch_advances,
            epoch_advance_exceeds_a_restored_epoch_table,
        );
    };
    (@ $setup:path; $($name:ident,)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $name() {
            let Some(fixture) = $setup().await else { return };
            let fixture = std::sync::Arc::new(fixture);
            let run = tokio::spawn($crate::suite::$name(std::sync::Arc::clone(&fixture))).await;
            $crate::suite::Fixture::teardown(&*fixture).await;
            if let Err(error) = run {
                std::panic::resume_unwind(error.into_panic());
            }
        }
    )*};
}

/// The row as stored.
#[derive(Debug, PartialEq)]
pub struct Row {
    pub generation: i64,
    pub owner: Option<Uuid>,
    /// `expiry IS NOT NULL`
    pub has_expiry: bool,
    /// `expiry > now` by the database's clock.
    pub live: bool,
    pub published: i64,
    /// `PublishedAtUtc IS NOT NULL`
    pub published_at: bool,
    pub payload: Option<String>,
}

async fn store<F: Fixture>(fx: &F) -> Store<F::Backend> {
    Store::new(fx.connect().await, fx.table())
}

/// A provisioned row in a fresh table; returns its key.
async fn fresh_row<B: Backend>(store: &Store<B>) -> Key {
    store.create_schema().await.expect("create schema");
    // Idempotent: a second creation is harmless.
    store.create_schema().await.expect("create schema again");
    let key = Key::Uuid(Uuid::new_v4());
    assert!(store.provision(key.clone()).await.expect("provision"));
    key
}

fn table_sql<B: Backend>(store: &Store<B>) -> (Dialect, String) {
    let d = store.dialect();
    (d, store.table().name().quoted(d))
}

/// Reads the row back.
pub async fn read<B: Backend>(store: &Store<B>, key: &Key) -> Row {
    let d = store.dialect();
    let t = store.table();
    let expiry = t.expiry_column().quoted(d);
    let published_at = t
        .published_at_column()
        .expect("the test table has one")
        .quoted(d);
    let columns = [
        t.generation_column().quoted(d),
        t.owner_column().quoted(d),
        format!("CASE WHEN {expiry} IS NULL THEN 0 ELSE 1 END"),
        format!("CASE WHEN {expiry} > {} THEN 1 ELSE 0 END", d.clock()),
        t.published_column().quoted(d),
        payload_column(d),
        format!("CASE WHEN {published_at} IS NULL THEN 0 ELSE 1 END"),
    ];
    let row = row::select(store, key, &columns).await;
    Row {
        generation: row[0].as_i64().expect("generation"),
        owner: row::owner(&row[1]),
        has_expiry: row[2].as_i64() == Some(1),
        live: row[3].as_i64() == Some(1),
        published: row[4].as_i64().expect("published"),
        payload: row[5].as_str().map(str::to_owned),
        published_at: row[6].as_i64() == Some(1),
    }
}

async fn acquire<B: Backend>(store: &Store<B>, key: &Key) -> Lease {
    lease::acquire(store, key, TTL).await
}

/// The recovery epoch in `stamp` (on PostgreSQL a stamp also holds the server's
/// timeline).
fn epoch_of<B: Backend>(store: &Store<B>, stamp: i64) -> i64 {
    fenced_guard::dialect::split_stamp(store.dialect(), store.table(), stamp).0
}

/// Caller SQL for every dialect, as `render` writes it. `FencedSql` holds static text,
/// as the macro's statements are, so the renderings are leaked.
fn fenced_sql(table: &FencedTable, params: usize, render: impl Fn(Dialect) -> String) -> FencedSql {
    let leak = |d| -> &'static str { Box::leak(render(d).into_boxed_str()) };
    FencedSql::new(
        table,
        params,
        leak(Dialect::Postgres),
        leak(Dialect::Sqlite),
        leak(Dialect::Mssql),
    )
    .expect("the statement carries the fence at its top level")
}

/// Runs caller SQL whose one parameter is the payload `text`.
async fn run_fenced<B: Backend>(
    store: &Store<B>,
    lease: &Lease,
    sql: &FencedSql,
    text: &str,
) -> Outcome {
    store
        .execute_fenced(lease, sql, &[Value::from(text)])
        .await
        .unwrap()
}

/// A acquires and is held before publishing; its lease expires; B acquires. Returns
/// A's store and lease, B's store and lease, the key, and the sender that lets A go.
struct Handover<B> {
    a: Arc<Store<B>>,
    lease_a: Lease,
    b: Store<B>,
    lease_b: Lease,
    key: Key,
}

async fn handover<F: Fixture>(fx: &F) -> Handover<F::Backend> {
    let a = Arc::new(store(fx).await);
    let key = fresh_row(&a).await;
    let lease_a = acquire(&a, &key).await;
    assert_eq!(lease_a.generation(), 1);
    expire(&a, &key).await;
    let b = store(fx).await;
    let lease_b = acquire(&b, &key).await;
    assert_eq!(lease_b.generation(), 2);
    Handover {
        a,
        lease_a,
        b,
        lease_b,
        key,
    }
}

/// The article's schedule: A held before publishing, expired, B acquires, A publishes
/// (refused), B publishes (accepted); the row holds B's payload and generation.
pub async fn handover_refuses_the_expired_owner<F: Fixture>(fx: Arc<F>) {
    let a = Arc::new(store(&*fx).await);
    let key = fresh_row(&a).await;

    let (acquired_tx, acquired_rx) = oneshot::channel();
    let (go_tx, go_rx) = oneshot::channel::<()>();
    let worker_a = tokio::spawn({
        let a = Arc::clone(&a);
        let key = key.clone();
        async move {
            let lease = acquire(&a, &key).await;
            acquired_tx.send(lease.generation()).unwrap();
            go_rx.await.unwrap(); // held here, before publishing
            a.publish(&lease, &payload("from A"))
                .await
                .expect("A publishes")
        }
    });
    assert_eq!(acquired_rx.await.unwrap(), 1);
    expire(&a, &key).await;
    let b = store(&*fx).await;
    let lease_b = acquire(&b, &key).await;
    assert_eq!(lease_b.generation(), 2);

    go_tx.send(()).unwrap();
    assert_eq!(
        worker_a.await.unwrap(),
        Outcome::Refused,
        "A's late publication"
    );
    let row = read(&b, &key).await;
    assert_eq!(row.payload, None, "nothing published yet");
    assert!(!row.published_at);
    assert_eq!(row.generation, 2);

    let outcome = b.publish(&lease_b, &payload("from B")).await.unwrap();
    assert_eq!(outcome, Outcome::Applied, "B's publication");
    let row = read(&b, &key).await;
    assert_eq!(row.payload.as_deref(), Some("from B"));
    assert_eq!(row.published, 2);
    assert!(row.published_at, "stamped by the database's clock");
    assert_eq!(row.generation, 2);
    assert_eq!(row.owner, Some(lease_b.owner()));
}

/// Negative control for the schedule above: a naive UPDATE without the fence, in the
/// same place as A's publication, *does* overwrite B's result, and reading the row
/// back detects it. Proves the suite can see the failure it guards against.
pub async fn negative_control_unfenced_write_overwrites_the_successor<F: Fixture>(fx: Arc<F>) {
    let h = handover(&*fx).await;
    let outcome = h.b.publish(&h.lease_b, &payload("from B")).await.unwrap();
    assert_eq!(outcome, Outcome::Applied);

    let (d, name) = table_sql(&h.a);
    let naive = format!(
        "UPDATE {name} SET {} = {} WHERE {} = {}",
        payload_column(d),
        d.placeholder(1),
        h.a.table().key_column().quoted(d),
        d.placeholder(2)
    );
    let rows =
        h.a.backend()
            .execute(&naive, &[Value::from("from A"), Value::from(&h.key)])
            .await
            .unwrap();
    assert_eq!(rows, 1);
    assert_eq!(
        read(&h.b, &h.key).await.payload.as_deref(),
        Some("from A"),
        "the unfenced write overwrote B's result and the read-back shows it"
    );

    // The fenced write with A's lease in the same place is refused.
    let outcome =
        h.a.publish(&h.lease_a, &payload("from A again"))
            .await
            .unwrap();
    assert_eq!(outcome, Outcome::Refused);
    assert_eq!(read(&h.b, &h.key).await.payload.as_deref(), Some("from A"));
}

/// A releases after B acquired: B's owner and generation are unchanged.
pub async fn late_release_leaves_the_successor_untouched<F: Fixture>(fx: Arc<F>) {
    let h = handover(&*fx).await;
    assert_eq!(h.a.release(&h.lease_a).await.unwrap(), Outcome::Refused);
    let row = read(&h.b, &h.key).await;
    assert_eq!(row.generation, 2);
    assert_eq!(row.owner, Some(h.lease_b.owner()));
    assert!(row.live, "B's lease is still live");
    let outcome = h.b.publish(&h.lease_b, &payload("from B")).await.unwrap();
    assert_eq!(outcome, Outcome::Applied);
    assert_eq!(read(&h.b, &h.key).await.published, 2);
}

/// Publication after expiry with no successor is refused.
pub async fn publish_after_expiry_without_successor_is_refused<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    let lease = acquire(&a, &key).await;
    expire(&a, &key).await;
    let outcome = a.publish(&lease, &payload("late")).await.unwrap();
    assert_eq!(outcome, Outcome::Refused);
    let row = read(&a, &key).await;
    assert_eq!(row.payload, None);
    assert_eq!(row.published, 0);
    assert_eq!(row.generation, 1);
    assert_eq!(row.owner, Some(lease.owner()), "nobody else took it");
}

/// A second publication with the same lease is refused; the first one stays.
pub async fn second_publish_with_the_same_lease_is_refused<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    let lease = acquire(&a, &key).await;
    assert_eq!(
        a.publish(&lease, &payload("one")).await.unwrap(),
        Outcome::Applied
    );
    assert_eq!(
        a.publish(&lease, &payload("two")).await.unwrap(),
        Outcome::Refused
    );
    let row = read(&a, &key).await;
    assert_eq!(row.payload.as_deref(), Some("one"));
    assert_eq!(row.published, 1);
    assert!(row.live, "publication does not release");
}

/// Acquire while held: none. After expiry: generation + 1.
pub async fn acquire_while_held_is_none_and_after_expiry_bumps_the_generation<F: Fixture>(
    fx: Arc<F>,
) {
    let a = store(&*fx).await;
    let b = store(&*fx).await;
    let key = fresh_row(&a).await;
    let lease_a = acquire(&a, &key).await;
    assert!(b.try_acquire(key.clone(), TTL).await.unwrap().is_none());
    let row = read(&b, &key).await;
    assert_eq!((row.generation, row.owner), (1, Some(lease_a.owner())));

    expire(&a, &key).await;
    let lease_b = acquire(&b, &key).await;
    assert_eq!(lease_b.generation(), 2);
    assert_ne!(lease_b.owner(), lease_a.owner());
    let row = read(&b, &key).await;
    assert_eq!((row.generation, row.owner), (2, Some(lease_b.owner())));
    assert!(row.live);
}

/// Release then acquire: the generation keeps rising, never reset, and provisioning
/// again leaves it alone.
pub async fn release_then_acquire_keeps_the_generation_rising<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    for expected in 1..=3 {
        let lease = acquire(&a, &key).await;
        assert_eq!(lease.generation(), expected);
        assert_eq!(a.release(&lease).await.unwrap(), Outcome::Applied);
        let row = read(&a, &key).await;
        assert_eq!(row.generation, expected);
        assert_eq!(row.owner, None);
        assert!(!row.has_expiry);
    }
    assert!(
        !a.provision(key.clone()).await.unwrap(),
        "already provisioned"
    );
    assert_eq!(read(&a, &key).await.generation, 3, "provision never resets");
    assert_eq!(acquire(&a, &key).await.generation(), 4);
}

/// A late renewal never revives: refused after expiry, and after a successor.
pub async fn late_renewal_is_refused<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    let lease = acquire(&a, &key).await;
    // Positive control: a live lease renews.
    assert_eq!(a.renew(&lease).await.unwrap(), Outcome::Applied);
    assert!(read(&a, &key).await.live);

    expire(&a, &key).await;
    assert_eq!(a.renew(&lease).await.unwrap(), Outcome::Refused);
    let row = read(&a, &key).await;
    assert!(!row.live, "the refused renewal did not revive the lease");

    let b = store(&*fx).await;
    let lease_b = acquire(&b, &key).await;
    assert_eq!(a.renew(&lease).await.unwrap(), Outcome::Refused);
    let row = read(&a, &key).await;
    assert_eq!((row.generation, row.owner), (2, Some(lease_b.owner())));
    assert!(row.live);
}

/// 16 workers, each on its own connection, released together by a barrier, race for
/// one row: exactly one acquires, in each of three rounds.
pub async fn sixteen_workers_race_and_exactly_one_acquires<F: Fixture>(fx: Arc<F>) {
    const WORKERS: usize = 16;
    let first = store(&*fx).await;
    let key = fresh_row(&first).await;
    let mut stores = Vec::new();
    for _ in 0..WORKERS {
        let s = store(&*fx).await;
        // Opens the worker's connection before the race.
        assert!(!s.provision(key.clone()).await.unwrap());
        stores.push(Arc::new(s));
    }
    for round in 1..=3 {
        let barrier = Arc::new(Barrier::new(WORKERS));
        let tasks: Vec<_> = stores
            .iter()
            .map(|s| {
                let s = Arc::clone(s);
                let barrier = Arc::clone(&barrier);
                let key = key.clone();
                tokio::spawn(async move {
                    barrier.wait().await;
                    s.try_acquire(key, TTL).await.expect("no error in the race")
                })
            })
            .collect();
        let mut winners = Vec::new();
        for task in tasks {
            if let Some(lease) = task.await.unwrap() {
                winners.push(lease);
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: exactly one acquires");
        let winner = &winners[0];
        assert_eq!(winner.generation(), round);
        let row = read(&first, &key).await;
        assert_eq!((row.generation, row.owner), (round, Some(winner.owner())));
        assert_eq!(first.release(winner).await.unwrap(), Outcome::Applied);
    }
}

/// Negative control for the race: with the `expiry IS NULL OR expiry <= now` guard
/// removed from the acquire statement, every one of the 16 workers "acquires". Proves
/// that the race's count of winners can see a broken acquire.
pub async fn negative_control_unguarded_acquire_lets_every_worker_in<F: Fixture>(fx: Arc<F>) {
    const WORKERS: usize = 16;
    let first = store(&*fx).await;
    let key = fresh_row(&first).await;
    let (d, name) = table_sql(&first);
    let t = first.table();
    let generation = t.generation_column().quoted(d);
    let unguarded = Arc::new(format!(
        "UPDATE {name} SET {generation} = {generation} + 1, {} = {} WHERE {} = {}",
        t.owner_column().quoted(d),
        d.placeholder(2),
        t.key_column().quoted(d),
        d.placeholder(1)
    ));
    let barrier = Arc::new(Barrier::new(WORKERS));
    let mut tasks = Vec::new();
    for _ in 0..WORKERS {
        let s = store(&*fx).await;
        assert!(!s.provision(key.clone()).await.unwrap());
        let barrier = Arc::clone(&barrier);
        let key = key.clone();
        let unguarded = Arc::clone(&unguarded);
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            s.backend()
                .execute(
                    &unguarded,
                    &[Value::from(&key), Value::Uuid(Uuid::new_v4())],
                )
                .await
                .expect("no error in the race")
        }));
    }
    let mut winners = 0;
    for task in tasks {
        winners += task.await.unwrap();
    }
    assert_eq!(winners, 16, "the broken acquire lets everyone in");
    assert_eq!(read(&first, &key).await.generation, 16);
}

/// A SQL error, such as the table dropped under the protocol, is an error and never a
/// refusal or "lease busy".
pub async fn sql_error_is_an_error_not_a_refusal<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    let lease = acquire(&a, &key).await;
    let (_, name) = table_sql(&a);
    a.backend()
        .execute_batch(&format!("DROP TABLE {name}"))
        .await
        .expect("drop table");

    assert!(a.try_acquire(key.clone(), TTL).await.is_err(), "acquire");
    assert!(a.publish(&lease, &payload("x")).await.is_err(), "publish");
    assert!(a.update(&lease, &payload("x")).await.is_err(), "update");
    assert!(a.renew(&lease).await.is_err(), "renew");
    assert!(a.release(&lease).await.is_err(), "release");
    assert!(a.provision(key.clone()).await.is_err(), "provision");

    // The table is really gone: recreating it gives an empty table.
    a.create_schema().await.unwrap();
    assert!(matches!(
        a.try_acquire(key, TTL).await,
        Err(Error::NotProvisioned { .. })
    ));
}

/// A row that was never provisioned is not acquired: an error, not `None` (which would
/// make a mistyped key look held forever), and nothing is created.
pub async fn missing_row_is_not_acquired<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    let other = Key::Uuid(Uuid::new_v4());
    match a.try_acquire(other.clone(), TTL).await {
        Err(Error::NotProvisioned { key, .. }) => assert_eq!(key, other),
        result => panic!("expected NotProvisioned, got {result:?}"),
    }
    let waited = a
        .acquire(
            other.clone(),
            TTL,
            &Wait::timeout(Duration::from_secs(30)),
            &CancellationToken::new(),
        )
        .await;
    assert!(
        matches!(waited, Err(Error::NotProvisioned { .. })),
        "the wait ends at once: {waited:?}"
    );
    assert!(matches!(
        a.inspect(other.clone()).await,
        Err(Error::NotProvisioned { .. })
    ));
    // The control: a held row is `None`, not an error.
    let held = acquire(&a, &key).await;
    assert!(a.try_acquire(key.clone(), TTL).await.unwrap().is_none());
    assert!(a.release(&held).await.unwrap().is_applied());
    let (_, name) = table_sql(&a);
    let count = a
        .backend()
        .query_i64(&format!("SELECT COUNT(*) FROM {name}"), &[])
        .await
        .unwrap();
    assert_eq!(count, Some(1), "only the provisioned row exists");
    assert_eq!(read(&a, &key).await.generation, 1);
}

/// The lease state read by `inspect`, through a row's life, by the database's clock.
pub async fn inspect_reports_the_lease_by_the_database_clock<F: Fixture>(fx: Arc<F>) {
    let s = store(&*fx).await;
    let key = fresh_row(&s).await;
    let epoch = s.current_epoch().await.unwrap();
    let fresh = s.inspect(key.clone()).await.unwrap();
    assert_eq!(
        (
            fresh.holder,
            fresh.generation,
            fresh.expires_at_ms,
            fresh.published_generation
        ),
        (None, 0, None, 0)
    );
    assert_eq!(fresh.current_epoch.map(|e| epoch_of(&s, e)), Some(epoch));
    assert!(!fresh.is_held() && fresh.remaining().is_none());

    let lease = acquire(&s, &key).await;
    let held = s.inspect(key.clone()).await.unwrap();
    assert_eq!(held.holder, Some(lease.owner()));
    assert_eq!((held.generation, epoch_of(&s, held.epoch)), (1, epoch));
    assert_eq!(
        Some(held.epoch),
        held.current_epoch,
        "the stamp it requires"
    );
    assert!(held.is_held() && held.is_of(&lease), "{held:?}");
    let remaining = held.remaining().expect("live");
    assert!(remaining <= TTL && remaining > TTL / 2, "{remaining:?}");

    assert!(s.publish(&lease, &payload("p")).await.unwrap().is_applied());
    assert_eq!(
        s.inspect(key.clone()).await.unwrap().published_generation,
        1
    );

    expire(&s, &key).await;
    let expired = s.inspect(key.clone()).await.unwrap();
    assert_eq!(
        expired.holder,
        Some(lease.owner()),
        "the owner stays until released"
    );
    assert!(
        !expired.is_held() && expired.remaining().is_none(),
        "{expired:?}"
    );
    assert!(expired.expires_at_ms.unwrap() < expired.now_ms);

    assert!(s.release(&lease).await.unwrap().is_applied());
    let released = s.inspect(key.clone()).await.unwrap();
    assert_eq!((released.holder, released.expires_at_ms), (None, None));
    assert!(!released.is_held() && !released.is_of(&lease));
    assert_eq!(released.generation, 1, "the generation is kept");
}

/// Publish-and-release: published by this generation, and free at once.
pub async fn publish_and_release_frees_the_row<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    let lease = acquire(&a, &key).await;
    let outcome = a
        .publish_and_release(&lease, &payload("done"))
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Applied);
    let row = read(&a, &key).await;
    assert_eq!(row.payload.as_deref(), Some("done"));
    assert_eq!(row.published, 1);
    assert_eq!(row.owner, None);
    assert!(!row.has_expiry);
    // Refused a second time, and the next owner gets the next generation at once.
    assert_eq!(
        a.publish_and_release(&lease, &payload("again"))
            .await
            .unwrap(),
        Outcome::Refused
    );
    assert_eq!(acquire(&a, &key).await.generation(), 2);
    assert_eq!(read(&a, &key).await.payload.as_deref(), Some("done"));
}

/// Fenced update of the caller's columns, and caller SQL carrying the fence.
pub async fn fenced_update_and_caller_sql<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    let lease = acquire(&a, &key).await;
    assert_eq!(
        a.update(&lease, &payload("draft")).await.unwrap(),
        Outcome::Applied
    );
    assert_eq!(read(&a, &key).await.payload.as_deref(), Some("draft"));
    assert!(matches!(
        a.update(&lease, &[("Generation", Value::I64(99))]).await,
        Err(Error::ProtectedColumn { .. })
    ));
    assert!(matches!(
        a.update(&lease, &[("Payload; --", Value::Null)]).await,
        Err(Error::InvalidIdentifier { .. })
    ));

    let sql = fenced_sql(a.table(), 2, |d| {
        let t = a.table();
        let payload = payload_column(d);
        format!(
            "UPDATE {} SET {payload} = {} WHERE ({payload} IS NULL OR {payload} <> {}) AND {}",
            t.name().quoted(d),
            d.placeholder(1),
            d.placeholder(2),
            fence_predicate(d, t, 3)
        )
    });
    let params = [Value::from("final"), Value::from("other")];
    assert_eq!(
        a.execute_fenced(&lease, &sql, &params).await.unwrap(),
        Outcome::Applied
    );
    assert_eq!(read(&a, &key).await.payload.as_deref(), Some("final"));

    expire(&a, &key).await;
    let params = [Value::from("expired"), Value::from("other")];
    assert_eq!(
        a.execute_fenced(&lease, &sql, &params).await.unwrap(),
        Outcome::Refused
    );
    assert_eq!(
        a.update(&lease, &payload("expired")).await.unwrap(),
        Outcome::Refused
    );
    assert_eq!(read(&a, &key).await.payload.as_deref(), Some("final"));
}

/// Caller SQL built with the public predicate functions, as the macro does: a
/// publication applies once per generation and not after a successor.
pub async fn caller_publication_is_fenced_and_once<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    let sql = fenced_sql(a.table(), 1, |d| {
        let t = a.table();
        format!(
            "UPDATE {} SET {} = {}, {} WHERE {} AND {}",
            t.name().quoted(d),
            payload_column(d),
            d.placeholder(1),
            publish_once_assignment(d, t, 2),
            fence_predicate(d, t, 2),
            publish_once_predicate(d, t, 2)
        )
    });
    let lease = acquire(&a, &key).await;
    let first = run_fenced(&a, &lease, &sql, "one").await;
    assert_eq!(first, Outcome::Applied);
    let again = run_fenced(&a, &lease, &sql, "two").await;
    assert_eq!(again, Outcome::Refused);
    let row = read(&a, &key).await;
    assert_eq!((row.published, row.payload.as_deref()), (1, Some("one")));

    expire(&a, &key).await;
    let b = store(&*fx).await;
    let lease_b = acquire(&b, &key).await;
    let late = run_fenced(&a, &lease, &sql, "late").await;
    assert_eq!(late, Outcome::Refused);
    let by_b = run_fenced(&b, &lease_b, &sql, "from B").await;
    assert_eq!(by_b, Outcome::Applied);
    let row = read(&a, &key).await;
    assert_eq!((row.published, row.payload.as_deref()), (2, Some("from B")));
}

/// A revoked lease is refused for writes, publication and renewal even while the
/// database would accept it; release still reaches the database.
pub async fn revoked_lease_is_refused_locally<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    let lease = acquire(&a, &key).await;
    let clone = lease.clone();
    clone.revoke();
    assert_writes_refused(&a, &lease, "x").await;
    let row = read(&a, &key).await;
    assert_eq!(row.payload, None);
    assert_eq!(
        row.owner,
        Some(lease.owner()),
        "the database still holds it"
    );
    assert_eq!(a.release(&lease).await.unwrap(), Outcome::Applied);
    assert_eq!(read(&a, &key).await.owner, None);
}

/// A key of the wrong type is an error, before any statement.
pub async fn key_type_mismatch_is_an_error<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    assert!(matches!(
        a.try_acquire(Key::BigInt(1), TTL).await,
        Err(Error::KeyType { .. })
    ));
    assert!(matches!(
        a.provision("text key").await,
        Err(Error::KeyType { .. })
    ));
    assert_eq!(read(&a, &key).await.generation, 0);
}

/// Acquire-with-wait: B waits while A holds the row, and gets it once A releases.
pub async fn acquire_waits_until_the_holder_releases<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    let lease_a = acquire(&a, &key).await;
    let b = Arc::new(store(&*fx).await);
    // B's first attempt is refused while A holds the row.
    assert!(b.try_acquire(key.clone(), TTL).await.unwrap().is_none());
    let waiting = tokio::spawn({
        let b = Arc::clone(&b);
        let key = key.clone();
        async move {
            let wait = Wait::timeout(Duration::from_secs(60))
                .initial_backoff(Duration::from_millis(5))
                .max_backoff(Duration::from_millis(20));
            b.acquire(key, TTL, &wait, &CancellationToken::new()).await
        }
    });
    assert_eq!(a.release(&lease_a).await.unwrap(), Outcome::Applied);
    let lease_b = waiting
        .await
        .unwrap()
        .expect("no error")
        .expect("acquired after the release");
    assert_eq!(lease_b.generation(), 2);
    let row = read(&a, &key).await;
    assert_eq!((row.generation, row.owner), (2, Some(lease_b.owner())));
}

/// Acquire-with-wait gives up at the deadline with `None` while the row stays held.
pub async fn acquire_gives_up_at_the_deadline<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    let lease_a = acquire(&a, &key).await;
    let wait = Wait::timeout(Duration::from_millis(100)).initial_backoff(Duration::from_millis(10));
    let got = a
        .acquire(key.clone(), TTL, &wait, &CancellationToken::new())
        .await
        .unwrap();
    assert!(got.is_none());
    let row = read(&a, &key).await;
    assert_eq!((row.generation, row.owner), (1, Some(lease_a.owner())));
}

/// Acquire-with-wait ends with `Error::Cancelled` when its token is cancelled, and a
/// token cancelled beforehand stops it before any attempt (the free row stays free).
pub async fn acquire_stops_when_cancelled<F: Fixture>(fx: Arc<F>) {
    let a = Arc::new(store(&*fx).await);
    let key = fresh_row(&a).await;
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let wait = Wait::timeout(Duration::from_secs(60));
    assert!(matches!(
        a.acquire(key.clone(), TTL, &wait, &cancelled).await,
        Err(Error::Cancelled)
    ));
    assert_eq!(read(&a, &key).await.generation, 0, "no attempt was made");

    let _held = acquire(&a, &key).await;
    let token = CancellationToken::new();
    let waiting = tokio::spawn({
        let a = Arc::clone(&a);
        let key = key.clone();
        let token = token.clone();
        async move { a.acquire(key, TTL, &wait, &token).await }
    });
    token.cancel();
    assert!(matches!(waiting.await.unwrap(), Err(Error::Cancelled)));
    assert_eq!(read(&a, &key).await.generation, 1);
}

/// The protocol with `bigint` and `text` keys: the handover refuses the old owner and the
/// generation rises per key.
pub async fn bigint_and_text_keys_are_fenced_too<F: Fixture>(fx: Arc<F>) {
    for (suffix, key_type, keys) in [
        ("bigint", KeyType::BigInt, [Key::BigInt(7), Key::BigInt(8)]),
        (
            "text",
            KeyType::Text,
            [Key::from("report-7"), Key::from("report-8")],
        ),
    ] {
        let table = FencedTable::builder()
            .table(fx.other_table(suffix))
            .epoch_table(fx.other_table(&format!("{suffix}_epoch")))
            .operations_table(fx.other_table(&format!("{suffix}_ops")))
            .key_type(key_type)
            .column("Payload", ColumnType::Text)
            .build()
            .unwrap();
        let a = Store::new(fx.connect().await, table.clone());
        let b = Store::new(fx.connect().await, table);
        a.create_schema().await.unwrap();
        for key in &keys {
            assert!(a.provision(key.clone()).await.unwrap());
        }
        let [key, other] = keys;
        let lease_a = acquire(&a, &key).await;
        let lease_other = acquire(&a, &other).await;
        assert_eq!((lease_a.generation(), lease_other.generation()), (1, 1));
        assert_eq!(a.release(&lease_other).await.unwrap(), Outcome::Applied);
        expire(&a, &key).await;
        let lease_b = acquire(&b, &key).await;
        assert_eq!(lease_b.generation(), 2, "{suffix}");
        assert_eq!(
            a.publish(&lease_a, &payload("from A")).await.unwrap(),
            Outcome::Refused
        );
        assert_eq!(
            b.publish(&lease_b, &payload("from B")).await.unwrap(),
            Outcome::Applied
        );
        let d = a.dialect();
        let columns = [a.table().generation_column().quoted(d), payload_column(d)];
        let row = row::select(&a, &key, &columns).await;
        assert_eq!(row, vec![Value::I64(2), Value::from("from B")], "{suffix}");
        let row = row::select(&a, &other, &columns).await;
        assert_eq!(row, vec![Value::I64(1), Value::Null], "{suffix}: other key");
    }
}

// ---------------------------------------------------------------------------------------
// Operation ids

/// A publication with an operation id applies, and resolving the id says so, with the
/// generation it was made under.
pub async fn operation_applied_resolves_applied<F: Fixture>(fx: Arc<F>) {
    let s = store(&*fx).await;
    let key = fresh_row(&s).await;
    let lease = acquire(&s, &key).await;
    let op = Uuid::new_v4();
    assert_eq!(
        s.resolve(op).await.unwrap(),
        Resolution::NotApplied,
        "before the write"
    );
    assert_eq!(
        s.publish_op(&lease, op, &payload("first")).await.unwrap(),
        OperationOutcome::Applied
    );
    assert_eq!(
        s.resolve(op).await.unwrap(),
        Resolution::Applied {
            generation: lease.generation()
        }
    );
    let row = read(&s, &key).await;
    assert_eq!(row.payload.as_deref(), Some("first"));
    assert_eq!(row.published, lease.generation());
}

/// A refused write records nothing, and an id never used is not applied.
pub async fn operation_refused_or_unknown_resolves_not_applied<F: Fixture>(fx: Arc<F>) {
    let h = handover(&*fx).await;
    let op = Uuid::new_v4();
    assert_eq!(
        h.a.publish_op(&h.lease_a, op, &payload("stale"))
            .await
            .unwrap(),
        OperationOutcome::Refused,
        "the expired owner's publication"
    );
    assert_eq!(h.b.resolve(op).await.unwrap(), Resolution::NotApplied);
    assert_eq!(
        h.a.update_op(&h.lease_a, op, &payload("stale"))
            .await
            .unwrap(),
        OperationOutcome::Refused
    );
    assert_eq!(h.a.resolve(op).await.unwrap(), Resolution::NotApplied);
    assert_eq!(
        h.b.resolve(Uuid::new_v4()).await.unwrap(),
        Resolution::NotApplied
    );
    let row = read(&h.b, &h.key).await;
    assert_eq!(row.payload, None, "nothing was written");
    // The same id then applies under the valid lease: refusals do not burn it.
    assert_eq!(
        h.b.publish_op(&h.lease_b, op, &payload("from B"))
            .await
            .unwrap(),
        OperationOutcome::Applied
    );
    assert_eq!(
        h.b.resolve(op).await.unwrap(),
        Resolution::Applied { generation: 2 }
    );
}

/// A retry of an applied operation, under a lease that would still let a new write
/// through, is answered `AlreadyApplied` and changes nothing; the negative control, the
/// same retry without an operation id, does overwrite.
/// An operation id applied to one key, given with a write to another: an error, not
/// "already applied", and nothing is written to the other row.
pub async fn an_operation_id_belongs_to_one_key<F: Fixture>(fx: Arc<F>) {
    let s = store(&*fx).await;
    let (first, second) = (fresh_row(&s).await, fresh_row(&s).await);
    let (a, b) = (acquire(&s, &first).await, acquire(&s, &second).await);
    let op = Uuid::new_v4();
    assert_eq!(
        s.update_op(&a, op, &payload("first")).await.unwrap(),
        OperationOutcome::Applied
    );
    for attempt in [
        s.update_op(&b, op, &payload("second")).await,
        s.publish_op(&b, op, &payload("second")).await,
        s.publish_and_release_op(&b, op, &payload("second")).await,
    ] {
        match attempt {
            Err(Error::OperationReused { op: reused }) => assert_eq!(reused, op),
            other => panic!("expected OperationReused, got {other:?}"),
        }
    }
    let row = read(&s, &second).await;
    assert_eq!(row.payload, None, "nothing written to the other row");
    assert_eq!(row.published, 0);
    assert!(row.live, "the other lease still holds");
    // The id still answers for its own key.
    assert_eq!(
        s.update_op(&a, op, &payload("again")).await.unwrap(),
        OperationOutcome::AlreadyApplied {
            generation: a.generation()
        }
    );
    assert_eq!(
        s.resolve(op).await.unwrap(),
        Resolution::Applied {
            generation: a.generation()
        }
    );
}

pub async fn retry_of_an_applied_operation_does_not_apply_twice<F: Fixture>(fx: Arc<F>) {
    let s = store(&*fx).await;
    let key = fresh_row(&s).await;
    let lease = acquire(&s, &key).await;
    let op = Uuid::new_v4();
    assert_eq!(
        s.update_op(&lease, op, &payload("first")).await.unwrap(),
        OperationOutcome::Applied
    );
    let again = OperationOutcome::AlreadyApplied {
        generation: lease.generation(),
    };
    assert_eq!(
        s.update_op(&lease, op, &payload("second")).await.unwrap(),
        again
    );
    assert_eq!(
        s.publish_op(&lease, op, &payload("third")).await.unwrap(),
        again
    );
    assert_eq!(
        s.publish_and_release_op(&lease, op, &payload("fourth"))
            .await
            .unwrap(),
        again
    );
    let row = read(&s, &key).await;
    assert_eq!(row.payload.as_deref(), Some("first"));
    assert_eq!(row.published, 0, "no publication happened");
    assert!(row.live, "the lease was not released");

    // A publication applied once is also answered AlreadyApplied on retry (and not a
    // bare refusal, which is what the publish-once predicate alone would give).
    let publication = Uuid::new_v4();
    assert_eq!(
        s.publish_op(&lease, publication, &payload("published"))
            .await
            .unwrap(),
        OperationOutcome::Applied
    );
    assert_eq!(
        s.publish_op(&lease, publication, &payload("published"))
            .await
            .unwrap(),
        again
    );
    assert_eq!(read(&s, &key).await.payload.as_deref(), Some("published"));

    // Negative control: without the id, the same retry applies a second time.
    assert_eq!(
        s.update(&lease, &payload("second")).await.unwrap(),
        Outcome::Applied
    );
    assert_eq!(read(&s, &key).await.payload.as_deref(), Some("second"));
}

/// Eight attempts of one operation id race on eight connections: exactly one applies,
/// every other one is answered `AlreadyApplied`.
pub async fn concurrent_attempts_of_one_operation_apply_once<F: Fixture>(fx: Arc<F>) {
    const WORKERS: usize = 8;
    let s = store(&*fx).await;
    let key = fresh_row(&s).await;
    let lease = acquire(&s, &key).await;
    let op = Uuid::new_v4();
    let barrier = Arc::new(Barrier::new(WORKERS));
    let mut tasks = Vec::new();
    for i in 0..WORKERS {
        let store = store(&*fx).await;
        let lease = lease.clone();
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            store
                .update_op(
                    &lease,
                    op,
                    &[("Payload", Value::from(format!("attempt {i}")))],
                )
                .await
                .expect("an attempt")
        }));
    }
    let mut applied = 0;
    for task in tasks {
        match task.await.unwrap() {
            OperationOutcome::Applied => applied += 1,
            OperationOutcome::AlreadyApplied { generation } => {
                assert_eq!(generation, lease.generation());
            }
            OperationOutcome::Refused => panic!("the lease is valid: nothing may refuse"),
        }
    }
    assert_eq!(applied, 1, "exactly one attempt applies");
}

/// Outcomes are never erased: later writes, releases and new generations leave the
/// earlier records as they were.
pub async fn outcomes_survive_later_writes<F: Fixture>(fx: Arc<F>) {
    let s = store(&*fx).await;
    let key = fresh_row(&s).await;
    let first = acquire(&s, &key).await;
    let op1 = Uuid::new_v4();
    assert_eq!(
        s.publish_and_release_op(&first, op1, &payload("one"))
            .await
            .unwrap(),
        OperationOutcome::Applied
    );
    let second = acquire(&s, &key).await;
    assert_eq!(second.generation(), 2);
    let op2 = Uuid::new_v4();
    assert_eq!(
        s.update_op(&second, op2, &payload("two")).await.unwrap(),
        OperationOutcome::Applied
    );
    assert_eq!(
        s.publish(&second, &payload("three")).await.unwrap(),
        Outcome::Applied
    );
    assert_eq!(s.release(&second).await.unwrap(), Outcome::Applied);
    let _third = acquire(&s, &key).await;
    assert_eq!(
        s.resolve(op1).await.unwrap(),
        Resolution::Applied { generation: 1 }
    );
    assert_eq!(
        s.resolve(op2).await.unwrap(),
        Resolution::Applied { generation: 2 }
    );
}

// ---------------------------------------------------------------------------------------
// Recovery epoch

/// The columns a backup holds for the fenced row (the expiry is restored as live).
struct Image {
    generation: Value,
    owner: Value,
    epoch: Value,
    published: Value,
    payload: Value,
}

async fn copy_image<B: Backend>(store: &Store<B>, key: &Key) -> Image {
    let d = store.dialect();
    let t = store.table();
    let columns = [
        t.generation_column().quoted(d),
        t.owner_column().quoted(d),
        t.epoch_column().quoted(d),
        t.published_column().quoted(d),
        payload_column(d),
    ];
    let mut row = row::select(store, key, &columns).await.into_iter();
    let mut next = || row.next().expect("five columns");
    let generation = next();
    let owner = match next() {
        Value::Text(text) => Value::Uuid(text.parse().expect("owner is a uuid")),
        other => other,
    };
    Image {
        generation,
        owner,
        epoch: next(),
        published: next(),
        payload: next(),
    }
}

/// Writes a backup image back, the way a restore does: every protocol column, with the
/// lease live again for an hour. A null is written as the literal `NULL`, not bound:
/// tiberius sends a bound null untyped, which Babelfish rejects (a departure from SQL
/// Server, shown by `mssql::nulls`).
async fn restore_image<B: Backend>(store: &Store<B>, key: &Key, image: &Image) {
    let (d, name) = table_sql(store);
    let t = store.table();
    let columns = [
        (t.generation_column().quoted(d), &image.generation),
        (t.owner_column().quoted(d), &image.owner),
        (t.epoch_column().quoted(d), &image.epoch),
        (t.published_column().quoted(d), &image.published),
        (payload_column(d), &image.payload),
    ];
    let mut params = Vec::new();
    let mut set = Vec::new();
    for (column, value) in columns {
        if value.is_null() {
            set.push(format!("{column} = NULL"));
        } else {
            params.push(value.clone());
            set.push(format!("{column} = {}", d.placeholder(params.len())));
        }
    }
    params.push(Value::from(key));
    let sql = format!(
        "UPDATE {name} SET {}, {} = {} WHERE {} = {}",
        set.join(", "),
        t.expiry_column().quoted(d),
        row::clock_plus_hours(d, 1),
        t.key_column().quoted(d),
        d.placeholder(params.len())
    );
    let rows = store
        .backend()
        .execute(&sql, &params)
        .await
        .expect("restore the row");
    assert_eq!(rows, 1, "the test could not restore the row");
}

/// The restore test: copy a row image while worker A holds the row, let the
/// lease move on to B, write the old image back. Without an epoch advance the restore
/// resurrects A (the negative control: the restored generation and owner match A
/// again); after the advance A is refused for every write, and a lease acquired after
/// the advance works.
pub async fn restored_row_image_is_refused_after_the_epoch_advances<F: Fixture>(fx: Arc<F>) {
    let a = store(&*fx).await;
    let key = fresh_row(&a).await;
    let epoch_before = a.current_epoch().await.unwrap();
    let lease_a = acquire(&a, &key).await;
    assert_eq!(
        lease_a.epoch().map(|e| epoch_of(&a, e)),
        Some(epoch_before),
        "the lease carries its epoch"
    );
    let backup = copy_image(&a, &key).await;

    expire(&a, &key).await;
    let b = store(&*fx).await;
    let lease_b = acquire(&b, &key).await;
    assert_eq!(
        b.publish(&lease_b, &payload("from B")).await.unwrap(),
        Outcome::Applied
    );

    // The restore writes A's image back: A's generation and owner match again.
    restore_image(&a, &key, &backup).await;
    assert_eq!(
        a.update(&lease_a, &payload("A after restore"))
            .await
            .unwrap(),
        Outcome::Applied,
        "negative control: without an epoch advance the restored row lets A write"
    );

    restore_image(&a, &key, &backup).await;
    let epoch = b.advance_epoch().await.unwrap();
    assert!(epoch > epoch_before, "{epoch} > {epoch_before}");
    assert_eq!(b.current_epoch().await.unwrap(), epoch);
    let row = read(&a, &key).await;
    assert_eq!(
        row.owner,
        Some(lease_a.owner()),
        "the restored image is in place"
    );
    assert!(row.live, "and its lease looks live");

    assert_eq!(
        a.update(&lease_a, &payload("stale")).await.unwrap(),
        Outcome::Refused
    );
    assert_eq!(
        a.publish(&lease_a, &payload("stale")).await.unwrap(),
        Outcome::Refused
    );
    assert_eq!(
        a.publish_op(&lease_a, Uuid::new_v4(), &payload("stale"))
            .await
            .unwrap(),
        OperationOutcome::Refused
    );
    assert_eq!(a.renew(&lease_a).await.unwrap(), Outcome::Refused);
    assert_eq!(
        b.update(&lease_b, &payload("stale B")).await.unwrap(),
        Outcome::Refused,
        "B's lease was issued before the advance too"
    );
    assert_eq!(read(&a, &key).await.payload, None, "the restored payload");

    // A lease from the new epoch: the row from the old epoch is free at once.
    let lease_c = acquire(&b, &key).await;
    assert_eq!(lease_c.generation(), 2, "the restored generation + 1");
    assert_eq!(lease_c.epoch().map(|e| epoch_of(&b, e)), Some(epoch));
    assert_eq!(
        b.publish(&lease_c, &payload("from C")).await.unwrap(),
        Outcome::Applied
    );
    assert_eq!(b.renew(&lease_c).await.unwrap(), Outcome::Applied);
    assert_eq!(
        a.update(&lease_a, &payload("stale")).await.unwrap(),
        Outcome::Refused
    );
    let row = read(&b, &key).await;
    assert_eq!(row.payload.as_deref(), Some("from C"));
    assert_eq!(row.generation, 2);
}

/// A restore can roll the epoch table back too: advancing must still give an epoch
/// above every one issued before, and `advance_epoch_past` honours a floor.
pub async fn epoch_advance_exceeds_a_restored_epoch_table<F: Fixture>(fx: Arc<F>) {
    let s = store(&*fx).await;
    let key = fresh_row(&s).await;
    let first = s.current_epoch().await.unwrap();
    assert_eq!(first, 1, "a new schema starts at epoch 1");
    let issued = s.advance_epoch().await.unwrap();
    let lease = acquire(&s, &key).await;
    // A restore comes later than the epochs it undoes. The clock part of the epoch has
    // millisecond resolution: let the database's clock move on past `issued`, or an
    // advance within the same millisecond could give `issued` again.
    tokio::time::sleep(Duration::from_millis(5)).await;

    // Restore the epoch table to its first value.
    let d = s.dialect();
    let t = s.table();
    let sql = format!(
        "UPDATE {} SET {} = {} WHERE {} = 1",
        t.epoch_table().quoted(d),
        fenced_guard::Identifier::new("Epoch").unwrap().quoted(d),
        d.placeholder(1),
        fenced_guard::Identifier::new("Id").unwrap().quoted(d)
    );
    s.backend()
        .execute(&sql, &[Value::I64(first)])
        .await
        .expect("restore the epoch");
    assert_eq!(s.current_epoch().await.unwrap(), first);

    let after = s.advance_epoch().await.unwrap();
    assert!(after > issued, "{after} > {issued}");
    assert_eq!(
        s.update(&lease, &payload("stale")).await.unwrap(),
        Outcome::Refused
    );
    let floor = after + 1_000_000_000_000;
    assert_eq!(s.advance_epoch_past(floor).await.unwrap(), floor + 1);
    assert!(matches!(
        s.advance_epoch_past(i64::MAX).await,
        Err(Error::Config(_))
    ));
    // The greatest epoch the table holds (lower on PostgreSQL, where the stamp also
    // holds the timeline) cannot be passed either, and nothing was sent.
    let max = fenced_guard::dialect::max_epoch(s.dialect(), s.table());
    assert!(matches!(
        s.advance_epoch_past(max).await,
        Err(Error::Config(_))
    ));
    assert_eq!(s.current_epoch().await.unwrap(), floor + 1);
}
