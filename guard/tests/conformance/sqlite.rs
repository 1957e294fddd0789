//! The suite on SQLite: one database file per test in a temporary directory.

use fenced_guard::{FencedTable, Sqlite};
use tempfile::TempDir;

use crate::suite::{Fixture, report_table};

pub struct SqliteFixture {
    dir: TempDir,
}

impl Fixture for SqliteFixture {
    type Backend = Sqlite;

    async fn connect(&self) -> Sqlite {
        Sqlite::open(self.dir.path().join("fenced.db"))
            .await
            .expect("open the sqlite file")
    }

    fn table(&self) -> FencedTable {
        report_table("ReportPublication")
    }

    async fn teardown(&self) {}
}

async fn setup() -> Option<SqliteFixture> {
    Some(SqliteFixture {
        dir: tempfile::tempdir().expect("temporary directory"),
    })
}

crate::conformance!(setup);
