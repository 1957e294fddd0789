//! A pooled PostgreSQL connection: the client, and the statements prepared on it
//! ([`KeptStatements`]).

use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_postgres::config::TargetSessionAttrs;
use tokio_postgres::error::SqlState;
use tokio_postgres::tls::{MakeTlsConnect, TlsConnect};
use tokio_postgres::{Client, Socket, Statement};

use crate::error::Result;
use crate::pool::Checkout;
use crate::pool::kept::KeptStatements;

/// How many prepared statements a connection keeps: see
/// [`Postgres::MAX_PREPARED_STATEMENTS`](crate::Postgres::MAX_PREPARED_STATEMENTS).
pub(crate) const MAX_PREPARED_STATEMENTS: usize = 256;

/// One connection of the pool.
pub(crate) struct Connection {
    client: Client,
    /// The statements prepared on this connection. Dropping one closes it on the
    /// server.
    prepared: KeptStatements<Statement>,
    /// Set when the connection's task ended on an error the server sent while no
    /// request was in flight (a session it ended, 57P01): every request still queued
    /// then was never sent.
    ended_unasked: Arc<AtomicBool>,
}

impl Connection {
    /// The client.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// The client, and `sql` prepared on this connection: prepared now if this is its
    /// first use here.
    pub(crate) async fn prepared(&mut self, sql: &str) -> Result<(&Client, &Statement)> {
        let index = match self.prepared.find(sql) {
            Some(index) => index,
            None => {
                // Boxed: tokio-postgres's preparation is about a kilobyte, and once per
                // text and connection; unboxed, every statement's future would carry it.
                let statement = Box::pin(self.client.prepare(sql)).await?;
                self.prepared.keep(sql, statement)
            }
        };
        Ok((&self.client, self.prepared.get_mut(index)))
    }

    /// Forgets `sql`'s kept statement if `error` is the server refusing to run it
    /// because its rows would now have another shape; returns whether it did, and so
    /// whether the statement should be prepared again and run once more.
    ///
    /// A kept statement outlives changes to the tables it names. The server plans it
    /// again by itself, but refuses to run it once its result type changes (a
    /// `SELECT *` or `RETURNING *` over a table that gained a column): "cached plan must
    /// not change result type". The refused attempt ran nothing, since the server
    /// checks the plan before it executes, and the backend's statements are
    /// autocommitted, so no transaction is left aborted by it.
    pub(crate) fn forget_stale(&mut self, sql: &str, error: &tokio_postgres::Error) -> bool {
        let stale = is_stale_plan(error);
        if stale {
            // Dropping the statement closes it on the server.
            self.prepared.forget(sql);
        }
        stale
    }

    /// Whether the connection can take another statement: `false` once the server or
    /// the network has closed it.
    pub(crate) fn is_usable(&self) -> bool {
        !self.client.is_closed()
    }

    /// Whether a statement that failed because the connection closed was never sent:
    /// the connection's task ended on the server's error with no request in flight,
    /// so every request queued behind it stayed unsent. tokio-postgres hands a request
    /// to its task with a response channel, and the task takes it only to write it; an
    /// error read while none is taken ends the task.
    pub(crate) fn closed_before_sending(&self, error: &tokio_postgres::Error) -> bool {
        error.is_closed() && self.ended_unasked.load(Ordering::SeqCst)
    }
}

/// Whether `error` is the server refusing to run a prepared statement because its rows
/// would now have another shape ("cached plan must not change result type"): told by
/// the code and the server function that raises it, not by the message, which the
/// server may translate.
pub(crate) fn is_stale_plan(error: &tokio_postgres::Error) -> bool {
    error.as_db_error().is_some_and(|db| {
        *db.code() == SqlState::FEATURE_NOT_SUPPORTED
            && db.routine() == Some("RevalidateCachedQuery")
    })
}

/// Opens connections: the server's configuration and the TLS connector, behind one
/// type whatever the connector is.
pub(crate) type Opener =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<Connection>> + Send>> + Send + Sync>;

/// How long a new connection of a configuration naming several hosts waits for each
/// host's TCP connection when the configuration sets no `connect_timeout`: a failed
/// primary whose address no longer answers would otherwise hold every new connection
/// for the system's TCP timeout (about two minutes on Linux) before the next host is
/// tried.
pub(crate) const MULTI_HOST_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// `config` as the pool opens its connections. A configuration naming several hosts
/// (`host=a,b port=5432,5433`, a primary and its standbys) is one whose primary may
/// move: every new connection goes to the first host that accepts writes
/// (`target_session_attrs=read-write`, set here when it says `any`, the default: the
/// guard only writes, and a standby would refuse every statement), and waits at most
/// [`MULTI_HOST_CONNECT_TIMEOUT`] for each host unless `connect_timeout` says
/// otherwise. A configuration of one host is left as it is.
pub(crate) fn for_writes(mut config: tokio_postgres::Config) -> tokio_postgres::Config {
    let hosts = config.get_hosts().len().max(config.get_hostaddrs().len());
    if hosts > 1 {
        if config.get_target_session_attrs() == TargetSessionAttrs::Any {
            config.target_session_attrs(TargetSessionAttrs::ReadWrite);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(MULTI_HOST_CONNECT_TIMEOUT);
        }
    }
    config
}

/// An [`Opener`] for `config` through `tls` (as [`for_writes`] adjusts it). Each
/// connection's I/O runs in a task of its own on the runtime, as tokio-postgres
/// requires.
pub(crate) fn opener<T>(config: tokio_postgres::Config, tls: T) -> Opener
where
    T: MakeTlsConnect<Socket> + Clone + Send + Sync + 'static,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let config = for_writes(config);
    Arc::new(move || {
        let (config, tls) = (config.clone(), tls.clone());
        Box::pin(async move {
            let (client, connection) = config.connect(tls).await?;
            let ended_unasked = Arc::new(AtomicBool::new(false));
            let ended = Arc::clone(&ended_unasked);
            tokio::spawn(async move {
                let mut connection = std::pin::pin!(connection);
                // The flag is set before the connection is dropped, which is what
                // closes the queued requests' channels: a statement that sees its
                // channel closed sees the flag too.
                let ended = std::future::poll_fn(|cx| {
                    let result = std::task::ready!(connection.as_mut().poll(cx));
                    if let Err(error) = &result
                        && error.as_db_error().is_some()
                    {
                        ended.store(true, Ordering::SeqCst);
                    }
                    std::task::Poll::Ready(result)
                })
                .await;
                // A connection's failure also reaches its client: the statement that
                // was running fails, and the closed client is never reused.
                if let Err(error) = ended {
                    tracing::debug!(%error, "a postgresql connection ended with an error");
                }
            });
            Ok(Connection {
                client,
                prepared: KeptStatements::new(MAX_PREPARED_STATEMENTS),
                ended_unasked,
            })
        })
    })
}

/// A connection taken from a [`Postgres`](crate::Postgres) backend's pool, for running
/// statements of the application's own on the same connections. Dereferences to
/// tokio-postgres's [`Client`]. Dropping it gives the connection back to the pool,
/// unless the connection has been closed; leave no transaction open on it (see
/// [`Postgres::client`](crate::Postgres::client)).
#[cfg(feature = "postgres")]
pub struct PooledClient {
    checkout: Option<Checkout<Connection>>,
}

impl PooledClient {
    pub(crate) fn new(checkout: Checkout<Connection>) -> Self {
        PooledClient {
            checkout: Some(checkout),
        }
    }
}

impl Deref for PooledClient {
    type Target = Client;

    fn deref(&self) -> &Client {
        self.checkout
            .as_ref()
            .expect("a pooled client holds its connection until dropped")
            .conn_ref()
            .client()
    }
}

impl Drop for PooledClient {
    fn drop(&mut self) {
        if let Some(mut checkout) = self.checkout.take()
            && checkout.conn().is_usable()
        {
            // tokio-postgres keeps a connection consistent when a statement's future is
            // dropped: the answer is read and discarded by the connection's task.
            checkout.give_back();
        }
    }
}

impl fmt::Debug for PooledClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledClient")
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio_postgres::Config;
    use tokio_postgres::config::TargetSessionAttrs;

    use super::{MULTI_HOST_CONNECT_TIMEOUT, for_writes};

    fn adjusted(text: &str) -> (TargetSessionAttrs, Option<Duration>) {
        let config = for_writes(text.parse::<Config>().unwrap());
        (
            config.get_target_session_attrs(),
            config.get_connect_timeout().copied(),
        )
    }

    macro_rules! adjusts {
        ($($name:ident: $text:expr => $expected:expr,)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(adjusted($text), $expected);
            }
        )*};
    }

    adjusts! {
        one_host_is_left_alone: "host=db user=app" => (TargetSessionAttrs::Any, None),
        several_hosts_connect_to_the_primary: "host=a,b port=5432,5433 user=app" =>
            (TargetSessionAttrs::ReadWrite, Some(MULTI_HOST_CONNECT_TIMEOUT)),
        several_addresses_count_as_hosts: "hostaddr=10.0.0.1,10.0.0.2 user=app" =>
            (TargetSessionAttrs::ReadWrite, Some(MULTI_HOST_CONNECT_TIMEOUT)),
        read_write_is_kept: "host=a,b target_session_attrs=read-write" =>
            (TargetSessionAttrs::ReadWrite, Some(MULTI_HOST_CONNECT_TIMEOUT)),
        a_connect_timeout_given_is_kept: "host=a,b connect_timeout=1" =>
            (TargetSessionAttrs::ReadWrite, Some(Duration::from_secs(1))),
        a_url_with_several_hosts: "postgresql://app@a:5432,b:5433/jobs" =>
            (TargetSessionAttrs::ReadWrite, Some(MULTI_HOST_CONNECT_TIMEOUT)),
        read_only_is_the_callers_choice: "host=a,b target_session_attrs=read-only" =>
            (TargetSessionAttrs::ReadOnly, Some(MULTI_HOST_CONNECT_TIMEOUT)),
    }
}
