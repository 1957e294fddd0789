//! sqlx: a caller's pools, connections and transactions. The service keeps its one
//! pool; the guard adds none.

use fenced_guard::{Key, Store};
use uuid::Uuid;

use crate::protocol::{
    fenced_lines, lines, not_in_transaction, protocol, reports, stale_is_refused,
};
use crate::support::Place;
use crate::support::lines::create_lines_table;

#[cfg(all(feature = "sqlx-postgres", feature = "postgres"))]
#[tokio::test]
async fn the_protocol_on_a_postgres_pool_connection_and_transaction() {
    use crate::support::postgres::{TestSchema, url};

    let schema = TestSchema::create("fenced_sqlx_", 1).await;
    let own = Store::new(schema.connect().await, reports(&schema));
    own.create_schema().await.unwrap();
    create_lines_table(&schema, &own).await;

    let config: fenced_guard::tokio_postgres::Config = url().parse().expect("FENCED_PG_URL");
    let mut options = sqlx::postgres::PgConnectOptions::new();
    if let Some(fenced_guard::tokio_postgres::config::Host::Tcp(host)) = config.get_hosts().first()
    {
        options = options.host(host);
    }
    if let Some(port) = config.get_ports().first() {
        options = options.port(*port);
    }
    if let Some(user) = config.get_user() {
        options = options.username(user);
    }
    if let Some(password) = config.get_password() {
        options = options.password(&String::from_utf8_lossy(password));
    }
    if let Some(database) = config.get_dbname() {
        options = options.database(database);
    }
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .expect("connect sqlx to postgresql");
    let key = Key::from(Uuid::new_v4());

    let lease = protocol(&own.on(&pool).unwrap(), &key, true).await;

    let mut tx = pool.begin().await.unwrap();
    assert!(fenced_lines(&schema, own.on(&mut tx).unwrap(), &lease, "line 0").await);
    tx.commit().await.unwrap();
    assert_eq!(lines(&schema, &own, &key).await, 1);

    let mut tx = pool.begin().await.unwrap();
    // A bare connection proves no transaction, though this one has one open.
    let bare = own.on(&mut *tx).unwrap().fence(&lease).await;
    assert!(not_in_transaction(&bare), "{bare:?}");
    assert!(fenced_lines(&schema, own.on(&mut tx).unwrap(), &lease, "line 1").await);
    tx.rollback().await.unwrap();
    assert_eq!(lines(&schema, &own, &key).await, 1);

    let mut conn = pool.acquire().await.unwrap();
    stale_is_refused(&own.on(&mut *conn).unwrap(), &key, &lease).await;
    drop(conn);
    let mut tx = pool.begin().await.unwrap();
    assert!(!fenced_lines(&schema, own.on(&mut tx).unwrap(), &lease, "line 2").await);
    tx.commit().await.unwrap();
    assert_eq!(lines(&schema, &own, &key).await, 1);
    pool.close().await;
    schema.teardown().await;
}

#[cfg(all(feature = "sqlx-sqlite", feature = "sqlite"))]
#[tokio::test]
async fn the_protocol_on_a_sqlite_pool_connection_and_transaction() {
    use crate::support::sqlite::TempDatabase;

    let place = TempDatabase::new("sqlx.db");
    let own = Store::new(place.connect().await, reports(&place));
    own.create_schema().await.unwrap();
    create_lines_table(&place, &own).await;
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(place.path())
        .busy_timeout(std::time::Duration::from_secs(10));
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .expect("open the database with sqlx");
    let key = Key::from(Uuid::new_v4());

    let lease = protocol(&own.on(&pool).unwrap(), &key, true).await;

    let mut tx = pool.begin().await.unwrap();
    assert!(fenced_lines(&place, own.on(&mut tx).unwrap(), &lease, "line 0").await);
    tx.commit().await.unwrap();
    assert_eq!(lines(&place, &own, &key).await, 1);

    let mut tx = pool.begin().await.unwrap();
    let bare = own.on(&mut *tx).unwrap().fence(&lease).await;
    assert!(not_in_transaction(&bare), "{bare:?}");
    assert!(fenced_lines(&place, own.on(&mut tx).unwrap(), &lease, "line 1").await);
    tx.rollback().await.unwrap();
    assert_eq!(lines(&place, &own, &key).await, 1);

    let mut conn = pool.acquire().await.unwrap();
    stale_is_refused(&own.on(&mut *conn).unwrap(), &key, &lease).await;
    drop(conn);
    let mut tx = pool.begin().await.unwrap();
    assert!(!fenced_lines(&place, own.on(&mut tx).unwrap(), &lease, "line 2").await);
    tx.commit().await.unwrap();
    assert_eq!(lines(&place, &own, &key).await, 1);
    pool.close().await;
}
