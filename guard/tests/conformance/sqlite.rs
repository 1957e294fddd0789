//! The suite on SQLite: one database file per test in a temporary directory.

use fenced_guard::{FencedTable, Sqlite};

use crate::suite::{Fixture, report_table};
use crate::support::sqlite::TempDatabase;

pub struct SqliteFixture {
    db: TempDatabase,
}

impl Fixture for SqliteFixture {
    type Backend = Sqlite;

    async fn connect(&self) -> Sqlite {
        self.db.open().await
    }

    fn table(&self) -> FencedTable {
        report_table("ReportPublication")
    }

    fn other_table(&self, suffix: &str) -> String {
        format!("Report_{suffix}")
    }

    async fn teardown(&self) {}
}

async fn setup() -> Option<SqliteFixture> {
    Some(SqliteFixture {
        db: TempDatabase::new("fenced.db"),
    })
}

crate::conformance!(setup);

/// The file is in WAL mode once opened, as every later connection sees it.
#[tokio::test]
async fn sqlite_file_is_in_wal_mode() {
    use fenced_guard::Backend;

    let db = TempDatabase::new("wal.db");
    drop(db.open().await);
    let again = db.open().await;
    let mode = again
        .query_row("PRAGMA journal_mode", &[])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(mode[0].as_str(), Some("wal"));
}
