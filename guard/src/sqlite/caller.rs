//! rusqlite: a caller's `Connection` or `Transaction`.

use std::future::ready;

use rusqlite::{Connection, Transaction};

use super::rows::{all_rows, first_row, rows_changed};
use crate::dialect::kind::Dialect;
use crate::error::{Error, Result};
use crate::executor::{Executor, InTransaction, IntoExecutor};
use crate::value::Value;

/// A caller's rusqlite [`Connection`] (or the connection of a [`Transaction`]), as an
/// [`Executor`].
///
/// Statements run synchronously, on the calling thread, with the connection's own busy
/// timeout (rusqlite's default is 5 s), and are kept in its prepared statement cache.
/// Each future is ready when first polled. A write carrying an operation id runs its
/// write and record inside a savepoint, so it works inside the caller's transaction too.
#[cfg(feature = "sqlite")]
#[derive(Debug)]
pub struct RusqliteConnection<'a>(&'a Connection);

impl<'a> IntoExecutor for &'a Connection {
    type Executor = RusqliteConnection<'a>;

    fn into_executor(self) -> Self::Executor {
        RusqliteConnection(self)
    }
}

impl<'a> IntoExecutor for &'a Transaction<'_> {
    type Executor = RusqliteConnection<'a>;

    fn into_executor(self) -> Self::Executor {
        RusqliteConnection(self)
    }
}

/// Runs `sql` with `params` and returns the rows it changed.
pub(crate) fn execute(conn: &Connection, sql: &str, params: &[Value]) -> rusqlite::Result<u64> {
    rows_changed(&mut *conn.prepare_cached(sql)?, params)
}

/// Runs `sql` with `params` to its end and returns its first row.
pub(crate) fn query_row(
    conn: &Connection,
    sql: &str,
    params: &[Value],
) -> rusqlite::Result<Option<Vec<Value>>> {
    first_row(&mut *conn.prepare_cached(sql)?, params)
}

/// Runs `sql` with `params` and returns every row.
pub(crate) fn query_rows(
    conn: &Connection,
    sql: &str,
    params: &[Value],
) -> rusqlite::Result<Vec<Vec<Value>>> {
    all_rows(&mut *conn.prepare_cached(sql)?, params)
}

/// `write`, and `record` when it changed exactly one row, inside a savepoint: released
/// on success, rolled back to on any error. A savepoint nests in the caller's open
/// transaction, or is a transaction of its own outside one.
pub(crate) fn execute_then_record(
    conn: &Connection,
    write: (&str, &[Value]),
    record: (&str, &[Value]),
) -> rusqlite::Result<u64> {
    conn.execute_batch("SAVEPOINT fenced_record")?;
    let body = || -> rusqlite::Result<u64> {
        let rows = execute(conn, write.0, write.1)?;
        if rows == 1 {
            execute(conn, record.0, record.1)?;
        }
        Ok(rows)
    };
    match body() {
        Ok(rows) => match conn.execute_batch("RELEASE fenced_record") {
            Ok(()) => Ok(rows),
            Err(error) => {
                let _ = conn.execute_batch("ROLLBACK TO fenced_record; RELEASE fenced_record");
                Err(error)
            }
        },
        Err(error) => {
            let _ = conn.execute_batch("ROLLBACK TO fenced_record; RELEASE fenced_record");
            Err(error)
        }
    }
}

/// rusqlite's `Transaction` derefs to its `Connection`, and a caller may have begun one
/// by hand: the connection itself says whether a transaction is open.
impl InTransaction for RusqliteConnection<'_> {}

impl Executor for RusqliteConnection<'_> {
    fn transaction_open(&self) -> Option<bool> {
        Some(!self.0.is_autocommit())
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&self, sql: &str, params: &[Value]) -> impl Future<Output = Result<u64>> + Send {
        ready(execute(self.0, sql, params).map_err(Error::Sqlite))
    }

    fn query_row(
        &self,
        sql: &str,
        params: &[Value],
    ) -> impl Future<Output = Result<Option<Vec<Value>>>> + Send {
        ready(query_row(self.0, sql, params).map_err(Error::Sqlite))
    }

    fn query_rows(
        &self,
        sql: &str,
        params: &[Value],
    ) -> impl Future<Output = Result<Vec<Vec<Value>>>> + Send {
        ready(query_rows(self.0, sql, params).map_err(Error::Sqlite))
    }

    fn execute_batch(&self, sql: &str) -> impl Future<Output = Result<()>> + Send {
        ready(self.0.execute_batch(sql).map_err(Error::Sqlite))
    }

    fn execute_then_record(
        &self,
        write: &str,
        write_params: &[Value],
        record: &str,
        record_params: &[Value],
    ) -> impl Future<Output = Result<u64>> + Send {
        ready(
            execute_then_record(self.0, (write, write_params), (record, record_params))
                .map_err(Error::Sqlite),
        )
    }
}
