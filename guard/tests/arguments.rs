//! No public function panics on its arguments: property tests over durations, ttls,
//! identifiers and values on a real SQLite file. Each property also checks the answer, so that a function
//! that stopped panicking by returning nonsense would still fail.

#![allow(missing_docs, unreachable_pub)]
#![cfg(feature = "sqlite")]

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use fenced_guard::{
    ColumnType, Completion, Error, FencedTable, Keeper, Key, Lease, MAX_TTL, Sqlite, SqliteOptions,
    Store, Value, Wait, Work,
};
use proptest::prelude::*;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Durations of every size, with the edges drawn often: zero, a nanosecond, the ttl
/// bounds and either side of them, and `Duration::MAX`.
fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        Just(Duration::from_nanos(1)),
        Just(Duration::from_millis(1)),
        Just(MAX_TTL),
        Just(MAX_TTL + Duration::from_nanos(1)),
        Just(Duration::MAX),
        Just(Duration::new(u64::MAX, 0)),
        (0..=u64::MAX, 0..1_000_000_000u32).prop_map(|(s, n)| Duration::new(s, n)),
        (0..100_000u64).prop_map(Duration::from_millis),
    ]
}

fn valid_ttl(ttl: Duration) -> bool {
    ttl >= Duration::from_millis(1) && ttl <= MAX_TTL
}

struct Fixture {
    runtime: tokio::runtime::Runtime,
    store: Store<Sqlite>,
    _dir: tempfile::TempDir,
}

/// One runtime and one database for all the cases of this binary.
fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = runtime.block_on(async {
            let table = FencedTable::builder()
                .column("Payload", ColumnType::Text)
                .build()
                .unwrap();
            let store = Store::new(Sqlite::open(dir.path().join("a.db")).await.unwrap(), table);
            store.create_schema().await.unwrap();
            store
        });
        Fixture {
            runtime,
            store,
            _dir: dir,
        }
    })
}

/// A new provisioned row.
async fn row(store: &Store<Sqlite>) -> Uuid {
    let key = Uuid::new_v4();
    assert!(store.provision(key).await.unwrap());
    key
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn waits_and_hand_made_leases_take_any_duration(
        timeout in duration(),
        initial in duration(),
        max in duration(),
        ttl in duration(),
    ) {
        let before = Instant::now();
        let wait = Wait::timeout(timeout).initial_backoff(initial).max_backoff(max);
        prop_assert!(wait.deadline() >= before);
        if let Some(exact) = before.checked_add(timeout) {
            prop_assert!(wait.deadline() >= exact);
        }
        let lease = Lease::from_parts(Key::BigInt(1), Uuid::new_v4(), 1, ttl, before);
        prop_assert_eq!(lease.ttl(), ttl);
        prop_assert!(lease.local_deadline() >= before);
        if let Some(exact) = before.checked_add(ttl) {
            prop_assert_eq!(lease.local_deadline(), exact);
        }
    }

    #[test]
    fn acquisition_takes_any_ttl_and_wait(
        ttl in duration(),
        timeout in duration(),
        initial in duration(),
        max in duration(),
    ) {
        let f = fixture();
        f.runtime.block_on(async {
            let store = &f.store;
            let key = row(store).await;
            match store.try_acquire(key, ttl).await {
                Ok(Some(lease)) => {
                    assert!(valid_ttl(ttl), "{ttl:?} accepted");
                    assert!(store.release(&lease).await.unwrap().is_applied());
                }
                Err(Error::InvalidTtl { ttl: refused }) => {
                    assert!(!valid_ttl(ttl), "{ttl:?} refused");
                    assert_eq!(refused, ttl);
                }
                other => panic!("{ttl:?}: {other:?}"),
            }

            // A held row: the wait backs off until the token is cancelled.
            let held = store.try_acquire(key, Duration::from_secs(60)).await.unwrap().unwrap();
            let cancel = CancellationToken::new();
            let canceller = {
                let cancel = cancel.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    cancel.cancel();
                })
            };
            let wait = Wait::timeout(timeout).initial_backoff(initial).max_backoff(max);
            let waited = store.acquire(key, ttl, &wait, &cancel).await;
            match waited {
                Err(Error::InvalidTtl { .. }) => assert!(!valid_ttl(ttl)),
                // The deadline may pass before the token is cancelled.
                Ok(None) | Err(Error::Cancelled) => assert!(valid_ttl(ttl)),
                other => panic!("{ttl:?} {timeout:?}: {other:?}"),
            }
            canceller.await.unwrap();
            assert!(store.release(&held).await.unwrap().is_applied());
        });
    }

    #[test]
    fn work_and_keepers_take_any_duration(
        ttl in duration(),
        acquire_timeout in duration(),
        release_timeout in duration(),
        retry in duration(),
    ) {
        let f = fixture();
        f.runtime.block_on(async {
            let store = &f.store;
            let key = row(store).await;
            let keeper = Keeper::builder().retry_interval(retry);
            let done = Work::new(store)
                .ttl(ttl)
                .acquire_timeout(acquire_timeout)
                .release_timeout(release_timeout)
                .keeper(keeper)
                .run(key, |_lease, _stop| async {
                    Ok::<_, std::convert::Infallible>(vec![("Payload", Value::from("x"))])
                })
                .await;
            match done {
                Ok(Completion::Published { generation }) => {
                    assert!(valid_ttl(ttl), "{ttl:?} accepted");
                    assert_eq!(generation, 1);
                }
                // A lease of a few milliseconds may expire before the publication.
                Ok(Completion::Refused { .. }) => {
                    assert!(valid_ttl(ttl) && ttl < Duration::from_secs(60), "{ttl:?}");
                }
                Err(Error::InvalidTtl { .. }) => assert!(!valid_ttl(ttl), "{ttl:?} refused"),
                // A zero retry interval is refused before anything is sent.
                Err(Error::Config(_)) => assert!(retry.is_zero() && valid_ttl(ttl)),
                other => panic!("{ttl:?}: {other:?}"),
            }

            // A keeper over a lease made by hand with any ttl: a valid lease is kept,
            // anything else is lost, never a panic (the task's would surface at `stop`).
            let lease = Lease::from_parts(Key::Uuid(key), Uuid::new_v4(), 7, ttl, Instant::now());
            let keeper = Keeper::start(store, &lease);
            tokio::task::yield_now().await;
            let _loss = keeper.stop().await;
            if let Ok(keeper) = Keeper::builder().retry_interval(retry).start(store, &lease) {
                let _loss = keeper.stop().await;
            }
        });
    }
}

proptest! {
    // Each case opens the database again: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn sqlite_takes_any_busy_timeout(timeout in duration()) {
        let f = fixture();
        f.runtime.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let options = SqliteOptions::default().busy_timeout(timeout);
            let backend = Sqlite::open_with(dir.path().join("b.db"), options).await.unwrap();
            let store = Store::new(backend, FencedTable::default());
            // A batch runs on the blocking pool with the busy timeout set.
            store.create_schema().await.unwrap();
            assert!(store.provision(Uuid::new_v4()).await.unwrap());
        });
    }
}

/// Names of every kind: any text, valid identifiers up to past the limit, and pairs
/// that differ only in case or past their 63rd byte.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,140}",
        "[A-Za-z_][A-Za-z0-9_]{0,140}",
        "[A-Za-z_]{63}[A-Za-z0-9_]{0,3}",
        Just("Payload".to_owned()),
        Just("payload".to_owned()),
        Just("Generation".to_owned()),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::I64),
        any::<f64>().prop_map(Value::F64),
        Just(Value::F64(f64::NAN)),
        ".{0,40}".prop_map(Value::Text),
        Just(Value::Text("nul\0inside".to_owned())),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Value::Bytes),
        any::<u128>().prop_map(|n| Value::Uuid(Uuid::from_u128(n))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn tables_take_any_names_and_keep_them_apart(a in name(), b in name()) {
        let built = FencedTable::builder()
            .column(a.clone(), ColumnType::Text)
            .column(b.clone(), ColumnType::Text)
            .build();
        match built {
            Ok(table) => {
                let [x, y] = table.columns() else { panic!("two columns") };
                prop_assert!(!x.name().same_as(y.name().as_str()));
                prop_assert!(!a.eq_ignore_ascii_case(&b));
                // Nor one name on PostgreSQL, which keeps 63 bytes.
                let kept = |s: &str| s.as_bytes()[..s.len().min(63)].to_ascii_lowercase();
                prop_assert_ne!(kept(&a), kept(&b));
                prop_assert!(a.len() <= 128 && b.len() <= 128);
            }
            Err(Error::InvalidIdentifier { .. } | Error::Config(_)) => {}
            Err(other) => prop_assert!(false, "{a:?} {b:?}: {other:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn writes_take_any_names_and_values(column in name(), v in value()) {
        let f = fixture();
        f.runtime.block_on(async {
            let store = &f.store;
            let key = row(store).await;
            let lease = store.try_acquire(key, Duration::from_secs(60)).await.unwrap().unwrap();
            // Any value into the declared column: SQLite keeps what it is given.
            let outcome = store.update(&lease, &[("Payload", v.clone())]).await.unwrap();
            assert!(outcome.is_applied(), "{v:?}");
            match store.update(&lease, &[(column.as_str(), v.clone())]).await {
                Ok(outcome) => assert!(outcome.is_applied()),
                Err(Error::ProtectedColumn { .. }) => {
                    assert!(store.table().is_protocol_column(&column));
                }
                Err(Error::InvalidIdentifier { .. }) => {
                    assert!(fenced_guard::Identifier::new(&column).is_err());
                }
                // A valid name the table does not have.
                Err(error @ Error::Sqlite(_)) => assert!(
                    !column.eq_ignore_ascii_case("Payload"),
                    "{column:?}: {error}"
                ),
                Err(other) => panic!("{column:?}: {other:?}"),
            }
            assert!(store.release(&lease).await.unwrap().is_applied());
        });
    }
}
