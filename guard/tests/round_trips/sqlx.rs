//! sqlx: a fence in the caller's sqlx transaction against the same transaction without
//! it. sqlx keeps each statement prepared on its connection; the fence adds its one
//! statement, the check-and-lock.

use std::time::Duration;

use fenced_guard::{Dialect, Identifier, Key, Lease, Store, dialect};
use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgSslMode};
use uuid::Uuid;

use crate::postgres::Wire;
use crate::proxy::Proxy;
use crate::support::Place;
use crate::support::lines::insert_line;

const TTL: Duration = Duration::from_secs(60);
const LINES: usize = 3;

/// A caller's sqlx connection through `proxy`.
async fn connect(wire: &Wire, proxy: &Proxy) -> PgConnection {
    let config = wire.through(proxy);
    let mut options = PgConnectOptions::new()
        .host("127.0.0.1")
        .port(proxy.addr().port())
        .ssl_mode(PgSslMode::Disable);
    if let Some(user) = config.get_user() {
        options = options.username(user);
    }
    if let Some(password) = config.get_password() {
        options = options.password(&String::from_utf8_lossy(password));
    }
    if let Some(database) = config.get_dbname() {
        options = options.database(database);
    }
    PgConnection::connect_with(&options)
        .await
        .expect("connect sqlx through the proxy")
}

/// How the transaction fences its lease.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fence {
    /// Not at all: the plain transaction.
    None,
    /// `Store::fence`.
    Guard,
    /// A fence that reads the lease's row before it locks it, two statements (the
    /// negative control).
    ReadThenLock,
}

/// `BEGIN`, the fence, the lines, the publication, `COMMIT`, on `conn`, counted; the
/// publication is the guard's statement, through sqlx on the plain side.
async fn transaction(
    conn: &mut PgConnection,
    proxy: &Proxy,
    store: &Store<fenced_guard::Postgres>,
    insert: &str,
    lease: &Lease,
    fence: Fence,
) -> u64 {
    let payload_column = Identifier::new("Payload").unwrap();
    let publish = dialect::publish(Dialect::Postgres, store.table(), &[&payload_column], false);
    let lock = dialect::lock(Dialect::Postgres, store.table());
    let inspect = dialect::inspect(Dialect::Postgres, store.table());
    proxy.reset_round_trips();
    let mut tx = conn.begin().await.unwrap();
    match fence {
        Fence::None => {}
        Fence::Guard => {
            let fenced = store.on(&mut tx).unwrap().fence(lease).await.unwrap();
            assert!(fenced.is_some(), "the lease holds");
        }
        Fence::ReadThenLock => {
            let read = sqlx::query(sqlx::AssertSqlSafe(inspect))
                .bind(key_of(lease))
                .fetch_optional(&mut *tx)
                .await
                .unwrap();
            assert!(read.is_some(), "the row exists");
            let locked = sqlx::query(sqlx::AssertSqlSafe(lock))
                .bind(key_of(lease))
                .bind(lease.generation())
                .bind(lease.owner())
                .fetch_optional(&mut *tx)
                .await
                .unwrap();
            assert!(locked.is_some(), "the lease holds");
        }
    }
    for i in 0..LINES {
        let done = sqlx::query(sqlx::AssertSqlSafe(insert.to_owned()))
            .bind(key_of(lease))
            .bind(format!("line {i}"))
            .execute(&mut *tx)
            .await
            .unwrap();
        assert_eq!(done.rows_affected(), 1);
    }
    let done = sqlx::query(sqlx::AssertSqlSafe(publish))
        .bind("published")
        .bind(key_of(lease))
        .bind(lease.generation())
        .bind(lease.owner())
        .execute(&mut *tx)
        .await
        .unwrap();
    assert_eq!(done.rows_affected(), 1);
    tx.commit().await.unwrap();
    proxy.round_trips()
}

/// The lease's key, a uuid in the test table.
fn key_of(lease: &Lease) -> Uuid {
    match lease.key() {
        Key::Uuid(key) => *key,
        other => panic!("the test table's keys are uuids, not {other:?}"),
    }
}

#[tokio::test]
async fn a_fence_in_a_callers_sqlx_transaction_waits_once_more_than_none() {
    let wire = Wire::setup("fenced_rtt_sqlx_").await;
    let own = wire.store().await;
    let insert = insert_line(&wire.schema, &own);
    let proxy = wire.proxy().await;
    let mut conn = connect(&wire, &proxy).await;
    let mut waits = Vec::new();
    for fence in [Fence::None, Fence::Guard, Fence::ReadThenLock] {
        // The first of each prepares its statements on the connection, which keeps them.
        let mut last = 0;
        for _ in 0..2 {
            let key = Key::from(Uuid::new_v4());
            own.provision(key.clone()).await.unwrap();
            let lease = own.try_acquire(key, TTL).await.unwrap().unwrap();
            last = transaction(&mut conn, &proxy, &own, &insert, &lease, fence).await;
        }
        waits.push(last);
    }
    let [plain, fenced, read_then_lock] = waits[..] else {
        unreachable!()
    };
    println!(
        "sqlx transaction: plain {plain}, fenced {fenced}, read then locked {read_then_lock} round trips"
    );
    assert_eq!(
        plain,
        (LINES + 3) as u64,
        "BEGIN, the lines, the publication, COMMIT"
    );
    assert!(
        fenced <= plain + 1,
        "the fence cost {fenced} round trips against {plain} without it"
    );
    assert!(
        read_then_lock > plain + 1,
        "a read, then a lock, was counted {read_then_lock} against {plain}: the control could not tell"
    );
    wire.schema.teardown().await;
}
