//! The schedules on SQLite. SQLite's lock is the database's write lock: a probe
//! connection that cannot take it, with no busy timeout, shows it held.

use std::time::Duration;

use fenced_guard::{Sqlite, SqliteOptions, Value};

use crate::suite::Fixture;
use crate::support::sqlite::TempDatabase;

/// A busy timeout long enough that the waiter is still waiting when the holder commits.
async fn setup() -> Option<TempDatabase> {
    Some(TempDatabase::with_options(
        "transaction.db",
        SqliteOptions::default().busy_timeout(Duration::from_secs(30)),
    ))
}

impl Fixture for TempDatabase {
    async fn marker(&self, _waiter: &Sqlite) -> Value {
        Value::Null
    }

    /// The write lock is held by another connection; the waiter, whose statement needs
    /// it, has had its first try.
    async fn until_blocked(&self, _marker: &Value) {
        let probe = rusqlite::Connection::open(self.path()).expect("open a probe");
        let held = probe.execute_batch("BEGIN IMMEDIATE");
        assert!(
            held.as_ref()
                .is_err_and(|e| e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)),
            "the write lock is not held: {held:?}"
        );
        // The waiter's task runs on the other worker thread; its first try finds the
        // lock held. Were it not to run before the commit, the test would only be weaker.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

crate::transactions!(with_epoch_lock setup);
