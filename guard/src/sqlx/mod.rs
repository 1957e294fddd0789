//! sqlx: a caller's pools, connections and transactions, PostgreSQL and SQLite.
//!
//! Statements go through sqlx's own prepared statement cache. Values are bound with the
//! type of each [`Value`]; a null is bound with no type on PostgreSQL, so the server
//! infers it from the column, as for the guard's own pool. SQLite receives a UUID as
//! its hyphenated lowercase text, as the guard stores it.

use sqlx::{AssertSqlSafe, Column as _, Row as _, TypeInfo as _};
use tokio::sync::Mutex;

use crate::dialect::kind::Dialect;
use crate::error::{Error, Result};
use crate::executor::{Executor, InTransaction, IntoExecutor};
use crate::value::Value;

impl From<sqlx::Error> for Error {
    fn from(error: sqlx::Error) -> Self {
        Error::Sqlx(error)
    }
}

/// The type name sqlx gives a column, for a column this module does not decode.
fn undecoded(name: &str, type_name: &str) -> Error {
    Error::UnexpectedResult(format!(
        "column {name} has type {type_name}, which is not decoded; cast it in the query"
    ))
}

#[cfg(feature = "sqlx-postgres")]
mod postgres {
    use sqlx::postgres::types::Oid;
    use sqlx::postgres::{PgArgumentBuffer, PgRow, PgTypeInfo};
    use sqlx::{Encode, Postgres, Type};

    use super::*;

    /// A [`Value`] bound with its own type, or with none for a null.
    #[derive(Debug)]
    pub(super) struct Bound(pub(super) Value);

    impl Type<Postgres> for Bound {
        fn type_info() -> PgTypeInfo {
            // Unspecified: the server infers it. `produces` gives each value's own.
            PgTypeInfo::with_oid(Oid(0))
        }

        fn compatible(_: &PgTypeInfo) -> bool {
            true
        }
    }

    impl Encode<'_, Postgres> for Bound {
        fn encode_by_ref(
            &self,
            buf: &mut PgArgumentBuffer,
        ) -> std::result::Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
            match &self.0 {
                Value::Null => Ok(sqlx::encode::IsNull::Yes),
                Value::Bool(v) => <bool as Encode<Postgres>>::encode_by_ref(v, buf),
                Value::I64(v) => <i64 as Encode<Postgres>>::encode_by_ref(v, buf),
                Value::F64(v) => <f64 as Encode<Postgres>>::encode_by_ref(v, buf),
                Value::Text(v) => <String as Encode<Postgres>>::encode_by_ref(v, buf),
                Value::Bytes(v) => <Vec<u8> as Encode<Postgres>>::encode_by_ref(v, buf),
                Value::Uuid(v) => <uuid::Uuid as Encode<Postgres>>::encode_by_ref(v, buf),
            }
        }

        fn produces(&self) -> Option<PgTypeInfo> {
            match &self.0 {
                Value::Null => None,
                Value::Bool(_) => Some(<bool as Type<Postgres>>::type_info()),
                Value::I64(_) => Some(<i64 as Type<Postgres>>::type_info()),
                Value::F64(_) => Some(<f64 as Type<Postgres>>::type_info()),
                Value::Text(_) => Some(<String as Type<Postgres>>::type_info()),
                Value::Bytes(_) => Some(<Vec<u8> as Type<Postgres>>::type_info()),
                Value::Uuid(_) => Some(<uuid::Uuid as Type<Postgres>>::type_info()),
            }
        }
    }

    pub(super) fn decode(row: &PgRow) -> Result<Vec<Value>> {
        (0..row.len())
            .map(|i| {
                let column = row.column(i);
                let value = match column.type_info().name() {
                    "BOOL" => row.try_get::<Option<bool>, _>(i)?.map(Value::Bool),
                    "INT2" => row
                        .try_get::<Option<i16>, _>(i)?
                        .map(|v| Value::I64(v.into())),
                    "INT4" => row
                        .try_get::<Option<i32>, _>(i)?
                        .map(|v| Value::I64(v.into())),
                    "INT8" => row.try_get::<Option<i64>, _>(i)?.map(Value::I64),
                    "FLOAT4" => row
                        .try_get::<Option<f32>, _>(i)?
                        .map(|v| Value::F64(v.into())),
                    "FLOAT8" => row.try_get::<Option<f64>, _>(i)?.map(Value::F64),
                    "TEXT" | "VARCHAR" | "BPCHAR" | "NAME" => {
                        row.try_get::<Option<String>, _>(i)?.map(Value::Text)
                    }
                    "BYTEA" => row.try_get::<Option<Vec<u8>>, _>(i)?.map(Value::Bytes),
                    "UUID" => row.try_get::<Option<uuid::Uuid>, _>(i)?.map(Value::Uuid),
                    other => return Err(undecoded(column.name(), other)),
                };
                Ok(value.unwrap_or(Value::Null))
            })
            .collect()
    }
}

#[cfg(feature = "sqlx-sqlite")]
mod sqlite {
    use sqlx::sqlite::SqliteRow;
    use sqlx::{Sqlite, ValueRef as _};

    use super::*;

    pub(super) fn bind<'q>(
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
    pub(super) fn decode(row: &SqliteRow) -> Result<Vec<Value>> {
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
}

/// Implements [`Executor`] for one sqlx executor type, given how to reach a
/// `sqlx::Executor` from `&self`.
macro_rules! sqlx_executor {
    ($ty:ty, $db:ty, $dialect:expr, $bind:expr, $decode:expr, |$this:ident| $executor:expr $(, $extra:item)*) => {
        impl Executor for $ty {
            $($extra)*

            fn dialect(&self) -> Dialect {
                $dialect
            }

            async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
                let query = params
                    .iter()
                    .fold(sqlx::query::<$db>(AssertSqlSafe(sql.to_owned())), $bind);
                let $this = self;
                Ok(query.execute($executor).await?.rows_affected())
            }

            async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
                let query = params
                    .iter()
                    .fold(sqlx::query::<$db>(AssertSqlSafe(sql.to_owned())), $bind);
                let $this = self;
                // Every row is read, so that a later row's error is the statement's.
                let rows = query.fetch_all($executor).await?;
                rows.first().map($decode).transpose()
            }

            async fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
                let query = params
                    .iter()
                    .fold(sqlx::query::<$db>(AssertSqlSafe(sql.to_owned())), $bind);
                let $this = self;
                query.fetch_all($executor).await?.iter().map($decode).collect()
            }

            async fn execute_batch(&self, sql: &str) -> Result<()> {
                let $this = self;
                sqlx::raw_sql(AssertSqlSafe(sql.to_owned()))
                    .execute($executor)
                    .await?;
                Ok(())
            }
        }
    };
}

#[cfg(feature = "sqlx-postgres")]
pub use self::pg::{SqlxPgConnection, SqlxPgPool};

#[cfg(feature = "sqlx-postgres")]
mod pg {
    use sqlx::{PgConnection, PgPool, Postgres};

    use super::postgres::{Bound, decode};
    use super::*;

    /// A caller's sqlx [`PgPool`], as an [`Executor`]: each statement on any of its
    /// connections, autocommitted. A [`Backend`](crate::Backend): a keeper can renew
    /// through it.
    #[cfg(feature = "sqlx-postgres")]
    #[derive(Clone, Debug)]
    pub struct SqlxPgPool(PgPool);

    /// A caller's sqlx [`PgConnection`] (and so a `sqlx::Transaction`'s, through
    /// `&mut *transaction`), as an [`Executor`]: statements run on it in turn, inside
    /// any transaction open on it.
    #[cfg(feature = "sqlx-postgres")]
    #[derive(Debug)]
    pub struct SqlxPgConnection<'a> {
        conn: Mutex<&'a mut PgConnection>,
        /// Made from a `sqlx::Transaction`, which stays open while it is borrowed.
        transaction: bool,
    }

    /// Only one made from sqlx's `Transaction` fences: a bare connection may have a
    /// transaction begun by hand, or none, and the driver does not say which.
    impl InTransaction for SqlxPgConnection<'_> {}

    impl From<PgPool> for SqlxPgPool {
        /// The pool as a store's backend: `Store::new(SqlxPgPool::from(pool), table)`.
        fn from(pool: PgPool) -> Self {
            SqlxPgPool(pool)
        }
    }

    impl IntoExecutor for &PgPool {
        type Executor = SqlxPgPool;

        fn into_executor(self) -> SqlxPgPool {
            SqlxPgPool(self.clone())
        }
    }

    impl<'a> IntoExecutor for &'a mut PgConnection {
        type Executor = SqlxPgConnection<'a>;

        fn into_executor(self) -> SqlxPgConnection<'a> {
            SqlxPgConnection {
                conn: Mutex::new(self),
                transaction: false,
            }
        }
    }

    impl<'a> IntoExecutor for &'a mut sqlx::Transaction<'_, Postgres> {
        type Executor = SqlxPgConnection<'a>;

        fn into_executor(self) -> SqlxPgConnection<'a> {
            SqlxPgConnection {
                conn: Mutex::new(&mut **self),
                transaction: true,
            }
        }
    }

    fn bind<'q>(
        query: sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>,
        value: &Value,
    ) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
        query.bind(Bound(value.clone()))
    }

    sqlx_executor!(
        SqlxPgPool,
        Postgres,
        Dialect::Postgres,
        bind,
        decode,
        |this| &this.0
    );
    sqlx_executor!(
        SqlxPgConnection<'_>,
        Postgres,
        Dialect::Postgres,
        bind,
        decode,
        |this| &mut **this.conn.lock().await,
        fn transaction_open(&self) -> Option<bool> {
            Some(self.transaction)
        }
    );
}

#[cfg(feature = "sqlx-sqlite")]
pub use self::lite::{SqlxSqliteConnection, SqlxSqlitePool};

#[cfg(feature = "sqlx-sqlite")]
mod lite {
    use sqlx::{Sqlite, SqliteConnection, SqlitePool};

    use super::sqlite::{bind, decode};
    use super::*;

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
}
