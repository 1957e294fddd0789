//! tokio-postgres: a caller's `Client` and `Transaction`.

use fenced_guard::{Key, Store};
use tokio_postgres::NoTls;
use uuid::Uuid;

use crate::protocol::{fenced_lines, lines, protocol, reports, stale_is_refused};
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

    let tx = client.transaction().await.unwrap();
    assert!(fenced_lines(&schema, own.on(&tx).unwrap(), &lease, "line 0").await);
    tx.commit().await.unwrap();
    assert_eq!(lines(&schema, &own, &key).await, 1);

    // The caller's transaction rolled back: nothing of its fenced statements stays.
    let tx = client.transaction().await.unwrap();
    assert!(fenced_lines(&schema, own.on(&tx).unwrap(), &lease, "line 1").await);
    tx.rollback().await.unwrap();
    assert_eq!(lines(&schema, &own, &key).await, 1);

    stale_is_refused(&own.on(&client).unwrap(), &key, &lease).await;
    let tx = client.transaction().await.unwrap();
    assert!(!fenced_lines(&schema, own.on(&tx).unwrap(), &lease, "line 2").await);
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
