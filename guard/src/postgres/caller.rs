//! tokio-postgres: a caller's `Client` or `Transaction`.

use std::fmt::Write as _;
use std::future::poll_fn;
use std::pin::pin;
use std::sync::{Mutex, MutexGuard, PoisonError};

use bytes::{BufMut, BytesMut};
use futures_core::Stream;
use tokio_postgres::types::{Format, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, GenericClient, Row, RowStream, Statement, Transaction};

use super::pool::{decode, is_stale_plan};
use super::sending::{Failed, unexecuted};
use crate::dialect::kind::Dialect;
use crate::error::{Error, Result};
use crate::executor::{Executor, InTransaction, IntoExecutor};
use crate::pool::kept::KeptStatements;
use crate::value::Value;

/// A caller's tokio-postgres [`Client`] or [`Transaction`], as an [`Executor`]: what
/// [`Store::on`](crate::Store::on) makes of it.
///
/// Every statement costs one round trip. The first time this executor runs a
/// statement, it goes as an unnamed statement, parsed, bound and run at once; the second
/// time, it is also prepared on the connection, in the same round trip, and kept with
/// this executor, which runs it from then on without the server parsing and planning it
/// again, as a statement the service prepared itself; dropping the executor closes
/// them. So keep the store that `on` made for as long as the client serves the same
/// work (it borrows the client shared: the service's own statements still run on it).
///
/// Parameters are typed by the server from the statement, as when it prepares one, and
/// every value is sent as the text its parameter's type reads, or in the binary form of
/// a prepared parameter whose type is the value's own (`bigint` for an `i64`, `uuid`
/// for a `Uuid`): a value the type cannot read is the server's error, before the
/// statement ran ([`Error::NotExecuted`]), which inside the caller's transaction aborts
/// it, as any SQL error there does.
#[cfg(feature = "postgres")]
pub struct PostgresClient<'a, C> {
    client: &'a C,
    statements: Mutex<Statements>,
}

impl<C> std::fmt::Debug for PostgresClient<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresClient")
            .field("prepared", &self.lock().kept.len())
            .finish_non_exhaustive()
    }
}

/// How many statements one executor keeps prepared; the store sends a handful.
const KEPT: usize = 32;

/// The statements an executor has run: prepared ones kept, and the texts of those run
/// once, which it prepares when they come again.
struct Statements {
    kept: KeptStatements<Statement>,
    once: Vec<Box<str>>,
}

impl<'a, C> PostgresClient<'a, C> {
    fn new(client: &'a C) -> Self {
        PostgresClient {
            client,
            statements: Mutex::new(Statements {
                kept: KeptStatements::new(KEPT),
                once: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Statements> {
        self.statements
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl<'a> IntoExecutor for &'a Client {
    type Executor = PostgresClient<'a, Client>;

    fn into_executor(self) -> Self::Executor {
        PostgresClient::new(self)
    }
}

impl<'a, 't> IntoExecutor for &'a Transaction<'t> {
    type Executor = PostgresClient<'a, Transaction<'t>>;

    fn into_executor(self) -> Self::Executor {
        PostgresClient::new(self)
    }
}

impl<'a, 't> IntoExecutor for &'a mut Transaction<'t> {
    type Executor = PostgresTransaction<'a, 't>;

    fn into_executor(self) -> Self::Executor {
        PostgresTransaction(PostgresClient::new(self))
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
        Ok(self.run(sql, params).await?.1)
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        let (rows, _) = self.run(sql, params).await?;
        rows.first().map(decode).transpose()
    }

    async fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let (rows, _) = self.run(sql, params).await?;
        rows.iter().map(decode).collect()
    }

    async fn execute_batch(&self, sql: &str) -> Result<()> {
        Ok(self.client.batch_execute(sql).await?)
    }
}

/// How a statement is sent.
enum Plan {
    /// Prepared on this connection already.
    Kept(Statement),
    /// Unnamed, and prepared beside it to be kept: its second run here.
    Again,
    /// Unnamed: its first run here.
    First,
}

impl<C: GenericClient + Sync> PostgresClient<'_, C> {
    /// Runs `sql` in one round trip (see [`PostgresClient`]); its rows and the rows it
    /// changed. An error the server gave before running it, or a connection closed
    /// before anything was sent, is [`Error::NotExecuted`].
    async fn run(&self, sql: &str, params: &[Value]) -> Result<(Vec<Row>, u64)> {
        let plan = {
            let mut statements = self.lock();
            match statements.kept.find(sql) {
                Some(index) => Plan::Kept(statements.kept.get_mut(index).clone()),
                None => match statements.once.iter().position(|once| **once == *sql) {
                    Some(index) => {
                        statements.once.swap_remove(index);
                        Plan::Again
                    }
                    None => {
                        if statements.once.len() >= KEPT {
                            statements.once.remove(0);
                        }
                        statements.once.push(sql.into());
                        Plan::First
                    }
                },
            }
        };
        let inferred = || params.iter().map(Inferred);
        let ran = match plan {
            Plan::Kept(statement) => {
                let ran = collect(
                    self.client.client(),
                    self.client.query_raw(&statement, inferred()),
                )
                .await;
                if let Err(failed) = &ran
                    && is_stale_plan(&failed.error)
                {
                    // Its rows changed shape (a table altered): prepared again when it
                    // comes twice more.
                    self.lock().kept.forget(sql);
                }
                ran
            }
            Plan::First => collect(self.client.client(), self.typed(sql, params)).await,
            Plan::Again => {
                // Both sent before either answer is read: one round trip. The rows are
                // read while the preparation waits, since the connection hands its
                // answers over in order.
                let (ran, prepared) = tokio::join!(
                    biased;
                    collect(self.client.client(), self.typed(sql, params)),
                    self.client.prepare(sql)
                );
                if let (Ok(_), Ok(statement)) = (&ran, prepared) {
                    let mut statements = self.lock();
                    if statements.kept.find(sql).is_none() {
                        statements.kept.keep(sql, statement);
                    }
                }
                ran
            }
        };
        match ran {
            Ok(ran) => Ok(ran),
            Err(failed) if failed.before_running => Err(Error::not_executed(failed.error)),
            Err(failed) => Err(failed.error.into()),
        }
    }

    /// `sql` as an unnamed statement, each parameter declared `unknown` so that the
    /// server infers its type from the statement exactly as it does when preparing it.
    async fn typed(
        &self,
        sql: &str,
        params: &[Value],
    ) -> std::result::Result<RowStream, tokio_postgres::Error> {
        let typed = params.iter().map(|value| (Inferred(value), Type::UNKNOWN));
        self.client.query_typed_raw(sql, typed).await
    }
}

/// Every row of the statement `start` starts on `client`, and the rows it changed; its
/// error marked as before running when the server gave it in place of running it, or
/// when `client` was already closed as the statement was made ([`unexecuted`]).
async fn collect(
    client: &Client,
    start: impl Future<Output = std::result::Result<RowStream, tokio_postgres::Error>>,
) -> std::result::Result<(Vec<Row>, u64), Failed> {
    let rows = unexecuted(client, start).await?;
    let mut rows = pin!(rows);
    let mut all = Vec::new();
    while let Some(row) = poll_fn(|cx| rows.as_mut().poll_next(cx)).await {
        all.push(row?);
    }
    Ok((all, rows.rows_affected().unwrap_or(0)))
}

/// A [`Value`] bound to a parameter whose type the server inferred: sent as the text
/// that type reads (bytes as `bytea`'s hexadecimal), or, to a parameter of a prepared
/// statement whose type is the value's own, in that type's binary form, which the
/// server reads without parsing.
#[derive(Debug)]
struct Inferred<'v>(&'v Value);

impl Inferred<'_> {
    /// Whether the value goes in `ty`'s binary form: only where that form holds it
    /// exactly, so that any other pairing is still read (or refused) by the server as
    /// text. An unnamed statement's parameters are all `unknown`, so its values go as
    /// text.
    fn is_binary(&self, ty: &Type) -> bool {
        matches!(
            (self.0, ty),
            (Value::Bool(_), &Type::BOOL)
                | (Value::I64(_), &Type::INT8)
                | (Value::F64(_), &Type::FLOAT8)
                | (Value::Bytes(_), &Type::BYTEA)
                | (Value::Uuid(_), &Type::UUID)
        )
    }
}

impl ToSql for Inferred<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        if self.is_binary(ty) {
            // The binary form the guard's own pool sends to its prepared statements.
            return self.0.to_sql(ty, out);
        }
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
            Value::Bytes(v) => {
                out.put_slice(b"\\x");
                for byte in v {
                    write!(out, "{byte:02x}")?;
                }
            }
            Value::Uuid(v) => write!(out, "{}", v.hyphenated())?,
        }
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, ty: &Type) -> Format {
        if self.is_binary(ty) {
            Format::Binary
        } else {
            Format::Text
        }
    }

    to_sql_checked!();
}
