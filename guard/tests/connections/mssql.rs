//! tiberius: a caller's `Client`, with and without a transaction open on it.

use fenced_guard::connection::TiberiusClient;
use fenced_guard::{Executor, Key, Store};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};
use uuid::Uuid;

use crate::protocol::{
    TTL, fenced_lines, lines, not_in_transaction, protocol, reports, stale_is_refused, superseded,
};
use crate::support::Place;
use crate::support::lines::create_lines_table;
use crate::support::lines::insert_line;
use crate::support::mssql::TestSchema;

async fn client(url: &str) -> tiberius::Client<Compat<TcpStream>> {
    let config = tiberius::Config::from_ado_string(url).expect("a valid connection string");
    let tcp = TcpStream::connect(config.get_addr())
        .await
        .expect("connect");
    tcp.set_nodelay(true).unwrap();
    Box::pin(tiberius::Client::connect(config, tcp.compat_write()))
        .await
        .expect("log in")
}

async fn batch(client: &mut tiberius::Client<Compat<TcpStream>>, sql: &str) {
    client
        .simple_query(sql)
        .await
        .expect(sql)
        .into_results()
        .await
        .expect(sql);
}

/// `BEGIN TRANSACTION` on `client`, and a fence of `lease` in it, which must pass.
async fn begin_and_fence<'a>(
    own: &Store<fenced_guard::Mssql>,
    client: &'a mut tiberius::Client<Compat<TcpStream>>,
    lease: &'a fenced_guard::Lease,
) -> fenced_guard::Fenced<'a, TiberiusClient<'a, Compat<TcpStream>>> {
    batch(client, "BEGIN TRANSACTION").await;
    own.on(client)
        .unwrap()
        .fence(lease)
        .await
        .unwrap()
        .expect("the lease holds")
}

#[tokio::test]
async fn the_protocol_on_a_client_and_its_transactions() {
    let Some(schema) = TestSchema::create("fenced_conn_", 1).await else {
        return;
    };
    let own = Store::new(schema.connect().await, reports(&schema));
    own.create_schema().await.unwrap();
    create_lines_table(&schema, &own).await;
    let mut client = client(schema.url()).await;
    let key = Key::from(Uuid::new_v4());

    let lease = protocol(&own.on(&mut client).unwrap(), &key, true).await;

    batch(&mut client, "BEGIN TRANSACTION").await;
    assert!(fenced_lines(&schema, own.on(&mut client).unwrap(), &lease, "line 0").await);
    batch(&mut client, "COMMIT TRANSACTION").await;
    assert_eq!(lines(&schema, &own, &key).await, 1);

    batch(&mut client, "BEGIN TRANSACTION").await;
    assert!(fenced_lines(&schema, own.on(&mut client).unwrap(), &lease, "line 1").await);
    batch(&mut client, "ROLLBACK TRANSACTION").await;
    assert_eq!(lines(&schema, &own, &key).await, 1);

    stale_is_refused(&own.on(&mut client).unwrap(), &key, &lease).await;
    batch(&mut client, "BEGIN TRANSACTION").await;
    assert!(!fenced_lines(&schema, own.on(&mut client).unwrap(), &lease, "line 2").await);
    batch(&mut client, "COMMIT TRANSACTION").await;
    assert_eq!(lines(&schema, &own, &key).await, 1);
    drop(client);
    schema.teardown().await;
}

/// A schema with the lease's and the lines' tables, a client of the test's own, and a
/// lease held on a provisioned row.
async fn held(
    prefix: &str,
) -> Option<(
    TestSchema,
    Store<fenced_guard::Mssql>,
    tiberius::Client<Compat<TcpStream>>,
    Key,
    fenced_guard::Lease,
)> {
    let schema = TestSchema::create(prefix, 1).await?;
    let own = Store::new(schema.connect().await, reports(&schema));
    own.create_schema().await.unwrap();
    create_lines_table(&schema, &own).await;
    let client = client(schema.url()).await;
    let key = Key::from(Uuid::new_v4());
    own.provision(key.clone()).await.unwrap();
    let lease = own.try_acquire(key.clone(), TTL).await.unwrap().unwrap();
    Some((schema, own, client, key, lease))
}

/// tiberius has no transaction type: the check-and-lock statement refuses to run without
/// `BEGIN TRANSACTION` (`@@TRANCOUNT` 0), and every statement of A's `Fenced` checks in
/// its own batch that the transaction is open and the lease's row still A's. The caller
/// commits around the `Fenced`, B acquires, and A's lines are refused, in autocommit
/// and in a transaction A begins again. Negative control: the same line sent raw lands.
#[tokio::test]
async fn a_fence_outside_a_transaction_is_refused_and_ends_with_it() {
    let Some((schema, own, mut client, key, a)) = held("fenced_outside_").await else {
        return;
    };
    let insert = insert_line(&schema, &own);

    let outside = own.on(&mut client).unwrap().fence(&a).await;
    assert!(
        not_in_transaction(&outside),
        "{:?}",
        outside.map(|f| f.is_some())
    );

    {
        let fenced = begin_and_fence(&own, &mut client, &a).await;
        let commit = fenced.execute("COMMIT TRANSACTION", &[]).await;
        assert!(
            matches!(commit, Err(fenced_guard::Error::StatementRefused { .. })),
            "{commit:?}"
        );
        fenced
            .store()
            .backend()
            .execute_batch("COMMIT TRANSACTION")
            .await
            .unwrap();
        superseded(&own, &key, &a).await;
        let line = || [a.key().into(), fenced_guard::Value::from("A's stale line")];
        let autocommitted = fenced.execute(&insert, &line()).await;
        assert!(not_in_transaction(&autocommitted), "{autocommitted:?}");
        fenced
            .store()
            .backend()
            .execute_batch("BEGIN TRANSACTION")
            .await
            .unwrap();
        let begun_again = fenced.execute(&insert, &line()).await;
        assert!(not_in_transaction(&begun_again), "{begun_again:?}");
        fenced
            .store()
            .backend()
            .execute_batch("COMMIT TRANSACTION")
            .await
            .unwrap();
        assert_eq!(lines(&schema, &own, &key).await, 0);

        // Negative control: the same statement sent raw lands.
        fenced
            .store()
            .backend()
            .execute(&insert, &line())
            .await
            .unwrap();
        assert_eq!(lines(&schema, &own, &key).await, 1);
    }
    drop(client);
    schema.teardown().await;
}

/// A statement of a `Fenced` whose transaction was committed around it is refused, with
/// no transaction open and with one begun again, while no successor has taken the row:
/// its check asks whether a transaction is open and holds the lock its check-and-lock
/// took, which ended with the first transaction, where the row is no longer locked.
/// Negative control: the check it replaced, whether the lease's row still carries the
/// lease, passes in the same state, and the line lands.
#[tokio::test]
async fn a_transaction_begun_again_under_a_fenced_is_refused_before_any_successor() {
    let Some((schema, own, mut client, key, a)) = held("fenced_again_").await else {
        return;
    };
    let insert = insert_line(&schema, &own);
    let d = own.dialect();
    let table = own.table();
    let row_check = format!(
        "IF NOT EXISTS (SELECT 1 FROM {} WHERE {} = @P3 AND {} = @P4 AND {} = @P5) \
         THROW 51001, N'the row no longer carries the lease', 1; {insert}",
        table.name().quoted(d),
        table.key_column().quoted(d),
        table.generation_column().quoted(d),
        table.owner_column().quoted(d),
    );
    let line = || {
        [
            a.key().into(),
            fenced_guard::Value::from("A's unlocked line"),
        ]
    };

    {
        let fenced = begin_and_fence(&own, &mut client, &a).await;
        let backend = fenced.store().backend();
        backend.execute_batch("COMMIT TRANSACTION").await.unwrap();
        let autocommitted = fenced.execute(&insert, &line()).await;
        assert!(not_in_transaction(&autocommitted), "{autocommitted:?}");
        backend.execute_batch("BEGIN TRANSACTION").await.unwrap();
        let begun_again = fenced.execute(&insert, &line()).await;
        assert!(not_in_transaction(&begun_again), "{begun_again:?}");
        backend.execute_batch("COMMIT TRANSACTION").await.unwrap();
        assert_eq!(lines(&schema, &own, &key).await, 0);

        // Negative control: the row's check, in a transaction begun again as well.
        backend.execute_batch("BEGIN TRANSACTION").await.unwrap();
        let [line_key, text] = line();
        let checked_row = [
            line_key,
            text,
            a.key().into(),
            fenced_guard::Value::I64(a.generation()),
            fenced_guard::Value::Uuid(a.owner()),
        ];
        backend.execute(&row_check, &checked_row).await.unwrap();
        backend.execute_batch("COMMIT TRANSACTION").await.unwrap();
    }
    assert_eq!(
        lines(&schema, &own, &key).await,
        1,
        "the negative control's line did not land: the test could not tell"
    );
    drop(client);
    schema.teardown().await;
}

/// A guard statement that fails inside the caller's transaction (here `publish_op`
/// against a CHECK constraint) rolls back only its own work, to a savepoint: the caller's
/// transaction stays open, with the line it wrote before and the lease's row still
/// locked, and a line written after passes its check (the fence's own lock, taken
/// before the savepoint, is kept). Negative control: the same failure inside the old wrapper, which began and
/// rolled back a transaction of its own, ends the caller's transaction and its line.
#[tokio::test]
async fn a_failing_guard_statement_leaves_the_callers_transaction_open() {
    let Some((schema, own, mut client, key, a)) = held("fenced_savepoint_").await else {
        return;
    };
    let table = own.table().name().quoted(own.dialect());
    own.backend()
        .execute_batch(&format!(
            "ALTER TABLE {table} ADD CONSTRAINT [NoBadPayload] CHECK ([Payload] <> N'bad')"
        ))
        .await
        .unwrap();
    let insert = insert_line(&schema, &own);
    let old_wrapper = format!(
        "BEGIN TRY BEGIN TRANSACTION; UPDATE {table} SET [Payload] = N'bad' WHERE [ReportId] = @P1; \
         COMMIT TRANSACTION; END TRY BEGIN CATCH IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION; THROW; \
         END CATCH;"
    );

    for control in [false, true] {
        let open = {
            let fenced = begin_and_fence(&own, &mut client, &a).await;
            fenced
                .execute(&insert, &[a.key().into(), "line".into()])
                .await
                .unwrap();
            let failed = if control {
                fenced
                    .store()
                    .backend()
                    .execute(&old_wrapper, &[a.key().into()])
                    .await
                    .map(|_| ())
            } else {
                fenced
                    .store()
                    .publish_op(&a, Uuid::new_v4(), &crate::support::row::payload("bad"))
                    .await
                    .map(|_| ())
            };
            assert!(failed.is_err(), "the CHECK constraint did not fail");
            if !control {
                // The rollback to the guard's savepoint kept the lock the fence took
                // before it, which the next statement's check asks for.
                fenced
                    .execute(&insert, &[a.key().into(), "line after".into()])
                    .await
                    .unwrap();
            }
            let count = fenced
                .store()
                .backend()
                .query_i64("SELECT CAST(@@TRANCOUNT AS bigint)", &[])
                .await
                .unwrap();
            count == Some(1)
        };
        batch(&mut client, "IF @@TRANCOUNT > 0 COMMIT TRANSACTION").await;
        let kept = lines(&schema, &own, &key).await;
        if control {
            assert!(!open, "the negative control left the transaction open");
            assert_eq!(kept, 2, "the negative control's line survived");
        } else {
            assert!(
                open,
                "the guard's failed statement ended the caller's transaction"
            );
            assert_eq!(
                kept, 2,
                "the lines written before and after the failure are not both there"
            );
        }
    }
    drop(client);
    schema.teardown().await;
}

/// A caller's `SNAPSHOT` transaction whose snapshot was taken before an epoch advance
/// cannot fence a lease issued before it: the check-and-lock statement refuses every
/// `SNAPSHOT` transaction (error 51002), whose reads of the epoch would be old.
/// Negative control: the statement without that refusal passes in the same schedule.
#[tokio::test]
async fn a_snapshot_older_than_an_epoch_advance_cannot_fence() {
    let Some((schema, own, mut client, key, _)) = held("fenced_snapshot_").await else {
        return;
    };
    // SQL Server needs snapshot isolation allowed; Babelfish has it without.
    let _ = client
        .simple_query("ALTER DATABASE CURRENT SET ALLOW_SNAPSHOT_ISOLATION ON")
        .await
        .map(|s| s.into_results());
    let lock = fenced_guard::dialect::lock(own.dialect(), own.table());
    let refusal_at = lock
        .find("IF EXISTS (SELECT 1 FROM sys.dm_exec_sessions")
        .unwrap();
    let refusal_end = refusal_at + lock[refusal_at..].find(", 1;").unwrap() + 4;
    let old_lock = format!("{}{}", &lock[..refusal_at], &lock[refusal_end..]);

    for (statement, control) in [(None, false), (Some(old_lock), true)] {
        crate::support::row::expire(&own, &key).await;
        let a = own
            .try_acquire(key.clone(), TTL)
            .await
            .unwrap()
            .expect("the row is free");
        batch(
            &mut client,
            "SET TRANSACTION ISOLATION LEVEL SNAPSHOT; BEGIN TRANSACTION",
        )
        .await;
        // The snapshot is taken by the transaction's first read.
        batch(&mut client, "SELECT COUNT(*) FROM sys.objects").await;
        own.advance_epoch().await.unwrap();
        let passed = match statement {
            None => match own.on(&mut client).unwrap().fence(&a).await {
                Ok(fenced) => fenced.is_some(),
                Err(error) => {
                    assert_eq!(error.database_code().as_deref(), Some("51002"), "{error}");
                    false
                }
            },
            Some(sql) => {
                own.on(&mut client)
                    .unwrap()
                    .backend()
                    .execute(&sql, &crate::support::lease::mssql_lock_params(&a))
                    .await
                    .unwrap()
                    == 1
            }
        };
        batch(
            &mut client,
            "ROLLBACK TRANSACTION; SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
        )
        .await;
        assert_eq!(
            passed, control,
            "a lease from before the advance was fenced: {passed} (negative control: {control})"
        );
    }
    drop(client);
    schema.teardown().await;
}
