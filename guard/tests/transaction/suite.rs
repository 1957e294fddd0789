//! The schedules, written once over a [`Place`] whose pool lends connections.

use std::time::Duration;

use std::sync::Arc;

use fenced_guard::{
    Dialect, Executor, FencedTable, Key, Lease, Lend, OperationOutcome, Outcome, Resolution, Store,
    Value,
};
use uuid::Uuid;

use crate::support::Place;
use crate::support::lines::{create_lines_table, insert_line, insert_plainly, line_count};
use crate::support::row::{expire, payload, payload_column, select};

/// A place for one test, and how to see that a connection waits for a row lock.
pub trait Fixture: Place
where
    Self::Backend: Lend,
{
    /// Waits until the statement running on `waiter` (a backend of one connection)
    /// waits for a lock held by another transaction. `marker` was read from that
    /// connection by [`Fixture::marker`] before.
    fn until_blocked(&self, marker: &Value) -> impl Future<Output = ()> + Send;

    /// What tells `waiter`'s one connection apart (its server process id); `Null` where
    /// the lock view does not need it (SQLite: there is one writer).
    fn marker(&self, waiter: &Self::Backend) -> impl Future<Output = Value> + Send;
}

pub const TTL: Duration = Duration::from_secs(60);

/// How long the tests' fenced transactions may stay open.
pub const TIMEOUT: Duration = Duration::from_secs(60);

pub fn reports(place: &impl Place) -> FencedTable {
    FencedTable::builder()
        .table(place.qualified("Report"))
        .column("Payload", fenced_guard::ColumnType::Text)
        .build()
        .expect("valid test table")
}

/// A store on a fresh place, its schema, one provisioned row, and a lines table.
pub async fn setup<F: Fixture>(place: &F) -> (Store<F::Backend>, Key)
where
    F::Backend: Lend,
{
    let store = Store::new(place.connect().await, reports(place));
    store.create_schema().await.expect("create the schema");
    create_lines_table(place, &store).await;
    let key = Key::from(Uuid::new_v4());
    store.provision(key.clone()).await.expect("provision");
    (store, key)
}

async fn acquire<B: Executor>(store: &Store<B>, key: &Key) -> Lease {
    store
        .try_acquire(key.clone(), TTL)
        .await
        .expect("acquire")
        .expect("the row is free")
}

/// Waits, by the database's clock, until the lease on `key` has expired. Reads the
/// committed row, which an open fenced transaction does not block.
pub async fn until_expired<E: Executor>(store: &Store<E>, key: &Key) {
    // Bounded: the lease's ttl is a few seconds.
    for _ in 0..6_000 {
        if !store.inspect(key.clone()).await.expect("inspect").is_held() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the lease never expired");
}

/// A's fenced transaction holds the row even once A's lease has expired by the clock:
/// B's acquisition, which then matches the row, waits until A commits; then B's
/// generation is A's + 1 and every line of A is there.
pub async fn holds_the_row_until_it_ends<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let lease = store
        .try_acquire(key.clone(), Duration::from_secs(3))
        .await
        .expect("acquire")
        .expect("the row is free");
    let tx = store
        .transaction(&lease, TIMEOUT)
        .await
        .expect("begin")
        .expect("the lease holds");
    let insert = insert_line(&*place, &store);
    for i in 0..3 {
        let rows = tx
            .execute(
                &insert,
                &[Value::from(&key), Value::from(format!("line {i}"))],
            )
            .await
            .expect("insert a line");
        assert_eq!(rows, 1);
    }

    let waiter = place.connect().await;
    let marker = place.marker(&waiter).await;
    let successor = Store::new(waiter, reports(&*place));
    until_expired(&successor, &key).await;
    let b = tokio::spawn({
        let key = key.clone();
        async move { successor.try_acquire(key, TTL).await }
    });
    place.until_blocked(&marker).await;
    assert!(
        !b.is_finished(),
        "B acquired while A's transaction held the row"
    );

    tx.commit().await.expect("commit");
    let next = b
        .await
        .expect("B's task")
        .expect("B's acquisition")
        .expect("the row is free after A's commit");
    assert_eq!(next.generation(), lease.generation() + 1);
    assert_eq!(line_count(&*place, &store, &key).await, 3);
}

/// A fenced transaction that outlives its timeout commits nothing.
pub async fn a_transaction_past_its_timeout_commits_nothing<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let lease = acquire(&store, &key).await;
    // Long enough for the first statement on a new connection (Babelfish parses its
    // first statements slowly): at the deadline, SQL Server's connection is closed.
    let timeout = Duration::from_secs(3);
    let tx = store.transaction(&lease, timeout).await.unwrap().unwrap();
    tx.execute(
        &insert_line(&*place, &store),
        &[Value::from(&key), Value::from("line 0")],
    )
    .await
    .unwrap();
    // Past the deadline by the transaction's own reckoning, then some.
    tokio::time::sleep(timeout + Duration::from_millis(200)).await;
    let late = tx
        .execute(
            &insert_line(&*place, &store),
            &[Value::from(&key), Value::from("line 1")],
        )
        .await;
    assert!(
        matches!(late, Err(fenced_guard::Error::TransactionTimedOut { .. })),
        "{late:?}"
    );
    let committed = tx.commit().await;
    assert!(
        matches!(
            committed,
            Err(fenced_guard::Error::TransactionTimedOut { .. })
        ),
        "{committed:?}"
    );
    assert_eq!(line_count(&*place, &store, &key).await, 0);
    // The row is not left locked.
    assert_eq!(store.release(&lease).await.unwrap(), Outcome::Applied);
}

/// A lease that expired before the transaction begins is refused, and nothing of the
/// transaction is written anywhere.
pub async fn an_expired_lease_is_refused<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let lease = acquire(&store, &key).await;
    expire(&store, &key).await;
    assert!(
        store
            .transaction(&lease, TIMEOUT)
            .await
            .expect("begin")
            .is_none(),
        "a fenced transaction began under an expired lease"
    );
    // The connection went back to the pool with no transaction open: the row is free.
    let next = acquire(&store, &key).await;
    assert_eq!(next.generation(), lease.generation() + 1);
    assert_eq!(line_count(&*place, &store, &key).await, 0);
}

/// A transaction dropped before its commit (a cancellation) and one whose task panics
/// leave nothing behind, and the row is not locked once they are gone.
pub async fn a_dropped_transaction_leaves_nothing<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let lease = acquire(&store, &key).await;
    let insert = insert_line(&*place, &store);
    {
        let tx = store.transaction(&lease, TIMEOUT).await.unwrap().unwrap();
        tx.execute(&insert, &[Value::from(&key), Value::from("line 0")])
            .await
            .unwrap();
        let written = tx
            .store()
            .update(&lease, &payload("dropped"))
            .await
            .unwrap();
        assert_eq!(written, Outcome::Applied);
        // Dropped here: no commit, no rollback.
    }
    let panicked = tokio::spawn({
        let (store, lease, key, insert) =
            (store.clone(), lease.clone(), key.clone(), insert.clone());
        async move {
            let tx = store.transaction(&lease, TIMEOUT).await.unwrap().unwrap();
            tx.execute(&insert, &[Value::from(&key), Value::from("line 1")])
                .await
                .unwrap();
            panic!("the worker fails mid-transaction");
        }
    })
    .await;
    assert!(panicked.is_err_and(|e| e.is_panic()));

    // The row is not locked: a release through another connection does not wait. It is
    // bounded so that a lock left behind fails the test instead of hanging it.
    let other = Store::new(place.connect().await, reports(&*place));
    let released = tokio::time::timeout(Duration::from_secs(30), other.release(&lease))
        .await
        .expect("the row is still locked by a dropped transaction")
        .expect("release");
    assert_eq!(released, Outcome::Applied);
    let next = acquire(&other, &key).await;
    assert_eq!(next.generation(), lease.generation() + 1);
    assert_eq!(line_count(&*place, &store, &key).await, 0);
    let stored = select(&store, &key, &[payload_column(store.dialect())]).await;
    assert!(
        stored[0].is_null(),
        "the dropped update is visible: {stored:?}"
    );
}

/// The article's schedule with a report and its lines: A's lease expires, B acquires
/// and publishes, then A comes back. Through a plain transaction A's lines land (the
/// negative control); through a fenced transaction nothing of A's is written.
pub async fn the_stale_worker_writes_no_lines<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let a = acquire(&store, &key).await;
    expire(&store, &key).await;
    let b = acquire(&store, &key).await;
    let tx = store.transaction(&b, TIMEOUT).await.unwrap().unwrap();
    let insert = insert_line(&*place, &store);
    tx.execute(&insert, &[Value::from(&key), Value::from("line 0")])
        .await
        .unwrap();
    assert_eq!(
        tx.store().publish(&b, &payload("b")).await.unwrap(),
        Outcome::Applied
    );
    tx.commit().await.unwrap();

    // A comes back. Fenced: refused, nothing written.
    assert!(store.transaction(&a, TIMEOUT).await.unwrap().is_none());
    assert_eq!(line_count(&*place, &store, &key).await, 1);

    // Negative control: the same lines through a plain transaction are written.
    insert_plainly(&*place, &store, &key, "line 1").await;
    assert_eq!(
        line_count(&*place, &store, &key).await,
        2,
        "the negative control wrote nothing: the test could not tell a stale write"
    );
}

/// A careless caller ends the fenced transaction under its `Fenced` through the store's
/// own executor (`tx.store().backend()`: a commit, then a transaction begun again on
/// the same connection), and the lease passes to B. The guard's write and every line
/// A's `Fenced` sends after that are refused: each statement that can write checks the
/// lease itself. Negative control: a line sent on that executor then lands.
pub async fn a_transaction_ended_under_its_fenced_refuses_its_stale_lines<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    ended_under_its_fenced(place, true).await;
}

/// The same, the transaction ended and begun again by statements sent one at a time
/// with parameters (`execute`), not as a batch: a pool that knows when its transaction
/// may have ended must count these too.
pub async fn a_transaction_ended_by_a_statement_under_its_fenced_refuses_its_stale_lines<
    F: Fixture,
>(
    place: Arc<F>,
) where
    F::Backend: Lend,
{
    ended_under_its_fenced(place, false).await;
}

async fn ended_under_its_fenced<F: Fixture>(place: Arc<F>, as_a_batch: bool)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let a = acquire(&store, &key).await;
    let insert = insert_line(&*place, &store);
    let d = store.dialect();
    let tx = store.transaction(&a, TIMEOUT).await.unwrap().unwrap();
    tx.execute(&insert, &[Value::from(&key), Value::from("line 0")])
        .await
        .expect("a line under the lease");
    let raw = tx.store().backend();
    // SQLite's plain `BEGIN` takes no lock until the transaction writes, so B can
    // acquire; the guard's own `BEGIN IMMEDIATE` would keep B out.
    let begin = match d {
        Dialect::Sqlite => "BEGIN",
        _ => fenced_guard::dialect::begin(d),
    };
    let restart = async || {
        for statement in [fenced_guard::dialect::commit(d), begin] {
            let sent = if as_a_batch {
                raw.execute_batch(statement).await
            } else {
                raw.execute(statement, &[]).await.map(drop)
            };
            sent.unwrap_or_else(|e| panic!("{statement} through the executor: {e}"));
        }
    };
    restart().await;
    expire(&store, &key).await;
    let b = acquire(&store, &key).await;
    assert_eq!(b.generation(), a.generation() + 1);

    // Negative control: in this schedule a line on the executor lands.
    raw.execute(&insert, &[Value::from(&key), Value::from("control")])
        .await
        .expect("the control line");
    restart().await;
    assert_eq!(
        line_count(&*place, &store, &key).await,
        2,
        "the control line did not land: the schedule cannot tell a stale write"
    );

    let update = tx.store().update(&a, &payload("stale")).await;
    assert!(
        matches!(update, Ok(Outcome::Refused) | Err(_)),
        "the stale lease's update: {update:?}"
    );
    let line = tx
        .execute(&insert, &[Value::from(&key), Value::from("stale")])
        .await;
    assert!(line.is_err(), "the stale line was sent: {line:?}");
    drop(tx);
    assert_eq!(line_count(&*place, &store, &key).await, 2);
    assert!(store.inspect(key.clone()).await.unwrap().is_of(&b));
}

/// Nothing a fenced transaction's statements say ends it or writes a table only the
/// guard writes: `COMMIT`, a delete of an applied operation's record, an update of the
/// epoch or of the lease's row are refused before they are sent, and the operation
/// still resolves as applied. Negative control: the same delete sent on a plain
/// connection removes the record, and the operation no longer resolves.
pub async fn a_fenced_statement_cannot_end_it_or_write_the_guards_tables<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let lease = acquire(&store, &key).await;
    let op = Uuid::new_v4();
    let recorded = store.update_op(&lease, op, &payload("recorded")).await;
    assert_eq!(recorded.unwrap(), fenced_guard::OperationOutcome::Applied);
    let epoch = store.current_epoch().await.unwrap();
    let d = store.dialect();
    let table = store.table();
    let ops = table.operations_table().quoted(d);
    let delete_op = format!("DELETE FROM {ops}");
    let statements = [
        fenced_guard::dialect::commit(d).to_owned(),
        fenced_guard::dialect::rollback(d).to_owned(),
        delete_op.clone(),
        // Bare and in another case: every database but PostgreSQL folds it to the table.
        format!(
            "delete from {}",
            table.operations_table().name().as_str().to_lowercase()
        ),
        format!(
            "UPDATE {} SET {} = 1",
            table.epoch_table().quoted(d),
            fenced_guard::Identifier::new("Epoch").unwrap().quoted(d)
        ),
        format!(
            "UPDATE {} SET {} = 0",
            table.name().quoted(d),
            table.generation_column().quoted(d)
        ),
    ];
    let tx = store.transaction(&lease, TIMEOUT).await.unwrap().unwrap();
    for sql in &statements {
        let refused = tx.execute(sql, &[]).await;
        assert!(
            matches!(refused, Err(fenced_guard::Error::StatementRefused { .. })),
            "{sql}: {refused:?}"
        );
    }
    tx.execute(
        &insert_line(&*place, &store),
        &[Value::from(&key), Value::from("line 0")],
    )
    .await
    .expect("a line is no protected table");
    tx.commit().await.unwrap();
    assert_eq!(line_count(&*place, &store, &key).await, 1);
    assert_eq!(store.current_epoch().await.unwrap(), epoch);
    assert!(store.inspect(key.clone()).await.unwrap().is_of(&lease));
    assert_eq!(
        store.resolve(op).await.unwrap(),
        fenced_guard::Resolution::Applied {
            generation: lease.generation()
        }
    );

    // Negative control: sent on a plain connection, the delete removes the record.
    store.backend().execute(&delete_op, &[]).await.unwrap();
    assert_eq!(
        store.resolve(op).await.unwrap(),
        fenced_guard::Resolution::NotApplied
    );
}

/// An epoch advance waits for an open fenced transaction (the check-and-lock statement
/// holds the epoch's row shared), and the lease it checked, issued before the advance,
/// is refused once the advance is through. Negative control: after the old
/// check-and-lock statement, which reads the epoch without locking it, an advance goes
/// through while the transaction is open.
pub async fn an_epoch_advance_waits_for_open_fenced_transactions<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let lease = acquire(&store, &key).await;
    let tx = store.transaction(&lease, TIMEOUT).await.unwrap().unwrap();
    tx.execute(
        &insert_line(&*place, &store),
        &[Value::from(&key), Value::from("line 0")],
    )
    .await
    .unwrap();

    let waiter = place.connect().await;
    let marker = place.marker(&waiter).await;
    let advancer = Store::new(waiter, reports(&*place));
    let advance = tokio::spawn(async move { advancer.advance_epoch().await });
    place.until_blocked(&marker).await;
    assert!(
        !advance.is_finished(),
        "the epoch advanced while a fenced transaction was open"
    );
    tx.commit().await.unwrap();
    advance
        .await
        .unwrap()
        .expect("the advance, once the transaction ended");
    assert!(store.transaction(&lease, TIMEOUT).await.unwrap().is_none());
    assert_eq!(line_count(&*place, &store, &key).await, 1);

    // Negative control, where the old statement took no lock on the epoch (PostgreSQL's
    // row lock, SQL Server's application lock).
    let d = store.dialect();
    if d == fenced_guard::Dialect::Sqlite {
        return;
    }
    let lease = acquire(&store, &key).await;
    let plain = store.backend().lend().await.unwrap();
    plain
        .execute_batch(fenced_guard::dialect::begin(d))
        .await
        .unwrap();
    let lock = fenced_guard::dialect::lock(d, store.table());
    let old_lock = match d {
        fenced_guard::Dialect::Postgres => lock.replace(" FOR SHARE)", ")"),
        _ => {
            let at = lock.find("DECLARE @fenced_lock").unwrap();
            let end = at + lock[at..].find("granted', 1;").unwrap() + "granted', 1;".len();
            format!("{}{}", &lock[..at], &lock[end..]).replace(" WITH (HOLDLOCK)", "")
        }
    };
    assert_ne!(
        lock, old_lock,
        "the check-and-lock statement no longer locks the epoch"
    );
    let locked = match d {
        fenced_guard::Dialect::Postgres => plain
            .query_row(&old_lock, &crate::support::lease::lock_params(&lease))
            .await
            .unwrap()
            .is_some(),
        _ => {
            plain
                .execute(&old_lock, &crate::support::lease::mssql_lock_params(&lease))
                .await
                .unwrap()
                == 1
        }
    };
    assert!(locked, "the old check-and-lock refused a held lease");
    let advanced = tokio::time::timeout(Duration::from_secs(10), store.advance_epoch()).await;
    assert!(
        matches!(advanced, Ok(Ok(_))),
        "the negative control's advance did not go through: the test could not tell"
    );
    plain
        .execute_batch(fenced_guard::dialect::rollback(d))
        .await
        .unwrap();
    F::Backend::give_back(plain);
}

/// A transaction that records an operation id commits the record with its lines: the
/// id then resolves applied, and a retry of it (here under the same lease, as a retry
/// after a lost acknowledgement is) finds it applied and writes nothing. An id applied
/// to another key is refused. Negative control: the same lines committed without a
/// record leave nothing to resolve.
pub async fn an_operation_id_commits_with_the_transaction_and_applies_once<F: Fixture>(
    place: Arc<F>,
) where
    F::Backend: Lend,
{
    let (store, key) = setup(&*place).await;
    let lease = acquire(&store, &key).await;
    let insert = insert_line(&*place, &store);
    let op = Uuid::new_v4();

    let tx = store.transaction(&lease, TIMEOUT).await.unwrap().unwrap();
    assert_eq!(tx.record(op).await.unwrap(), OperationOutcome::Applied);
    tx.execute(&insert, &[Value::from(&key), Value::from("line 0")])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        store.resolve(op).await.unwrap(),
        Resolution::Applied {
            generation: lease.generation()
        }
    );

    let retry = store.transaction(&lease, TIMEOUT).await.unwrap().unwrap();
    assert_eq!(
        retry.record(op).await.unwrap(),
        OperationOutcome::AlreadyApplied {
            generation: lease.generation()
        }
    );
    retry.rollback().await.unwrap();
    assert_eq!(line_count(&*place, &store, &key).await, 1);

    let other = Key::from(Uuid::new_v4());
    store.provision(other.clone()).await.unwrap();
    let other_lease = acquire(&store, &other).await;
    let tx = store
        .transaction(&other_lease, TIMEOUT)
        .await
        .unwrap()
        .unwrap();
    let reused = tx.record(op).await;
    assert!(
        matches!(reused, Err(fenced_guard::Error::OperationReused { .. })),
        "{reused:?}"
    );
    tx.rollback().await.unwrap();

    // Negative control: lines committed with no record, which nothing can resolve.
    let unrecorded = Uuid::new_v4();
    let tx = store.transaction(&lease, TIMEOUT).await.unwrap().unwrap();
    tx.execute(&insert, &[Value::from(&key), Value::from("line 1")])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(line_count(&*place, &store, &key).await, 2);
    assert_eq!(
        store.resolve(unrecorded).await.unwrap(),
        Resolution::NotApplied
    );
}

/// The rows of `table`, or of its epoch or operations table, every column as stored
/// (times as text), in key order: what must not change, byte for byte.
async fn rows<E: Executor>(store: &Store<E>, table: &FencedTable) -> Vec<Vec<Vec<Value>>> {
    let d = store.dialect();
    let text = |column: &str| {
        let column = fenced_guard::Identifier::new(column).unwrap().quoted(d);
        match d {
            fenced_guard::Dialect::Postgres => format!("CAST({column} AS text)"),
            fenced_guard::Dialect::Sqlite => column,
            fenced_guard::Dialect::Mssql => format!("CONVERT(nvarchar(60), {column}, 126)"),
        }
    };
    let q = |column: &fenced_guard::Identifier| column.quoted(d);
    let lease = format!(
        "SELECT {}, {}, {}, {}, {}, {}, {} FROM {} ORDER BY 1",
        q(table.key_column()),
        q(table.generation_column()),
        q(table.owner_column()),
        text(table.expiry_column().as_str()),
        q(table.published_column()),
        q(table.epoch_column()),
        payload_column(d),
        table.name().quoted(d)
    );
    let epoch = format!(
        "SELECT {}, {} FROM {} ORDER BY 1",
        text("Id"),
        text("Epoch"),
        table.epoch_table().quoted(d)
    );
    let ops = format!(
        "SELECT {}, {}, {}, {} FROM {} ORDER BY 1",
        text("OperationId"),
        text("Key"),
        text("Generation"),
        text("RecordedAt"),
        table.operations_table().quoted(d)
    );
    let mut all = Vec::new();
    for sql in [lease, epoch, ops] {
        all.push(store.backend().query_rows(&sql, &[]).await.expect(&sql));
    }
    all
}

/// Statements that write a protected table under a spelling a target reading could
/// miss (an alias named like the table, `USING`, a Unicode-escaped name, a derived
/// table, DML nested in DML), and writes of another fenced table: each is refused, and
/// nothing protected changes, byte for byte. Negative control: the first of them sent
/// on a plain connection changes the lease's row.
pub async fn no_spelling_writes_a_protected_table<F: Fixture>(place: Arc<F>)
where
    F::Backend: Lend,
{
    let other = FencedTable::builder()
        .table(place.qualified("Other"))
        .operations_table(place.qualified("OtherOperation"))
        .column("Payload", fenced_guard::ColumnType::Text)
        .build()
        .unwrap();
    let table = FencedTable::builder()
        .table(place.qualified("Report"))
        .column("Payload", fenced_guard::ColumnType::Text)
        .other_fenced_table(place.qualified("Other"))
        .other_fenced_table(place.qualified("OtherOperation"))
        .build()
        .unwrap();
    let store = Store::new(place.connect().await, table);
    store.create_schema().await.unwrap();
    create_lines_table(&*place, &store).await;
    let others = Store::new(place.connect().await, other.clone());
    others.create_schema().await.unwrap();
    let key = Key::from(Uuid::new_v4());
    store.provision(key.clone()).await.unwrap();
    others.provision(key.clone()).await.unwrap();
    let lease = acquire(&store, &key).await;
    let op = Uuid::new_v4();
    let recorded = store.update_op(&lease, op, &payload("recorded")).await;
    assert_eq!(recorded.unwrap(), OperationOutcome::Applied);

    let d = store.dialect();
    let t = store.table();
    let (report, generation, key_column) = (
        t.name().quoted(d),
        t.generation_column().quoted(d),
        t.key_column().quoted(d),
    );
    let bare = t.name().name().as_str();
    let lines = crate::support::lines::lines_table(&*place, &store);
    let ops = t.operations_table().quoted(d);
    let other_name = other.name().quoted(d);
    let mut statements = vec![
        // An alias spelled like the lease table hides the target, read by SQL Server's
        // rule; PostgreSQL and SQLite update the table itself.
        format!("UPDATE {report} SET {generation} = 0 FROM {lines} AS {bare}"),
        format!("DELETE FROM {ops}"),
        format!("UPDATE {other_name} SET {} = 'x'", payload_column(d)),
        format!("UPDATE {other_name} SET {generation} = 0"),
        format!("DELETE FROM {}", other.operations_table().quoted(d)),
    ];
    match d {
        fenced_guard::Dialect::Postgres => statements.extend([
            format!("DELETE FROM {report} USING {lines} AS {bare}"),
            format!(
                "INSERT INTO U&\"{bare}\" ({key_column}) SELECT {key_column} FROM {report} \
                 ON CONFLICT ({key_column}) DO UPDATE SET {generation} = 0"
            ),
        ]),
        fenced_guard::Dialect::Mssql => statements.extend([
            format!("UPDATE r SET {generation} = 0 FROM (SELECT * FROM {report}) AS r"),
            format!(
                "INSERT INTO {lines} SELECT d.k, N'x' FROM (UPDATE {report} SET {generation} = 0 \
                 OUTPUT inserted.{key_column} AS k) AS d"
            ),
        ]),
        fenced_guard::Dialect::Sqlite => {}
    }
    let before = (rows(&store, t).await, rows(&store, &other).await);
    let tx = store.transaction(&lease, TIMEOUT).await.unwrap().unwrap();
    for sql in &statements {
        let refused = tx.execute(sql, &[]).await;
        assert!(
            matches!(refused, Err(fenced_guard::Error::StatementRefused { .. })),
            "{sql}: {refused:?}"
        );
    }
    tx.commit().await.unwrap();
    assert_eq!((rows(&store, t).await, rows(&store, &other).await), before);

    // Negative control: on a plain connection, the delete empties the operations table,
    // and on PostgreSQL and SQLite the aliased update (with a line to join) rewrites the
    // lease's row; SQL Server takes the alias for the target there.
    store.backend().execute(&statements[1], &[]).await.unwrap();
    assert_ne!(rows(&store, t).await[2], before.0[2]);
    if d != fenced_guard::Dialect::Mssql {
        store
            .backend()
            .execute(
                &insert_line(&*place, &store),
                &[Value::from(&key), Value::from("line")],
            )
            .await
            .unwrap();
        let rewritten = store.backend().execute(&statements[0], &[]).await.unwrap();
        assert_eq!(rewritten, 1);
        assert_ne!(rows(&store, t).await[0], before.0[0]);
    }
}

/// Generates the tests for one backend; `$setup` returns `Option<Fixture>` (`None`: the
/// backend does not run here).
#[macro_export]
macro_rules! transactions {
    ($setup:path) => {
        $crate::transactions!(@ $setup;
            holds_the_row_until_it_ends,
            a_transaction_past_its_timeout_commits_nothing,
            an_expired_lease_is_refused,
            a_dropped_transaction_leaves_nothing,
            the_stale_worker_writes_no_lines,
            a_transaction_ended_under_its_fenced_refuses_its_stale_lines,
            a_transaction_ended_by_a_statement_under_its_fenced_refuses_its_stale_lines,
            a_fenced_statement_cannot_end_it_or_write_the_guards_tables,
            an_operation_id_commits_with_the_transaction_and_applies_once,
            no_spelling_writes_a_protected_table,
        );
    };
    // The schedules whose database holds the epoch for a fenced transaction, shared:
    // PostgreSQL's row lock, SQL Server's application lock.
    (with_epoch_lock $setup:path) => {
        $crate::transactions!($setup);
        $crate::transactions!(@ $setup;
            an_epoch_advance_waits_for_open_fenced_transactions,
        );
    };
    (@ $setup:path; $($name:ident,)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let Some(place) = $setup().await else { return };
            let place = std::sync::Arc::new(place);
            let run = tokio::spawn($crate::suite::$name(std::sync::Arc::clone(&place))).await;
            $crate::support::Place::teardown(&*place).await;
            if let Err(error) = run {
                std::panic::resume_unwind(error.into_panic());
            }
        }
    )*};
}
