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
    use fenced_guard::Executor;

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

/// Whether an error may have committed, by where it happened. SQLite runs in the
/// process: every error of its own is the statement's answer, rolled back.
mod classification {
    use fenced_guard::{Error, Executor, Value};

    use crate::classification::{a_good_publication_is_published, publication_is_not_retried};
    use crate::support::Place;
    use crate::support::sqlite::TempDatabase;

    #[tokio::test]
    async fn a_statement_that_fails_to_prepare_did_not_commit() {
        let place = TempDatabase::new("classes.db");
        let error = publication_is_not_retried(&place, vec![("Missing", Value::I64(1))]).await;
        assert!(error.to_string().contains("no such column"), "{error}");
        a_good_publication_is_published(&TempDatabase::new("good.db")).await;
    }

    #[tokio::test]
    async fn a_value_of_the_wrong_type_for_a_strict_table_did_not_commit() {
        let place = TempDatabase::new("strict.db");
        let backend = place.connect().await;
        backend
            .execute_batch("CREATE TABLE t (x INTEGER) STRICT")
            .await
            .unwrap();
        let error = backend
            .execute("INSERT INTO t VALUES (?1)", &[Value::from("seven")])
            .await
            .unwrap_err();
        assert!(matches!(error, Error::Sqlite(_)), "{error:?}");
        assert!(!error.may_have_committed(), "{error}");
        let rows = backend
            .query_row("SELECT count(*) FROM t", &[])
            .await
            .unwrap();
        assert_eq!(rows, Some(vec![Value::I64(0)]));
    }
}
