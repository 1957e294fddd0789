//! sqlx's SQLite: a caller's `SqlitePool`, `SqliteConnection` and `Transaction` as
//! executors, and how the guard's values bind to their statements and decode from
//! their rows.

use sqlx::sqlite::SqliteRow;
use sqlx::{Sqlite, SqliteConnection, SqlitePool, ValueRef as _};

use super::*;

fn bind<'q>(
    query: sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments>,
    value: &Value,
) -> sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments> {
    match value {
        Value::Null => query.bind(None::<i64>),
        Value::Bool(v) => query.bind(*v),
        Value::I64(v) => query.bind(*v),
        Value::F64(v) => query.bind(*v),
        Value::Text(v) => query.bind(v.clone()),
        Value::Bytes(v) => query.bind(v.clone()),
        Value::Uuid(v) => query.bind(v.hyphenated().to_string()),
    }
}

/// Decodes by each value's own storage class, as SQLite types values, not columns.
fn decode(row: &SqliteRow) -> Result<Vec<Value>> {
    (0..row.len())
        .map(|i| {
            let raw = row.try_get_raw(i)?;
            if raw.is_null() {
                return Ok(Value::Null);
            }
            let storage = raw.type_info().name().to_owned();
            Ok(match storage.as_str() {
                "INTEGER" => Value::I64(row.try_get_unchecked::<i64, _>(i)?),
                "REAL" => Value::F64(row.try_get_unchecked::<f64, _>(i)?),
                "TEXT" => Value::Text(row.try_get_unchecked::<String, _>(i)?),
                "BLOB" => Value::Bytes(row.try_get_unchecked::<Vec<u8>, _>(i)?),
                other => return Err(undecoded(row.column(i).name(), other)),
            })
        })
        .collect()
}

/// A caller's sqlx [`SqlitePool`], as an [`Executor`]: each statement on any of its
/// connections, autocommitted; a write with an operation id takes one connection
/// for its write and record. A [`Backend`](crate::Backend).
#[cfg(feature = "sqlx-sqlite")]
#[derive(Clone, Debug)]
pub struct SqlxSqlitePool(SqlitePool);

/// A caller's sqlx [`SqliteConnection`] (and so a `sqlx::Transaction`'s), as an
/// [`Executor`]: statements run on it in turn, inside any transaction open on it.
#[cfg(feature = "sqlx-sqlite")]
#[derive(Debug)]
pub struct SqlxSqliteConnection<'a> {
    conn: Mutex<&'a mut SqliteConnection>,
    /// Made from a `sqlx::Transaction`, which stays open while it is borrowed.
    transaction: bool,
}

/// Only one made from sqlx's `Transaction` fences: a bare connection may have a
/// transaction begun by hand, or none, and the driver does not say which.
impl InTransaction for SqlxSqliteConnection<'_> {}

impl From<SqlitePool> for SqlxSqlitePool {
    /// The pool as a store's backend: `Store::new(SqlxSqlitePool::from(pool), table)`.
    fn from(pool: SqlitePool) -> Self {
        SqlxSqlitePool(pool)
    }
}

impl IntoExecutor for &SqlitePool {
    type Executor = SqlxSqlitePool;

    fn into_executor(self) -> SqlxSqlitePool {
        SqlxSqlitePool(self.clone())
    }
}

impl<'a> IntoExecutor for &'a mut SqliteConnection {
    type Executor = SqlxSqliteConnection<'a>;

    fn into_executor(self) -> SqlxSqliteConnection<'a> {
        SqlxSqliteConnection {
            conn: Mutex::new(self),
            transaction: false,
        }
    }
}

impl<'a> IntoExecutor for &'a mut sqlx::Transaction<'_, Sqlite> {
    type Executor = SqlxSqliteConnection<'a>;

    fn into_executor(self) -> SqlxSqliteConnection<'a> {
        SqlxSqliteConnection {
            conn: Mutex::new(&mut **self),
            transaction: true,
        }
    }
}

/// `write`, and `record` when it changed exactly one row, inside a savepoint on
/// `conn`: released on success, rolled back to on any error. A savepoint nests in an
/// open transaction, or is a transaction of its own outside one.
async fn execute_then_record(
    conn: &mut SqliteConnection,
    write: (&str, &[Value]),
    record: (&str, &[Value]),
) -> Result<u64> {
    sqlx::raw_sql("SAVEPOINT fenced_record")
        .execute(&mut *conn)
        .await?;
    let body = async {
        let query = |(sql, params): (&str, &[Value])| {
            params
                .iter()
                .fold(sqlx::query::<Sqlite>(AssertSqlSafe(sql.to_owned())), bind)
        };
        let rows = query(write).execute(&mut *conn).await?.rows_affected();
        if rows == 1 {
            query(record).execute(&mut *conn).await?;
        }
        Ok::<_, Error>(rows)
    }
    .await;
    let end = match body {
        Ok(_) => "RELEASE fenced_record",
        Err(_) => "ROLLBACK TO fenced_record; RELEASE fenced_record",
    };
    let ended = sqlx::raw_sql(end).execute(&mut *conn).await;
    let rows = body?;
    ended?;
    Ok(rows)
}

sqlx_executor!(
    SqlxSqlitePool,
    Sqlite,
    Dialect::Sqlite,
    bind,
    decode,
    |this| &this.0,
    async fn execute_then_record(
        &self,
        write: &str,
        write_params: &[Value],
        record: &str,
        record_params: &[Value],
    ) -> Result<u64> {
        let mut conn = self.0.acquire().await?;
        execute_then_record(&mut conn, (write, write_params), (record, record_params)).await
    }
);
sqlx_executor!(
    SqlxSqliteConnection<'_>,
    Sqlite,
    Dialect::Sqlite,
    bind,
    decode,
    |this| &mut **this.conn.lock().await,
    fn transaction_open(&self) -> Option<bool> {
        Some(self.transaction)
    },
    async fn execute_then_record(
        &self,
        write: &str,
        write_params: &[Value],
        record: &str,
        record_params: &[Value],
    ) -> Result<u64> {
        let mut conn = self.conn.lock().await;
        execute_then_record(&mut conn, (write, write_params), (record, record_params)).await
    }
);
