//! A service on sqlx fences its writes inside its own `sqlx::Transaction`s, on its own
//! pool. The pool has one connection: had the guard needed a connection of its own
//! beside the transaction's, the story would wait forever (and the test fail on its
//! bound) instead of finishing.
//!
//! The story is the article's: worker A's lease expires, B takes over and publishes a
//! report with its lines in one transaction, then A comes back with its own. PostgreSQL
//! at `FENCED_PG_URL` must be reachable.

#![cfg(all(feature = "sqlx-postgres", feature = "sqlx-sqlite"))]

use std::time::Duration;

use fenced::connection::{SqlxPgPool, SqlxSqlitePool};
use fenced::{ColumnType, Executor, FencedTable, Key, Lease, Outcome, Store, Value};

const TTL: Duration = Duration::from_secs(60);
/// A bound on the whole story, so that a wait for a second connection fails the test.
const BOUND: Duration = Duration::from_secs(60);

fn table(name: &str) -> FencedTable {
    FencedTable::builder()
        .table(name)
        .column("Payload", ColumnType::Text)
        .build()
        .expect("valid table")
}

/// Moves the row's expiry into the past, as time would.
async fn expire<E: Executor>(store: &Store<E>, key: &Key, sql: &str) {
    let rows = store.backend().execute(sql, &[key.into()]).await.unwrap();
    assert_eq!(rows, 1);
}

/// Generates the story for one sqlx database: `$pool` is the service's pool of one
/// connection, `$lines` the DDL of the lines table, `$insert` and `$count` its
/// statements, `$expire` the raw statement that expires a lease.
macro_rules! story {
    ($pool:expr, $store:expr, $lines:expr, $insert:expr, $count:expr, $expire:expr) => {{
        let pool = $pool;
        let store = $store;
        store.create_schema().await.unwrap();
        store.backend().execute_batch($lines).await.unwrap();
        let report = Key::from(uuid::Uuid::new_v4());
        store.provision(report.clone()).await.unwrap();

        let a: Lease = store
            .try_acquire(report.clone(), TTL)
            .await
            .unwrap()
            .unwrap();
        expire(&store, &report, $expire).await;
        let b: Lease = store
            .try_acquire(report.clone(), TTL)
            .await
            .unwrap()
            .unwrap();

        // B publishes the report and its lines in one of the service's transactions.
        let mut tx = pool.begin().await.unwrap();
        let fenced = store
            .on(&mut tx)
            .unwrap()
            .fence(&b)
            .await
            .unwrap()
            .expect("B holds");
        for line in ["b: 1", "b: 2"] {
            fenced
                .execute($insert, &[Value::from(&report), line.into()])
                .await
                .unwrap();
        }
        let published = fenced
            .store()
            .publish(&b, &[("Payload", "by b".into())])
            .await
            .unwrap();
        assert_eq!(published, Outcome::Applied);
        drop(fenced);
        tx.commit().await.unwrap();

        // A comes back: its fence is refused before it writes a line.
        let mut tx = pool.begin().await.unwrap();
        assert!(
            store
                .on(&mut tx)
                .unwrap()
                .fence(&a)
                .await
                .unwrap()
                .is_none()
        );
        tx.rollback().await.unwrap();

        let count = store
            .backend()
            .query_i64($count, &[Value::from(&report)])
            .await
            .unwrap();
        assert_eq!(count, Some(2), "only B's lines are visible");
        assert_eq!(
            pool.size(),
            1,
            "the service's one connection served everything"
        );
    }};
}

#[tokio::test]
async fn a_postgres_service_fences_its_own_transactions() {
    let url = std::env::var("FENCED_SQLX_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .expect("PostgreSQL is reachable at FENCED_SQLX_PG_URL");
    let schema = format!("fenced_sqlx_{}", uuid::Uuid::new_v4().simple());
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&pool)
        .await
        .unwrap();
    let store = Store::new(
        SqlxPgPool::from(pool.clone()),
        table(&format!("{schema}.Report")),
    );
    let lines =
        format!("CREATE TABLE {schema}.report_line (report uuid NOT NULL, line text NOT NULL)");
    let insert = format!("INSERT INTO {schema}.report_line (report, line) VALUES ($1, $2)");
    let count = format!("SELECT count(*) FROM {schema}.report_line WHERE report = $1");
    let expire_sql = format!(
        "UPDATE {schema}.\"Report\" SET \"LeaseUntilUtc\" = clock_timestamp() - interval '1 hour' WHERE \"ReportId\" = $1"
    );
    let run = tokio::time::timeout(BOUND, async {
        story!(&pool, store, &lines, &insert, &count, &expire_sql);
    })
    .await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(&pool)
        .await
        .unwrap();
    run.expect("the story waited for a connection the service's pool does not have");
}

#[tokio::test]
async fn a_sqlite_service_fences_its_own_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.path().join("service.db"))
        .create_if_missing(true);
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap();
    let store = Store::new(SqlxSqlitePool::from(pool.clone()), table("Report"));
    let expire_sql = "UPDATE \"Report\" SET \"LeaseUntilUtc\" = 0 WHERE \"ReportId\" = ?1";
    tokio::time::timeout(BOUND, async {
        story!(
            &pool,
            store,
            "CREATE TABLE report_line (report text NOT NULL, line text NOT NULL)",
            "INSERT INTO report_line (report, line) VALUES (?1, ?2)",
            "SELECT count(*) FROM report_line WHERE report = ?1",
            expire_sql
        );
    })
    .await
    .expect("the story waited for a connection the service's pool does not have");
}
