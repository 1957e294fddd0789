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

use fenced::connection::SqlxSqlitePool;
use fenced::{ColumnType, Executor, FencedTable, Key};

// ---- README: a service's own transaction ----
use fenced::connection::SqlxPgPool;
use fenced::{Lease, Outcome, Store, Value};

/// Publishes a report and its lines in one of the service's own transactions.
async fn publish_with_lines(
    pool: &sqlx::PgPool,
    store: &Store<SqlxPgPool>,
    lease: &Lease,
    body: &str,
    lines: &[&str],
) -> fenced::Result<Outcome> {
    let mut tx = pool.begin().await?;
    // The lease is checked, and its row locked until `tx` ends.
    let Some(fenced) = store.on(&mut tx)?.fence(lease).await? else {
        return Ok(Outcome::Refused); // the lease is gone: `tx` rolls back when dropped
    };
    for line in lines {
        let values = [Value::from(lease.key()), Value::from(*line)];
        let sql = "INSERT INTO report_line (report, line) VALUES ($1, $2)";
        fenced.execute(sql, &values).await?;
    }
    let published = fenced
        .store()
        .publish(lease, &[("Payload", Value::from(body))])
        .await?;
    drop(fenced);
    if published == Outcome::Applied {
        tx.commit().await?;
    }
    Ok(published)
}
// ---- end of the service's own transaction ----

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
    let schema = format!("fenced_sqlx_{}", uuid::Uuid::new_v4().simple());
    let admin = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .expect("PostgreSQL is reachable at FENCED_SQLX_PG_URL");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&admin)
        .await
        .unwrap();
    // The service's pool: one connection, its tables in the schema of this test.
    let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect_with(options.options([("search_path", schema.as_str())]))
        .await
        .unwrap();
    let run = tokio::time::timeout(BOUND, async {
        let store = Store::new(SqlxPgPool::from(pool.clone()), table("Report"));
        store.create_schema().await.unwrap();
        store
            .backend()
            .execute_batch("CREATE TABLE report_line (report uuid NOT NULL, line text NOT NULL)")
            .await
            .unwrap();
        let report = Key::from(uuid::Uuid::new_v4());
        store.provision(report.clone()).await.unwrap();
        let a = store
            .try_acquire(report.clone(), TTL)
            .await
            .unwrap()
            .unwrap();
        let expire_sql = "UPDATE \"Report\" SET \"LeaseUntilUtc\" = clock_timestamp() \
                          - interval '1 hour' WHERE \"ReportId\" = $1";
        expire(&store, &report, expire_sql).await;
        let b = store
            .try_acquire(report.clone(), TTL)
            .await
            .unwrap()
            .unwrap();

        let by_b = publish_with_lines(&pool, &store, &b, "by b", &["b: 1", "b: 2"]).await;
        assert_eq!(by_b.unwrap(), Outcome::Applied);
        let by_a = publish_with_lines(&pool, &store, &a, "by a", &["a: 1", "a: 2"]).await;
        assert_eq!(by_a.unwrap(), Outcome::Refused);

        let count = "SELECT count(*) FROM report_line WHERE report = $1";
        let count = store
            .backend()
            .query_i64(count, &[Value::from(&report)])
            .await;
        assert_eq!(count.unwrap(), Some(2), "only B's lines are visible");
        assert_eq!(
            pool.size(),
            1,
            "the service's one connection served everything"
        );
    })
    .await;
    pool.close().await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(&admin)
        .await
        .unwrap();
    run.expect("the story waited for a connection the service's pool does not have");
}

/// The README's block is this file's, verbatim.
#[test]
fn the_readme_block_is_this_file() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("read README.md");
    let file = include_str!("sqlx_service.rs");
    let block = |text: &str, start: &str, end: &str| -> Option<String> {
        let from = text.find(start)? + start.len();
        let to = from + text[from..].find(end)?;
        Some(text[from..to].trim().to_owned())
    };
    let ours = block(
        file,
        "// ---- README: a service's own transaction ----\n",
        "// ---- end of",
    )
    .expect("the marked block");
    let opening = "```rust ignore\nuse fenced::connection::SqlxPgPool;";
    let theirs = readme
        .find(opening)
        .and_then(|at| block(&readme[at..], "```rust ignore\n", "```"))
        .expect("the README's block");
    assert_eq!(theirs.trim(), ours.trim());
    // Negative control: one character changed is told apart.
    assert_ne!(theirs.replacen("$2", "$3", 1).trim(), ours.trim());
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
