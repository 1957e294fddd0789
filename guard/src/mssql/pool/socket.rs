//! The TCP connection under a pooled tiberius client, shared with the pool so that it
//! can tell, before it lends an idle connection, whether the server closed it.
//!
//! tiberius owns its stream and keeps no task reading it, so nothing notices when the
//! server ends an idle session (a restart, a failover, an idle reaper, `KILL`): the
//! next statement would be written into a closed connection and fail with no answer,
//! which says nothing of whether it ran. An idle TDS connection receives nothing, so a
//! look at its socket before it is lent (a `MSG_PEEK` of one byte, which does not
//! block) finds the end, or any stray bytes, and the pool opens another connection
//! instead.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The stream tiberius reads and writes.
#[derive(Debug)]
pub(super) struct Socket(Arc<TcpStream>);

/// The pool's view of the same connection.
#[derive(Debug)]
pub(super) struct Watch(Arc<TcpStream>);

/// Splits `tcp` into the stream tiberius uses and the pool's view of it.
pub(super) fn watched(tcp: TcpStream) -> (Socket, Watch) {
    let tcp = Arc::new(tcp);
    (Socket(Arc::clone(&tcp)), Watch(tcp))
}

/// What closes the connection from outside, at a fenced transaction's deadline; it
/// keeps the socket open no longer than the client does.
#[derive(Clone, Debug)]
pub(super) struct Closer(Weak<TcpStream>);

impl Closer {
    /// Shuts the connection in both directions, if it is still open: the server sees it
    /// end and rolls back its transaction; the client's next read finds the end.
    pub(super) fn close(&self) {
        if let Some(tcp) = self.0.upgrade() {
            let _ = socket2::SockRef::from(&*tcp).shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Watch {
    /// What closes this connection from outside.
    pub(super) fn closer(&self) -> Closer {
        Closer(Arc::downgrade(&self.0))
    }

    /// Whether the idle connection can take a statement: nothing has arrived on it,
    /// neither the server's end of the connection nor any byte.
    pub(super) fn is_idle_and_open(&self) -> bool {
        let mut byte = [MaybeUninit::<u8>::uninit()];
        matches!(
            socket2::SockRef::from(&*self.0).peek(&mut byte),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock
        )
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.0.poll_read_ready(cx))?;
            match self.0.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => return Poll::Ready(Err(error)),
            }
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write(buf) {
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                result => return Poll::Ready(result),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(socket2::SockRef::from(&*self.0).shutdown(std::net::Shutdown::Write))
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    async fn pair() -> (Socket, Watch, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap());
        let (client, accepted) = tokio::join!(client, listener.accept());
        let (socket, watch) = watched(client.unwrap());
        (socket, watch, accepted.unwrap().0)
    }

    #[tokio::test]
    async fn an_open_quiet_connection_can_be_lent() {
        let (_socket, watch, _server) = pair().await;
        assert!(watch.is_idle_and_open());
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_cannot() {
        let (_socket, watch, server) = pair().await;
        drop(server);
        // The end travels through the loopback: wait for it without sleeping blindly.
        for _ in 0..1000 {
            if !watch.is_idle_and_open() {
                return;
            }
            tokio::task::yield_now().await;
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        panic!("the server's end of the connection was never seen");
    }

    #[tokio::test]
    async fn stray_bytes_make_it_unusable_and_stay_for_the_reader() {
        let (mut socket, watch, mut server) = pair().await;
        server.write_all(b"x").await.unwrap();
        for _ in 0..1000 {
            if !watch.is_idle_and_open() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(!watch.is_idle_and_open());
        let mut read = [0u8; 1];
        socket.read_exact(&mut read).await.unwrap();
        assert_eq!(&read, b"x");
        socket.write_all(b"y").await.unwrap();
        server.read_exact(&mut read).await.unwrap();
        assert_eq!(&read, b"y");
    }
}
