//! The suite on SQL Server, when `FENCED_MSSQL_URL` (an ADO.NET connection string) is
//! set: one table with a random name per test in `dbo`, dropped at the end. Otherwise
//! every test says plainly that it did not run.

use std::io::Write;

use std::sync::Arc;

use fenced_guard::{
    Backend, ColumnType, Dialect, FencedTable, Mssql, MssqlProcedures, OperationOutcome, Outcome,
    Procedure, Resolution, Store, Value,
};

use crate::suite::{Fixture, read};

pub struct MssqlFixture {
    url: String,
    admin: Mssql,
    table: String,
}

impl Fixture for MssqlFixture {
    type Backend = Mssql;

    async fn connect(&self) -> Mssql {
        Mssql::connect_with(&self.url, 1)
            .await
            .expect("connect to sql server")
    }

    /// The epoch and outcomes tables get per-test names too: `dbo` is shared by every
    /// test, and one test's epoch advance must not touch another's leases.
    fn table(&self) -> FencedTable {
        let t = &self.table;
        FencedTable::builder()
            .table(format!("dbo.{t}"))
            .epoch_table(format!("dbo.{t}_epoch"))
            .operations_table(format!("dbo.{t}_ops"))
            .published_at_column("PublishedAtUtc")
            .column("Payload", ColumnType::Text)
            .build()
            .expect("valid test table")
    }

    fn other_table(&self, suffix: &str) -> String {
        format!("dbo.{}_{suffix}", self.table)
    }

    async fn teardown(&self) {
        let t = &self.table;
        let mut batch = String::new();
        for suffix in [
            "",
            "_epoch",
            "_ops",
            "_bigint",
            "_bigint_epoch",
            "_bigint_ops",
            "_text",
            "_text_epoch",
            "_text_ops",
        ] {
            batch.push_str(&format!("DROP TABLE IF EXISTS [dbo].[{t}{suffix}]; "));
        }
        for p in Procedure::ALL {
            batch.push_str(&format!(
                "DROP PROCEDURE IF EXISTS {}; ",
                MssqlProcedures::new(&self.table())
                    .expect("procedure names")
                    .name(p)
                    .quoted(Dialect::Mssql)
            ));
        }
        self.admin
            .execute_batch(&batch)
            .await
            .expect("drop the test tables and procedures");
    }
}

async fn setup() -> Option<MssqlFixture> {
    let Ok(url) = std::env::var("FENCED_MSSQL_URL") else {
        // Written past the test harness's capture, once, so that it shows in every run.
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            let _ = writeln!(
                std::io::stderr(),
                "SQL Server conformance did not run: FENCED_MSSQL_URL is not set"
            );
        });
        return None;
    };
    let admin = Mssql::connect_with(&url, 2).await.unwrap_or_else(|error| {
        panic!(
            "SQL Server is not reachable with FENCED_MSSQL_URL: {error} ({:?})",
            std::error::Error::source(&error)
        )
    });
    let table = format!("fenced_{}", uuid::Uuid::new_v4().simple());
    Some(MssqlFixture { url, admin, table })
}

crate::conformance!(setup);

/// Permission-enforced deployment: the procedures are installed, and a store in
/// procedure mode runs the protocol through them (acquire, renew, publish with an
/// operation id and its retry, publish-and-release, release, provision, epoch advance).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_runs_through_the_stored_procedures() {
    let Some(fixture) = setup().await else { return };
    let fixture = Arc::new(fixture);
    let run = tokio::spawn({
        let fx = Arc::clone(&fixture);
        async move {
            let table = fx.table();
            let plain = Store::new(fx.connect().await, table.clone());
            plain.create_schema().await.expect("create schema");
            let procedures = MssqlProcedures::new(&table).expect("procedure names");
            for batch in procedures.procedure_batches() {
                fx.admin
                    .execute_batch(&batch)
                    .await
                    .expect("install a procedure");
            }
            let s = Store::new(fx.connect().await, table)
                .through_procedures()
                .expect("procedure mode");
            assert!(s.uses_procedures());
            let key = uuid::Uuid::new_v4();
            assert!(s.provision(key).await.unwrap());
            assert!(!s.provision(key).await.unwrap());
            let ttl = std::time::Duration::from_secs(300);
            let lease = s.try_acquire(key, ttl).await.unwrap().expect("free row");
            assert_eq!(lease.generation(), 1);
            assert!(s.try_acquire(key, ttl).await.unwrap().is_none());
            assert_eq!(s.renew(&lease).await.unwrap(), Outcome::Applied);
            let payload = [("Payload", Value::from("through procedures"))];
            assert!(matches!(
                s.update(&lease, &payload).await,
                Err(fenced_guard::Error::Config(_))
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
            let row = read(&plain, &fenced_guard::Key::from(key)).await;
            assert_eq!(row.published, 3);
            assert_eq!(row.owner, None);
        }
    })
    .await;
    fixture.teardown().await;
    if let Err(error) = run {
        std::panic::resume_unwind(error.into_panic());
    }
}
