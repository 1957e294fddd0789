//! The keeper and the run-under-lease helper on real databases: SQLite always,
//! PostgreSQL, which must be reachable (the tests fail, never skip, otherwise), and SQL
//! Server at `FENCED_MSSQL_URL` (required when `CI` is set).
//!
//! Expiry is never simulated: a lease outlives its ttl only if renewals reach the
//! database, which the tests read back. Faults are injected by [`Faulty`], a wrapper
//! around a real backend that logs every statement sent and can make chosen statements
//! fail with a real database error or never answer.

#![allow(missing_docs, unreachable_pub)]

use std::future::Future;
use std::sync::{Arc, Mutex, Once, PoisonError};
use std::time::Duration;

use fenced_guard::{
    Backend, ColumnType, Completion, Dialect, Error, Executor, FencedTable, Keeper, Key, Loss,
    Outcome, Result, Store, Value, Work,
};
use uuid::Uuid;

// Each test binary compiles the shared fixtures on its own and uses only part of them.
#[allow(dead_code)]
mod support;

use support::Place;
use support::lease::{acquire, assert_writes_refused};
use support::row::{self, expire, payload, payload_column};

/// A bound on waits that should end quickly, so that a broken keeper fails the test
/// instead of hanging it. Never an assertion about speed.
///
/// Where a test needs a keeper to keep its lease, the ttl leaves at least a second of
/// slack between a renewal being due and the lease's local deadline, so that a loaded
/// machine does not make a healthy keeper give up.
const HANG: Duration = Duration::from_secs(60);

/// A place for one test, with the fenced table in it.
pub trait Fixture: Place {
    /// The fenced table, with a `Payload` text column.
    fn table(&self) -> FencedTable {
        report_table(&self.qualified("ReportPublication"))
    }
}

impl<P: Place> Fixture for P {}

fn report_table(name: &str) -> FencedTable {
    FencedTable::builder()
        .table(name)
        .column("Payload", ColumnType::Text)
        .build()
        .expect("valid test table")
}

/// Generates one `#[tokio::test]` per test of the suite for a backend.
macro_rules! suite {
    ($setup:path) => {
        suite!(@ $setup;
            keeper_keeps_the_lease_alive_past_several_ttls,
            negative_control_without_a_keeper_the_same_work_is_refused,
            successor_takeover_cancels_the_work_and_fails_closed,
            renewal_errors_until_the_deadline_fail_closed,
            transient_renewal_errors_are_retried,
            renewal_in_flight_at_the_deadline_fails_closed,
            stopping_or_dropping_the_keeper_ends_renewals,
            a_keeper_ends_when_its_lease_is_released,
            work_publishes_then_releases,
            work_does_not_run_when_the_row_is_held,
            work_failure_is_returned_and_the_row_released,
            work_with_publication_retries_publishes_once,
            release_failure_is_logged_not_raised,
            release_is_bounded_by_its_own_timeout,
            publication_error_propagates_after_the_release,
            acquisition_error_propagates,
            work_is_refused_locally_after_the_keeper_lost_authority,
            shutdown_reaches_the_work_and_is_not_a_loss,
        );
    };
    (@ $setup:path; $($name:ident,)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let Some(fixture) = $setup().await else { return };
            let fixture = std::sync::Arc::new(fixture);
            let run = tokio::spawn(crate::$name(std::sync::Arc::clone(&fixture))).await;
            crate::support::Place::teardown(&*fixture).await;
            if let Err(error) = run {
                std::panic::resume_unwind(error.into_panic());
            }
        }
    )*};
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use crate::support::sqlite::TempDatabase;

    async fn setup() -> Option<TempDatabase> {
        Some(TempDatabase::new("fenced.db"))
    }

    suite!(setup);
}

#[cfg(feature = "postgres")]
mod postgres {
    use crate::support::postgres::TestSchema;

    /// Two connections per backend, so that a keeper's renewal need not wait for the
    /// work's statement on the same store.
    async fn setup() -> Option<TestSchema> {
        Some(TestSchema::create("fenced_", 2).await)
    }

    suite!(setup);
}

#[cfg(feature = "mssql")]
mod mssql {
    use tokio::sync::{OwnedSemaphorePermit, Semaphore};

    use fenced_guard::MssqlOptions;

    use crate::support::Place;
    use crate::support::mssql::{TestSchema, WARM_UP};

    /// A schema for one test, and its turn: the TDS server runs every session as a
    /// process of its own, and with all of this binary's tests at once on a 2-core
    /// machine its answers came late enough to fail the 1.5 s ttls these tests keep.
    /// Two at a time, on connections opened and warmed before the test (`WARM_UP`),
    /// keeps the ttls about the protocol, not about the machine's load.
    pub struct Turn {
        schema: TestSchema,
        _permit: OwnedSemaphorePermit,
    }

    static TURNS: std::sync::LazyLock<std::sync::Arc<Semaphore>> =
        std::sync::LazyLock::new(|| std::sync::Arc::new(Semaphore::new(2)));

    impl Place for Turn {
        type Backend = fenced_guard::Mssql;

        async fn connect(&self) -> fenced_guard::Mssql {
            self.schema.connect().await
        }

        fn qualified(&self, table: &str) -> String {
            self.schema.qualified(table)
        }

        async fn teardown(&self) {
            self.schema.teardown().await;
        }
    }

    /// Two connections per backend, as on PostgreSQL. Without `FENCED_MSSQL_URL` the
    /// tests say they did not run (and fail when `CI` is set).
    async fn setup() -> Option<Turn> {
        let permit = std::sync::Arc::clone(&TURNS)
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let warm = MssqlOptions::default().on_connect(WARM_UP);
        Some(Turn {
            schema: TestSchema::create_with("fenced_", 2, warm).await?,
            _permit: permit,
        })
    }

    suite!(setup);
}

// ---------------------------------------------------------------------------------------
// Fault injection around a real backend.

/// Which statements a fault applies to.
#[derive(Clone, Debug)]
enum Matching {
    Any,
    Exactly(String),
    Containing(&'static str),
}

impl Matching {
    fn matches(&self, sql: &str) -> bool {
        match self {
            Matching::Any => true,
            Matching::Exactly(s) => sql == s,
            Matching::Containing(s) => sql.contains(s),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// The statement is replaced by one the database rejects: a real driver error.
    Fail,
    /// The statement is never answered.
    Stall,
}

#[derive(Clone, Debug)]
struct Fault {
    kind: Kind,
    matching: Matching,
    /// How many more statements it applies to; `None`: all of them.
    remaining: Option<usize>,
}

/// A real backend that logs every statement it is asked to run, and injects faults.
#[derive(Clone)]
struct Faulty<B> {
    inner: B,
    sent: Arc<Mutex<Vec<String>>>,
    fault: Arc<Mutex<Option<Fault>>>,
}

impl<B: Backend + Clone> Faulty<B> {
    fn new(inner: B) -> Self {
        Faulty {
            inner,
            sent: Arc::default(),
            fault: Arc::default(),
        }
    }

    fn inject(&self, kind: Kind, matching: Matching, times: Option<usize>) {
        *lock(&self.fault) = Some(Fault {
            kind,
            matching,
            remaining: times,
        });
    }

    fn heal(&self) {
        *lock(&self.fault) = None;
    }

    /// How many statements were sent so far.
    fn sent(&self) -> usize {
        lock(&self.sent).len()
    }

    /// How many statements sent so far match.
    fn sent_matching(&self, matching: &Matching) -> usize {
        lock(&self.sent)
            .iter()
            .filter(|s| matching.matches(s))
            .count()
    }

    /// `true` when the fault's budget of statements is used up.
    fn fault_spent(&self) -> bool {
        match &*lock(&self.fault) {
            None => true,
            Some(fault) => fault.remaining == Some(0),
        }
    }

    /// Logs the statement and decides its fate.
    fn admit(&self, sql: &str) -> Option<Kind> {
        lock(&self.sent).push(sql.to_owned());
        let mut fault = lock(&self.fault);
        let f = fault.as_mut()?;
        if !f.matching.matches(sql) || f.remaining == Some(0) {
            return None;
        }
        if let Some(n) = f.remaining.as_mut() {
            *n -= 1;
        }
        Some(f.kind)
    }

    async fn fail(&self) -> Error {
        self.inner
            .execute("SELECT * FROM fenced_keeper_no_such_table", &[])
            .await
            .expect_err("the injected statement must be rejected by the database")
    }
}

/// The store's renewal, exactly as the keeper sends it.
fn renew_statement<B: Backend>(store: &Store<B>) -> Matching {
    Matching::Exactly(fenced_guard::dialect::renew(store.dialect(), store.table()))
}

/// The store's release, exactly as the work sends it.
fn release_statement<B: Backend>(store: &Store<B>) -> Matching {
    Matching::Exactly(fenced_guard::dialect::release(
        store.dialect(),
        store.table(),
    ))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<B: Backend + Clone> Executor for Faulty<B> {
    fn dialect(&self) -> Dialect {
        self.inner.dialect()
    }

    fn execute(&self, sql: &str, params: &[Value]) -> impl Future<Output = Result<u64>> + Send {
        let fate = self.admit(sql);
        async move {
            match fate {
                None => self.inner.execute(sql, params).await,
                Some(Kind::Fail) => Err(self.fail().await),
                Some(Kind::Stall) => std::future::pending().await,
            }
        }
    }

    fn query_row(
        &self,
        sql: &str,
        params: &[Value],
    ) -> impl Future<Output = Result<Option<Vec<Value>>>> + Send {
        let fate = self.admit(sql);
        async move {
            match fate {
                None => self.inner.query_row(sql, params).await,
                Some(Kind::Fail) => Err(self.fail().await),
                Some(Kind::Stall) => std::future::pending().await,
            }
        }
    }

    fn execute_batch(&self, sql: &str) -> impl Future<Output = Result<()>> + Send {
        let fate = self.admit(sql);
        async move {
            match fate {
                None => self.inner.execute_batch(sql).await,
                Some(Kind::Fail) => Err(self.fail().await),
                Some(Kind::Stall) => std::future::pending().await,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Captured warnings: a global subscriber that keeps every event's fields.

#[derive(Debug)]
struct Captured {
    level: tracing::Level,
    fields: Vec<(String, String)>,
}

static EVENTS: Mutex<Vec<Captured>> = Mutex::new(Vec::new());

struct Capture;

struct Fields(Vec<(String, String)>);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields(Vec::new());
        event.record(&mut fields);
        lock(&EVENTS).push(Captured {
            level: *event.metadata().level(),
            fields: fields.0,
        });
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

fn capture_logs() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        tracing::subscriber::set_global_default(Capture).expect("install the test subscriber");
    });
}

/// The messages of the warnings logged about `key`.
fn warnings_about(key: &Key) -> Vec<String> {
    let key = key.to_string();
    lock(&EVENTS)
        .iter()
        .filter(|e| e.level == tracing::Level::WARN)
        .filter(|e| e.fields.iter().any(|(n, v)| n == "key" && *v == key))
        .filter_map(|e| {
            e.fields
                .iter()
                .find(|(n, _)| n == "message")
                .map(|(_, v)| v.clone())
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Reading the database.

/// The row as stored.
#[derive(Debug, PartialEq)]
struct Row {
    generation: i64,
    owner: Option<Uuid>,
    published: i64,
    payload: Option<String>,
}

fn millis(d: Dialect, expr: &str) -> String {
    match d {
        Dialect::Postgres => format!("(extract(epoch from {expr}) * 1000)::bigint"),
        Dialect::Sqlite => expr.to_owned(),
        Dialect::Mssql => format!("DATEDIFF_BIG(millisecond, '1970-01-01', {expr})"),
    }
}

/// The database's clock, in milliseconds since the Unix epoch.
async fn db_now<B: Backend>(store: &Store<B>) -> i64 {
    let d = store.dialect();
    store
        .backend()
        .query_i64(&format!("SELECT {}", millis(d, d.clock())), &[])
        .await
        .expect("read the database clock")
        .expect("one row")
}

/// The row's expiry, in milliseconds since the Unix epoch.
async fn expiry<B: Backend>(store: &Store<B>, key: &Key) -> Option<i64> {
    let d = store.dialect();
    let expiry = millis(d, &store.table().expiry_column().quoted(d));
    row::select(store, key, &[expiry]).await[0].as_i64()
}

async fn read<B: Backend>(store: &Store<B>, key: &Key) -> Row {
    let d = store.dialect();
    let t = store.table();
    let columns = [
        t.generation_column().quoted(d),
        t.owner_column().quoted(d),
        t.published_column().quoted(d),
        payload_column(d),
    ];
    let row = row::select(store, key, &columns).await;
    Row {
        generation: row[0].as_i64().expect("generation"),
        owner: row::owner(&row[1]),
        published: row[2].as_i64().expect("published"),
        payload: row[3].as_str().map(str::to_owned),
    }
}

/// Waits until the database's clock reaches `target` (milliseconds).
async fn until_db_clock<B: Backend>(store: &Store<B>, target: i64) {
    loop {
        let now = db_now(store).await;
        if now >= target {
            return;
        }
        let left = u64::try_from(target - now).unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(left.min(50))).await;
    }
}

/// A store on a fresh table with one provisioned row, and the row's key.
async fn fresh<F: Fixture>(fx: &F) -> (Store<F::Backend>, Key) {
    let store = Store::new(fx.connect().await, fx.table());
    store.create_schema().await.expect("create schema");
    let key = Key::Uuid(Uuid::new_v4());
    assert!(store.provision(key.clone()).await.expect("provision"));
    (store, key)
}

/// A store whose backend is a [`Faulty`] wrapper, on the same table.
async fn faulty<F: Fixture>(fx: &F) -> (Store<Faulty<F::Backend>>, Faulty<F::Backend>) {
    let backend = Faulty::new(fx.connect().await);
    (Store::new(backend.clone(), fx.table()), backend)
}

async fn lost(keeper: &Keeper) -> Loss {
    tokio::time::timeout(HANG, keeper.lost())
        .await
        .expect("the keeper never gave the lease up")
}

/// The same long-running work with and without a keeper: it runs until the database's
/// clock is two ttls past the acquisition's original expiry (three ttls after the
/// acquisition), and returns every distinct expiry it saw on the row meanwhile.
async fn long_work<B: Backend>(store: &Store<B>, key: &Key, ttl: Duration) -> Vec<i64> {
    let first = expiry(store, key).await.expect("the row is leased");
    let ttl_ms = i64::try_from(ttl.as_millis()).unwrap();
    let end = first + 2 * ttl_ms;
    let mut seen = vec![first];
    loop {
        let now = db_now(store).await;
        if let Some(e) = expiry(store, key).await
            && Some(&e) != seen.last()
        {
            seen.push(e);
        }
        if now > end {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---------------------------------------------------------------------------------------
// The keeper.

async fn keeper_keeps_the_lease_alive_past_several_ttls<F: Fixture>(fx: Arc<F>) {
    let ttl = Duration::from_millis(1500);
    let (store, key) = fresh(&*fx).await;
    let lease = acquire(&store, &key, ttl).await;
    let keeper = Keeper::start(&store, &lease);

    let seen = long_work(&store, &key, ttl).await;

    // Renewals reached the database: the expiry moved forward several times, and is
    // still ahead of the database's clock, three ttls after the acquisition.
    assert!(
        seen.len() >= 4,
        "expiry advanced too few times: {seen:?}, loss {:?}",
        keeper.loss()
    );
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    let now = db_now(&store).await;
    assert!(
        expiry(&store, &key).await.unwrap() > now,
        "the lease is no longer live"
    );
    assert!(keeper.loss().is_none(), "{:?}", keeper.loss());
    assert!(!keeper.token().is_cancelled());
    let outcome = store.publish(&lease, &payload("kept")).await.unwrap();
    assert_eq!(outcome, Outcome::Applied, "loss: {:?}", keeper.loss());
    assert_eq!(keeper.stop().await.map(|l| l.to_string()), None);
    let row = read(&store, &key).await;
    assert_eq!((row.published, row.payload.as_deref()), (1, Some("kept")));
}

async fn negative_control_without_a_keeper_the_same_work_is_refused<F: Fixture>(fx: Arc<F>) {
    let ttl = Duration::from_millis(1500);
    let (store, key) = fresh(&*fx).await;
    let lease = acquire(&store, &key, ttl).await;

    let seen = long_work(&store, &key, ttl).await;

    assert_eq!(seen.len(), 1, "nothing renews the lease: {seen:?}");
    let outcome = store.publish(&lease, &payload("late")).await.unwrap();
    assert_eq!(outcome, Outcome::Refused);
    let row = read(&store, &key).await;
    assert_eq!((row.published, row.payload), (0, None));
}

async fn successor_takeover_cancels_the_work_and_fails_closed<F: Fixture>(fx: Arc<F>) {
    let (plain, key) = fresh(&*fx).await;
    let (store, wire) = faulty(&*fx).await;
    let a = acquire(&store, &key, Duration::from_millis(3000)).await;
    let keeper = Keeper::start(&store, &a);
    let work = keeper.token().clone();

    // Control: while A holds, its writes reach the database and are counted.
    let before = wire.sent();
    let outcome = store.update(&a, &payload("a, in time")).await.unwrap();
    assert_eq!(outcome, Outcome::Applied);
    assert_eq!(wire.sent(), before + 1, "the counter must see a write");

    // B takes over: A's expiry moves into the past, B acquires on its own connection.
    expire(&plain, &key).await;
    let b = acquire(&plain, &key, Duration::from_secs(300)).await;
    assert_eq!(b.generation(), a.generation() + 1);

    // A's keeper's next renewal is refused: the work is cancelled, the lease revoked.
    assert!(matches!(lost(&keeper).await, Loss::Refused));
    assert!(work.is_cancelled());
    assert!(a.is_revoked());

    // Every later write through A is refused without a round trip.
    let before = wire.sent();
    assert_writes_refused(&store, &a, "a, late").await;
    assert_eq!(
        wire.sent(),
        before,
        "a revoked lease must not reach the database"
    );

    // B's row is untouched by A, and B publishes.
    let row = read(&plain, &key).await;
    assert_eq!(row.generation, b.generation());
    assert_eq!(row.owner, Some(b.owner()));
    assert_eq!(row.payload.as_deref(), Some("a, in time"));
    assert_eq!(
        plain.publish(&b, &payload("b")).await.unwrap(),
        Outcome::Applied
    );
    assert!(matches!(keeper.stop().await, Some(Loss::Refused)));
}

async fn renewal_errors_until_the_deadline_fail_closed<F: Fixture>(fx: Arc<F>) {
    let (plain, key) = fresh(&*fx).await;
    let (store, wire) = faulty(&*fx).await;
    let a = acquire(&store, &key, Duration::from_secs(1)).await;
    let keeper = Keeper::start(&store, &a);

    // From now on every statement of A's store fails with a real database error.
    wire.inject(Kind::Fail, Matching::Any, None);
    let loss = lost(&keeper).await;
    let Loss::Errors { attempts, last } = &loss else {
        panic!("expected errors, got {loss:?}");
    };
    assert!(*attempts >= 1);
    assert!(
        !matches!(**last, Error::Config(_) | Error::KeyType { .. }),
        "a database error: {last:?}"
    );
    assert!(std::error::Error::source(&loss).is_some());
    assert!(keeper.token().is_cancelled());

    // The database never refused A: only the keeper did, locally. Even with the
    // connection healthy again, A's writes stay refused and never leave the process.
    wire.heal();
    let row = read(&plain, &key).await;
    assert_eq!(
        (row.generation, row.owner),
        (a.generation(), Some(a.owner()))
    );
    let before = wire.sent();
    assert_eq!(
        store.publish(&a, &payload("a")).await.unwrap(),
        Outcome::Refused
    );
    assert_eq!(wire.sent(), before);
    assert_eq!(read(&plain, &key).await.published, 0);
}

async fn transient_renewal_errors_are_retried<F: Fixture>(fx: Arc<F>) {
    let ttl = Duration::from_secs(3);
    let (plain, key) = fresh(&*fx).await;
    let (store, wire) = faulty(&*fx).await;
    let a = acquire(&store, &key, ttl).await;
    let keeper = Keeper::builder()
        .retry_interval(Duration::from_millis(20))
        .start(&store, &a)
        .unwrap();
    let first = expiry(&plain, &key).await.unwrap();

    // The next three renewals fail; the fourth must succeed before the deadline.
    let renew = renew_statement(&store);
    wire.inject(Kind::Fail, renew.clone(), Some(3));
    tokio::time::timeout(HANG, async {
        while !(wire.fault_spent() && expiry(&plain, &key).await.unwrap() > first) {
            // A keeper that gave up will never renew again: fail now, not at the bound.
            assert!(keeper.loss().is_none(), "gave up: {:?}", keeper.loss());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the expiry never advanced after the errors");

    assert!(
        wire.sent_matching(&renew) >= 4,
        "three failures, one success"
    );
    assert!(keeper.loss().is_none(), "{:?}", keeper.loss());
    assert!(!keeper.token().is_cancelled());
    assert_eq!(
        store.publish(&a, &payload("a")).await.unwrap(),
        Outcome::Applied
    );
    assert!(keeper.stop().await.is_none());
}

async fn renewal_in_flight_at_the_deadline_fails_closed<F: Fixture>(fx: Arc<F>) {
    let (plain, key) = fresh(&*fx).await;
    let (store, wire) = faulty(&*fx).await;
    let a = acquire(&store, &key, Duration::from_millis(600)).await;
    let keeper = Keeper::start(&store, &a);

    // Renewals are sent and never answered.
    let renew = renew_statement(&store);
    wire.inject(Kind::Stall, renew.clone(), None);
    assert!(matches!(lost(&keeper).await, Loss::Deadline));
    assert!(wire.sent_matching(&renew) >= 1, "a renewal was in flight");
    assert!(keeper.token().is_cancelled());

    let row = read(&plain, &key).await;
    assert_eq!(row.owner, Some(a.owner()), "the database did not refuse A");
    let before = wire.sent();
    assert_eq!(
        store.update(&a, &payload("a")).await.unwrap(),
        Outcome::Refused
    );
    assert_eq!(wire.sent(), before);
}

async fn stopping_or_dropping_the_keeper_ends_renewals<F: Fixture>(fx: Arc<F>) {
    let ttl = Duration::from_millis(1200);
    let (plain, first) = fresh(&*fx).await;
    let second = Key::Uuid(Uuid::new_v4());
    plain.provision(second.clone()).await.unwrap();
    let (store, wire) = faulty(&*fx).await;
    let renew = renew_statement(&store);

    let a = acquire(&store, &first, ttl).await;
    let b = acquire(&store, &second, ttl).await;
    let stopped = Keeper::start(&store, &a);
    let dropped = Keeper::start(&store, &b);
    // Let both renew at least once, so that there is something to stop.
    tokio::time::timeout(HANG, async {
        while wire.sent_matching(&renew) < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the keepers never renewed");
    let stop_loss = stopped.stop().await;
    assert!(stop_loss.is_none(), "{stop_loss:?}");
    drop(dropped);

    // A renewal dropped mid-flight may still land; after that, none is sent. Wait until
    // both leases have expired by the database's clock.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let renewals = wire.sent_matching(&renew);
    let last = expiry(&plain, &first)
        .await
        .unwrap()
        .max(expiry(&plain, &second).await.unwrap());
    until_db_clock(&plain, last + 1).await;
    assert_eq!(
        wire.sent_matching(&renew),
        renewals,
        "renewed after stop/drop"
    );
    assert!(
        !a.is_revoked() && !b.is_revoked(),
        "stopping is not revoking"
    );
    assert_eq!(
        store.publish(&a, &payload("a")).await.unwrap(),
        Outcome::Refused
    );
}

/// Giving the row back ends the keeper: no later renewal is refused, no loss is
/// reported, the work's token is not cancelled.
async fn a_keeper_ends_when_its_lease_is_released<F: Fixture>(fx: Arc<F>) {
    let ttl = Duration::from_millis(900);
    let (store, key) = fresh(&*fx).await;
    for publish in [false, true] {
        let lease = acquire(&store, &key, ttl).await;
        let keeper = Keeper::start(&store, &lease);
        let outcome = if publish {
            store.publish_and_release(&lease, &payload("done")).await
        } else {
            store.release(&lease).await
        };
        assert_eq!(outcome.unwrap(), Outcome::Applied);
        assert!(lease.is_released() && keeper.lease().is_released());
        // Past several renewal periods and the lease's local deadline: a keeper still
        // running would have had a renewal refused by now.
        tokio::time::sleep(ttl * 2).await;
        assert!(
            keeper.loss().is_none(),
            "publish {publish}: {:?}",
            keeper.loss()
        );
        assert!(!keeper.token().is_cancelled(), "publish {publish}");
        assert!(!lease.is_revoked(), "publish {publish}");
        assert!(keeper.stop().await.is_none());
    }
}

// ---------------------------------------------------------------------------------------
// Work.

async fn work_publishes_then_releases<F: Fixture>(fx: Arc<F>) {
    let (store, key) = fresh(&*fx).await;
    let work = Work::new(&store).ttl(Duration::from_secs(30));
    let done = work
        .run(key.clone(), |lease, token| async move {
            assert!(!token.is_cancelled());
            Ok::<_, String>(vec![(
                "Payload",
                Value::from(format!("gen {}", lease.generation())),
            )])
        })
        .await
        .unwrap();
    assert!(
        matches!(done, Completion::Published { generation: 1 }),
        "{done:?}"
    );
    let row = read(&store, &key).await;
    assert_eq!(
        row,
        Row {
            generation: 1,
            owner: None,
            published: 1,
            payload: Some("gen 1".into())
        }
    );

    // Publish-and-release in one statement; the row is free afterwards too.
    let done = work
        .clone()
        .publish_and_release(true)
        .run(key.clone(), |_, _| async {
            Ok::<_, String>(vec![("Payload".to_owned(), Value::from("again"))])
        })
        .await
        .unwrap();
    assert!(
        matches!(done, Completion::Published { generation: 2 }),
        "{done:?}"
    );
    let row = read(&store, &key).await;
    assert_eq!((row.owner, row.published), (None, 2));
    assert_eq!(row.payload.as_deref(), Some("again"));
}

async fn work_does_not_run_when_the_row_is_held<F: Fixture>(fx: Arc<F>) {
    let (store, key) = fresh(&*fx).await;
    let holder = acquire(&store, &key, Duration::from_secs(300)).await;
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    let done = Work::new(&store)
        .acquire_timeout(Duration::from_millis(200))
        .run(key.clone(), |_, _| async move {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, String>(payload("intruder").to_vec())
        })
        .await
        .unwrap();
    assert!(matches!(done, Completion::NotAcquired), "{done:?}");
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    let row = read(&store, &key).await;
    assert_eq!((row.generation, row.owner), (1, Some(holder.owner())));
}

async fn work_failure_is_returned_and_the_row_released<F: Fixture>(fx: Arc<F>) {
    let (store, key) = fresh(&*fx).await;
    let done = Work::new(&store)
        .run(key.clone(), |_, _| async {
            Err::<Vec<(&str, Value)>, _>("the builder failed")
        })
        .await
        .unwrap();
    match done {
        Completion::Failed { error, loss } => {
            assert_eq!(error, "the builder failed");
            assert!(loss.is_none());
        }
        other => panic!("expected the work's failure, got {other:?}"),
    }
    let row = read(&store, &key).await;
    assert_eq!((row.generation, row.owner, row.published), (1, None, 0));
}

/// With publication retries the publication carries an operation id: published once,
/// in both shapes. An error the database answers with is returned as it is, not retried
/// (the negative case: the wrapper that says "may have committed").
async fn work_with_publication_retries_publishes_once<F: Fixture>(fx: Arc<F>) {
    let (store, key) = fresh(&*fx).await;
    let work = Work::new(&store).publication_retries(2);
    for (generation, fused) in [(1, false), (2, true)] {
        let done = work
            .clone()
            .publish_and_release(fused)
            .run(key.clone(), |lease, _| async move {
                Ok::<_, String>(payload(&format!("gen {}", lease.generation())).to_vec())
            })
            .await
            .unwrap();
        assert!(
            matches!(done, Completion::Published { generation: g } if g == generation),
            "{done:?}"
        );
        let row = read(&store, &key).await;
        assert_eq!(
            (row.generation, row.owner, row.published),
            (generation, None, generation)
        );
        assert_eq!(row.payload, Some(format!("gen {generation}")));
    }

    let error = work
        .run(key.clone(), |_, _| async {
            Ok::<_, String>(vec![("NoSuchColumn", Value::from("x"))])
        })
        .await
        .unwrap_err();
    assert!(!error.may_have_committed(), "{error:?}");
    assert!(
        !matches!(error, Error::PublicationUnsettled { .. }),
        "{error:?}"
    );
    let row = read(&store, &key).await;
    assert_eq!((row.generation, row.owner, row.published), (3, None, 2));
}

async fn release_failure_is_logged_not_raised<F: Fixture>(fx: Arc<F>) {
    capture_logs();
    let (plain, key) = fresh(&*fx).await;
    let (store, wire) = faulty(&*fx).await;
    let release = release_statement(&store);
    wire.inject(Kind::Fail, release.clone(), None);
    let work = Work::new(&store).ttl(Duration::from_secs(300));

    // The work fails, and so does the release after it: the work's failure is returned.
    let done = work
        .run(key.clone(), |_, _| async {
            Err::<Vec<(&str, Value)>, _>("boom")
        })
        .await
        .unwrap();
    assert!(
        matches!(done, Completion::Failed { error: "boom", .. }),
        "{done:?}"
    );
    assert_eq!(wire.sent_matching(&release), 1, "the release was attempted");
    assert_eq!(
        warnings_about(&key),
        ["release failed; the lease will expire"]
    );
    let row = read(&plain, &key).await;
    assert!(row.owner.is_some(), "the failed release left the row held");

    // Once that lease is gone, a successful work whose release fails is still published.
    expire(&plain, &key).await;
    let done = work
        .run(key.clone(), |_, _| async {
            Ok::<_, String>(payload("ok").to_vec())
        })
        .await
        .unwrap();
    assert!(
        matches!(done, Completion::Published { generation: 2 }),
        "{done:?}"
    );
    assert_eq!(wire.sent_matching(&release), 2);
    assert_eq!(warnings_about(&key).len(), 2);
    assert_eq!(read(&plain, &key).await.payload.as_deref(), Some("ok"));
}

async fn release_is_bounded_by_its_own_timeout<F: Fixture>(fx: Arc<F>) {
    capture_logs();
    let (plain, key) = fresh(&*fx).await;
    let (store, wire) = faulty(&*fx).await;
    let release = release_statement(&store);
    // The release is sent and never answered; the run must still return.
    wire.inject(Kind::Stall, release.clone(), None);
    let done = tokio::time::timeout(
        HANG,
        Work::new(&store)
            .release_timeout(Duration::from_millis(100))
            .run(key.clone(), |_, _| async {
                Ok::<_, String>(payload("ok").to_vec())
            }),
    )
    .await
    .expect("the release was not bounded")
    .unwrap();
    assert!(
        matches!(done, Completion::Published { generation: 1 }),
        "{done:?}"
    );
    assert_eq!(wire.sent_matching(&release), 1);
    assert_eq!(
        warnings_about(&key),
        ["release timed out; the lease will expire"]
    );
    assert_eq!(read(&plain, &key).await.published, 1);
}

async fn publication_error_propagates_after_the_release<F: Fixture>(fx: Arc<F>) {
    let (plain, key) = fresh(&*fx).await;
    let (store, wire) = faulty(&*fx).await;
    // Only the publication (the one statement that writes Payload) fails.
    wire.inject(Kind::Fail, Matching::Containing("Payload"), None);
    let result = Work::new(&store)
        .run(key.clone(), |_, _| async {
            Ok::<_, String>(payload("x").to_vec())
        })
        .await;
    let error = result.expect_err("the publication error is returned");
    assert!(
        !matches!(error, Error::Config(_) | Error::Cancelled),
        "a database error: {error:?}"
    );
    let row = read(&plain, &key).await;
    assert_eq!(
        (row.owner, row.published),
        (None, 0),
        "released, not published"
    );
}

async fn acquisition_error_propagates<F: Fixture>(fx: Arc<F>) {
    // No schema: the acquisition fails in the database, and the work never runs.
    let store = Store::new(fx.connect().await, fx.table());
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    let result = Work::new(&store)
        .run(Uuid::new_v4(), |_, _| async move {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok::<Vec<(&str, Value)>, String>(Vec::new())
        })
        .await;
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    assert!(result.is_err(), "{result:?}");

    // Invalid keeper settings fail before anything is sent.
    let (store, wire) = faulty(&*fx).await;
    let result = Work::new(&store)
        .keeper(Keeper::builder().renew_fraction(1.5))
        .run(Uuid::new_v4(), |_, _| async {
            Ok::<Vec<(&str, Value)>, String>(Vec::new())
        })
        .await;
    assert!(matches!(result, Err(Error::Config(_))), "{result:?}");
    assert_eq!(wire.sent(), 0);
}

async fn work_is_refused_locally_after_the_keeper_lost_authority<F: Fixture>(fx: Arc<F>) {
    let (plain, key) = fresh(&*fx).await;
    let (store, wire) = faulty(&*fx).await;
    let successor = Arc::new(Mutex::new(None));
    let b_slot = Arc::clone(&successor);
    let plain_ref = &plain;
    let key_ref = &key;
    let done = Work::new(&store)
        .ttl(Duration::from_millis(3000))
        .run(key.clone(), |_, token| async move {
            // While the work runs, B takes over; the work notices through its token.
            expire(plain_ref, key_ref).await;
            let b = acquire(plain_ref, key_ref, Duration::from_secs(300)).await;
            *lock(&b_slot) = Some(b);
            tokio::time::timeout(HANG, token.cancelled())
                .await
                .expect("the token was never cancelled");
            // Work that ignores the cancellation and returns a result anyway.
            Ok::<_, String>(payload("stale").to_vec())
        })
        .await
        .unwrap();
    assert!(
        matches!(
            done,
            Completion::Refused {
                loss: Some(Loss::Refused)
            }
        ),
        "{done:?}"
    );
    assert_eq!(
        wire.sent_matching(&Matching::Containing("Payload")),
        0,
        "the publication must be refused locally"
    );
    let b = lock(&successor).take().expect("b acquired");
    let row = read(&plain, &key).await;
    assert_eq!(
        (row.generation, row.owner),
        (b.generation(), Some(b.owner()))
    );
    assert_eq!((row.published, row.payload), (0, None));
}

async fn shutdown_reaches_the_work_and_is_not_a_loss<F: Fixture>(fx: Arc<F>) {
    let (plain, key) = fresh(&*fx).await;
    let (store, wire) = faulty(&*fx).await;
    let shutdown = fenced_guard::CancellationToken::new();
    let work = Work::new(&store).cancel(&shutdown);

    // The service shuts down while the work runs: the work's token is cancelled, the
    // keeper still holds the lease, and the row is released.
    let done = work
        .run(key.clone(), |_, token| {
            let shutdown = shutdown.clone();
            async move {
                shutdown.cancel();
                tokio::time::timeout(HANG, token.cancelled())
                    .await
                    .expect("the parent's cancellation never reached the work");
                Err::<Vec<(&str, Value)>, _>("stopped for shutdown")
            }
        })
        .await
        .unwrap();
    assert!(
        matches!(
            done,
            Completion::Failed {
                error: "stopped for shutdown",
                loss: None
            }
        ),
        "{done:?}"
    );
    let row = read(&plain, &key).await;
    assert_eq!((row.generation, row.owner), (1, None));

    // After shutdown, nothing more is acquired and nothing is sent.
    let before = wire.sent();
    let result = work
        .run(key.clone(), |_, _| async {
            Ok::<Vec<(&str, Value)>, String>(Vec::new())
        })
        .await;
    assert!(matches!(result, Err(Error::Cancelled)), "{result:?}");
    assert_eq!(wire.sent(), before);
}
