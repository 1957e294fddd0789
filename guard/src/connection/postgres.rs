//! tokio-postgres: a caller's `Client` or `Transaction`.

use tokio_postgres::{Client, GenericClient, Transaction};

use crate::backend::postgres::{all_rows, decode, first_row, unsent};
use crate::backend::{Executor, InTransaction};
use crate::connection::IntoExecutor;
use crate::dialect::Dialect;
use crate::error::{Error, Result};
use crate::value::Value;

/// A caller's tokio-postgres [`Client`] or [`Transaction`], as an [`Executor`].
///
/// Each statement is prepared (one round trip) and then run (another): the caller's
/// connection keeps no statement cache of the guard's. The guard's own pool
/// ([`Postgres`](crate::Postgres)) prepares each statement once per connection.
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
        let statement = self.0.prepare(sql).await.map_err(Error::not_executed)?;
        let expected = statement.params().len();
        match self.0.execute_raw(&statement, params).await {
            Err(error) if unsent(&error, expected, params.len()) => Err(Error::not_executed(error)),
            result => Ok(result?),
        }
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        let statement = self.0.prepare(sql).await.map_err(Error::not_executed)?;
        let expected = statement.params().len();
        let row = match self.0.query_raw(&statement, params).await {
            Ok(rows) => first_row(rows).await?,
            Err(error) if unsent(&error, expected, params.len()) => {
                return Err(Error::not_executed(error));
            }
            Err(error) => return Err(error.into()),
        };
        row.as_ref().map(decode).transpose()
    }

    async fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let statement = self.0.prepare(sql).await.map_err(Error::not_executed)?;
        let expected = statement.params().len();
        let rows = match self.0.query_raw(&statement, params).await {
            Ok(rows) => all_rows(rows).await?,
            Err(error) if unsent(&error, expected, params.len()) => {
                return Err(Error::not_executed(error));
            }
            Err(error) => return Err(error.into()),
        };
        rows.iter().map(decode).collect()
    }

    async fn execute_batch(&self, sql: &str) -> Result<()> {
        Ok(self.0.batch_execute(sql).await?)
    }
}
