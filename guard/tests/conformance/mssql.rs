//! The suite on SQL Server, when `FENCED_MSSQL_URL` (an ADO.NET connection string) is
//! set: one table with a random name per test in `dbo`, dropped at the end. Otherwise
//! every test says plainly that it did not run.

use std::io::Write;

use fenced_guard::{Backend, FencedTable, Mssql};

use crate::suite::{Fixture, report_table};

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

    fn table(&self) -> FencedTable {
        report_table(&format!("dbo.{}", self.table))
    }

    fn other_table(&self, suffix: &str) -> String {
        format!("dbo.{}_{suffix}", self.table)
    }

    async fn teardown(&self) {
        let t = &self.table;
        self.admin
            .execute_batch(&format!(
                "DROP TABLE IF EXISTS [dbo].[{t}]; DROP TABLE IF EXISTS [dbo].[{t}_bigint]; \
                 DROP TABLE IF EXISTS [dbo].[{t}_text]"
            ))
            .await
            .expect("drop the test tables");
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
