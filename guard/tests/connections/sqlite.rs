//! rusqlite: a caller's `Connection` and `Transaction`.

use fenced_guard::{Executor, Key, Sqlite, Store};
use uuid::Uuid;

use crate::protocol::{
    TTL, fenced_lines, lines, not_in_transaction, protocol, reports, stale_is_refused, superseded,
};
use crate::support::Place;
use crate::support::lines::create_lines_table;
use crate::support::lines::insert_line;
use crate::support::sqlite::TempDatabase;

#[tokio::test]
async fn the_protocol_on_a_connection_and_its_transactions() {
    let place = TempDatabase::new("connections.db");
    let own = Store::new(place.connect().await, reports(&place));
    own.create_schema().await.unwrap();
    create_lines_table(&place, &own).await;
    let mut conn = rusqlite::Connection::open(place.path()).unwrap();
    let key = Key::from(Uuid::new_v4());

    let lease = protocol(&own.on(&conn).unwrap(), &key, true).await;

    let tx = conn.transaction().unwrap();
    assert!(fenced_lines(&place, own.on(&tx).unwrap(), &lease, "line 0").await);
    tx.commit().unwrap();
    assert_eq!(lines(&place, &own, &key).await, 1);

    let tx = conn.transaction().unwrap();
    assert!(fenced_lines(&place, own.on(&tx).unwrap(), &lease, "line 1").await);
    tx.rollback().unwrap();
    assert_eq!(lines(&place, &own, &key).await, 1);

    stale_is_refused(&own.on(&conn).unwrap(), &key, &lease).await;
    let tx = conn.transaction().unwrap();
    assert!(!fenced_lines(&place, own.on(&tx).unwrap(), &lease, "line 2").await);
    tx.commit().unwrap();
    assert_eq!(lines(&place, &own, &key).await, 1);
}

/// A's fence on a connection in autocommit is refused, and so is every statement of A's
/// `Fenced` once the caller's own handle has committed its transaction, in autocommit
/// and in a transaction begun again: A's lock ended, B acquired, and A's line must not
/// land. Negative control: the same line sent on the
/// connection lands.
#[tokio::test]
async fn a_fence_outside_a_transaction_is_refused_and_ends_with_it() {
    let place = TempDatabase::new("outside.db");
    let own = Store::new(place.connect().await, reports(&place));
    own.create_schema().await.unwrap();
    create_lines_table(&place, &own).await;
    let conn = rusqlite::Connection::open(place.path()).unwrap();
    let key = Key::from(Uuid::new_v4());
    own.provision(key.clone()).await.unwrap();
    let a = own.try_acquire(key.clone(), TTL).await.unwrap().unwrap();

    let outside = own.on(&conn).unwrap().fence(&a).await;
    assert!(
        not_in_transaction(&outside),
        "{:?}",
        outside.map(|f| f.is_some())
    );

    conn.execute_batch("BEGIN").unwrap();
    let fenced = own.on(&conn).unwrap().fence(&a).await.unwrap().unwrap();
    let insert = insert_line(&place, &own);
    let commit = fenced.execute("COMMIT", &[]).await;
    assert!(
        matches!(commit, Err(fenced_guard::Error::StatementRefused { .. })),
        "{commit:?}"
    );
    // The caller's own handle commits around the `Fenced`.
    conn.execute_batch("COMMIT").unwrap();
    superseded(&own, &key, &a).await;
    let late = fenced
        .execute(&insert, &[a.key().into(), "A's stale line".into()])
        .await;
    assert!(not_in_transaction(&late), "{late:?}");
    // A transaction begun again on the caller's handle is not A's: the statement's own
    // check of the lease refuses it.
    conn.execute_batch("BEGIN").unwrap();
    let begun_again = fenced
        .execute(&insert, &[a.key().into(), "A's stale line".into()])
        .await;
    assert!(not_in_transaction(&begun_again), "{begun_again:?}");
    conn.execute_batch("COMMIT").unwrap();
    assert_eq!(lines(&place, &own, &key).await, 0);

    // Negative control: the same statement on the connection itself lands.
    fenced
        .store()
        .backend()
        .execute(&insert, &[a.key().into(), "A's stale line".into()])
        .await
        .unwrap();
    assert_eq!(lines(&place, &own, &key).await, 1);
}

/// A rusqlite connection is synchronous: its futures are ready when first polled, so
/// synchronous code drives them without a runtime of its own.
#[test]
fn synchronous_code_drives_a_rusqlite_connection() {
    let dir = tempfile::tempdir().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("sync.db")).unwrap();
    let table = fenced_guard::FencedTable::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let own: Store<Sqlite> = runtime.block_on(async {
        let own = Store::new(
            Sqlite::open(dir.path().join("sync.db")).await.unwrap(),
            table,
        );
        own.create_schema().await.unwrap();
        own
    });
    drop(runtime);
    let on = own.on(&conn).unwrap();
    let key = Key::from(Uuid::new_v4());
    let ready = |f: std::pin::Pin<&mut dyn Future<Output = fenced_guard::Result<bool>>>| {
        let waker = std::task::Waker::noop();
        match f.poll(&mut std::task::Context::from_waker(waker)) {
            std::task::Poll::Ready(result) => result,
            std::task::Poll::Pending => panic!("a rusqlite statement did not complete at once"),
        }
    };
    assert!(ready(std::pin::pin!(on.provision(key.clone()))).unwrap());
    assert!(!ready(std::pin::pin!(on.provision(key))).unwrap());
}

/// A caller's transaction whose snapshot was taken before an epoch advance cannot fence
/// a lease issued before it: its check-and-lock statement writes, and SQLite refuses a
/// write on a snapshot another connection's commit made old (`SQLITE_BUSY_SNAPSHOT`).
/// Negative control: a read in the same transaction still finds the epoch as it was, so
/// a check that only read it would pass.
#[tokio::test]
async fn a_snapshot_older_than_an_epoch_advance_cannot_fence() {
    let place = TempDatabase::new("snapshot.db");
    let own = Store::new(place.connect().await, reports(&place));
    own.create_schema().await.unwrap();
    let conn = rusqlite::Connection::open(place.path()).unwrap();
    let key = Key::from(Uuid::new_v4());
    own.provision(key.clone()).await.unwrap();
    let a = own.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
    let current_epoch = fenced_guard::dialect::current_epoch(own.dialect(), own.table());

    conn.execute_batch("BEGIN").unwrap();
    let before: i64 = conn
        .query_row(&current_epoch, [], |row| row.get(0))
        .unwrap();
    let advanced = own.advance_epoch().await.unwrap();
    assert!(advanced > before);

    let fenced = own.on(&conn).unwrap().fence(&a).await;
    match &fenced {
        Err(error) => assert_eq!(error.database_code().as_deref(), Some("517"), "{error}"),
        Ok(fenced) => assert!(
            fenced.is_none(),
            "a lease from before the advance was fenced"
        ),
    }
    drop(fenced);
    let read: i64 = conn
        .query_row(&current_epoch, [], |row| row.get(0))
        .unwrap();
    assert_eq!(
        read, before,
        "the transaction's snapshot was not older than the advance"
    );
    conn.execute_batch("ROLLBACK").unwrap();
}
