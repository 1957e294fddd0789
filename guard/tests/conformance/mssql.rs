//! The suite on SQL Server, at `FENCED_MSSQL_URL`: one schema with a random name per
//! test, emptied and dropped at the end (see `support::mssql`). Without the variable the
//! tests say that they did not run, unless `CI` is set: then they fail.
//!
//! The suite runs twice: on plain tables, and on tables that carry what enterprise
//! databases often do (`hostile`): a per-statement audit trigger on the fenced table
//! and `SET NOCOUNT ON` on every session. The protocol's outcomes must not change.

use std::sync::Arc;

use fenced_guard::{Executor, Mssql, MssqlOptions, Store};

use crate::suite::report_table;
use crate::support::Place;
use crate::support::mssql::TestSchema;

/// One connection per backend: each simulated worker is one connection of its own.
async fn setup() -> Option<TestSchema> {
    TestSchema::create("fenced_", 1).await
}

crate::conformance!(setup);

/// Runs `body` on a fresh schema and tears the schema down whatever happened.
pub async fn with_schema<F, Fut>(body: F)
where
    F: FnOnce(Arc<TestSchema>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(schema) = setup().await else { return };
    let schema = Arc::new(schema);
    let run = tokio::spawn(body(Arc::clone(&schema))).await;
    crate::suite::Fixture::teardown(&*schema).await;
    if let Err(error) = run {
        std::panic::resume_unwind(error.into_panic());
    }
}

/// A per-statement audit trigger: one row per statement on the table, whether it changed
/// rows or not, and without `SET NOCOUNT ON` of its own, as such triggers are often
/// written. Its count is part of the server's DONE tokens.
pub async fn add_audit_trigger(admin: &Mssql, schema: &str, table: &str) {
    admin
        .execute_batch(&format!(
            "CREATE TABLE [{schema}].[{table}_Audit] ([Id] int IDENTITY(1, 1) PRIMARY KEY, \
             [Rows] int NOT NULL, [At] datetime2(7) NOT NULL DEFAULT SYSUTCDATETIME())"
        ))
        .await
        .expect("create the audit table");
    admin
        .execute_batch(&format!(
            "CREATE TRIGGER [{schema}].[{table}_Audited] ON [{schema}].[{table}] \
             AFTER INSERT, UPDATE, DELETE AS \
             INSERT INTO [{schema}].[{table}_Audit] ([Rows]) SELECT COUNT(*) FROM inserted"
        ))
        .await
        .expect("create the audit trigger");
}

/// The suite on a fenced table with an audit trigger, every session `SET NOCOUNT ON`.
pub mod hostile {
    use super::*;

    pub struct Hostile(TestSchema);

    impl Place for Hostile {
        type Backend = Mssql;

        async fn connect(&self) -> Mssql {
            self.0.connect().await
        }

        fn qualified(&self, table: &str) -> String {
            self.0.qualified(table)
        }

        async fn teardown(&self) {
            self.0.teardown().await;
        }
    }

    /// The fenced table is made here, before the test, so that its trigger exists
    /// before the first protocol statement; the test's own `create_schema` leaves it.
    pub async fn setup() -> Option<Hostile> {
        let options = MssqlOptions::default().on_connect("SET NOCOUNT ON");
        let schema = TestSchema::create_with("fenced_", 1, options).await?;
        let table = report_table(&schema.qualified("ReportPublication"));
        Store::new(schema.admin().clone(), table)
            .create_schema()
            .await
            .expect("create the fenced table");
        add_audit_trigger(schema.admin(), schema.name(), "ReportPublication").await;
        Some(Hostile(schema))
    }

    crate::conformance!(setup);
}

/// Permission-enforced deployment: the procedures are installed, and stores in procedure
/// mode run the protocol through them.
pub mod procedures {
    use std::time::Duration;

    use fenced_guard::{
        Error, Executor, Key, MssqlProcedures, OperationOutcome, Outcome, Resolution, Store, Value,
    };

    use super::with_schema;
    use crate::suite::{Fixture, read};
    use crate::support::mssql::{TestSchema, is_babelfish};

    /// Creates the tables and installs the procedures, as an administrator would.
    async fn install(schema: &TestSchema, procedures: &MssqlProcedures) {
        let plain = Store::new(schema.admin().clone(), procedures.table().clone());
        plain.create_schema().await.expect("create schema");
        for batch in procedures.procedure_batches() {
            schema
                .admin()
                .execute_batch(&batch)
                .await
                .expect("install a procedure");
        }
        // Installing again replaces the bodies: the stubs are skipped, the ALTERs rerun.
        for batch in procedures.procedure_batches() {
            schema
                .admin()
                .execute_batch(&batch)
                .await
                .expect("install the procedures again");
        }
    }

    /// Acquire, renew, publish with an operation id and its retry, publish-and-release,
    /// release, provision and the epoch advance, each through its procedure.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn protocol_runs_through_the_stored_procedures() {
        with_schema(|fx| async move {
            let table = Fixture::table(&*fx);
            let procedures = MssqlProcedures::new(&table).expect("procedure names");
            install(&fx, &procedures).await;
            let plain = Store::new(Fixture::connect(&*fx).await, table.clone());
            let s = Store::new(Fixture::connect(&*fx).await, table)
                .through_procedures()
                .expect("procedure mode");
            assert!(s.uses_procedures());
            let key = uuid::Uuid::new_v4();
            assert!(s.provision(key).await.unwrap());
            assert!(!s.provision(key).await.unwrap());
            let ttl = Duration::from_secs(300);
            let lease = s.try_acquire(key, ttl).await.unwrap().expect("free row");
            assert_eq!(lease.generation(), 1);
            assert!(s.try_acquire(key, ttl).await.unwrap().is_none());
            assert_eq!(s.renew(&lease).await.unwrap(), Outcome::Applied);
            let payload = [("Payload", Value::from("through procedures"))];
            assert!(matches!(
                s.update(&lease, &payload).await,
                Err(Error::Config(_))
            ));
            let op = uuid::Uuid::new_v4();
            assert_eq!(
                s.publish_op(&lease, op, &payload).await.unwrap(),
                OperationOutcome::Applied
            );
            assert_eq!(
                s.publish_op(&lease, op, &payload).await.unwrap(),
                OperationOutcome::AlreadyApplied { generation: 1 }
            );
            assert_eq!(
                s.resolve(op).await.unwrap(),
                Resolution::Applied { generation: 1 }
            );
            assert_eq!(
                s.publish(&lease, &payload).await.unwrap(),
                Outcome::Refused,
                "once per generation"
            );
            assert_eq!(s.release(&lease).await.unwrap(), Outcome::Applied);
            assert_eq!(s.release(&lease).await.unwrap(), Outcome::Refused);
            let second = s.try_acquire(key, ttl).await.unwrap().expect("released");
            s.advance_epoch().await.expect("advance");
            assert_eq!(
                s.publish_and_release(&second, &payload).await.unwrap(),
                Outcome::Refused
            );
            let third = s.try_acquire(key, ttl).await.unwrap().expect("new epoch");
            assert_eq!(
                s.publish_and_release(&third, &payload).await.unwrap(),
                Outcome::Applied
            );
            let row = read(&plain, &Key::from(key)).await;
            assert_eq!(row.published, 3);
            assert_eq!(row.owner, None);
        })
        .await;
    }

    /// `key=value` pairs of an ADO.NET string with the login replaced.
    fn as_login(url: &str, login: &str, password: &str) -> String {
        let mut parts: Vec<String> = url
            .split(';')
            .filter(|part| {
                let key = part
                    .split('=')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                !matches!(
                    key.as_str(),
                    "user" | "user id" | "uid" | "password" | "pwd" | "integratedsecurity"
                )
            })
            .filter(|part| !part.trim().is_empty())
            .map(str::to_owned)
            .collect();
        parts.push(format!("user={login}"));
        parts.push(format!("password={password}"));
        parts.join(";")
    }

    /// The permission script: a login in the application role may EXECUTE the
    /// procedures, and its direct UPDATE of the fenced table is refused.
    ///
    /// Babelfish departs from SQL Server twice here, each named where it is met: it does
    /// not support `DENY` (without a `GRANT`, the direct write is refused all the same),
    /// and it has no ownership chaining, so a procedure runs with its caller's rights on
    /// the tables and the role's login cannot write through it. On SQL Server the
    /// procedures and the tables share their owner and the chain grants the write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_application_role_executes_the_procedures_and_cannot_write_the_table() {
        with_schema(|fx| async move {
            let admin = fx.admin().clone();
            let babelfish = is_babelfish(&admin).await;
            let suffix = uuid::Uuid::new_v4().simple().to_string();
            let role = format!("FencedApplication_{suffix}");
            let login = format!("fenced_login_{suffix}");
            let password = "Fenced!Login0";
            let table = Fixture::table(&*fx);
            let procedures = MssqlProcedures::new(&table)
                .expect("procedure names")
                .with_role(&role)
                .expect("role name");
            install(&fx, &procedures).await;
            for batch in procedures.permission_batches() {
                match admin.execute_batch(&batch).await {
                    Ok(()) => {}
                    Err(error) if babelfish && batch.starts_with("DENY ") => {
                        assert!(
                            format!("{error} {:?}", std::error::Error::source(&error))
                                .contains("DENY"),
                            "Babelfish departure (no DENY) expected, got: {error:?}"
                        );
                    }
                    Err(error) => panic!("permission batch `{batch}` failed: {error:?}"),
                }
            }
            for batch in [
                format!("CREATE LOGIN [{login}] WITH PASSWORD = N'{password}'"),
                format!("CREATE USER [{login}] FOR LOGIN [{login}]"),
                format!("ALTER ROLE [{role}] ADD MEMBER [{login}]"),
            ] {
                admin.execute_batch(&batch).await.expect(&batch);
            }
            let key = uuid::Uuid::new_v4();
            let plain = Store::new(admin.clone(), table.clone());
            assert!(plain.provision(key).await.unwrap());

            let app = fenced_guard::Mssql::connect_with(&as_login(fx.url(), &login, password), 1)
                .await
                .expect("the application's login connects");
            let through = Store::new(app.clone(), table.clone())
                .through_procedures()
                .expect("procedure mode");
            let acquired = through.try_acquire(key, Duration::from_secs(300)).await;
            if babelfish {
                let error = acquired.expect_err(
                    "Babelfish departure (no ownership chaining): the procedure cannot write",
                );
                let text = format!("{error} {:?}", std::error::Error::source(&error));
                assert!(text.contains("permission denied"), "{text}");
            } else {
                let lease = acquired.unwrap().expect("the row is free");
                let payload = [("Payload", Value::from("by the application role"))];
                assert_eq!(
                    through.publish_and_release(&lease, &payload).await.unwrap(),
                    Outcome::Applied
                );
            }

            // A direct write by the same login is refused by the server.
            let d = plain.dialect();
            let direct = format!(
                "UPDATE {} SET [Payload] = N'bypass' WHERE {} = @P1",
                table.name().quoted(d),
                table.key_column().quoted(d)
            );
            let refused = app.execute(&direct, &[Value::Uuid(key)]).await;
            let error = refused.expect_err("a direct UPDATE by the application role");
            let text = format!("{error} {:?}", std::error::Error::source(&error));
            assert!(
                text.to_ascii_lowercase().contains("permission"),
                "the refusal is a permission error: {text}"
            );
            let row = read(&plain, &Key::from(key)).await;
            assert_ne!(row.payload.as_deref(), Some("bypass"));

            drop((through, app));
            for batch in [
                format!("ALTER ROLE [{role}] DROP MEMBER [{login}]"),
                format!("DROP USER [{login}]"),
            ] {
                admin.execute_batch(&batch).await.expect(&batch);
            }
            // The server ends the login's sessions once it sees their sockets close.
            let drop_login = format!("DROP LOGIN [{login}]");
            for attempt in 1..=50 {
                match admin.execute_batch(&drop_login).await {
                    Ok(()) => break,
                    Err(error) if attempt < 50 && error.to_string().contains("logged in") => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Err(error) => panic!("{drop_login}: {error:?}"),
                }
            }
            // The role holds permissions on the schema's objects: the teardown drops
            // them, then the role can go.
            Fixture::teardown(&*fx).await;
            admin
                .execute_batch(&format!("DROP ROLE [{role}]"))
                .await
                .expect("drop the role");
        })
        .await;
    }
}

/// Negative controls for the hostile run: on this server the DONE tokens really do
/// miscount (a trigger's rows added, nothing under `NOCOUNT`), so reading them, as the
/// backend once did, would turn a refusal into `Applied` and an applied write into
/// `Refused`. The guard's outcomes on the same tables stay right.
pub mod row_counts {
    use std::time::Duration;

    use fenced_guard::{Executor, Key, MssqlOptions, Outcome, Store, Value};
    use tokio_util::compat::TokioAsyncWriteCompatExt;

    use super::{add_audit_trigger, with_schema};
    use crate::suite::{Fixture, read};
    use crate::support::mssql::TestSchema;

    type Raw = tiberius::Client<tokio_util::compat::Compat<tokio::net::TcpStream>>;

    /// A tiberius client of its own, outside the guard.
    async fn raw(url: &str) -> Raw {
        let config = tiberius::Config::from_ado_string(url).expect("connection string");
        let tcp = tokio::net::TcpStream::connect(config.get_addr())
            .await
            .expect("reach the server");
        tiberius::Client::connect(config, tcp.compat_write())
            .await
            .expect("log in")
    }

    /// The sum of the DONE tokens' counts, as a client that trusts them reads it.
    async fn done_count(client: &mut Raw, sql: &str, key: uuid::Uuid) -> u64 {
        client
            .execute(sql, &[&key])
            .await
            .expect("the statement runs")
            .rows_affected()
            .iter()
            .sum()
    }

    async fn fenced_table_with_trigger(fx: &TestSchema) -> Store<fenced_guard::Mssql> {
        let store = Store::new(Fixture::connect(fx).await, Fixture::table(fx));
        store.create_schema().await.expect("create schema");
        add_audit_trigger(fx.admin(), fx.name(), "ReportPublication").await;
        store
    }

    fn update_payload(store: &Store<fenced_guard::Mssql>) -> String {
        let d = store.dialect();
        let t = store.table();
        format!(
            "UPDATE {} SET [Payload] = N'raw' WHERE {} = @P1",
            t.name().quoted(d),
            t.key_column().quoted(d)
        )
    }

    /// An UPDATE that matches no row reads 1 from the DONE tokens (the audit row); the
    /// guard counts 0, and a superseded lease's publication is `Refused`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_triggers_rows_are_not_the_statements() {
        with_schema(|fx| async move {
            let store = fenced_table_with_trigger(&fx).await;
            let nobody = uuid::Uuid::new_v4();
            let sql = update_payload(&store);
            let mut client = raw(fx.url()).await;
            assert_eq!(
                done_count(&mut client, &sql, nobody).await,
                1,
                "the DONE tokens count the trigger's audit row"
            );
            let counted = store.backend().execute(&sql, &[Value::Uuid(nobody)]).await;
            assert_eq!(counted.unwrap(), 0, "the statement's own count");

            let key = Key::Uuid(uuid::Uuid::new_v4());
            assert!(store.provision(key.clone()).await.unwrap());
            let ttl = Duration::from_secs(300);
            let lease = store.try_acquire(key.clone(), ttl).await.unwrap().unwrap();
            assert_eq!(store.release(&lease).await.unwrap(), Outcome::Applied);
            let successor = store.try_acquire(key.clone(), ttl).await.unwrap().unwrap();
            let payload = [("Payload", Value::from("stale"))];
            assert_eq!(
                store.publish(&lease, &payload).await.unwrap(),
                Outcome::Refused
            );
            assert_eq!(store.release(&lease).await.unwrap(), Outcome::Refused);
            assert_eq!(store.renew(&successor).await.unwrap(), Outcome::Applied);
            assert_eq!(read(&store, &key).await.payload, None);
        })
        .await;
    }

    /// Under `SET NOCOUNT ON` an UPDATE that changed its row reads 0 from the DONE
    /// tokens; the guard's publication on such a session is `Applied`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nocount_hides_the_done_count_not_the_outcome() {
        with_schema(|fx| async move {
            let plain = Store::new(Fixture::connect(&*fx).await, Fixture::table(&*fx));
            plain.create_schema().await.expect("create schema");
            let key = uuid::Uuid::new_v4();
            assert!(plain.provision(key).await.unwrap());
            let sql = update_payload(&plain);
            let mut client = raw(fx.url()).await;
            client
                .simple_query("SET NOCOUNT ON")
                .await
                .unwrap()
                .into_results()
                .await
                .unwrap();
            assert_eq!(
                done_count(&mut client, &sql, key).await,
                0,
                "NOCOUNT suppresses the count"
            );
            assert_eq!(
                read(&plain, &Key::from(key)).await.payload.as_deref(),
                Some("raw"),
                "although the row changed"
            );

            let backend = fenced_guard::Mssql::connect_with_options(
                fx.url(),
                MssqlOptions::default()
                    .max_connections(1)
                    .on_connect("SET NOCOUNT ON"),
            )
            .await
            .expect("connect");
            let store = Store::new(backend, Fixture::table(&*fx));
            let lease = store
                .try_acquire(key, Duration::from_secs(300))
                .await
                .unwrap()
                .unwrap();
            let payload = [("Payload", Value::from("published"))];
            assert_eq!(
                store.publish(&lease, &payload).await.unwrap(),
                Outcome::Applied
            );
            assert_eq!(
                read(&plain, &Key::from(key)).await.payload.as_deref(),
                Some("published")
            );
        })
        .await;
    }
}

/// Text keys under SQL Server's collations: the key column the guard creates compares
/// binary, so keys that differ in case are distinct rows, as on PostgreSQL and SQLite;
/// a key with trailing spaces, which every SQL Server collation ignores, is refused.
pub mod text_keys {

    use fenced_guard::{ColumnType, Error, Executor, FencedTable, KeyType, Store};

    use super::with_schema;
    use crate::suite::Fixture;
    use crate::support::Place;

    fn text_table(name: &str) -> FencedTable {
        FencedTable::builder()
            .table(name)
            .key_type(KeyType::Text)
            .column("Payload", ColumnType::Text)
            .build()
            .expect("valid table")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn keys_that_differ_in_case_are_distinct_rows() {
        with_schema(|fx| async move {
            let store = Store::new(
                Fixture::connect(&*fx).await,
                text_table(&fx.qualified("TextKeys")),
            );
            store.create_schema().await.expect("create schema");
            assert!(store.provision("CaseKey").await.unwrap());
            assert!(
                store.provision("casekey").await.unwrap(),
                "a row of its own"
            );
            assert!(!store.provision("casekey").await.unwrap(), "the same row");
            let error = store.provision("casekey  ").await.unwrap_err();
            assert!(matches!(error, Error::Config(_)), "{error:?}");
            assert!(error.to_string().contains("trailing spaces"), "{error}");
            let error = store
                .try_acquire("CaseKey ", std::time::Duration::from_secs(60))
                .await
                .unwrap_err();
            assert!(matches!(error, Error::Config(_)), "{error:?}");

            // Negative control: a key column in the database's default collation
            // makes the two keys one row.
            let plain = fx.qualified("PlainKeys");
            store
                .backend()
                .execute_batch(&format!(
                    "CREATE TABLE [{}].[PlainKeys] ([K] nvarchar(450) NOT NULL PRIMARY KEY)",
                    plain.split('.').next().unwrap()
                ))
                .await
                .expect("create the control table");
            let insert = format!(
                "INSERT INTO [{}].[PlainKeys] ([K]) VALUES (@P1)",
                plain.split('.').next().unwrap()
            );
            store
                .backend()
                .execute(&insert, &["CaseKey".into()])
                .await
                .expect("the first key");
            let collision = store.backend().execute(&insert, &["casekey".into()]).await;
            assert!(
                collision.is_err(),
                "the default collation folds case: the second key is a duplicate"
            );
        })
        .await;
    }
}

/// `Value::Null` reaches SQL Server as the keyword `NULL` in the statement, which both
/// SQL Server and Babelfish type from its place. Negative control (Babelfish): the null
/// sent as tiberius sends a parameter, untyped (TDS `NULLTYPE`, 0x1F), is refused.
pub mod nulls {
    use std::time::Duration;

    use fenced_guard::{Executor, Key, Outcome, Store, Value};

    use super::with_schema;
    use crate::suite::{Fixture, read};
    use crate::support::mssql::is_babelfish;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_null_value_clears_a_column() {
        with_schema(|fx| async move {
            let store = Store::new(Fixture::connect(&*fx).await, Fixture::table(&*fx));
            store.create_schema().await.expect("create schema");
            let key = Key::Uuid(uuid::Uuid::new_v4());
            assert!(store.provision(key.clone()).await.unwrap());
            let lease = store
                .try_acquire(key.clone(), Duration::from_secs(300))
                .await
                .unwrap()
                .unwrap();
            let set = [("Payload", Value::from("set"))];
            assert_eq!(store.update(&lease, &set).await.unwrap(), Outcome::Applied);
            let cleared = store.update(&lease, &[("Payload", Value::Null)]).await;
            assert_eq!(cleared.unwrap(), Outcome::Applied);
            assert_eq!(read(&store, &key).await.payload, None);
            // Among other parameters, in a statement of the caller's: the ones around
            // the null keep their values.
            let d = store.dialect();
            let sql = format!(
                "UPDATE {} SET [Payload] = @P1 WHERE @P2 IS NULL AND {} = @P3",
                store.table().name().quoted(d),
                store.table().key_column().quoted(d)
            );
            let rows = store
                .backend()
                .execute(
                    &sql,
                    &[Value::from("again"), Value::Null, Value::from(&key)],
                )
                .await
                .unwrap();
            assert_eq!(rows, 1);
            assert_eq!(read(&store, &key).await.payload.as_deref(), Some("again"));

            if is_babelfish(fx.admin()).await {
                let config = tiberius::Config::from_ado_string(fx.url()).unwrap();
                let tcp = tokio::net::TcpStream::connect(config.get_addr())
                    .await
                    .unwrap();
                let mut client = Box::pin(tiberius::Client::connect(
                    config,
                    tokio_util::compat::TokioAsyncWriteCompatExt::compat_write(tcp),
                ))
                .await
                .unwrap();
                let untyped: Option<&str> = None;
                let refused = client.execute("SELECT @P1", &[&untyped]).await;
                let text = format!("{refused:?}");
                assert!(text.contains("0x1F"), "{text}");
            }
        })
        .await;
    }
}

/// The backend's pool: a connection the server answered with an error is kept when no
/// transaction is left open on it, and closed when one is.
pub mod connections {
    use fenced_guard::{Executor, Mssql, MssqlOptions};

    use crate::support::mssql::{connect, url};

    async fn spid(backend: &Mssql) -> i64 {
        backend
            .query_i64("SELECT CAST(@@SPID AS bigint)", &[])
            .await
            .expect("read @@SPID")
            .expect("one row")
    }

    #[tokio::test]
    async fn an_error_outside_a_transaction_keeps_the_connection() {
        let Some(url) = url() else { return };
        let backend = connect(&url, MssqlOptions::default().max_connections(1)).await;
        let before = spid(&backend).await;
        let error = backend
            .execute("SELECT * FROM fenced_no_such_table", &[])
            .await
            .expect_err("no such table");
        assert!(!error.may_have_committed(), "{error:?}");
        assert_eq!(spid(&backend).await, before, "the same session");

        // Negative control: a batch that leaves a transaction open after its error
        // loses its connection.
        backend
            .execute_batch("BEGIN TRANSACTION; SELECT 1 / 0")
            .await
            .expect_err("division by zero, the transaction left open");
        let after = spid(&backend).await;
        assert_ne!(after, before, "a new session");
        let open = backend
            .query_i64("SELECT CAST(@@TRANCOUNT AS bigint)", &[])
            .await
            .unwrap();
        assert_eq!(open, Some(0), "nothing of the old transaction is left");
    }
}

/// The server ends every idle connection of the pool (`KILL`, as a restart, a failover
/// or an idle reaper would): the pool sees each closed before it lends it and opens
/// another, so every statement after it is applied, never failed with no answer.
mod killed {
    use std::time::Duration;

    use fenced_guard::{Executor, FencedTable, Lease, Mssql, MssqlOptions, Store, Value};
    use tokio_util::compat::TokioAsyncWriteCompatExt;
    use uuid::Uuid;

    use crate::support::Place;
    use crate::support::mssql::{TestSchema, connect};

    const CONNECTIONS: usize = 4;

    /// The sessions of the program named `application`.
    async fn sessions(admin: &Mssql, application: &str) -> Vec<i64> {
        admin
            .query_rows(
                "SELECT CAST(session_id AS bigint) FROM sys.dm_exec_sessions \
                 WHERE program_name = @P1",
                &[Value::from(application)],
            )
            .await
            .unwrap()
            .into_iter()
            .map(|row| row[0].as_i64().expect("a session id"))
            .collect()
    }

    /// Ends every session of `application` and waits until the server shows none.
    async fn kill_all(admin: &Mssql, application: &str) -> usize {
        // A session the pool opened shows in the view once its login has settled; on a
        // loaded server (the whole suite at once) that took longer than five seconds.
        let settled = std::time::Instant::now() + Duration::from_secs(60);
        let mut killed = sessions(admin, application).await;
        while killed.is_empty() && std::time::Instant::now() < settled {
            tokio::time::sleep(Duration::from_millis(10)).await;
            killed = sessions(admin, application).await;
        }
        for id in &killed {
            // A session id the server gave, an integer: `KILL` takes no parameter. One
            // that ended meanwhile is refused; the wait below sees every one gone.
            let _ = admin.execute_batch(&format!("KILL {id}")).await;
        }
        for _ in 0..1000 {
            if sessions(admin, application).await.is_empty() {
                return killed.len();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the killed sessions never ended");
    }

    async fn store(place: &TestSchema, application: &str) -> (Store<Mssql>, Vec<Uuid>) {
        let url = format!("{};Application Name={application}", place.url());
        let options = MssqlOptions::default()
            .max_connections(CONNECTIONS)
            .open_at_connect(CONNECTIONS);
        let table = FencedTable::builder()
            .table(place.qualified("Killed"))
            .build()
            .unwrap();
        let store = Store::new(connect(&url, options).await, table);
        store.create_schema().await.unwrap();
        let keys: Vec<Uuid> = (0..CONNECTIONS * 2).map(|_| Uuid::new_v4()).collect();
        for key in &keys {
            store.provision(*key).await.unwrap();
        }
        (store, keys)
    }

    /// Acquires every key, `CONNECTIONS` at a time, which leaves the pool full.
    async fn acquire_all(store: &Store<Mssql>, keys: &[Uuid]) -> Vec<Lease> {
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
        leases
    }

    /// Three rounds: acquire every key, kill every session, renew and release every
    /// lease. Negative control: a connection of the test's own, killed the same way,
    /// fails its next statement with no answer, which says nothing of whether it ran.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn statements_after_the_server_ended_idle_connections_are_applied() {
        let Some(place) = TestSchema::create("fenced_killed_", 1).await else {
            return;
        };
        let application = format!("fenced_{}", Uuid::new_v4().simple());
        let (store, keys) = store(&place, &application).await;
        for round in 0..3 {
            let leases = acquire_all(&store, &keys).await;
            let killed = kill_all(place.admin(), &application).await;
            // As many as the acquisitions needed at once, each idle now.
            assert!(killed >= 1, "round {round}: no session killed");
            for lease in &leases {
                let renewed = store.renew(lease).await;
                assert!(
                    matches!(renewed, Ok(fenced_guard::Outcome::Applied)),
                    "round {round}: {renewed:?}"
                );
            }
            for lease in &leases {
                assert!(store.release(lease).await.unwrap().is_applied());
            }
        }

        let control = format!("fenced_{}", Uuid::new_v4().simple());
        let config = tiberius::Config::from_ado_string(&format!(
            "{};Application Name={control}",
            place.url()
        ))
        .unwrap();
        let tcp = tokio::net::TcpStream::connect(config.get_addr())
            .await
            .unwrap();
        let mut client = Box::pin(tiberius::Client::connect(config, tcp.compat_write()))
            .await
            .unwrap();
        client
            .simple_query("SELECT 1")
            .await
            .unwrap()
            .into_results()
            .await
            .unwrap();
        assert_eq!(kill_all(place.admin(), &control).await, 1);
        let after = async { client.simple_query("SELECT 1").await?.into_results().await }.await;
        assert!(after.is_err(), "a killed connection answered: {after:?}");
        drop(client);
        place.teardown().await;
    }
}
