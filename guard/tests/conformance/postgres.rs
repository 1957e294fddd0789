//! The suite on PostgreSQL: one schema with a random name per test, dropped at the end.
//! The server must be reachable; the tests fail (never skip) otherwise.

use crate::support::postgres::TestSchema;

/// One connection per backend: each simulated worker is one connection of its own.
async fn setup() -> Option<TestSchema> {
    Some(TestSchema::create("fenced_", 1).await)
}

crate::conformance!(setup);

/// The backend's own pool, beyond the protocol: statements prepared once per
/// connection, and connections that must not be reused.
mod connections {
    use std::time::Duration;

    use fenced_guard::{Error, Executor, Postgres, Value};
    use tokio_postgres::error::SqlState;

    use crate::support::postgres::url;

    /// The server's process id for the connection that runs the statement.
    async fn backend_pid(backend: &Postgres) -> fenced_guard::Result<i64> {
        match backend.query_row("SELECT pg_backend_pid()", &[]).await? {
            Some(row) => match row.as_slice() {
                [Value::I64(pid)] => Ok(*pid),
                other => panic!("pg_backend_pid() returned {other:?}"),
            },
            None => panic!("pg_backend_pid() returned no row"),
        }
    }

    async fn connect(max_connections: usize) -> Postgres {
        Postgres::connect_with(&url(), max_connections)
            .await
            .expect("connect to postgresql")
    }

    #[tokio::test]
    async fn a_statement_is_prepared_once_per_connection() {
        let backend = connect(1).await;
        let sql = "SELECT $1::bigint + 1";
        for i in 0..5 {
            assert_eq!(
                backend.query_row(sql, &[Value::I64(i)]).await.unwrap(),
                Some(vec![Value::I64(i + 1)])
            );
        }
        let client = backend.client().await.unwrap();
        // The simple protocol prepares nothing, so the answer lists only the backend's.
        let messages = client
            .simple_query(
                "SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements",
            )
            .await
            .unwrap();
        let prepared: Vec<(String, String)> = messages
            .iter()
            .filter_map(|message| match message {
                tokio_postgres::SimpleQueryMessage::Row(row) => Some((
                    row.get(0).unwrap().to_owned(),
                    row.get(1).unwrap().to_owned(),
                )),
                _ => None,
            })
            .collect();
        assert_eq!(
            prepared,
            [(sql.to_owned(), "5".to_owned())],
            "one prepared statement, executed five times"
        );
    }

    /// A kept statement whose table was altered since it was prepared still runs: the
    /// server refuses the old plan ("cached plan must not change result type"), and
    /// the statement is prepared again. A temporary table keeps the test to its one
    /// connection.
    #[tokio::test]
    async fn a_statement_kept_across_an_altered_table_is_prepared_again() {
        let backend = connect(1).await;
        backend
            .execute_batch(
                "CREATE TEMPORARY TABLE altered (a bigint); INSERT INTO altered VALUES (1)",
            )
            .await
            .unwrap();
        let select = "SELECT * FROM altered";
        let update = "UPDATE altered SET a = a + $1 RETURNING *";
        assert_eq!(
            backend.query_row(select, &[]).await.unwrap(),
            Some(vec![Value::I64(1)])
        );
        assert_eq!(backend.execute(update, &[Value::I64(1)]).await.unwrap(), 1);
        backend
            .execute_batch("ALTER TABLE altered ADD COLUMN b bigint DEFAULT 7")
            .await
            .unwrap();
        assert_eq!(
            backend.query_row(select, &[]).await.unwrap(),
            Some(vec![Value::I64(2), Value::I64(7)])
        );
        assert_eq!(backend.execute(update, &[Value::I64(1)]).await.unwrap(), 1);
        assert_eq!(
            backend.query_row(select, &[]).await.unwrap(),
            Some(vec![Value::I64(3), Value::I64(7)])
        );
    }

    /// `query_row` keeps the first row but reads them all: an error raised while the
    /// server produces a later row is the statement's error, not lost behind the first
    /// row, and the connection goes back to the pool usable.
    #[tokio::test]
    async fn an_error_in_a_later_row_is_the_statements_error() {
        let backend = connect(1).await;
        let pid = backend_pid(&backend).await.unwrap();
        assert_eq!(
            backend
                .query_row("SELECT x FROM (VALUES (1::bigint), (2)) AS t(x)", &[])
                .await
                .unwrap(),
            Some(vec![Value::I64(1)]),
            "the first of several rows"
        );
        let error = backend
            .query_row("SELECT 10 / x FROM (VALUES (1::bigint), (0)) AS t(x)", &[])
            .await
            .expect_err("the second row divides by zero");
        assert!(
            matches!(&error, Error::Postgres(e) if e.code() == Some(&SqlState::DIVISION_BY_ZERO)),
            "{error:?}"
        );
        assert_eq!(
            backend_pid(&backend).await.unwrap(),
            pid,
            "the same connection, still usable"
        );
    }

    #[tokio::test]
    async fn a_connection_keeps_a_bounded_number_of_statements() {
        let backend = connect(1).await;
        let max = Postgres::MAX_PREPARED_STATEMENTS;
        // One statement runs all the time, as a store's do, between distinct others.
        let hot = "SELECT $1::bigint * 2";
        for i in 0..=max {
            let doubled = backend.query_row(hot, &[Value::I64(1)]).await.unwrap();
            assert_eq!(doubled, Some(vec![Value::I64(2)]));
            let sql = format!("SELECT $1::bigint + {i}");
            let sum = backend.query_row(&sql, &[Value::I64(1)]).await.unwrap();
            assert_eq!(sum, Some(vec![Value::I64(1 + i64::try_from(i).unwrap())]));
        }
        let client = backend.client().await.unwrap();
        let count: i64 = client
            .query_one("SELECT count(*) FROM pg_prepared_statements", &[])
            .await
            .unwrap()
            .get(0);
        // The statement just used for counting is the client's own, not the pool's.
        assert_eq!(count, i64::try_from(max).unwrap() + 1, "bounded");
        let executions = |sql: &'static str| {
            let client = &client;
            async move {
                client
                    .query_opt(
                        "SELECT (generic_plans + custom_plans)::bigint \
                         FROM pg_prepared_statements WHERE statement = $1",
                        &[&sql],
                    )
                    .await
                    .unwrap()
                    .map(|row| row.get::<_, i64>(0))
            }
        };
        assert_eq!(
            executions("SELECT $1::bigint + 0").await,
            None,
            "used longest ago: closed"
        );
        assert_eq!(
            executions(hot).await,
            Some(i64::try_from(max).unwrap() + 1),
            "the statement in use all along was kept, prepared once"
        );
    }

    #[tokio::test]
    async fn a_client_taken_from_the_pool_goes_back_when_dropped() {
        let backend = connect(1).await;
        let first = backend_pid(&backend).await.unwrap();
        let client = backend.client().await.unwrap();
        assert_eq!(
            backend.idle_connections(),
            0,
            "the only connection is taken"
        );
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(i64::from(pid), first, "the pool's connection");
        drop(client);
        assert_eq!(backend.idle_connections(), 1);
        assert_eq!(backend_pid(&backend).await.unwrap(), first, "reused");
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_is_not_reused() {
        let admin = connect(1).await;
        let backend = connect(1).await;
        let terminated = backend_pid(&backend).await.unwrap();
        // Waits up to 5 s for the process to end (PostgreSQL 14 and later).
        let ended = admin
            .query_row(
                "SELECT pg_terminate_backend($1::int, 5000)",
                &[Value::I64(terminated)],
            )
            .await
            .unwrap();
        assert_eq!(ended, Some(vec![Value::Bool(true)]));
        // The client may learn of the end before the next statement (the connection is
        // then discarded on the way out of the pool) or from that statement's error
        // (it is then discarded after it): either way the one after runs on a new one.
        let next = match backend_pid(&backend).await {
            Ok(pid) => pid,
            Err(Error::Postgres(_)) => backend_pid(&backend).await.unwrap(),
            Err(other) => panic!("unexpected error: {other}"),
        };
        assert_ne!(next, terminated);
    }

    #[tokio::test]
    async fn a_cancelled_statement_discards_its_connection() {
        let backend = connect(1).await;
        let first = backend_pid(&backend).await.unwrap();
        let cancelled = tokio::time::timeout(
            Duration::from_millis(50),
            backend.query_row("SELECT pg_sleep(2)::text", &[]),
        )
        .await;
        assert!(cancelled.is_err(), "the statement outlived its timeout");
        assert_eq!(backend.idle_connections(), 0, "not given back");
        assert_ne!(
            backend_pid(&backend).await.unwrap(),
            first,
            "a new connection"
        );
    }
}

/// PostgreSQL keeps the first 63 bytes of a name, quoted or not: names that share them
/// are one column there, so a caller's column could alias a protocol column.
mod identifiers {
    use std::time::Duration;

    use fenced_guard::{ColumnType, Error, Executor, FencedTable, KeyType, Store, Value};

    use crate::support::Place;
    use crate::support::postgres::TestSchema;

    /// 63 `G`s, then `last`: 64 bytes.
    fn long(last: char) -> String {
        format!("{}{last}", "G".repeat(63))
    }

    #[tokio::test]
    async fn a_caller_column_cannot_alias_the_generation_by_truncation() {
        let place = TestSchema::create("fenced_", 1).await;
        let table = FencedTable::builder()
            .table(place.qualified("Aliased"))
            .key_type(KeyType::BigInt)
            .generation_column(long('a'))
            .column("Payload", ColumnType::Text)
            .build()
            .unwrap();
        let store = Store::new(place.connect().await, table);
        store.create_schema().await.unwrap();

        // The premise: the server kept 63 bytes of the 64-byte name.
        let kept = place
            .admin()
            .query_row(
                "SELECT column_name::text FROM information_schema.columns \
                 WHERE table_schema::text = $1 AND column_name LIKE 'GGG%'",
                &[Value::from(
                    place.qualified("x").trim_end_matches(".x").to_owned(),
                )],
            )
            .await
            .unwrap();
        assert_eq!(kept, Some(vec![Value::from("G".repeat(63))]));

        store.provision(1_i64).await.unwrap();
        let lease = store
            .try_acquire(1_i64, Duration::from_secs(300))
            .await
            .unwrap()
            .expect("a provisioned row is free");
        let aliased = long('b');
        let result = store
            .update(&lease, &[(aliased.as_str(), Value::I64(-5))])
            .await;
        assert!(
            matches!(&result, Err(Error::ProtectedColumn { column }) if *column == aliased),
            "{result:?}"
        );
        let generation = store
            .backend()
            .query_row(
                &format!(
                    "SELECT \"{}\" FROM {}",
                    "G".repeat(63),
                    store.table().name().quoted(fenced_guard::Dialect::Postgres)
                ),
                &[],
            )
            .await
            .unwrap();
        assert_eq!(
            generation,
            Some(vec![Value::I64(1)]),
            "the generation is intact"
        );
        assert!(store.release(&lease).await.unwrap().is_applied());
        place.teardown().await;
    }
}

/// What an error says: the server's own message and SQLSTATE, or the driver's error
/// and its causes.
mod errors {
    use fenced_guard::{Error, Executor, Postgres};
    use tokio_postgres::error::SqlState;

    use crate::support::postgres::url;

    #[tokio::test]
    async fn an_error_displays_what_the_server_said_and_its_sqlstate() {
        let backend = Postgres::connect_with(&url(), 1).await.unwrap();
        let error = backend
            .execute("UPDATE fenced_no_such_table SET x = 1", &[])
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "error returned from database: relation \"fenced_no_such_table\" does not exist \
             (SQLSTATE 42P01); nothing was executed"
        );
        assert_eq!(error.database_code().as_deref(), Some("42P01"));
        let driver = error.as_postgres().expect("the driver's error");
        assert_eq!(driver.code(), Some(&SqlState::UNDEFINED_TABLE));
        assert!(
            std::error::Error::source(&error).is_none(),
            "displayed, so not a source too"
        );
    }

    #[tokio::test]
    async fn a_driver_error_displays_its_causes() {
        // Port 1 on the loopback: nothing listens there.
        let error = Postgres::connect("host=127.0.0.1 port=1 user=postgres dbname=test")
            .await
            .unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with("postgresql: error connecting to server: "),
            "{text}"
        );
        assert!(text.contains("refused"), "the cause is shown: {text}");
        assert!(matches!(error, Error::Postgres(_)));
        assert_eq!(error.database_code(), None);
    }
}

/// Whether an error may have committed, by where it happened.
mod classification {
    use fenced_guard::{Error, Executor, Postgres, Value};

    use crate::classification::{a_good_publication_is_published, publication_is_not_retried};
    use crate::support::Place;
    use crate::support::postgres::{TestSchema, url};

    #[tokio::test]
    async fn a_value_of_the_wrong_type_is_not_executed() {
        let place = TestSchema::create("fenced_", 1).await;
        let error = publication_is_not_retried(&place, vec![("Count", Value::from("seven"))]).await;
        assert!(matches!(error, Error::NotExecuted(_)), "{error:?}");
        assert!(
            error.to_string().ends_with("; nothing was executed"),
            "{error}"
        );
        assert!(error.as_postgres().is_some());
        a_good_publication_is_published(&place).await;
        place.teardown().await;
    }

    #[tokio::test]
    async fn an_integer_out_of_its_columns_range_is_not_executed() {
        let backend = Postgres::connect_with(&url(), 1).await.unwrap();
        let error = backend
            .query_row("SELECT $1::int2", &[Value::I64(1 << 20)])
            .await
            .unwrap_err();
        assert!(matches!(error, Error::NotExecuted(_)), "{error:?}");
        assert!(!error.may_have_committed());
    }

    #[tokio::test]
    async fn a_statement_that_fails_to_prepare_is_not_executed() {
        let place = TestSchema::create("fenced_", 1).await;
        let error = publication_is_not_retried(&place, vec![("Missing", Value::I64(1))]).await;
        assert_eq!(error.database_code().as_deref(), Some("42703"), "{error}");
        place.teardown().await;
    }

    /// An error the planner raises while it binds the statement (it folds `1 / 0`):
    /// the statement never ran.
    #[tokio::test]
    async fn an_error_while_binding_is_not_executed() {
        let backend = Postgres::connect_with(&url(), 1).await.unwrap();
        let error = backend
            .query_row("SELECT 1 / $1::bigint", &[Value::I64(0)])
            .await
            .unwrap_err();
        assert!(matches!(error, Error::NotExecuted(_)), "{error:?}");
        assert_eq!(error.database_code().as_deref(), Some("22012"));
    }

    /// The error comes from executing the statement, after its `BindComplete`: the
    /// volatile `random()` keeps the planner from folding `1 / 0` while it binds (which
    /// would be an error before the statement ran, and so not executed).
    #[tokio::test]
    async fn an_error_the_server_answered_during_execution_did_not_commit() {
        let backend = Postgres::connect_with(&url(), 1).await.unwrap();
        let error = backend
            .query_row(
                "SELECT 1 / CASE WHEN random() >= 0 THEN $1::bigint END",
                &[Value::I64(0)],
            )
            .await
            .unwrap_err();
        assert!(matches!(error, Error::Postgres(_)), "executed: {error:?}");
        assert!(!error.may_have_committed());
    }

    #[tokio::test]
    async fn a_connection_that_cannot_be_opened_executed_nothing() {
        let config = "host=127.0.0.1 port=1 user=postgres dbname=test"
            .parse()
            .unwrap();
        let backend = Postgres::from_config(config, tokio_postgres::NoTls, 1);
        let error = backend.execute("SELECT 1", &[]).await.unwrap_err();
        assert!(matches!(error, Error::NotExecuted(_)), "{error:?}");
        assert!(!error.may_have_committed());
    }

    /// The negative control of the classes above: an answer that cannot be read
    /// after the statement ran may have committed.
    #[tokio::test]
    async fn an_answer_that_cannot_be_decoded_may_have_committed() {
        let backend = Postgres::connect_with(&url(), 1).await.unwrap();
        let error = backend.query_row("SELECT now()", &[]).await.unwrap_err();
        assert!(matches!(error, Error::UnexpectedResult(_)), "{error:?}");
        assert!(error.may_have_committed());
    }
}

/// Connections the server ended while they sat in the pool.
mod terminated {
    use std::time::Duration;

    use fenced_guard::{Error, Executor, FencedTable, Lease, Postgres, Store, Value};
    use uuid::Uuid;

    use crate::support::Place;
    use crate::support::postgres::{TestSchema, url};

    const CONNECTIONS: usize = 4;

    /// Ends every connection of the pool named `application` on the server; with
    /// `wait`, waits for each to be gone (else only signals them, as a restart does
    /// while the application runs).
    async fn terminate_all(admin: &Postgres, application: &str, wait: bool) -> i64 {
        let timeout = if wait { 5000 } else { 0 };
        let ended = admin
            .query_row(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid, $2::bigint) \
                 FROM pg_stat_activity WHERE application_name = $1) AS t",
                &[Value::from(application), Value::I64(timeout)],
            )
            .await
            .unwrap();
        match ended.as_deref() {
            Some([Value::I64(n)]) => *n,
            other => panic!("{other:?}"),
        }
    }

    /// A store whose pool of `CONNECTIONS` is named `application` on the server, with
    /// twice as many provisioned keys.
    async fn store(place: &TestSchema, application: &str) -> (Store<Postgres>, Vec<Uuid>) {
        let mut config: tokio_postgres::Config = url().parse().unwrap();
        config.application_name(application);
        let backend = Postgres::from_config(config, tokio_postgres::NoTls, CONNECTIONS);
        let table = FencedTable::builder()
            .table(place.qualified("Terminated"))
            .build()
            .unwrap();
        let store = Store::new(backend, table);
        store.create_schema().await.unwrap();
        let keys: Vec<Uuid> = (0..CONNECTIONS * 2).map(|_| Uuid::new_v4()).collect();
        for key in &keys {
            store.provision(*key).await.unwrap();
        }
        (store, keys)
    }

    /// Acquires every key, `CONNECTIONS` statements at a time, which fills the pool.
    async fn acquire_all(store: &Store<Postgres>, keys: &[Uuid]) -> Vec<Lease> {
        let mut leases = Vec::new();
        for chunk in keys.chunks(CONNECTIONS) {
            let tasks: Vec<_> = chunk
                .iter()
                .map(|key| {
                    let (store, key) = (store.clone(), *key);
                    tokio::spawn(async move {
                        store
                            .try_acquire(key, Duration::from_secs(60))
                            .await
                            .unwrap()
                            .expect("a provisioned, free row")
                    })
                })
                .collect();
            for task in tasks {
                leases.push(task.await.unwrap());
            }
        }
        assert_eq!(store.backend().idle_connections(), CONNECTIONS);
        leases
    }

    /// Releases every lease; returns the errors, each of which must say that nothing
    /// was executed.
    async fn release_all(store: &Store<Postgres>, leases: &[Lease]) -> Vec<Error> {
        let mut errors = Vec::new();
        for lease in leases {
            match store.release(lease).await {
                Ok(outcome) => assert!(outcome.is_applied()),
                Err(error) => {
                    assert!(matches!(error, Error::NotExecuted(_)), "{error:?}");
                    assert!(!error.may_have_committed(), "{error}");
                    assert!(
                        error.to_string().ends_with("nothing was executed"),
                        "{error}"
                    );
                    errors.push(error);
                }
            }
        }
        errors
    }

    /// After the server ended every pooled connection and they are gone, each
    /// operation succeeds or fails saying that nothing was executed: three times, so
    /// that the later rounds run statements the connections had already prepared.
    async fn after_termination() {
        let place = TestSchema::create("fenced_", 1).await;
        let application = format!("fenced_{}", Uuid::new_v4().simple());
        let (store, keys) = store(&place, &application).await;
        for round in 0..3 {
            let leases = acquire_all(&store, &keys).await;
            let ended = terminate_all(place.admin(), &application, true).await;
            assert_eq!(ended, i64::try_from(CONNECTIONS).unwrap(), "round {round}");
            let errors = release_all(&store, &leases).await;
            assert!(errors.is_empty(), "round {round}: {errors:?}");
        }
        place.teardown().await;
    }

    #[tokio::test]
    async fn operations_after_termination_on_one_thread() {
        after_termination().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn operations_after_termination_on_several_threads() {
        after_termination().await;
    }

    /// The server is ending every pooled connection while the next statements are
    /// sent, each statement new to its connection: its preparation meets the end, and
    /// it runs on a new connection instead of failing.
    #[tokio::test]
    async fn a_statement_prepared_on_an_ending_connection_runs_on_another() {
        let place = TestSchema::create("fenced_", 1).await;
        let application = format!("fenced_{}", Uuid::new_v4().simple());
        let (store, keys) = store(&place, &application).await;
        let leases = acquire_all(&store, &keys).await;
        let ended = terminate_all(place.admin(), &application, false).await;
        assert_eq!(ended, i64::try_from(CONNECTIONS).unwrap());
        let errors = release_all(&store, &leases).await;
        assert!(errors.is_empty(), "{errors:?}");
        place.teardown().await;
    }

    /// Renewals sent the moment the server was told to end every pooled connection, on
    /// statements the connections had prepared: the server's 57P01, read in place of
    /// the statement's first answer, proves that the statement never ran, so it runs
    /// again on another connection and every renewal is applied, in ten trials.
    /// Negative control: on a plain client the same moment gives the statement that
    /// fatal error, which says nothing of whether it ran when read after the answer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn renewals_right_after_a_termination_run_on_other_connections() {
        let place = TestSchema::create("fenced_", 1).await;
        let application = format!("fenced_{}", Uuid::new_v4().simple());
        let (store, keys) = store(&place, &application).await;
        for trial in 0..10 {
            let leases = acquire_all(&store, &keys).await;
            for lease in &leases {
                assert!(store.renew(lease).await.unwrap().is_applied());
            }
            terminate_all(place.admin(), &application, false).await;
            for lease in &leases {
                let renewed = store.renew(lease).await;
                assert!(
                    matches!(renewed, Ok(fenced_guard::Outcome::Applied)),
                    "trial {trial}: {renewed:?}"
                );
            }
            let errors = release_all(&store, &leases).await;
            assert!(errors.is_empty(), "trial {trial}: {errors:?}");
        }

        let (client, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let statement = client.prepare("SELECT 1").await.unwrap();
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        place
            .admin()
            .query_row(
                "SELECT pg_terminate_backend($1::int, 5000)",
                &[Value::I64(pid.into())],
            )
            .await
            .unwrap();
        let error = client.query(&statement, &[]).await.unwrap_err();
        assert!(
            error.is_closed()
                || error
                    .as_db_error()
                    .is_some_and(|db| db.code().code() == "57P01"),
            "{error:?}"
        );
        place.teardown().await;
    }

    /// A pool whose only connection is held: a statement waits the checkout timeout,
    /// then fails saying that nothing was executed.
    #[tokio::test]
    async fn a_statement_waits_for_a_held_pool_only_the_checkout_timeout() {
        let timeout = Duration::from_millis(200);
        let backend = Postgres::connect_with(&url(), 1)
            .await
            .unwrap()
            .checkout_timeout(timeout);
        let held = backend.client().await.unwrap();
        let waited = tokio::time::timeout(
            Duration::from_secs(30),
            backend.query_row("SELECT 1::bigint", &[]),
        )
        .await
        .expect("the checkout timeout ends the wait");
        let error = waited.unwrap_err();
        assert!(
            matches!(error, Error::PoolTimedOut { timeout: t } if t == timeout),
            "{error:?}"
        );
        assert!(!error.may_have_committed());
        drop(held);
        assert_eq!(
            backend.query_row("SELECT 1::bigint", &[]).await.unwrap(),
            Some(vec![Value::I64(1)])
        );
    }
}
