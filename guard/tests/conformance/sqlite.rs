//! The suite on SQLite: one database file per test in a temporary directory, once
//! with each way of running statements.

use crate::support::Place;
use crate::support::sqlite::TempDatabase;

async fn setup() -> Option<TempDatabase> {
    Some(TempDatabase::new("fenced.db"))
}

crate::conformance!(setup);

/// The suite again with statements run in place on the runtime's threads.
mod in_place {
    use fenced_guard::{SqliteExecution, SqliteOptions};

    use crate::support::sqlite::TempDatabase;

    async fn setup() -> Option<TempDatabase> {
        let options = SqliteOptions::default().execution(SqliteExecution::InPlace);
        Some(TempDatabase::with_options("fenced.db", options))
    }

    crate::conformance!(setup);
}

/// The file is in WAL mode once opened, as every later connection sees it.
#[tokio::test]
async fn sqlite_file_is_in_wal_mode() {
    use fenced_guard::Backend;

    let db = TempDatabase::new("wal.db");
    drop(db.connect().await);
    let again = db.connect().await;
    let mode = again
        .query_row("PRAGMA journal_mode", &[])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(mode[0].as_str(), Some("wal"));
}
