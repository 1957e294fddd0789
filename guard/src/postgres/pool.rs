//! PostgreSQL through tokio-postgres: a pool of connections, each statement prepared
//! once per connection.

mod connection;
mod lent;

use std::borrow::Cow;
use std::fmt::Write as _;
use std::future::poll_fn;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use futures_core::Stream;
use tokio_postgres::error::Severity;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{NoTls, Row, RowStream, Socket};

use super::sending::{Failed, behind, unexecuted};
use crate::dialect::kind::Dialect;
use crate::error::{Error, Result};
use crate::executor::Executor;
use crate::pool::{Checkout, DEFAULT_CHECKOUT_TIMEOUT, Pool};
use crate::value::{Key, Value};
pub(crate) use connection::is_stale_plan;
use connection::{Connection, Opener, opener};

pub use connection::PooledClient;
pub use lent::LentPostgres;

/// The default number of pooled connections of [`Postgres::connect`].
const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// The PostgreSQL backend: a pool of connections, each statement prepared once per
/// connection and kept with it (up to [`Postgres::MAX_PREPARED_STATEMENTS`] per
/// connection; past that, the one used longest ago is closed). Cheap to clone (clones share the pool).
///
/// A kept statement survives changes to the tables it names: the server plans it again,
/// and one whose rows changed shape (a `SELECT *` over a table that gained a column,
/// which the server refuses with "cached plan must not change result type") is
/// prepared again and run once more.
///
/// A connection goes back to the pool after a statement that completed, successfully or
/// with an SQL error; one the server or the network closed, or whose statement was
/// cancelled (its future dropped), is discarded and replaced when next needed. An idle
/// connection the client knows to be closed is discarded before it is used. A statement
/// that fails before it was executed because its connection turned out closed (when it
/// was being prepared on it) is run again on another connection, up to as many times as
/// the pool has connections, since every idle one may have been ended at once (a server
/// restart, a failover). A statement that fails after it was sent is never run again: it
/// may have committed ([`Error::may_have_committed`]).
///
/// A statement waits at most the [checkout timeout](Postgres::checkout_timeout)
/// (default 30 s) for a connection, then fails with [`Error::PoolTimedOut`].
///
/// # A primary and its standbys
///
/// A configuration naming several hosts (`host=db1,db2 port=5432,5432`, or
/// `postgresql://app@db1:5432,db2:5432/jobs`) follows the primary across a failover:
/// every new connection goes to the first host, in the order given, that accepts
/// writes (`target_session_attrs=read-write`, which the pool sets when the
/// configuration leaves it at `any`), waiting at most 5 s for each host's TCP
/// connection unless `connect_timeout` says otherwise. When the old primary dies, its
/// connections are discarded as above and the next statements open connections to the
/// new one; a statement that was running on it when it died fails, and may have
/// committed there ([`Error::may_have_committed`]). On the new primary, the leases
/// acquired before the promotion can no longer write (see
/// [the server's timeline](crate::FencedTable#the-servers-timeline-postgresql)).
/// What asynchronous replication lost is lost: a write acknowledged by the old primary
/// and not yet replicated is not on the new one.
///
/// The expiry column is `timestamptz`, written and compared with `clock_timestamp()`.
#[cfg(feature = "postgres")]
#[derive(Clone)]
pub struct Postgres {
    pool: Arc<Pool<Connection>>,
    open: Opener,
    max_connections: usize,
    checkout_timeout: Duration,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("idle_connections", &self.idle_connections())
            .finish_non_exhaustive()
    }
}

impl Postgres {
    /// How many prepared statements each connection keeps. A store uses a handful; the
    /// bound is for statements sent through the backend directly
    /// ([`Executor::execute`]), so that a stream of distinct texts cannot grow a
    /// connection's statements, and the server's memory, without limit. Past it, the
    /// statement used longest ago is closed.
    pub const MAX_PREPARED_STATEMENTS: usize = connection::MAX_PREPARED_STATEMENTS;

    /// Connects with a libpq-style connection string (`host=127.0.0.1 user=postgres
    /// dbname=test`) or URL (`postgresql://postgres@127.0.0.1/test`), without TLS, with
    /// a pool of up to 16 connections. One connection is opened at once, so that an
    /// unreachable server is reported here.
    ///
    /// # Errors
    ///
    /// [`Error::Postgres`] for a bad connection string or a server that cannot be
    /// reached.
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
        let config: tokio_postgres::Config = config.parse()?;
        let postgres = Self::from_config(config, NoTls, max_connections);
        drop(postgres.client().await?);
        Ok(postgres)
    }

    /// A backend for `config` that opens its connections through `tls` (tokio-postgres's
    /// `NoTls`, or a connector such as `postgres-native-tls` or `tokio-postgres-rustls`
    /// provides), with a pool of up to `max_connections` connections (at least 1).
    ///
    /// Nothing is opened here: the first statement opens the first connection, and an
    /// unreachable server is reported by it.
    ///
    /// ```no_run
    /// # async fn run() -> fenced_guard::Result<()> {
    /// use fenced_guard::Postgres;
    /// use fenced_guard::tokio_postgres::{Config, NoTls};
    ///
    /// let mut config = Config::new();
    /// config.host("db.internal").user("jobs").dbname("jobs");
    /// let backend = Postgres::from_config(config, NoTls, 8);
    /// # let _ = backend;
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_config<T>(config: tokio_postgres::Config, tls: T, max_connections: usize) -> Self
    where
        T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
        T::Stream: Send + 'static,
        T::TlsConnect: Send,
        <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
    {
        Postgres {
            pool: Pool::new(max_connections),
            open: opener(config, tls),
            max_connections: max_connections.max(1),
            checkout_timeout: DEFAULT_CHECKOUT_TIMEOUT,
        }
    }

    /// How long a statement (or [`client`](Postgres::client)) waits for a pooled
    /// connection, the opening of a new one included, before failing with
    /// [`Error::PoolTimedOut`]. Default 30 s. A timeout too long for the timer
    /// ([`Duration::MAX`]) waits as long as it takes. Applies to this value and the
    /// clones made from it afterwards.
    pub fn checkout_timeout(mut self, timeout: Duration) -> Self {
        self.checkout_timeout = timeout;
        self
    }

    /// A connection from the pool, for statements of the application's own, waiting
    /// for one if all are taken. Dropping the [`PooledClient`] gives it back.
    ///
    /// Give it back as it was taken: a transaction begun with a plain `BEGIN` and not
    /// ended stays open on the connection, and the statements the pool runs next on it,
    /// the guard's included, would run inside it and be lost with it. Use
    /// [`Client::transaction`](tokio_postgres::Client::transaction), which rolls back
    /// when dropped, and leave session settings (`SET`) as they were.
    ///
    /// # Errors
    ///
    /// [`Error::Postgres`] if a new connection was needed and could not be opened;
    /// [`Error::PoolTimedOut`] after the [checkout timeout](Postgres::checkout_timeout).
    pub async fn client(&self) -> Result<PooledClient> {
        Ok(PooledClient::new(self.checkout().await?))
    }

    /// How many connections are open and waiting in the pool.
    pub fn idle_connections(&self) -> usize {
        self.pool.idle_len()
    }

    /// A usable connection: an idle one at once if there is one, else one given back
    /// or newly opened once a slot is free.
    async fn checkout(&self) -> Result<Checkout<Connection>> {
        match self.take_usable_idle() {
            Some(checkout) => Ok(checkout),
            None => {
                self.pool
                    .checkout_within(self.checkout_timeout, || (self.open)())
                    .await
            }
        }
    }

    /// An idle connection, without waiting; idle connections the server or the network
    /// closed meanwhile are discarded on the way. A plain function, not a future, so
    /// that the common case of a statement builds no future for the pool's wait.
    fn take_usable_idle(&self) -> Option<Checkout<Connection>> {
        while let Some(mut checkout) = self.pool.take_idle() {
            if checkout.conn().is_usable() {
                return Some(checkout);
            }
        }
        None
    }

    /// Runs `run` on a pooled connection, and gives the connection back unless the
    /// connection is closing (see [`leaves_usable`]). [`Attempt::Again`] when `run`
    /// failed before it was executed ([`Error::NotExecuted`]) because its connection
    /// turned out closed: the caller runs it again, on another connection, while
    /// [`Postgres::again`] allows.
    async fn with_connection<T>(
        &self,
        run: impl AsyncFnOnce(&mut Connection) -> Result<T>,
    ) -> Attempt<T> {
        // What `checkout` does, written out: awaiting `checkout()` here adds a future
        // layer to every statement (about 130 instructions per lease cycle by callgrind).
        let mut checkout = match self.take_usable_idle() {
            Some(checkout) => checkout,
            None => match self
                .pool
                .checkout_within(self.checkout_timeout, || (self.open)())
                .await
            {
                Ok(checkout) => checkout,
                Err(error) => return Attempt::Done(Err(Error::not_executed(error))),
            },
        };
        let result = run(checkout.conn()).await;
        let usable = checkout.conn().is_usable() && leaves_usable(&result);
        if usable {
            checkout.give_back();
        }
        match result {
            Err(error @ Error::NotExecuted(_)) if !usable => Attempt::Again(error),
            result => Attempt::Done(result),
        }
    }

    /// Whether a statement that failed with `error` before it was executed, on a
    /// connection that turned out closed, is run again: at most as many times as the
    /// pool has connections, since each idle one may have been ended at once (a server
    /// restart, a failover). Otherwise the error.
    fn again(&self, attempts: &mut usize, error: Error) -> Result<()> {
        if *attempts >= self.max_connections {
            return Err(error);
        }
        *attempts += 1;
        tracing::debug!(
            error = &error as &dyn std::error::Error,
            attempts = *attempts,
            "a pooled postgresql connection was closed before the statement ran; running it \
             on another"
        );
        Ok(())
    }
}

/// How one run of a statement on a pooled connection ended.
enum Attempt<T> {
    /// With this result.
    Done(Result<T>),
    /// Before the statement was executed, on a connection that turned out closed.
    Again(Error),
}

/// Whether a connection is still usable after a statement that ended with `result`.
/// An SQL error (severity `ERROR`) ends only its statement; an error of severity
/// `FATAL` or `PANIC` means the server is ending the session, which the client may not
/// have noticed yet, and a driver error on a closed connection is final.
fn leaves_usable<T>(result: &Result<T>) -> bool {
    match result.as_ref().map_err(Error::cause) {
        Err(Error::Postgres(error)) => {
            !error.is_closed()
                && error.as_db_error().is_none_or(|db| {
                    !matches!(
                        db.parsed_severity(),
                        Some(Severity::Fatal | Severity::Panic)
                    )
                })
        }
        _ => true,
    }
}

/// A value that could not be encoded for its parameter (a value of the wrong type for
/// its column, an integer out of the column's range): [`Value::to_sql`]'s error, marked
/// so that the backend can tell that the statement was not sent.
#[derive(Debug)]
struct Unencodable(Box<dyn std::error::Error + Sync + Send>);

impl std::fmt::Display for Unencodable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Unencodable {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Whether `error`, from running a statement that takes `expected` parameters with
/// `given`, was raised before anything was sent: tokio-postgres checks the count and
/// encodes every value before it sends the statement.
fn unsent(error: &tokio_postgres::Error, expected: usize, given: usize) -> bool {
    expected != given
        || std::error::Error::source(error).is_some_and(|source| source.is::<Unencodable>())
}

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        self.encode(ty, out)
            .map_err(|error| Box::new(Unencodable(error)) as _)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl Value {
    fn encode(
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

pub(crate) fn decode(row: &Row) -> Result<Vec<Value>> {
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

/// The first row of `rows`, after reading them all: a later row's error is the
/// statement's error, as with [`Client::query`](tokio_postgres::Client::query), but no
/// vector of rows is built for the one row kept.
pub(crate) async fn first_row(
    rows: RowStream,
) -> std::result::Result<Option<Row>, tokio_postgres::Error> {
    let mut rows = pin!(rows);
    let mut first = None;
    while let Some(row) = poll_fn(|cx| rows.as_mut().poll_next(cx)).await {
        let row = row?;
        first.get_or_insert(row);
    }
    Ok(first)
}

/// How many rows the statement behind `rows` changed, after reading them all.
async fn rows_changed(rows: RowStream) -> std::result::Result<u64, tokio_postgres::Error> {
    let mut rows = pin!(rows);
    while let Some(row) = poll_fn(|cx| rows.as_mut().poll_next(cx)).await {
        row?;
    }
    Ok(rows.rows_affected().unwrap_or(0))
}

/// Every row of `rows`.
pub(crate) async fn all_rows(
    rows: RowStream,
) -> std::result::Result<Vec<Row>, tokio_postgres::Error> {
    let mut rows = pin!(rows);
    let mut all = Vec::new();
    while let Some(row) = poll_fn(|cx| rows.as_mut().poll_next(cx)).await {
        all.push(row?);
    }
    Ok(all)
}

/// What a lent connection sends ahead of a statement, pipelined with it: the `BEGIN`
/// of its transaction, if not sent yet, and the server's timeouts, in milliseconds,
/// when the transaction is bounded. The pool's own statements send neither
/// ([`Ahead::NOTHING`]).
#[derive(Clone, Copy, Debug)]
struct Ahead<'a> {
    begin: Option<&'a str>,
    timeouts: Option<u32>,
}

impl<'a> Ahead<'a> {
    const NOTHING: Ahead<'static> = Ahead {
        begin: None,
        timeouts: None,
    };

    /// The batch sent ahead, one simple query: `BEGIN` if due, then the transaction's
    /// `statement_timeout` and `idle_in_transaction_session_timeout` if due.
    ///
    /// `SET` takes no parameters; the milliseconds are a number the guard computed.
    /// One batch is one message for the client to send and one parse for the server,
    /// where a prepared `set_config` was a second request, bound and executed.
    ///
    /// Written into one string: two `format!`s and a copy of `BEGIN` were about 1,900
    /// of a fenced transaction's 91,000 client instructions.
    fn batch(&self) -> Option<Cow<'a, str>> {
        let Some(ms) = self.timeouts else {
            return self.begin.map(Cow::Borrowed);
        };
        let mut batch = String::with_capacity(112);
        if let Some(begin) = self.begin {
            batch.push_str(begin);
            batch.push_str("; ");
        }
        batch.push_str("SET LOCAL statement_timeout = ");
        let _ = write!(batch, "{ms}");
        batch.push_str("; SET LOCAL idle_in_transaction_session_timeout = ");
        let _ = write!(batch, "{ms}");
        Some(Cow::Owned(batch))
    }
}

/// Runs a statement on `conn`, prepared once per connection, and returns the rows it
/// changed.
async fn execute_on(
    conn: &mut Connection,
    sql: &str,
    params: &[Value],
    ahead: Ahead<'_>,
) -> Result<u64> {
    run_on(conn, sql, params, ahead, rows_changed).await
}

/// Runs a statement on `conn`, as [`execute_on`], and returns its first row.
async fn query_row_on(
    conn: &mut Connection,
    sql: &str,
    params: &[Value],
    ahead: Ahead<'_>,
) -> Result<Option<Vec<Value>>> {
    let row = run_on(conn, sql, params, ahead, first_row).await?;
    row.as_ref().map(decode).transpose()
}

/// Runs a statement on `conn`, as [`execute_on`], and returns every row.
async fn query_rows_on(
    conn: &mut Connection,
    sql: &str,
    params: &[Value],
    ahead: Ahead<'_>,
) -> Result<Vec<Vec<Value>>> {
    let rows = run_on(conn, sql, params, ahead, all_rows).await?;
    rows.iter().map(decode).collect()
}

/// Runs a statement on `conn`, prepared once per connection, and reads its rows with
/// `read`. A statement whose cached preparation went stale (its table was altered) is
/// prepared again, once. What goes `ahead` of it is sent first, pipelined with it.
async fn run_on<T, F, Fut>(
    conn: &mut Connection,
    sql: &str,
    params: &[Value],
    ahead: Ahead<'_>,
    read: F,
) -> Result<T>
where
    F: Fn(RowStream) -> Fut,
    Fut: Future<Output = std::result::Result<T, tokio_postgres::Error>>,
{
    let mut prepared_again = false;
    let mut batch = ahead.batch();
    loop {
        let (client, statement) = conn.prepared(sql).await.map_err(Error::not_executed)?;
        let expected = statement.params().len();
        // The values are bound straight from the slice: no vector of references. Run as
        // a query, so that an error before the statement ran is told apart.
        let run = async {
            let rows = unexecuted(client, client.query_raw(statement, params)).await?;
            Ok::<_, Failed>(read(rows).await?)
        };
        // Sent once: a statement prepared again runs inside the transaction begun.
        match behind(client, batch.take().as_deref(), run).await {
            Err(failed) if !prepared_again && conn.forget_stale(sql, &failed.error) => {
                prepared_again = true;
            }
            Err(failed)
                if failed.before_running
                    || conn.closed_before_sending(&failed.error)
                    || unsent(&failed.error, expected, params.len()) =>
            {
                return Err(Error::not_executed(failed.error));
            }
            Err(failed) => return Err(failed.error.into()),
            Ok(read) => return Ok(read),
        }
    }
}

impl Executor for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        let mut attempts = 0;
        loop {
            let attempt = self
                .with_connection(async |conn| execute_on(conn, sql, params, Ahead::NOTHING).await)
                .await;
            match attempt {
                Attempt::Done(result) => return result,
                Attempt::Again(error) => self.again(&mut attempts, error)?,
            }
        }
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        let mut attempts = 0;
        loop {
            let attempt = self
                .with_connection(async |conn| query_row_on(conn, sql, params, Ahead::NOTHING).await)
                .await;
            match attempt {
                Attempt::Done(result) => return result,
                Attempt::Again(error) => self.again(&mut attempts, error)?,
            }
        }
    }

    async fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let mut attempts = 0;
        loop {
            let attempt = self
                .with_connection(async |conn| {
                    query_rows_on(conn, sql, params, Ahead::NOTHING).await
                })
                .await;
            match attempt {
                Attempt::Done(result) => return result,
                Attempt::Again(error) => self.again(&mut attempts, error)?,
            }
        }
    }

    async fn execute_batch(&self, sql: &str) -> Result<()> {
        // A batch is sent as one simple query, with no preparation: nothing marks a
        // failure as before its execution, so it is never run again.
        match self
            .with_connection(async |conn| Ok(conn.client().batch_execute(sql).await?))
            .await
        {
            Attempt::Done(result) => result,
            Attempt::Again(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::Ahead;

    /// What goes ahead of a statement, for each of the four cases; the `BEGIN` alone is
    /// not copied.
    #[test]
    fn the_batch_ahead_is_begin_then_both_timeouts() {
        let ahead = |begin, timeouts| Ahead { begin, timeouts }.batch();
        assert_eq!(Ahead::NOTHING.batch(), None);
        assert!(matches!(
            ahead(Some("BEGIN"), None),
            Some(Cow::Borrowed("BEGIN"))
        ));
        assert_eq!(
            ahead(None, Some(1500)).as_deref(),
            Some(
                "SET LOCAL statement_timeout = 1500; \
                 SET LOCAL idle_in_transaction_session_timeout = 1500"
            )
        );
        assert_eq!(
            ahead(Some("BEGIN"), Some(7)).as_deref(),
            Some(
                "BEGIN; SET LOCAL statement_timeout = 7; \
                 SET LOCAL idle_in_transaction_session_timeout = 7"
            )
        );
    }
}
