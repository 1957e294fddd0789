//! How a statement goes to the server: its failure told apart as before it ran or not
//! ([`unexecuted`]), and sent behind a batch in one round trip ([`behind`]).
//!
//! Both are futures of their own rather than `async fn`s. An `async fn` keeps its
//! argument and, once it is pinned or joined, a second copy of it: around
//! tokio-postgres's query (about a kilobyte) that made each statement's future four
//! times the query's size, and every fenced statement moved it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio_postgres::RowStream;

/// A statement's failure, and whether it is known not to have run: the server answered
/// it with an error in place of the `BindComplete` that precedes any execution (a value
/// it could not bind, an aborted transaction, a session the server had already ended,
/// 57P01), or the connection was closed before it was sent. A connection that closed
/// after it was sent, with no answer, says nothing of the kind.
pub(crate) struct Failed {
    pub(crate) error: tokio_postgres::Error,
    pub(crate) before_running: bool,
}

impl From<tokio_postgres::Error> for Failed {
    fn from(error: tokio_postgres::Error) -> Self {
        Failed {
            error,
            before_running: false,
        }
    }
}

/// Starts a query on `client`, its error marked as [`Failed::before_running`] when the
/// server gave one, or when `client` was already closed as the query was made (read
/// here, just before the query's first poll): the query then has nowhere to be sent.
///
/// A closed connection found later proves nothing. tokio-postgres hands the query to
/// the connection's task on the first poll and waits for its answer in the same poll;
/// on a multi-threaded runtime that poll can be preempted between the two while the
/// task writes the query, the server commits it, and the connection closes. Read as
/// unsent, such a statement was run again on another connection (seen as a write
/// whose lost acknowledgement came back `AlreadyApplied`).
pub(crate) fn unexecuted<F>(client: &tokio_postgres::Client, start: F) -> Unexecuted<F>
where
    F: Future<Output = Result<RowStream, tokio_postgres::Error>>,
{
    Unexecuted {
        start,
        closed_at_start: client.is_closed(),
    }
}

pin_project_lite::pin_project! {
    /// The future of [`unexecuted`].
    pub(crate) struct Unexecuted<F> {
        #[pin]
        start: F,
        closed_at_start: bool,
    }
}

impl<F> Future for Unexecuted<F>
where
    F: Future<Output = Result<RowStream, tokio_postgres::Error>>,
{
    type Output = Result<RowStream, Failed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let closed_at_start = *this.closed_at_start;
        Poll::Ready(ready!(this.start.poll(cx)).map_err(|error| Failed {
            before_running: error.as_db_error().is_some() || (closed_at_start && error.is_closed()),
            error,
        }))
    }
}

/// Runs `run` on `client`, behind `batch` when given: both are sent before any answer
/// is read (tokio-postgres sends a query when its future is first polled, and the
/// batch is polled first), so together they cost one waited round trip.
///
/// `run`'s failure comes first. A failed `SET` aborts the transaction, and the
/// statement after it fails too, before it runs: its own error says so. A failed
/// `BEGIN` leaves no transaction for the statement to have run in: that it ran does
/// not count.
pub(crate) fn behind<'a, T, R>(
    client: &'a tokio_postgres::Client,
    batch: Option<&'a str>,
    run: R,
) -> Behind<impl Future<Output = Result<(), tokio_postgres::Error>> + 'a, R>
where
    R: Future<Output = Result<T, Failed>>,
{
    Behind {
        batch: batch.map(|batch| client.batch_execute(batch)),
        sent: None,
        run,
        ran: None,
    }
}

pin_project_lite::pin_project! {
    /// The future of [`behind`]: both futures held once, each polled until it is done,
    /// the batch first.
    pub(crate) struct Behind<B, R: Future> {
        #[pin]
        batch: Option<B>,
        sent: Option<Result<(), tokio_postgres::Error>>,
        #[pin]
        run: R,
        ran: Option<R::Output>,
    }
}

impl<T, B, R> Future for Behind<B, R>
where
    B: Future<Output = Result<(), tokio_postgres::Error>>,
    R: Future<Output = Result<T, Failed>>,
{
    type Output = Result<T, Failed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Some(batch) = this.batch.as_mut().as_pin_mut()
            && let Poll::Ready(sent) = batch.poll(cx)
        {
            *this.sent = Some(sent);
            this.batch.set(None);
        }
        if this.ran.is_none()
            && let Poll::Ready(ran) = this.run.poll(cx)
        {
            *this.ran = Some(ran);
        }
        if this.batch.is_some() {
            return Poll::Pending;
        }
        let Some(ran) = this.ran.take() else {
            return Poll::Pending;
        };
        Poll::Ready(match (ran, this.sent.take()) {
            (Err(failed), _) => Err(failed),
            (Ok(_), Some(Err(error))) => Err(error.into()),
            (Ok(ran), _) => Ok(ran),
        })
    }
}

#[cfg(test)]
mod tests {
    use tokio_postgres::{Client, Statement};

    use super::*;
    use crate::value::Value;

    /// The size of what `make` returns: a future's type, read without a connection,
    /// since `make` is never called.
    fn size_of_output<A, R>(_make: impl FnOnce(A) -> R) -> usize {
        std::mem::size_of::<R>()
    }

    /// A statement's query, as tokio-postgres makes it.
    fn query(
        client: &'static Client,
        statement: &'static Statement,
    ) -> impl Future<Output = Result<RowStream, tokio_postgres::Error>> + 'static {
        client.query_raw(statement, &[] as &[Value])
    }

    /// A query whose connection closes between its making and its first answer fails
    /// on its first poll, closed, although tokio-postgres may have sent it by then (on
    /// a multi-threaded runtime the task can write it, the server commit it, and the
    /// connection close while that poll is preempted): it is not marked as before
    /// running. Negative control: one made on a connection already closed is.
    #[tokio::test]
    async fn only_a_connection_closed_before_the_query_proves_it_unsent() {
        let url = std::env::var("FENCED_PG_URL")
            .unwrap_or_else(|_| "host=127.0.0.1 port=5432 user=postgres dbname=test".into());
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL is not reachable at `{url}`: {e}"));
        let task = tokio::spawn(connection);
        let statement = client.prepare("SELECT 1").await.expect("prepare");

        assert!(
            !client.is_closed(),
            "the connection closed before the test began"
        );
        let made_open = unexecuted(&client, client.query_raw(&statement, &[] as &[Value]));
        task.abort();
        let _ = task.await;
        assert!(
            client.is_closed(),
            "the connection's task ended, yet it is open"
        );
        let Err(failed) = made_open.await else {
            panic!("a query on a closed connection answered");
        };
        assert!(failed.error.is_closed(), "{}", failed.error);
        assert!(
            !failed.before_running,
            "a query made while its connection was open is marked unsent"
        );

        let made_closed = unexecuted(&client, client.query_raw(&statement, &[] as &[Value]));
        let Err(failed) = made_closed.await else {
            panic!("a query on a closed connection answered");
        };
        assert!(
            failed.before_running,
            "a query made on a closed connection is not marked unsent"
        );
    }

    /// A statement sent behind a batch, its failure classified, holds tokio-postgres's
    /// query once: as `async fn`s the two held it four times (4,440 bytes around a
    /// query of 1,032), and each fenced statement's future carried that.
    #[test]
    fn a_statement_behind_a_batch_holds_its_query_once() {
        let query_size = size_of_output(|(client, statement)| query(client, statement));
        let sent_size = size_of_output(|(client, statement)| {
            behind(
                client,
                Some("BEGIN"),
                unexecuted(client, query(client, statement)),
            )
        });
        assert!(
            sent_size < query_size + 512,
            "behind(unexecuted(query)) is {sent_size} bytes around a query of {query_size}"
        );
    }
}
