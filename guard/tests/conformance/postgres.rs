//! The suite on PostgreSQL: one schema with a random name per test, dropped at the end.
//! The server must be reachable; the tests fail (never skip) otherwise.

use fenced_guard::{Backend, FencedTable, Postgres};

use crate::suite::{Fixture, report_table};

const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

fn url() -> String {
    std::env::var("FENCED_PG_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

pub struct PostgresFixture {
    admin: Postgres,
    schema: String,
}

impl Fixture for PostgresFixture {
    type Backend = Postgres;

    async fn connect(&self) -> Postgres {
        Postgres::connect_with(&url(), 1)
            .await
            .expect("connect to postgresql")
    }

    fn table(&self) -> FencedTable {
        report_table(&format!("{}.ReportPublication", self.schema))
    }

    fn other_table(&self, suffix: &str) -> String {
        format!("{}.Report_{suffix}", self.schema)
    }

    async fn teardown(&self) {
        self.admin
            .execute_batch(&format!(
                "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
                self.schema
            ))
            .await
            .expect("drop the test schema");
    }
}

async fn setup() -> Option<PostgresFixture> {
    let url = url();
    let admin = match Postgres::connect_with(&url, 2).await {
        Ok(admin) => admin,
        Err(error) => panic!(
            "PostgreSQL is not reachable at `{url}` ({error}: {:?}). Start it with \
             `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`, \
             or point FENCED_PG_URL at a server (user with CREATE on the database).",
            std::error::Error::source(&error)
        ),
    };
    let schema = format!("fenced_{}", uuid::Uuid::new_v4().simple());
    admin
        .execute_batch(&format!("CREATE SCHEMA \"{schema}\""))
        .await
        .expect("create the test schema");
    Some(PostgresFixture { admin, schema })
}

crate::conformance!(setup);
