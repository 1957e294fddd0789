//! SQL Server through tiberius (TDS 7.3, rustls) over tokio, with a small pool that
//! never reuses a connection whose state is unknown (a network error, a cancellation,
//! a transaction left open).

mod socket;

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tiberius::{Client, Config};
use tokio::net::TcpStream;
use tokio_util::compat::{Compat, TokioAsyncWriteCompatExt};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::caller as client;
use super::params;
use super::value::{decode, with_row_count};
use crate::dialect::kind::Dialect;
use crate::error::{Error, Result};
use crate::executor::{Executor, InTransaction, Lend};
use crate::pool::{Checkout, DEFAULT_CHECKOUT_TIMEOUT, Deadline, Pool};
use crate::value::Value;

/// A pooled connection: the tiberius client, and the pool's view of its socket.
struct Connection {
    client: Client<Compat<socket::Socket>>,
    watch: socket::Watch,
}

impl Deref for Connection {
    type Target = Client<Compat<socket::Socket>>;

    fn deref(&self) -> &Self::Target {
        &self.client
    }
}

impl DerefMut for Connection {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.client
    }
}

/// The default number of pooled connections of [`Mssql::connect`].
const DEFAULT_MAX_CONNECTIONS: usize = 8;

struct Inner {
    config: Config,
    session: Option<String>,
    checkout_timeout: std::time::Duration,
    pool: Arc<Pool<Connection>>,
}

/// Options for [`Mssql::connect_with_options`].
#[cfg(feature = "mssql")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MssqlOptions {
    max_connections: usize,
    open_at_connect: usize,
    checkout_timeout: std::time::Duration,
    session: Option<String>,
}

impl Default for MssqlOptions {
    fn default() -> Self {
        MssqlOptions {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            open_at_connect: 1,
            checkout_timeout: DEFAULT_CHECKOUT_TIMEOUT,
            session: None,
        }
    }
}

impl MssqlOptions {
    /// How many connections the pool may open. Default 8; at least 1.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// How long a statement waits for a pooled connection when all are taken, before
    /// it fails with [`Error::PoolTimedOut`] (nothing was sent). Default 30 s.
    pub fn checkout_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.checkout_timeout = timeout;
        self
    }

    /// How many connections [`Mssql::connect_with_options`] opens before it returns
    /// (at least 1, at most [`max_connections`](MssqlOptions::max_connections)); the
    /// others open when first needed. Default 1. A login costs a TLS handshake and,
    /// on some servers, a new server process: opening the pool up front keeps that
    /// cost out of the first statements, such as a keeper's first renewals.
    pub fn open_at_connect(mut self, n: usize) -> Self {
        self.open_at_connect = n.max(1);
        self
    }

    /// A batch run once on every new connection before its first statement, for the
    /// session settings a deployment requires (`SET ANSI_WARNINGS ON`, `SET NOCOUNT
    /// ON`, `SET LOCK_TIMEOUT 5000`, ...). Default: none. The protocol's outcomes do not
    /// depend on `NOCOUNT`: every count is read with `@@ROWCOUNT`.
    ///
    /// ```
    /// use fenced_guard::MssqlOptions;
    ///
    /// let options = MssqlOptions::default().on_connect("SET LOCK_TIMEOUT 5000");
    /// # let _ = options;
    /// ```
    pub fn on_connect(mut self, batch: impl Into<String>) -> Self {
        self.session = Some(batch.into());
        self
    }
}

/// The SQL Server backend: a small pool of tiberius connections.
///
/// A connection goes back to the pool after a statement completed, or after the server
/// answered it with an error and no transaction is left open. A connection whose
/// statement failed otherwise (network, protocol), or whose future was dropped
/// mid-statement (cancellation, timeout), is closed and never reused, since its
/// protocol state is unknown. An idle connection that the server ended meanwhile (a
/// restart, a failover, an idle reaper, `KILL`) is seen closed before it is lent, and
/// another is opened: a statement is never sent into a connection already closed.
/// Cheap to clone (clones share the pool).
///
/// The expiry column is `datetime2(7)`, written and compared with `SYSUTCDATETIME()`.
/// A [`Value::Null`] parameter is written into the statement as the keyword `NULL`,
/// which the server types from its place (the column assigned or compared): tiberius
/// would send an untyped null, which Babelfish refuses.
#[cfg(feature = "mssql")]
#[derive(Clone)]
pub struct Mssql {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Mssql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mssql")
            .field("addr", &self.inner.config.get_addr())
            .finish_non_exhaustive()
    }
}

impl Mssql {
    /// Connects with an ADO.NET-style connection string (`server=tcp:host,1433;
    /// user=sa;password=...;TrustServerCertificate=true`), with a pool of up to 8
    /// connections. One connection is opened at once, so that an unreachable server is
    /// reported here.
    ///
    /// # Errors
    ///
    /// [`Error::Mssql`] for a bad connection string; [`Error::NotExecuted`] around
    /// [`Error::MssqlConnect`] if the server cannot be reached, or around
    /// [`Error::Mssql`] for a failed login.
    pub async fn connect(ado: &str) -> Result<Self> {
        Self::connect_with(ado, DEFAULT_MAX_CONNECTIONS).await
    }

    /// As [`connect`](Mssql::connect), with a pool of up to `max_connections`
    /// connections (at least 1).
    ///
    /// # Errors
    ///
    /// As for [`connect`](Mssql::connect).
    pub async fn connect_with(ado: &str, max_connections: usize) -> Result<Self> {
        Self::connect_with_options(
            ado,
            MssqlOptions::default().max_connections(max_connections),
        )
        .await
    }

    /// As [`connect`](Mssql::connect), with `options`.
    ///
    /// # Errors
    ///
    /// As for [`connect`](Mssql::connect), and any error of the
    /// [`on_connect`](MssqlOptions::on_connect) batch.
    pub async fn connect_with_options(ado: &str, options: MssqlOptions) -> Result<Self> {
        let config = Config::from_ado_string(ado)?;
        let inner = Arc::new(Inner {
            config,
            session: options.session,
            checkout_timeout: options.checkout_timeout,
            pool: Pool::new(options.max_connections),
        });
        let mssql = Mssql { inner };
        // Held until all are open, so that each checkout opens a connection of its own.
        let mut opened = Vec::new();
        for _ in 0..options.open_at_connect.min(options.max_connections) {
            opened.push(mssql.checkout().await?);
        }
        opened.into_iter().for_each(Checkout::give_back);
        Ok(mssql)
    }

    async fn open(config: &Config, session: Option<&str>) -> Result<Connection> {
        let tcp = TcpStream::connect(config.get_addr())
            .await
            .map_err(Error::MssqlConnect)?;
        tcp.set_nodelay(true).map_err(Error::MssqlConnect)?;
        let (socket, watch) = socket::watched(tcp);
        // Boxed: tiberius's login future is large enough that, inlined into a caller's
        // own deep future, it overflowed a 2 MiB task stack in debug builds.
        let mut client = Box::pin(Client::connect(config.clone(), socket.compat_write())).await?;
        if let Some(batch) = session {
            client.simple_query(batch).await?.into_results().await?;
        }
        Ok(Connection { client, watch })
    }

    /// A pooled connection, or a new one. Nothing of the caller's statement was sent
    /// if this fails: a failed login or session batch is [`Error::NotExecuted`]. An
    /// idle connection the server closed (or that received anything while idle) is
    /// discarded first, never lent.
    async fn checkout(&self) -> Result<Checkout<Connection>> {
        let Inner {
            config,
            session,
            checkout_timeout,
            pool,
        } = &*self.inner;
        while let Some(idle) = pool.take_idle() {
            if idle.conn_ref().watch.is_idle_and_open() {
                return Ok(idle);
            }
        }
        pool.checkout_within(*checkout_timeout, || async {
            Self::open(config, session.as_deref())
                .await
                .map_err(Error::not_executed)
        })
        .await
    }
}

impl Mssql {
    async fn last_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        let results = self.results(sql, params).await?;
        results
            .into_iter()
            .next_back()
            .and_then(|rows| rows.into_iter().next())
            .map(decode)
            .transpose()
    }

    /// Every row of the batch's last result set.
    async fn last_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        let results = self.results(sql, params).await?;
        results
            .into_iter()
            .next_back()
            .unwrap_or_default()
            .into_iter()
            .map(decode)
            .collect()
    }

    /// Every result set of the batch.
    async fn results(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<tiberius::Row>>> {
        let mut checkout = self.checkout().await?;
        let (sql, params) = params::inline_nulls(sql, params);
        let results = async {
            checkout
                .conn()
                .query(sql, &params)
                .await?
                .into_results()
                .await
        }
        .await;
        settle(checkout, results).await
    }
}

/// Gives the connection back after a statement that succeeded, or that the server
/// answered with an error and left outside any transaction (`@@TRANCOUNT` is 0): the
/// error token was read whole, and tiberius drains what follows before the next
/// statement. Any other failure (network, protocol, a transaction left open) closes
/// it. Reopening is not free: a TLS login, and on Babelfish a new server process whose
/// first statements parse slowly.
async fn settle<T>(mut checkout: Checkout<Connection>, result: tiberius::Result<T>) -> Result<T> {
    match result {
        Ok(value) => {
            checkout.give_back();
            Ok(value)
        }
        Err(error @ tiberius::error::Error::Server(_)) => {
            if outside_transaction(checkout.conn()).await {
                checkout.give_back();
            }
            Err(error.into())
        }
        Err(error) => Err(error.into()),
    }
}

async fn outside_transaction(conn: &mut Connection) -> bool {
    let row = async {
        conn.simple_query("SELECT CAST(@@TRANCOUNT AS int)")
            .await?
            .into_row()
            .await
    }
    .await;
    matches!(row, Ok(Some(row)) if row.get::<i32, _>(0) == Some(0))
}

/// A connection of an [`Mssql`] pool, lent for a fenced transaction.
#[cfg(feature = "mssql")]
pub struct LentMssql {
    conn: tokio::sync::Mutex<Checkout<Connection>>,
    deadline: Deadline,
    /// Closes the connection at the deadline ([`Lend::bound`]) unless it ends first.
    closer: socket::Closer,
    /// Cancelled when the connection is given back or dropped: the closer stands down.
    ended: CancellationToken,
    _ended_on_drop: DropGuard,
}

impl std::fmt::Debug for LentMssql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LentMssql").finish_non_exhaustive()
    }
}

impl Lend for Mssql {
    type Lent = LentMssql;

    async fn lend(&self) -> Result<LentMssql> {
        let mut conn = self.checkout().await?;
        let closer = conn.conn().watch.closer();
        let ended = CancellationToken::new();
        Ok(LentMssql {
            conn: tokio::sync::Mutex::new(conn),
            deadline: Deadline::default(),
            closer,
            _ended_on_drop: ended.clone().drop_guard(),
            ended,
        })
    }

    fn give_back(lent: LentMssql) {
        lent.ended.cancel();
        lent.conn.into_inner().give_back();
    }

    /// Each statement reads the time left, and fails past the deadline, before it is sent.
    const BOUNDS_STATEMENTS: bool = true;

    /// SQL Server has no bound of its own on a transaction. Statements past the
    /// deadline are refused unsent, and at the deadline the connection is closed unless
    /// the transaction ended first: the server then rolls it back, cancelling a
    /// statement still running, and the lease's row is free for a successor even while
    /// the holder hangs.
    fn bound(lent: &LentMssql, deadline: Instant, timeout: Duration) {
        lent.deadline.set(deadline, timeout);
        let (closer, ended) = (lent.closer.clone(), lent.ended.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep_until(deadline.into()) => closer.close(),
                () = ended.cancelled() => {}
            }
        });
    }
}

impl InTransaction for LentMssql {}

impl Executor for LentMssql {
    fn dialect(&self) -> Dialect {
        Dialect::Mssql
    }

    async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        self.deadline.remaining()?;
        client::execute_counted(&mut self.conn.lock().await.conn().client, sql, params).await
    }

    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        self.deadline.remaining()?;
        client::last_row(&mut self.conn.lock().await.conn().client, sql, params).await
    }

    async fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        self.deadline.remaining()?;
        client::last_rows(&mut self.conn.lock().await.conn().client, sql, params).await
    }

    /// The transaction's own statements: never refused for the deadline.
    async fn execute_batch(&self, sql: &str) -> Result<()> {
        client::batch(&mut self.conn.lock().await.conn().client, sql).await
    }
}

impl Executor for Mssql {
    fn dialect(&self) -> Dialect {
        Dialect::Mssql
    }

    /// Runs the statement followed by `SELECT @@ROWCOUNT` in one batch, and returns that
    /// count: the rows the statement itself changed. The server's DONE tokens are not
    /// read: they are absent under `SET NOCOUNT ON`, and they add the rows a trigger
    /// changed to the statement's own.
    async fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        let counted = with_row_count(sql);
        match self.last_row(&counted, params).await?.as_deref() {
            Some([Value::I64(rows)]) => Ok(u64::try_from(*rows).unwrap_or(0)),
            other => Err(Error::UnexpectedResult(format!(
                "expected the statement's row count, got {other:?}"
            ))),
        }
    }

    /// The first row of the batch's last result set: a trigger's result sets, if any,
    /// come before the statement's own.
    async fn query_row(&self, sql: &str, params: &[Value]) -> Result<Option<Vec<Value>>> {
        self.last_row(sql, params).await
    }

    /// The rows of the batch's last result set: a trigger's result sets, if any, come
    /// before the statement's own.
    async fn query_rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        self.last_rows(sql, params).await
    }

    async fn execute_batch(&self, sql: &str) -> Result<()> {
        let mut checkout = self.checkout().await?;
        let done = async {
            checkout
                .conn()
                .simple_query(sql)
                .await?
                .into_results()
                .await
        }
        .await;
        settle(checkout, done).await.map(drop)
    }
}
