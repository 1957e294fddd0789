//! PostgreSQL through tokio-postgres, with a deadpool pool and statements prepared once
//! per connection.

use bytes::BytesMut;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{NoTls, Row};

use crate::backend::Backend;
use crate::dialect::Dialect;
use crate::error::{Error, Result};
use crate::value::{Key, Value};

/// The default number of pooled connections of [`Postgres::connect`].
const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// The PostgreSQL backend: a pool of connections (deadpool-postgres), each statement
/// prepared once per connection. Cheap to clone (clones share the pool).
///
/// The expiry column is `timestamptz`, written and compared with `clock_timestamp()`.
#[derive(Clone, Debug)]
pub struct Postgres {
    pool: Pool,
}

impl Postgres {
    /// Connects with a libpq-style connection string (`host=127.0.0.1 user=postgres
    /// dbname=test`) or URL (`postgresql://postgres@127.0.0.1/test`), without TLS, with
    /// a pool of up to 16 connections. One connection is opened at once, so that an
    /// unreachable server is reported here.
    ///
    /// # Errors
    ///
    /// [`Error::Postgres`] for a bad connection string, [`Error::PostgresPool`] if the
    /// server cannot be reached.
    pub async fn connect(config: &str) -> Result<Self> {
        Self::connect_with(config, DEFAULT_MAX_CONNECTIONS).await
    }

    /// As [`connect`](Postgres::connect), with a pool of up to `max_connections`
    /// connections (at least 1).
    ///
    /// # Errors
    ///
    /// As for [`connect`](Postgres::connect).
    pub async fn connect_with(config: &str, max_connections: usize) -> Result<Self> {
        let pg_config: tokio_postgres::Config = config.parse()?;
        let manager = Manager::from_config(
            pg_config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(max_connections.max(1))
            .build()
            .map_err(Error::PostgresPoolBuild)?;
        drop(pool.get().await.map_err(Error::PostgresPool)?);
        Ok(Postgres { pool })
    }

    /// Uses an existing pool, for applications that configure TLS or pooling
    /// themselves.
    pub fn from_pool(pool: Pool) -> Self {
        Postgres { pool }
    }

    /// The pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
}

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Bool(v) => v.to_sql_checked(ty, out),
            Value::I64(v) => match *ty {
                Type::INT2 => i16::try_from(*v)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
                _ => v.to_sql_checked(ty, out),
            },
            Value::F64(v) => v.to_sql_checked(ty, out),
            Value::Text(v) => v.to_sql_checked(ty, out),
            Value::Bytes(v) => v.to_sql_checked(ty, out),
            Value::Uuid(v) => match *ty {
                Type::TEXT | Type::VARCHAR => v.hyphenated().to_string().to_sql(ty, out),
                _ => v.to_sql_checked(ty, out),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl ToSql for Key {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        Value::from(self).to_sql(ty, out)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn decode(row: &Row) -> Result<Vec<Value>> {
    (0..row.len())
        .map(|i| {
            let ty = row.columns()[i].type_();
            let value = match *ty {
                Type::BOOL => row.try_get::<_, Option<bool>>(i)?.map(Value::Bool),
                Type::INT2 => row
                    .try_get::<_, Option<i16>>(i)?
                    .map(|v| Value::I64(v.into())),
                Type::INT4 => row
                    .try_get::<_, Option<i32>>(i)?
                    .map(|v| Value::I64(v.into())),
                Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Value::I64),
                Type::FLOAT4 => row
                    .try_get::<_, Option<f32>>(i)?
                    .map(|v| Value::F64(v.into())),
                Type::FLOAT8 => row.try_get::<_, Option<f64>>(i)?.map(Value::F64),
                Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
                    row.try_get::<_, Option<String>>(i)?.map(Value::Text)
                }
                Type::BYTEA => row.try_get::<_, Option<Vec<u8>>>(i)?.map(Value::Bytes),
                Type::UUID => row.try_get::<_, Option<uuid::Uuid>>(i)?.map(Value::Uuid),
                _ => {
                    return Err(Error::UnexpectedResult(format!(
                        "column {} has type {ty}, which is not decoded; cast it in the query",
                        row.columns()[i].name()
                    )));
                }
            };
            Ok(value.unwrap_or(Value::Null))
        })
        .collect()
}

fn refs(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl Backend for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        let client = self.pool.get().await.map_err(Error::PostgresPool)?;
        let statement = client.prepare_cached(sql).await?;
        Ok(client.execute(&statement, &refs(params)).await?)
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        let client = self.pool.get().await.map_err(Error::PostgresPool)?;
        let statement = client.prepare_cached(sql).await?;
        let rows = client.query(&statement, &refs(params)).await?;
        rows.first().map(decode).transpose()
    }

    async fn execute_batch(&self, sql: &str) -> Result<()> {
        let client = self.pool.get().await.map_err(Error::PostgresPool)?;
        Ok(client.batch_execute(sql).await?)
    }
}
