//! The suite on PostgreSQL: one schema with a random name per test, dropped at the end.
//! The server must be reachable; the tests fail (never skip) otherwise.

use fenced_guard::{FencedTable, Postgres};

use crate::suite::{Fixture, report_table};
use crate::support::postgres::{TestSchema, connect};

pub struct PostgresFixture {
    schema: TestSchema,
}

impl Fixture for PostgresFixture {
    type Backend = Postgres;

    async fn connect(&self) -> Postgres {
        connect(1).await
    }

    fn table(&self) -> FencedTable {
        report_table(&self.schema.qualified("ReportPublication"))
    }

    fn other_table(&self, suffix: &str) -> String {
        self.schema.qualified(&format!("Report_{suffix}"))
    }

    async fn teardown(&self) {
        self.schema.drop_schema().await;
    }
}

async fn setup() -> Option<PostgresFixture> {
    Some(PostgresFixture {
        schema: TestSchema::create("fenced_", 2).await,
    })
}

crate::conformance!(setup);
