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

    fn other_table(&self, suffix: &str) -> String {
        format!("Report_{suffix}")
    }

    async fn teardown(&self) {}
}

async fn setup() -> Option<SqliteFixture> {
    Some(SqliteFixture {
        dir: tempfile::tempdir().expect("temporary directory"),
    })
}

crate::conformance!(setup);

/// The file is in WAL mode once opened, as every later connection sees it.
#[tokio::test]
async fn sqlite_file_is_in_wal_mode() {
    use fenced_guard::Backend;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wal.db");
    drop(Sqlite::open(&path).await.unwrap());
    let again = Sqlite::open(&path).await.unwrap();
    let mode = again
        .query_row("PRAGMA journal_mode", &[])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(mode[0].as_str(), Some("wal"));
}
