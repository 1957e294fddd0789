//! tokio-postgres: a caller's `Client` or `Transaction`.

use std::fmt::Write as _;
use std::future::poll_fn;
use std::pin::pin;

use bytes::{BufMut, BytesMut};
use futures_core::Stream;
use tokio_postgres::types::{Format, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, GenericClient, RowStream, Transaction};

use crate::backend::postgres::{all_rows, decode, first_row, unexecuted};
use crate::backend::{Executor, InTransaction};
use crate::connection::IntoExecutor;
use crate::dialect::Dialect;
use crate::error::{Error, Result};
use crate::value::Value;

/// A caller's tokio-postgres [`Client`] or [`Transaction`], as an [`Executor`].
///
/// Each statement is parsed, bound and run in one round trip, as an unnamed statement
/// whose parameter types the server infers: the caller's connection keeps no prepared
/// statements of the guard's. The guard's own pool ([`Postgres`](crate::Postgres))
/// prepares each statement once per connection.
#[cfg(feature = "postgres")]
#[derive(Debug)]
pub struct PostgresClient<'a, C>(&'a C);

impl<'a> IntoExecutor for &'a Client {
    type Executor = PostgresClient<'a, Client>;

    fn into_executor(self) -> Self::Executor {
        PostgresClient(self)
    }
}

impl<'a, 't> IntoExecutor for &'a Transaction<'t> {
    type Executor = PostgresClient<'a, Transaction<'t>>;

    fn into_executor(self) -> Self::Executor {
        PostgresClient(self)
    }
}

impl<'a, 't> IntoExecutor for &'a mut Transaction<'t> {
    type Executor = PostgresTransaction<'a, 't>;

    fn into_executor(self) -> Self::Executor {
        PostgresTransaction(PostgresClient(self))
    }
}

/// A caller's tokio-postgres [`Transaction`], borrowed exclusively (`store.on(&mut tx)`):
/// the one form of it [`Store::fence`](crate::Store::fence) takes.
///
/// The transaction is open for as long as it is borrowed (committing it takes it by
/// value), and nothing else can send on it meanwhile: with a shared borrow, the caller
/// could send `COMMIT` through the transaction around the `Fenced`, ending the lock
/// while the `Fenced` still stood for it.
#[cfg(feature = "postgres")]
pub struct PostgresTransaction<'a, 't>(PostgresClient<'a, Transaction<'t>>);

impl std::fmt::Debug for PostgresTransaction<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresTransaction")
            .finish_non_exhaustive()
    }
}

impl InTransaction for PostgresTransaction<'_, '_> {}

impl Executor for PostgresTransaction<'_, '_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        self.0.execute(sql, params).await
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        self.0.query_row(sql, params).await
    }

    async fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        self.0.query_rows(sql, params).await
    }

    async fn execute_batch(&self, sql: &str) -> Result<()> {
        self.0.execute_batch(sql).await
    }
}

impl<C: GenericClient + Sync> Executor for PostgresClient<'_, C> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        let rows = self.run(sql, params).await?;
        let mut rows = pin!(rows);
        while let Some(row) = poll_fn(|cx| rows.as_mut().poll_next(cx)).await {
            row?;
        }
        Ok(rows.rows_affected().unwrap_or(0))
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        let row = first_row(self.run(sql, params).await?).await?;
        row.as_ref().map(decode).transpose()
    }

    async fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let rows = all_rows(self.run(sql, params).await?).await?;
        rows.iter().map(decode).collect()
    }

    async fn execute_batch(&self, sql: &str) -> Result<()> {
        Ok(self.0.batch_execute(sql).await?)
    }
}

impl<C: GenericClient + Sync> PostgresClient<'_, C> {
    /// Starts `sql` as an unnamed statement, parsed, bound and run in one round trip
    /// (`query_typed`): a named statement would cost a round trip to prepare it, and
    /// another to close it, on every call, since the caller's connection keeps no
    /// statements of the guard's. Each parameter is declared `unknown`, so the server
    /// infers its type from the statement exactly as it does when preparing it, and
    /// sent as text (bytes in binary, as `bytea`).
    ///
    /// An error the server gave before running the statement (a value its parameter's
    /// type cannot read, a parameter count that does not match), or a connection closed
    /// before anything was sent, is [`Error::NotExecuted`]. Inside the caller's
    /// transaction, the server's error aborts it, as any SQL error does.
    async fn run(&self, sql: &str, params: &[Value]) -> Result<RowStream> {
        let typed = params
            .iter()
            .map(|value| (Inferred(value), value.inferred_type()));
        match unexecuted(self.0.query_typed_raw(sql, typed)).await {
            Ok(rows) => Ok(rows),
            Err(failed) if failed.before_running => Err(Error::not_executed(failed.error)),
            Err(failed) => Err(failed.error.into()),
        }
    }
}

/// A [`Value`] bound to a statement whose parameter types the server infers: sent as
/// the text the parameter's type reads, or, for bytes, as binary `bytea`.
#[derive(Debug)]
struct Inferred<'v>(&'v Value);

impl Value {
    /// The type a parameter is declared with: `unknown` (the server infers it), but
    /// `bytea` for bytes, which have no other reading.
    fn inferred_type(&self) -> Type {
        match self {
            Value::Bytes(_) => Type::BYTEA,
            _ => Type::UNKNOWN,
        }
    }
}

impl ToSql for Inferred<'_> {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            Value::Null => return Ok(IsNull::Yes),
            Value::Bool(v) => out.put_slice(if *v { b"t" } else { b"f" }),
            Value::I64(v) => write!(out, "{v}")?,
            // Rust writes the shortest text that reads back as the same double; the
            // server's spellings of the values that are not numbers.
            Value::F64(v) if v.is_nan() => out.put_slice(b"NaN"),
            Value::F64(v) if v.is_infinite() => {
                out.put_slice(if *v > 0.0 { b"Infinity" } else { b"-Infinity" });
            }
            Value::F64(v) => write!(out, "{v}")?,
            Value::Text(v) => out.put_slice(v.as_bytes()),
            Value::Bytes(v) => out.put_slice(v),
            Value::Uuid(v) => write!(out, "{}", v.hyphenated())?,
        }
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, _: &Type) -> Format {
        match self.0 {
            Value::Bytes(_) => Format::Binary,
            _ => Format::Text,
        }
    }

    to_sql_checked!();
}
