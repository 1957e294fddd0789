//! tokio-postgres: a caller's `Client` and `Transaction`.

use fenced_guard::{Executor, Key, Store};
use tokio_postgres::NoTls;
use uuid::Uuid;

use crate::protocol::{TTL, fenced_lines, lines, protocol, reports, stale_is_refused};
use crate::support::Place;
use crate::support::lines::create_lines_table;
use crate::support::postgres::{TestSchema, url};

/// A store on the guard's own pool (which makes the tables), and the test's schema.
pub async fn store(schema: &TestSchema) -> Store<fenced_guard::Postgres> {
    let store = Store::new(schema.connect().await, reports(schema));
    store.create_schema().await.expect("create the schema");
    create_lines_table(schema, &store).await;
    store
}

async fn client() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&url(), NoTls)
        .await
        .expect("connect to postgresql");
    tokio::spawn(connection);
    client
}

#[tokio::test]
async fn the_protocol_on_a_client_and_its_transactions() {
    let schema = TestSchema::create("fenced_conn_", 1).await;
    let own = store(&schema).await;
    let mut client = client().await;
    let key = Key::from(Uuid::new_v4());

    let lease = protocol(&own.on(&client).unwrap(), &key, true).await;

    let mut tx = client.transaction().await.unwrap();
    assert!(fenced_lines(&schema, own.on(&mut tx).unwrap(), &lease, "line 0").await);
    tx.commit().await.unwrap();
    assert_eq!(lines(&schema, &own, &key).await, 1);

    // The caller's transaction rolled back: nothing of its fenced statements stays.
    let mut tx = client.transaction().await.unwrap();
    assert!(fenced_lines(&schema, own.on(&mut tx).unwrap(), &lease, "line 1").await);
    tx.rollback().await.unwrap();
    assert_eq!(lines(&schema, &own, &key).await, 1);

    stale_is_refused(&own.on(&client).unwrap(), &key, &lease).await;
    let mut tx = client.transaction().await.unwrap();
    assert!(!fenced_lines(&schema, own.on(&mut tx).unwrap(), &lease, "line 2").await);
    tx.commit().await.unwrap();
    assert_eq!(lines(&schema, &own, &key).await, 1);
    schema.teardown().await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_connection_of_another_database_is_refused() {
    let client = client().await;
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::new(
        fenced_guard::Sqlite::open(dir.path().join("t.db"))
            .await
            .unwrap(),
        fenced_guard::FencedTable::default(),
    );
    let error = sqlite
        .on(&client)
        .expect_err("a postgres client on a sqlite store");
    assert!(matches!(error, fenced_guard::Error::Config(_)), "{error}");
    assert!(error.to_string().contains("sqlite"), "{error}");
}

/// A caller's transaction at REPEATABLE READ (and so SERIALIZABLE) whose snapshot was
/// taken before an epoch advance cannot fence a lease issued before it: the
/// check-and-lock statement locks the epoch's row, which changed after the snapshot, and
/// PostgreSQL refuses with a serialization failure. Negative control: the old statement,
/// which read the epoch from the snapshot, passes in the same schedule.
#[tokio::test]
async fn a_snapshot_older_than_an_epoch_advance_cannot_fence() {
    let schema = TestSchema::create("fenced_snapshot_", 1).await;
    let own = store(&schema).await;
    let key = Key::from(Uuid::new_v4());
    own.provision(key.clone()).await.unwrap();
    let mut client = client().await;
    let lock = fenced_guard::dialect::lock(own.dialect(), own.table());
    let old_lock = lock.replace(" FOR SHARE)", ")");
    assert_ne!(
        lock, old_lock,
        "the check-and-lock statement no longer locks the epoch"
    );

    for (statement, control) in [(None, false), (Some(old_lock), true)] {
        let a = own.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
        let mut tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .start()
            .await
            .unwrap();
        // The snapshot is taken by the transaction's first statement.
        tx.query_one("SELECT 1", &[]).await.unwrap();
        own.advance_epoch().await.unwrap();
        let passed = match statement {
            None => match own.on(&mut tx).unwrap().fence(&a).await {
                Ok(fenced) => fenced.is_some(),
                Err(error) => {
                    assert_eq!(error.database_code().as_deref(), Some("40001"), "{error}");
                    false
                }
            },
            Some(sql) => own
                .on(&tx)
                .unwrap()
                .backend()
                .query_row(&sql, &crate::support::lease::lock_params(&a))
                .await
                .unwrap()
                .is_some(),
        };
        tx.rollback().await.unwrap();
        assert_eq!(
            passed, control,
            "a lease from before the advance was fenced: {passed} (negative control: {control})"
        );
    }
    schema.teardown().await;
}
