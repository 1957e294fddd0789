//! sqlx's PostgreSQL: a caller's `PgPool`, `PgConnection` and `Transaction` as
//! executors, and how the guard's values bind to their statements and decode from
//! their rows.

use sqlx::postgres::types::Oid;
use sqlx::postgres::{PgArgumentBuffer, PgRow, PgTypeInfo};
use sqlx::{Encode, PgConnection, PgPool, Postgres, Type};

use super::*;

/// A [`Value`] bound with its own type, or with none for a null.
#[derive(Debug)]
struct Bound(Value);

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

fn decode(row: &PgRow) -> Result<Vec<Value>> {
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
