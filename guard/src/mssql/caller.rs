//! tiberius: a caller's `Client`.

use tiberius::Client;
use tokio::sync::Mutex;

use super::params::inline_nulls;
use super::value::{decode, with_row_count};
use crate::dialect::kind::Dialect;
use crate::error::{Error, Result};
use crate::executor::{Executor, InTransaction, IntoExecutor};
use crate::value::Value;

/// A caller's tiberius [`Client`], as an [`Executor`]: statements run on it in turn,
/// inside any transaction open on it. Counts are read as the guard's own pool reads
/// them, with `@@ROWCOUNT` after the statement.
#[cfg(feature = "mssql")]
pub struct TiberiusClient<'a, S>(Mutex<&'a mut Client<S>>)
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin + Send;

impl<S> std::fmt::Debug for TiberiusClient<'_, S>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin + Send,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiberiusClient").finish_non_exhaustive()
    }
}

impl<'a, S> IntoExecutor for &'a mut Client<S>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin + Send,
{
    type Executor = TiberiusClient<'a, S>;

    fn into_executor(self) -> Self::Executor {
        TiberiusClient(Mutex::new(self))
    }
}

/// The first row of the batch's last result set: a trigger's result sets, if any, come
/// before the statement's own.
pub(crate) async fn last_row<S>(
    client: &mut Client<S>,
    sql: &str,
    params: &[Value],
) -> Result<Option<Vec<Value>>>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin + Send,
{
    last_result_set(client, sql, params)
        .await?
        .into_iter()
        .next()
        .map(decode)
        .transpose()
}

/// Every row of the batch's last result set.
pub(crate) async fn last_rows<S>(
    client: &mut Client<S>,
    sql: &str,
    params: &[Value],
) -> Result<Vec<Vec<Value>>>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin + Send,
{
    last_result_set(client, sql, params)
        .await?
        .into_iter()
        .map(decode)
        .collect()
}

/// The rows of the batch's last result set, undecoded.
async fn last_result_set<S>(
    client: &mut Client<S>,
    sql: &str,
    params: &[Value],
) -> Result<Vec<tiberius::Row>>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin + Send,
{
    let (sql, params) = inline_nulls(sql, params);
    let results = client.query(sql, &params).await?.into_results().await?;
    Ok(results.into_iter().next_back().unwrap_or_default())
}

/// Runs `sql` and returns the rows it changed, counted with `@@ROWCOUNT`.
pub(crate) async fn execute_counted<S>(
    client: &mut Client<S>,
    sql: &str,
    params: &[Value],
) -> Result<u64>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin + Send,
{
    let counted = with_row_count(sql);
    match last_row(client, &counted, params).await?.as_deref() {
        Some([Value::I64(rows)]) => Ok(u64::try_from(*rows).unwrap_or(0)),
        other => Err(Error::UnexpectedResult(format!(
            "expected the statement's row count, got {other:?}"
        ))),
    }
}

/// Runs a batch without parameters.
pub(crate) async fn batch<S>(client: &mut Client<S>, sql: &str) -> Result<()>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin + Send,
{
    client.simple_query(sql).await?.into_results().await?;
    Ok(())
}

/// tiberius has no transaction type: the caller begins one with `BEGIN TRANSACTION`.
/// Every statement of a [`Fenced`](crate::Fenced) on SQL Server checks `@@TRANCOUNT`
/// itself, in its own batch.
impl<S> InTransaction for TiberiusClient<'_, S> where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin + Send
{
}

impl<S> Executor for TiberiusClient<'_, S>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin + Send,
{
    fn dialect(&self) -> Dialect {
        Dialect::Mssql
    }

    async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        execute_counted(*self.0.lock().await, sql, params).await
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        last_row(*self.0.lock().await, sql, params).await
    }

    async fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        last_rows(*self.0.lock().await, sql, params).await
    }

    async fn execute_batch(&self, sql: &str) -> Result<()> {
        batch(*self.0.lock().await, sql).await
    }
}
