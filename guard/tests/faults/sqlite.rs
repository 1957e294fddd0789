//! SQLite for the fault tests: one database file per run in a temporary directory, each
//! worker with its own connection. There is no wire to cut: the faults are pauses.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use fenced_guard::{
    Dialect, Error, Executor, FencedTable, Lease, Outcome, Sqlite, SqliteOptions, Store, Value,
};

use crate::history::{Bench, Caller, CallerFuture, CallerOutcome, TraceEntry, job_table};
use crate::proxy::Proxy;
use crate::support::sqlite::TempDatabase;

/// A database file of its own.
pub struct SqliteBench {
    db: TempDatabase,
}

impl SqliteBench {
    pub fn setup() -> SqliteBench {
        SqliteBench {
            db: TempDatabase::new("faults.db"),
        }
    }

    async fn open(&self) -> Sqlite {
        Sqlite::open_with(self.db.path(), SqliteOptions::default().max_connections(1))
            .await
            .expect("open the sqlite file")
    }
}

/// A worker's own rusqlite connection to the run's file, as a service keeps one.
struct OwnConnection(rusqlite::Connection);

/// A statement on a rusqlite connection completes when first polled.
fn now<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("a rusqlite statement is synchronous"),
    }
}

impl OwnConnection {
    /// The whole fenced transaction, synchronously: no await holds the connection.
    fn update(
        &self,
        store: &Store<Sqlite>,
        lease: &Lease,
        columns: &[(&'static str, Value)],
        autocommit_first: bool,
    ) -> fenced_guard::Result<CallerOutcome> {
        let conn = &self.0;
        let autocommit_refused = if autocommit_first {
            match now(store.on(conn)?.fence(lease)) {
                Err(Error::NotInTransaction(_)) => Some(true),
                Ok(Some(_)) => Some(false),
                // Refused for being stale, before the transaction was looked at.
                Ok(None) => None,
                Err(other) => return Err(other),
            }
        } else {
            None
        };
        conn.execute_batch("BEGIN IMMEDIATE")
            .map_err(Error::Sqlite)?;
        let outcome = (|| {
            let Some(fenced) = now(store.on(conn)?.fence(lease))? else {
                return Ok(Outcome::Refused);
            };
            now(fenced.store().update(lease, columns))
        })();
        let end = if matches!(outcome, Ok(Outcome::Applied)) {
            "COMMIT"
        } else {
            "ROLLBACK"
        };
        conn.execute_batch(end).map_err(Error::Sqlite)?;
        Ok(CallerOutcome {
            outcome: outcome?,
            autocommit_refused,
        })
    }
}

impl Caller<Sqlite> for OwnConnection {
    fn fenced_update<'a>(
        &'a mut self,
        store: &'a Store<Sqlite>,
        lease: &'a Lease,
        columns: &'a [(&'static str, Value)],
        autocommit_first: bool,
    ) -> CallerFuture<'a> {
        let result = self.update(store, lease, columns, autocommit_first);
        Box::pin(async move { result })
    }

    fn can_try_autocommit(&self) -> bool {
        true
    }
}

impl Bench for SqliteBench {
    type Backend = Sqlite;

    async fn caller(&self) -> Option<Box<dyn Caller<Sqlite>>> {
        let conn = rusqlite::Connection::open(self.db.path()).expect("open the sqlite file");
        // The guard's connections wait for the write lock; so does the service's.
        conn.busy_timeout(Duration::from_secs(5))
            .expect("busy timeout");
        Some(Box::new(OwnConnection(conn)))
    }

    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn table(&self) -> FencedTable {
        job_table("Job")
    }

    async fn prepare(&self) {
        let store = Store::new(self.open().await, self.table());
        store
            .create_schema()
            .await
            .expect("create the fenced table");
        let d = Dialect::Sqlite;
        let table = store.table();
        let c = |name: &str| fenced_guard::Identifier::new(name).unwrap().quoted(d);
        let generation = table.generation_column().quoted(d);
        let sql = format!(
            "CREATE TABLE \"JobTrace\" (\"Seq\" INTEGER PRIMARY KEY AUTOINCREMENT, \
             \"JobId\" INTEGER NOT NULL, \"OldGeneration\" INTEGER NOT NULL, \
             \"Generation\" INTEGER NOT NULL, \"OldWriteId\" INTEGER NULL, \
             \"WriteId\" INTEGER NULL, \"WriterGeneration\" INTEGER NULL, \
             \"WriteKind\" TEXT NULL);
             CREATE TRIGGER \"JobTraceRow\" AFTER UPDATE ON {table} FOR EACH ROW BEGIN
               INSERT INTO \"JobTrace\" (\"JobId\", \"OldGeneration\", \"Generation\", \
                 \"OldWriteId\", \"WriteId\", \"WriterGeneration\", \"WriteKind\")
               VALUES (NEW.{key}, OLD.{generation}, NEW.{generation}, OLD.{write_id}, \
                 NEW.{write_id}, NEW.{writer}, NEW.{kind});
             END;",
            key = table.key_column().quoted(d),
            write_id = c("WriteId"),
            writer = c("WriterGeneration"),
            kind = c("WriteKind"),
            table = table.name().quoted(d),
        );
        store
            .backend()
            .execute_batch(&sql)
            .await
            .expect("create the trace table and its trigger");
    }

    async fn worker(&self) -> (Store<Sqlite>, Option<Proxy>) {
        (Store::new(self.open().await, self.table()), None)
    }

    async fn trace(&self) -> Vec<TraceEntry> {
        let path = self.db.path();
        tokio::task::spawn_blocking(move || {
            let conn = rusqlite::Connection::open(path)?;
            let mut stmt = conn.prepare(
                "SELECT \"Seq\", \"JobId\", \"OldGeneration\", \"Generation\", \"OldWriteId\", \
                 \"WriteId\", \"WriterGeneration\", \"WriteKind\" FROM \"JobTrace\" \
                 ORDER BY \"Seq\"",
            )?;
            let rows = stmt.query_map([], |row| {
                Ok(TraceEntry {
                    seq: row.get(0)?,
                    row: row.get(1)?,
                    old_generation: row.get(2)?,
                    generation: row.get(3)?,
                    old_write_id: row.get(4)?,
                    write_id: row.get(5)?,
                    writer_generation: row.get(6)?,
                    kind: row.get(7)?,
                })
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })
        .await
        .expect("the trace reader")
        .expect("read the trace")
    }

    async fn teardown(&self) {}
}
