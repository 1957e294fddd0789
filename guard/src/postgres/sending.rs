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

/// Starts a query, its error marked as [`Failed::before_running`] when the server gave
/// one, or when the query failed on its first poll: tokio-postgres sends a query on
/// its first poll and then waits for the answer, so an error then is a connection
/// that was closed before anything was sent.
pub(crate) fn unexecuted<F>(start: F) -> Unexecuted<F>
where
    F: Future<Output = Result<RowStream, tokio_postgres::Error>>,
{
    Unexecuted {
        start,
        polled: false,
    }
}

pin_project_lite::pin_project! {
    /// The future of [`unexecuted`].
    pub(crate) struct Unexecuted<F> {
        #[pin]
        start: F,
        polled: bool,
    }
}

impl<F> Future for Unexecuted<F>
where
    F: Future<Output = Result<RowStream, tokio_postgres::Error>>,
{
    type Output = Result<RowStream, Failed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let first = !*this.polled;
        *this.polled = true;
        Poll::Ready(ready!(this.start.poll(cx)).map_err(|error| Failed {
            before_running: error.as_db_error().is_some() || (first && error.is_closed()),
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

    /// A statement sent behind a batch, its failure classified, holds tokio-postgres's
    /// query once: as `async fn`s the two held it four times (4,440 bytes around a
    /// query of 1,032), and each fenced statement's future carried that.
    #[test]
    fn a_statement_behind_a_batch_holds_its_query_once() {
        let query_size = size_of_output(|(client, statement)| query(client, statement));
        let sent_size = size_of_output(|(client, statement)| {
            behind(client, Some("BEGIN"), unexecuted(query(client, statement)))
        });
        assert!(
            sent_size < query_size + 512,
            "behind(unexecuted(query)) is {sent_size} bytes around a query of {query_size}"
        );
    }
}
