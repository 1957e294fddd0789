//! The tests, generic over the backend.

use std::future::Future;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fenced_guard::{
    Backend, BatchKeeper, Candidates, ColumnType, Comparison, Dialect, Error, Executor,
    FencedTable, Key, KeyType, Lease, LeaseState, Loss, Outcome, Result, Store, Value,
};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use tokio::sync::Barrier;
use uuid::Uuid;

use crate::claims::{self, Claimed, Violation};
use crate::support::Place;
use crate::support::lease::assert_writes_refused;
use crate::support::row::expire;

/// A bound on waits that should end quickly, so that a broken keeper fails the test
/// instead of hanging it. Never an assertion about speed.
const HANG: Duration = Duration::from_secs(60);

/// A long ttl: expiry in these tests is moved by the test, never waited for, unless
/// the test is about the keeper.
const TTL: Duration = Duration::from_secs(300);

/// How many connections each backend of `test` gets: 32 for the claimers' test, one
/// claimer per connection (SQLite's pool keeps its own size, its writer being single
/// anyway; SQL Server's setup takes fewer), one otherwise.
pub fn connections(test: &str) -> usize {
    if test.starts_with("thirty_two_claimers") {
        32
    } else {
        1
    }
}

/// The workload's table: bigint keys, `Payload` and `Queue` text columns.
pub fn jobs<P: Place>(place: &P) -> FencedTable {
    FencedTable::builder()
        .table(place.qualified("Job"))
        .key_type(KeyType::BigInt)
        .column("Payload", ColumnType::Text)
        .column("Queue", ColumnType::Text)
        .build()
        .expect("valid test table")
}

/// Provisions rows `from..=to`, a thousand per statement (SQL Server takes at most a
/// thousand rows in one `VALUES`).
pub async fn provision_range<B: Backend>(store: &Store<B>, from: i64, to: i64) {
    let d = store.dialect();
    let t = store.table();
    let keys: Vec<i64> = (from..=to).collect();
    for chunk in keys.chunks(1000) {
        let rows: Vec<String> = (1..=chunk.len())
            .map(|i| format!("({}, 0, 0)", d.placeholder(i)))
            .collect();
        let sql = format!(
            "INSERT INTO {} ({}, {}, {}) VALUES {}",
            t.name().quoted(d),
            t.key_column().quoted(d),
            t.generation_column().quoted(d),
            t.published_column().quoted(d),
            rows.join(", ")
        );
        let params: Vec<Value> = chunk.iter().map(|k| Value::I64(*k)).collect();
        store
            .backend()
            .execute(&sql, &params)
            .await
            .expect("provision the rows");
    }
}

/// Every row's key and generation.
pub async fn generations<B: Backend>(store: &Store<B>) -> Vec<(i64, i64)> {
    let d = store.dialect();
    let t = store.table();
    let sql = format!(
        "SELECT {}, {} FROM {}",
        t.key_column().quoted(d),
        t.generation_column().quoted(d),
        t.name().quoted(d)
    );
    store
        .backend()
        .query_rows(&sql, &[])
        .await
        .expect("read the generations")
        .iter()
        .map(|row| (row[0].as_i64().unwrap(), row[1].as_i64().unwrap()))
        .collect()
}

async fn fresh<P: Place>(place: &P, rows: i64) -> Store<P::Backend> {
    let store = Store::new(place.connect().await, jobs(place));
    store.create_schema().await.expect("create schema");
    provision_range(&store, 1, rows).await;
    store
}

async fn inspect<B: Backend>(store: &Store<B>, key: &Key) -> LeaseState {
    store.inspect(key.clone()).await.expect("inspect")
}

fn keys(leases: &[Lease]) -> Vec<i64> {
    let mut keys: Vec<i64> = leases
        .iter()
        .map(|l| match l.key() {
            Key::BigInt(k) => *k,
            other => panic!("a bigint key, not {other:?}"),
        })
        .collect();
    keys.sort_unstable();
    keys
}

fn queue(text: &str) -> [(&'static str, Value); 1] {
    [("Queue", Value::from(text))]
}

// ---------------------------------------------------------------------------------------
// Claiming.

pub async fn a_claim_takes_free_candidates_as_ordinary_leases<P: Place>(place: Arc<P>) {
    let store = fresh(&*place, 10).await;
    let epoch = store.current_epoch().await.unwrap();
    let held = store.try_acquire(1_i64, TTL).await.unwrap().expect("free");

    // Four of the nine free rows, never the held one.
    let first = store.claim(&Candidates::any(), 4, TTL).await.unwrap();
    assert_eq!(first.len(), 4);
    let first_keys = keys(&first);
    assert!(!first_keys.contains(&1), "{first_keys:?}");
    first_keys.windows(2).for_each(|w| assert!(w[0] < w[1]));
    for lease in &first {
        assert_eq!(lease.generation(), 1);
        let stamp = lease.epoch().expect("a claimed lease carries its stamp");
        assert_eq!(
            fenced_guard::dialect::split_stamp(store.dialect(), store.table(), stamp).0,
            epoch
        );
        assert_eq!(lease.ttl(), TTL);
        let row = inspect(&store, lease.key()).await;
        assert!(row.is_held() && row.is_of(lease), "{row:?}");
    }

    // Among a key list: the five left, however large the limit.
    let rest = store
        .claim(&Candidates::keys(1..=10_i64), 100, TTL)
        .await
        .unwrap();
    let mut all = keys(&rest);
    all.extend(&first_keys);
    all.sort_unstable();
    assert_eq!(all, (2..=10).collect::<Vec<i64>>());
    assert!(
        store
            .claim(&Candidates::any(), 10, TTL)
            .await
            .unwrap()
            .is_empty(),
        "every row is held"
    );

    // An expired lease's row is free again: claimed, its generation bumped, and the
    // old lease fenced out.
    let old = &first[0];
    expire(&store, old.key()).await;
    let again = store
        .claim(&Candidates::keys([old.key(), held.key()]), 10, TTL)
        .await
        .unwrap();
    assert_eq!(keys(&again), keys(std::slice::from_ref(old)));
    assert_eq!(again[0].generation(), 2);
    assert_writes_refused(&store, old, "stale").await;
    let payload = [("Payload", Value::from("claimed"))];
    assert_eq!(
        store.publish(&again[0], &payload).await.unwrap(),
        Outcome::Applied
    );

    // A filter on the table's declared columns.
    assert!(
        store
            .update(&rest[0], &queue("reports"))
            .await
            .unwrap()
            .is_applied()
    );
    assert!(
        store
            .update(&rest[1], &queue("mail"))
            .await
            .unwrap()
            .is_applied()
    );
    for lease in &rest[..3] {
        assert!(store.release(lease).await.unwrap().is_applied());
    }
    let reports = Candidates::any().filter("Queue", Comparison::Eq, "reports");
    let got = store.claim(&reports, 10, TTL).await.unwrap();
    assert_eq!(keys(&got), keys(&rest[..1]));
    assert_eq!(got[0].generation(), 2);
    let unqueued = store
        .claim(&Candidates::any().is_null("Queue"), 10, TTL)
        .await
        .unwrap();
    assert_eq!(keys(&unqueued), keys(&rest[2..3]));
    let not_reports = Candidates::keys(1..=10_i64).is_not_null("Queue").filter(
        "Queue",
        Comparison::Ne,
        "reports",
    );
    let mail = store.claim(&not_reports, 10, TTL).await.unwrap();
    assert_eq!(keys(&mail), keys(&rest[1..2]));
}

pub async fn a_claim_checks_its_candidates_before_sending<P: Place>(place: Arc<P>) {
    let store = fresh(&*place, 3).await;
    let config = |result: Result<Vec<Lease>>| match result {
        Err(Error::Config(message)) => message,
        other => panic!("expected a configuration error, got {other:?}"),
    };
    let message = config(
        store
            .claim(
                &Candidates::any().filter("Missing", Comparison::Eq, 1),
                1,
                TTL,
            )
            .await,
    );
    assert!(message.contains("declared"), "{message}");
    // A protocol column is not a declared column.
    config(
        store
            .claim(
                &Candidates::any().filter("Generation", Comparison::Gt, 0),
                1,
                TTL,
            )
            .await,
    );
    config(
        store
            .claim(
                &Candidates::any().filter("Queue", Comparison::Eq, Value::Null),
                1,
                TTL,
            )
            .await,
    );
    let many = (0..65).fold(Candidates::any(), |c, _| c.is_null("Queue"));
    config(store.claim(&many, 1, TTL).await);
    assert!(matches!(
        store
            .claim(&Candidates::any().is_null("Pay load"), 1, TTL)
            .await,
        Err(Error::InvalidIdentifier { .. })
    ));
    assert!(matches!(
        store.claim(&Candidates::keys(["1"]), 1, TTL).await,
        Err(Error::KeyType { .. })
    ));
    assert!(matches!(
        store.claim(&Candidates::any(), 1, Duration::ZERO).await,
        Err(Error::InvalidTtl { .. })
    ));
    // Nothing to claim: nothing sent, nothing claimed.
    assert!(
        store
            .claim(&Candidates::any(), 0, TTL)
            .await
            .unwrap()
            .is_empty()
    );
    let none: [i64; 0] = [];
    assert!(
        store
            .claim(&Candidates::keys(none), 5, TTL)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        generations(&store).await.iter().map(|r| r.1).sum::<i64>(),
        0
    );
}

/// How a claimer in the concurrent test picks its candidates.
fn candidates(worker: usize, rng: &mut StdRng, rows: i64) -> Candidates {
    match worker % 3 {
        0 => Candidates::any(),
        1 => {
            let all: Vec<i64> = (1..=rows).collect();
            Candidates::keys(all.choose_multiple(rng, 256).copied())
        }
        _ => Candidates::any().is_null("Queue"),
    }
}

/// 32 claimers take batches of 1 to 64 rows from the same 10,000 rows until none is
/// left, each by its own candidates (any row, a random key list, a filter); then most
/// rows are made free again (a tenth released by their holders, the rest expired by a
/// raw UPDATE) and they claim them all again. Every generation of every row must go to
/// exactly one claimer, every generation the database reached must have gone to one,
/// and every release of a row still held must apply.
pub async fn thirty_two_claimers_take_each_row_once_per_generation<P: Place>(place: Arc<P>) {
    const ROWS: i64 = 10_000;
    const WORKERS: usize = 32;
    let store = fresh(&*place, ROWS).await;
    let seed = rand::random::<u64>();
    let mut claims: Vec<Claimed> = Vec::new();
    let mut held: Vec<Lease> = Vec::new();
    for round in 0..2_u64 {
        let taken = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for worker in 0..WORKERS {
            let store = store.clone();
            let taken = Arc::clone(&taken);
            let mut rng = StdRng::seed_from_u64(seed ^ (round << 32) ^ worker as u64);
            tasks.push(tokio::spawn(async move {
                loop {
                    let limit = rng.random_range(1..=64);
                    let mut got = store
                        .claim(&candidates(worker, &mut rng, ROWS), limit, TTL)
                        .await
                        .expect("claim");
                    if got.is_empty() {
                        got = store
                            .claim(&Candidates::any(), limit, TTL)
                            .await
                            .expect("claim");
                    }
                    if got.is_empty() {
                        return;
                    }
                    let mut taken = taken.lock().unwrap();
                    taken.extend(got.into_iter().map(|lease| (worker, lease)));
                }
            }));
        }
        for task in tasks {
            task.await.expect("a claimer panicked");
        }
        // Babelfish ignores READPAST: a claimer that met rows another was taking may have
        // found nothing and stopped early. A last claim takes what is left.
        let rest = store
            .claim(&Candidates::any(), ROWS as usize, TTL)
            .await
            .expect("the last claim");
        let mut taken = std::mem::take(&mut *taken.lock().unwrap());
        taken.extend(rest.into_iter().map(|lease| (WORKERS, lease)));
        assert_eq!(
            taken.len(),
            ROWS as usize,
            "round {round}: every row claimed once (seed {seed})"
        );
        claims.extend(taken.iter().map(|(worker, lease)| Claimed {
            worker: *worker,
            key: key_of(lease),
            generation: lease.generation(),
        }));
        let leases: Vec<Lease> = taken.into_iter().map(|(_, lease)| lease).collect();
        if round == 0 {
            // A tenth given back by their holders, every one of which must apply: no
            // other claimer holds their rows. The rest expire.
            let given_back = leases.iter().filter(|l| key_of(l) % 10 == 0).cloned();
            release_all(&store, given_back.collect(), Outcome::Applied).await;
            expire_all(&store).await;
            held = leases;
        } else {
            // The first round's holders of expired rows were superseded: their releases
            // are refused. A hundred of them, to keep the test short.
            let superseded = held.iter().filter(|l| key_of(l) % 10 != 0).take(100);
            release_all(&store, superseded.cloned().collect(), Outcome::Refused).await;
        }
    }
    let rows = generations(&store).await;
    assert!(
        rows.iter().all(|(_, generation)| *generation == 2),
        "seed {seed}"
    );
    let violations = claims::check(&claims, &rows);
    assert!(
        violations.is_empty(),
        "seed {seed}: {}",
        claims::first_ten(&violations)
    );
}

fn key_of(lease: &Lease) -> i64 {
    keys(std::slice::from_ref(lease))[0]
}

/// Releases `leases` from eight tasks at once, each release expected to be `expected`.
async fn release_all<B>(store: &Store<B>, leases: Vec<Lease>, expected: Outcome)
where
    B: Backend + Clone + Send + Sync + 'static,
{
    let leases = Arc::new(leases);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (store, leases, next) = (store.clone(), Arc::clone(&leases), Arc::clone(&next));
        tasks.push(tokio::spawn(async move {
            while let Some(lease) = leases.get(next.fetch_add(1, Ordering::SeqCst)) {
                let outcome = store.release(lease).await.expect("release");
                assert_eq!(outcome, expected, "release of {}", lease.key());
            }
        }));
    }
    for task in tasks {
        task.await.expect("a releaser panicked");
    }
}

/// Moves every row's expiry into the past with a raw UPDATE.
pub async fn expire_all<B: Backend>(store: &Store<B>) {
    let d = store.dialect();
    let t = store.table();
    let sql = format!(
        "UPDATE {} SET {} = {} WHERE {} IS NOT NULL",
        t.name().quoted(d),
        t.expiry_column().quoted(d),
        crate::support::row::clock_plus_hours(d, -1),
        t.expiry_column().quoted(d),
    );
    store.backend().execute(&sql, &[]).await.expect("expire");
}

/// The negative control: two claimers that read the free rows, then write their claim
/// by key with the generation they read plus one (a read-then-write claim, without the
/// fence's condition in the write), both read before either writes. The checker must
/// report each row as claimed twice in one generation.
pub async fn negative_control_a_read_then_write_claim_is_caught<P: Place>(place: Arc<P>) {
    let store = fresh(&*place, 20).await;
    let barrier = Arc::new(Barrier::new(2));
    let mut tasks = Vec::new();
    for worker in 0..2 {
        let store = Store::new(place.connect().await, store.table().clone());
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            let read = naive_read(&store, 5).await;
            barrier.wait().await;
            let mut claimed = Vec::new();
            for (key, generation) in read {
                naive_write(&store, key, generation + 1).await;
                claimed.push(Claimed {
                    worker,
                    key,
                    generation: generation + 1,
                });
            }
            claimed
        }));
    }
    let mut claims = Vec::new();
    for task in tasks {
        claims.extend(task.await.expect("a naive claimer panicked"));
    }
    let violations = claims::check(&claims, &generations(&store).await);
    let doubles: Vec<&Violation> = violations
        .iter()
        .filter(|v| matches!(v, Violation::DoubleClaim { .. }))
        .collect();
    assert_eq!(doubles.len(), 5, "{violations:?}");
    assert!(
        doubles.iter().all(|v| matches!(
            v,
            Violation::DoubleClaim { generation: 1, workers, .. } if workers.len() == 2
        )),
        "{doubles:?}"
    );
}

/// The first `n` rows never leased, with their generations.
async fn naive_read<B: Backend>(store: &Store<B>, n: usize) -> Vec<(i64, i64)> {
    let d = store.dialect();
    let t = store.table();
    let (key, generation, owner) = (
        t.key_column().quoted(d),
        t.generation_column().quoted(d),
        t.owner_column().quoted(d),
    );
    let (top, limit) = match d {
        Dialect::Mssql => (format!("TOP ({n}) "), String::new()),
        _ => (String::new(), format!(" LIMIT {n}")),
    };
    let sql = format!(
        "SELECT {top}{key}, {generation} FROM {} WHERE {owner} IS NULL ORDER BY {key}{limit}",
        t.name().quoted(d)
    );
    store
        .backend()
        .query_rows(&sql, &[])
        .await
        .expect("read free rows")
        .iter()
        .map(|row| (row[0].as_i64().unwrap(), row[1].as_i64().unwrap()))
        .collect()
}

/// Writes a claim by key alone: the generation read plus one, a new owner and expiry.
async fn naive_write<B: Backend>(store: &Store<B>, key: i64, generation: i64) {
    let d = store.dialect();
    let t = store.table();
    let sql = format!(
        "UPDATE {} SET {} = {}, {} = {}, {} = {} WHERE {} = {}",
        t.name().quoted(d),
        t.generation_column().quoted(d),
        d.placeholder(1),
        t.owner_column().quoted(d),
        d.placeholder(2),
        t.expiry_column().quoted(d),
        crate::support::row::clock_plus_hours(d, 1),
        t.key_column().quoted(d),
        d.placeholder(3)
    );
    let params = [
        Value::I64(generation),
        Value::Uuid(Uuid::new_v4()),
        Value::I64(key),
    ];
    let rows = store.backend().execute(&sql, &params).await.expect("write");
    assert_eq!(rows, 1);
}

// ---------------------------------------------------------------------------------------
// Batched renewal.

/// Waits until the row under `key` has expired by the database's clock.
async fn until_expired<B: Backend>(store: &Store<B>, key: &Key) {
    tokio::time::timeout(HANG, async {
        while inspect(store, key).await.remaining().is_some() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the lease never expired");
}

/// Nine leases and a tenth with a ttl of 20 ms. The tenth expires by the database's
/// clock and another store steals its row; then one batch renews all ten. Exactly the
/// stolen lease is refused, the thief's row is untouched, and the nine are renewed.
pub async fn a_batch_renewal_refuses_exactly_the_stolen_lease<P: Place>(place: Arc<P>) {
    let a = fresh(&*place, 10).await;
    let b = Store::new(place.connect().await, a.table().clone());
    let mut leases = a.claim(&Candidates::keys(1..=9_i64), 9, TTL).await.unwrap();
    let victim = a
        .try_acquire(10_i64, Duration::from_millis(20))
        .await
        .unwrap()
        .expect("free");
    until_expired(&b, victim.key()).await;
    let stolen = b
        .try_acquire(10_i64, TTL)
        .await
        .unwrap()
        .expect("expired, so free");
    assert_eq!(stolen.generation(), victim.generation() + 1);
    let thief_before = inspect(&b, stolen.key()).await;
    let before = inspect(&a, leases[0].key()).await;
    leases.insert(4, victim.clone());

    let outcomes = a.renew_many(&leases).await.unwrap();
    let refused: Vec<usize> = (0..leases.len())
        .filter(|i| outcomes[*i] == fenced_guard::Renewal::Refused)
        .collect();
    assert_eq!(refused, [4], "{outcomes:?}");
    let thief_after = inspect(&b, stolen.key()).await;
    assert!(thief_after.is_of(&stolen));
    assert_eq!(thief_after.expires_at_ms, thief_before.expires_at_ms);
    let after = inspect(&a, leases[0].key()).await;
    assert!(
        after.expires_at_ms > before.expires_at_ms,
        "renewed: {before:?} then {after:?}"
    );

    // A lease revoked locally is refused without being sent; the others still go.
    leases[0].revoke();
    let outcomes = a.renew_many(&leases[..2]).await.unwrap();
    assert_eq!(
        outcomes,
        [
            fenced_guard::Renewal::Refused,
            fenced_guard::Renewal::Applied
        ]
    );
    assert_eq!(
        inspect(&a, leases[0].key()).await.expires_at_ms,
        after.expires_at_ms
    );

    // More leases than one statement carries on SQL Server, in several statements.
    provision_range(&a, 11, 1_210).await;
    let many = a.claim(&Candidates::any(), 1_200, TTL).await.unwrap();
    assert_eq!(many.len(), 1_200);
    let outcomes = a.renew_many(&many).await.unwrap();
    assert!(outcomes.iter().all(|o| o.is_applied()));
    // The wrong key type fails the whole call, before anything is sent.
    let wrong = Lease::from_parts(
        Key::from("1"),
        Uuid::new_v4(),
        1,
        TTL,
        std::time::Instant::now(),
    );
    assert!(matches!(
        a.renew_many(&[many[0].clone(), wrong]).await,
        Err(Error::KeyType { .. })
    ));
}

/// The keepers' ttl: long enough that a loaded machine does not make a healthy keeper
/// give up (the TDS server's first statement of a shape on a connection is slow).
fn keeper_ttl(d: Dialect) -> Duration {
    match d {
        Dialect::Mssql => Duration::from_secs(4),
        _ => Duration::from_secs(2),
    }
}

/// A key list longer than one statement that repeats a key claims it once: the later
/// statements would find its 1 ms lease expired and claim it again, superseding the
/// lease the claim returns. Negative control: two claims of the key, the second after
/// the first's lease expired, return two leases of the row, the first superseded.
pub async fn a_key_repeated_across_statements_is_claimed_once<P: Place>(place: Arc<P>) {
    let store = fresh(&*place, 2).await;
    let short = Duration::from_millis(1);
    let mut list = vec![1_i64; 5_000];
    list.push(2);
    let leases = store
        .claim(&Candidates::keys(list), 10, short)
        .await
        .unwrap();
    assert_eq!(keys(&leases), [1, 2], "{leases:?}");
    // Every lease returned is the row's latest generation.
    for lease in &leases {
        let state = inspect(&store, lease.key()).await;
        assert_eq!(state.generation, lease.generation(), "{lease:?}");
    }

    // The claims above left a 1 ms lease on the key: the control starts once it has
    // expired by the database's clock, or its first claim finds the row still held.
    let key = Key::from(1_i64);
    let held = inspect(&store, &key).await;
    until_db_clock(&store, &key, held.expires_at_ms.unwrap_or(held.now_ms) + 1).await;
    let first = store
        .claim(&Candidates::keys([1_i64]), 1, short)
        .await
        .unwrap();
    until_db_clock(&store, &key, inspect(&store, &key).await.now_ms + 5).await;
    let second = store
        .claim(&Candidates::keys([1_i64]), 1, short)
        .await
        .unwrap();
    assert_eq!((first.len(), second.len()), (1, 1));
    assert_eq!(second[0].generation(), first[0].generation() + 1);
}

/// Claims `n` rows of a fresh table with `ttl`, and renews them once, so that the
/// statements of both shapes are prepared (and, on the TDS server, parsed) before the
/// keeper starts.
async fn claimed<B: Backend>(store: &Store<B>, n: usize, ttl: Duration) -> Vec<Lease> {
    let leases = store.claim(&Candidates::any(), n, ttl).await.unwrap();
    assert_eq!(leases.len(), n);
    let outcomes = store.renew_many(&leases).await.unwrap();
    assert!(outcomes.iter().all(|o| o.is_applied()));
    leases
}

async fn lost(kept: &fenced_guard::KeptLease) -> Loss {
    tokio::time::timeout(HANG, kept.lost())
        .await
        .expect("the keeper never gave the lease up")
}

/// Waits until the database's clock is past `ms` (milliseconds since the Unix epoch).
async fn until_db_clock<B: Backend>(store: &Store<B>, key: &Key, ms: i64) {
    tokio::time::timeout(HANG, async {
        while inspect(store, key).await.now_ms <= ms {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the database's clock stood still");
}

/// Twenty leases kept by one batch keeper; one's row expires by a raw UPDATE and
/// another store steals it. The keeper's next round is refused for that lease only: it
/// is revoked and its token cancelled, while the others are renewed past their first
/// expiry, in fewer statements than leases.
pub async fn the_batch_keeper_revokes_exactly_the_stolen_lease<P: Place>(place: Arc<P>) {
    let a = fresh(&*place, 20).await;
    let b = Store::new(place.connect().await, a.table().clone());
    let ttl = keeper_ttl(a.dialect());
    let leases = claimed(&a, 20, ttl).await;
    let first_expiry = inspect(&a, leases[0].key())
        .await
        .expires_at_ms
        .expect("leased");
    let keeper = BatchKeeper::start(&a).unwrap();
    let kept: Vec<_> = leases.iter().map(|l| keeper.keep(l).unwrap()).collect();

    let victim = &leases[7];
    expire(&b, victim.key()).await;
    let stolen = b
        .try_acquire(victim.key().clone(), TTL)
        .await
        .unwrap()
        .expect("expired, so free");

    assert!(matches!(lost(&kept[7]).await, Loss::Refused));
    assert!(victim.is_revoked() && kept[7].token().is_cancelled());
    assert_writes_refused(&a, victim, "late").await;
    assert!(inspect(&b, stolen.key()).await.is_of(&stolen));

    // Past the expiry the first renewal moved the leases to, the others hold.
    until_db_clock(&a, leases[0].key(), first_expiry).await;
    for (i, (lease, kept)) in leases.iter().zip(&kept).enumerate() {
        if i == 7 {
            continue;
        }
        assert!(kept.loss().is_none(), "lease {i}: {:?}", kept.loss());
        assert!(
            !kept.token().is_cancelled() && !lease.is_revoked(),
            "lease {i}"
        );
        let row = inspect(&a, lease.key()).await;
        assert!(row.is_of(lease) && row.is_held(), "lease {i}: {row:?}");
    }
    let payload = [("Payload", Value::from("kept"))];
    assert!(a.publish(&leases[0], &payload).await.unwrap().is_applied());
    // One statement a round for all twenty, where a keeper per lease sends twenty.
    let sent = keeper.statements_sent();
    assert!((1..20).contains(&sent), "{sent} statements");
    keeper.stop().await;
}

/// What [`Gate`] does with `query_rows`, the batch's statement.
const PASS: u8 = 0;
const STALL: u8 = 1;
const FAIL: u8 = 2;

/// A real backend whose multi-row statements (the batched renewal's) can be made to
/// never answer, or to fail with a real database error.
#[derive(Clone)]
struct Gate<B> {
    inner: B,
    mode: Arc<AtomicU8>,
}

impl<B> Executor for Gate<B>
where
    B: Backend + Clone + Send + Sync + 'static,
{
    fn dialect(&self) -> Dialect {
        self.inner.dialect()
    }

    fn execute(&self, sql: &str, params: &[Value]) -> impl Future<Output = Result<u64>> + Send {
        self.inner.execute(sql, params)
    }

    fn query_row(
        &self,
        sql: &str,
        params: &[Value],
    ) -> impl Future<Output = Result<Option<Vec<Value>>>> + Send {
        self.inner.query_row(sql, params)
    }

    fn query_rows(
        &self,
        sql: &str,
        params: &[Value],
    ) -> impl Future<Output = Result<Vec<Vec<Value>>>> + Send {
        let mode = self.mode.load(Ordering::SeqCst);
        async move {
            match mode {
                STALL => std::future::pending().await,
                FAIL => Err(self
                    .inner
                    .execute("SELECT * FROM fenced_scale_no_such_table", &[])
                    .await
                    .expect_err("the database rejects the statement")),
                _ => self.inner.query_rows(sql, params).await,
            }
        }
    }

    fn execute_batch(&self, sql: &str) -> impl Future<Output = Result<()>> + Send {
        self.inner.execute_batch(sql)
    }
}

async fn gated<P: Place>(place: &P) -> (Store<Gate<P::Backend>>, Arc<AtomicU8>) {
    let mode = Arc::new(AtomicU8::new(PASS));
    let backend = Gate {
        inner: place.connect().await,
        mode: Arc::clone(&mode),
    };
    let store = Store::new(backend, jobs(place));
    store.create_schema().await.unwrap();
    provision_range(&store, 1, 5).await;
    (store, mode)
}

/// The batch's statements are sent and never answered: each lease is revoked at its
/// local deadline, though the database never refused it.
pub async fn the_batch_keeper_fails_closed_at_the_deadline<P: Place>(place: Arc<P>) {
    let (store, mode) = gated(&*place).await;
    let leases = claimed(&store, 5, keeper_ttl(store.dialect())).await;
    mode.store(STALL, Ordering::SeqCst);
    let keeper = BatchKeeper::start(&store).unwrap();
    let kept: Vec<_> = leases.iter().map(|l| keeper.keep(l).unwrap()).collect();
    for (lease, kept) in leases.iter().zip(&kept) {
        assert!(matches!(lost(kept).await, Loss::Deadline));
        assert!(lease.is_revoked() && kept.token().is_cancelled());
        assert!(std::time::Instant::now() >= lease.local_deadline());
        let row = inspect(&store, lease.key()).await;
        assert!(row.is_of(lease), "the database did not refuse it: {row:?}");
        assert_writes_refused(&store, lease, "late").await;
    }
    assert!(keeper.statements_sent() >= 1, "a renewal was in flight");
    keeper.stop().await;
}

/// Every batch statement fails with a real database error: each lease is retried until
/// its deadline, then revoked with the error.
pub async fn the_batch_keeper_fails_closed_after_errors<P: Place>(place: Arc<P>) {
    let (store, mode) = gated(&*place).await;
    let leases = claimed(&store, 5, keeper_ttl(store.dialect())).await;
    mode.store(FAIL, Ordering::SeqCst);
    let keeper = BatchKeeper::builder()
        .retry_interval(Duration::from_millis(100))
        .start(&store)
        .unwrap();
    let kept: Vec<_> = leases.iter().map(|l| keeper.keep(l).unwrap()).collect();
    for (lease, kept) in leases.iter().zip(&kept) {
        let loss = lost(kept).await;
        let Loss::Errors { attempts, last } = &loss else {
            panic!("expected errors, got {loss:?}");
        };
        assert!(*attempts >= 1);
        assert!(last.database_code().is_some(), "a database error: {last:?}");
        assert!(lease.is_revoked() && kept.token().is_cancelled());
    }
    keeper.stop().await;
}

/// A released lease leaves the keeper without a loss; a stopped one is no longer
/// renewed and not revoked; the third is kept past its first expiry.
pub async fn the_batch_keeper_lets_released_and_stopped_leases_go<P: Place>(place: Arc<P>) {
    let store = fresh(&*place, 3).await;
    let leases = claimed(&store, 3, keeper_ttl(store.dialect())).await;
    let keeper = BatchKeeper::start(&store).unwrap();
    let mut kept: Vec<_> = leases.iter().map(|l| keeper.keep(l).unwrap()).collect();
    let stopped = kept.remove(1);
    assert!(stopped.stop().is_none());
    assert!(store.release(&leases[0]).await.unwrap().is_applied());
    let last_expiry = inspect(&store, leases[1].key())
        .await
        .expires_at_ms
        .expect("leased");
    // Past the stopped lease's expiry: the kept one has been renewed meanwhile.
    until_db_clock(&store, leases[1].key(), last_expiry).await;
    assert!(kept[0].loss().is_none() && !kept[0].token().is_cancelled());
    assert!(!leases[0].is_revoked());
    let stopped_row = inspect(&store, leases[1].key()).await;
    assert!(
        !stopped_row.is_held(),
        "not renewed after stop: {stopped_row:?}"
    );
    assert!(!leases[1].is_revoked(), "stopping is not revoking");
    let held = inspect(&store, leases[2].key()).await;
    assert!(held.is_of(&leases[2]) && held.is_held(), "{held:?}");
    assert!(kept[1].loss().is_none());
    keeper.stop().await;
}
