//! A small TCP proxy between a PostgreSQL client and the server, on loopback, that can
//! pass traffic, delay it, or cut a connection at a chosen point of the wire protocol.
//!
//! The proxy reads PostgreSQL's framing (a startup message without a type byte, then
//! `type, length, body` messages in both directions) so that a fault hits the statement
//! it is meant for and not, say, the `Parse` round trip that prepares it:
//!
//! - [`Fault::CutBeforeExecute`]: the next client batch holding an `Execute` message is
//!   dropped and both sides are closed. The server never runs the statement.
//! - [`Fault::CutAfterCommit`]: the next client batch holding an `Execute` is forwarded;
//!   the server's reply is withheld until its `ReadyForQuery` (sent after the implicit
//!   transaction of an extended-protocol statement has committed), then dropped, and both
//!   sides are closed. The server ran and committed the statement; the client never
//!   hears so.
//! - [`Proxy::set_delay`]: every batch in both directions waits that long first.
//!
//! A fault is armed for one statement ([`Proxy::arm`]) or for a number of them
//! ([`Proxy::arm_for`]), and fires once for each. The client must not ask for TLS (the
//! tests connect with `sslmode=disable`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// A fault to inject into the next statements that pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Drop the statement before it reaches the server, and close the connection.
    CutBeforeExecute,
    /// Let the statement reach the server and commit, drop the reply, and close the
    /// connection.
    CutAfterCommit,
}

#[derive(Debug, Default)]
struct Control {
    /// The armed fault and how many more statements it is for.
    armed: Mutex<Option<(Fault, u32)>>,
    delay: Mutex<Duration>,
    fired: AtomicU64,
}

impl Control {
    fn take_if(&self, fault: Fault) -> bool {
        let mut armed = self.armed.lock().unwrap();
        match *armed {
            Some((armed_fault, remaining)) if armed_fault == fault => {
                *armed = (remaining > 1).then(|| (fault, remaining - 1));
                self.fired.fetch_add(1, Ordering::SeqCst);
                true
            }
            _ => false,
        }
    }

    fn delay(&self) -> Duration {
        *self.delay.lock().unwrap()
    }
}

/// A running proxy; stops (and closes every connection through it) when dropped.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    control: Arc<Control>,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Listens on `127.0.0.1:0` and forwards each connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let control = Arc::new(Control::default());
        let shared = Arc::clone(&control);
        let task = tokio::spawn(async move {
            // Dropping the set (when this task is aborted) aborts every connection.
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((client, _)) = accepted else { continue };
                        connections.spawn(relay(client, upstream, Arc::clone(&shared)));
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Ok(Proxy {
            addr,
            control,
            task,
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Arms `fault` for the next statement that passes (replacing any armed fault).
    pub fn arm(&self, fault: Fault) {
        self.arm_for(fault, 1);
    }

    /// Arms `fault` for each of the next `statements` statements that pass (replacing
    /// any armed fault).
    pub fn arm_for(&self, fault: Fault, statements: u32) {
        *self.control.armed.lock().unwrap() = (statements > 0).then_some((fault, statements));
    }

    /// Disarms; returns the fault that was armed and did not fire, if any.
    pub fn disarm(&self) -> Option<Fault> {
        self.control
            .armed
            .lock()
            .unwrap()
            .take()
            .map(|(fault, _)| fault)
    }

    /// Delays every later batch in both directions by `delay` (zero: pass at once).
    pub fn set_delay(&self, delay: Duration) {
        *self.control.delay.lock().unwrap() = delay;
    }

    /// How many armed faults have fired.
    pub fn fired(&self) -> u64 {
        self.control.fired.load(Ordering::SeqCst)
    }
}

async fn relay(client: TcpStream, upstream: SocketAddr, control: Arc<Control>) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let cut_on_reply = Arc::new(AtomicBool::new(false));
    // Whichever direction ends first ends the connection: both halves of both sockets
    // are dropped here, which closes them.
    tokio::select! {
        () = requests(client_read, server_write, &control, &cut_on_reply) => {}
        () = replies(server_read, client_write, &control, &cut_on_reply) => {}
    }
}

/// Splits complete messages off the front of `buf`. The first message of a connection
/// (`untyped`) has no type byte. Returns the messages' type bytes (0 for untyped) and
/// how many bytes they take.
fn complete_messages(buf: &[u8], untyped: &mut bool) -> Option<(Vec<u8>, usize)> {
    let mut at = 0;
    let mut types = Vec::new();
    loop {
        let rest = &buf[at..];
        let (kind, header) = match (rest.first(), *untyped) {
            (None, _) => break,
            (Some(_), true) => (0, 0),
            (Some(kind), false) => (*kind, 1),
        };
        if rest.len() < header + 4 {
            break;
        }
        let len = u32::from_be_bytes(rest[header..header + 4].try_into().unwrap()) as usize;
        if len < 4 {
            // Not PostgreSQL framing: treat the rest as one opaque message.
            types.push(kind);
            at = buf.len();
            break;
        }
        if rest.len() < header + len {
            break;
        }
        types.push(kind);
        at += header + len;
        *untyped = false;
    }
    (at > 0).then_some((types, at))
}

/// One direction of a connection, read in whole protocol messages.
struct Messages {
    from: OwnedReadHalf,
    buf: Vec<u8>,
    chunk: [u8; 8192],
    untyped: bool,
}

impl Messages {
    /// `untyped`: the first message has no type byte (the client's startup message).
    fn new(from: OwnedReadHalf, untyped: bool) -> Messages {
        Messages {
            from,
            buf: Vec::with_capacity(8192),
            chunk: [0; 8192],
            untyped,
        }
    }

    /// The next complete messages as they arrived: their type bytes and their bytes.
    /// `None` once the peer closed its side or the read failed.
    async fn next(&mut self) -> Option<(Vec<u8>, Vec<u8>)> {
        loop {
            if let Some((types, len)) = complete_messages(&self.buf, &mut self.untyped) {
                return Some((types, self.buf.drain(..len).collect()));
            }
            let n = self.from.read(&mut self.chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            self.buf.extend_from_slice(&self.chunk[..n]);
        }
    }
}

/// Passes `batch` on after the delay the control asks for; `false` once the other side
/// is gone.
async fn pass(to: &mut OwnedWriteHalf, batch: &[u8], control: &Control) -> bool {
    let delay = control.delay();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    to.write_all(batch).await.is_ok()
}

async fn requests(
    from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    control: &Control,
    cut_on_reply: &AtomicBool,
) {
    let mut messages = Messages::new(from, true);
    while let Some((types, batch)) = messages.next().await {
        let executes = types.contains(&b'E');
        if executes && control.take_if(Fault::CutBeforeExecute) {
            return;
        }
        if executes && control.take_if(Fault::CutAfterCommit) {
            cut_on_reply.store(true, Ordering::SeqCst);
        }
        if !pass(&mut to, &batch, control).await {
            return;
        }
    }
}

async fn replies(
    from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    control: &Control,
    cut_on_reply: &AtomicBool,
) {
    let mut messages = Messages::new(from, false);
    while let Some((types, batch)) = messages.next().await {
        if cut_on_reply.load(Ordering::SeqCst) {
            // Withhold everything; once the server says it is ready for the next
            // query, the statement's implicit transaction has committed: cut.
            if types.contains(&b'Z') {
                return;
            }
            continue;
        }
        if !pass(&mut to, &batch, control).await {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::complete_messages;

    #[test]
    fn framing_splits_startup_then_typed_messages() {
        let mut untyped = true;
        let mut bytes = vec![0, 0, 0, 8, 0, 3, 0, 0];
        bytes.extend_from_slice(&[b'E', 0, 0, 0, 4, b'S', 0, 0, 0, 4, b'C', 0]);
        let (types, len) = complete_messages(&bytes, &mut untyped).unwrap();
        assert_eq!(types, vec![0, b'E', b'S']);
        assert_eq!(len, 18);
        assert!(!untyped);
        // An incomplete message waits for more bytes.
        assert_eq!(complete_messages(&bytes[18..], &mut untyped), None);
        // Messages that end exactly at the end of the buffer are complete.
        assert_eq!(
            complete_messages(&bytes[8..13], &mut untyped),
            Some((vec![b'E'], 5))
        );
    }
}
