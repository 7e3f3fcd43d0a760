//! A TCP listener for a trial's own servers (its MCP server, its model
//! proxy) that holds at most a fixed number of connections at once. Past
//! the cap a new connection is answered at once with an HTTP 503 saying why
//! and closed: an agent opening connections without end learns what
//! happened, and takes no more of evalua's file descriptors (which every
//! other trial, and the run itself, need) than its cap.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// Connections one trial's server holds at once (SPEC §6: its MCP server and
/// its model proxy each).
pub const MAX_CONNECTIONS_PER_TRIAL: usize = 64;

/// A listener with a cap on the connections it holds; `what` names the server in the refusal.
pub struct Capped {
    inner: TcpListener,
    live: Arc<AtomicUsize>,
    cap: usize,
    refusal: Vec<u8>,
}

impl Capped {
    pub fn new(inner: TcpListener, cap: usize, what: &str) -> Capped {
        let body = format!(
            "{{\"error\":{{\"type\":\"too_many_connections\",\"message\":\"evalua: this trial already holds {cap} connections to its {what}, the most one trial may: close some and retry\"}}}}"
        );
        let refusal = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\nretry-after: 1\r\n\r\n{body}",
            body.len()
        )
        .into_bytes();
        Capped { inner, live: Arc::new(AtomicUsize::new(0)), cap, refusal }
    }
}

/// A connection that counts itself out of its listener's cap when dropped.
pub struct Counted {
    stream: TcpStream,
    live: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::AcqRel);
    }
}

impl AsyncRead for Counted {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl axum::serve::Listener for Capped {
    type Io = Counted;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Counted, SocketAddr) {
        loop {
            match self.inner.accept().await {
                Ok((stream, addr)) => {
                    if self.live.load(Ordering::Acquire) >= self.cap {
                        // The refusal fits the socket's send buffer: written without waiting, then closed.
                        let _ = stream.try_write(&self.refusal);
                        continue;
                    }
                    self.live.fetch_add(1, Ordering::AcqRel);
                    return (Counted { stream, live: self.live.clone() }, addr);
                }
                // Out of descriptors (or a connection reset before it was taken): try again shortly.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}
