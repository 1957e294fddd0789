//! SQLite for the tests: one database file in a temporary directory of its own, removed
//! with the fixture.

use std::path::PathBuf;

use fenced_guard::{Sqlite, SqliteOptions};
use tempfile::TempDir;

use super::Place;

/// A database file named `file` in a new temporary directory.
pub struct TempDatabase {
    dir: TempDir,
    file: &'static str,
    options: SqliteOptions,
}

impl TempDatabase {
    /// A new temporary directory; the file is created by the first open.
    pub fn new(file: &'static str) -> TempDatabase {
        TempDatabase::with_options(file, SqliteOptions::default())
    }

    /// As [`TempDatabase::new`], opened with `options`.
    pub fn with_options(file: &'static str, options: SqliteOptions) -> TempDatabase {
        TempDatabase {
            dir: tempfile::tempdir().expect("temporary directory"),
            file,
            options,
        }
    }

    /// Where the database file is.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join(self.file)
    }
}

impl Place for TempDatabase {
    type Backend = Sqlite;

    /// A new backend on the file with the fixture's options.
    async fn connect(&self) -> Sqlite {
        Sqlite::open_with(self.path(), self.options)
            .await
            .expect("open the sqlite file")
    }

    /// `table` itself: the file holds nothing else.
    fn qualified(&self, table: &str) -> String {
        table.to_owned()
    }

    /// Nothing to drop: the directory goes with the fixture.
    async fn teardown(&self) {}
}
