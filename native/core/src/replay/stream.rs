//! The byte streams of a session on the direct path: the socket as connected (`Plain`) and, once
//! authenticated, the stream the session reads and writes (`Stream`: plain or TLS over it).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
#[cfg(unix)]
use tokio::net::UnixStream;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres_rustls::MakeRustlsConnect;

/// A connected socket, before TLS.
pub enum Plain {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(UnixStream),
}

pub type TlsOverPlain = <MakeRustlsConnect as MakeTlsConnect<Plain>>::Stream;

/// An authenticated session's stream, as the direct path reads and writes it.
pub enum Stream {
    Plain(Plain),
    Tls(Box<TlsOverPlain>),
}

macro_rules! delegate_io {
    ($ty:ty { $($variant:path),+ }) => {
        impl AsyncRead for $ty {
            fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() { $($variant(s) => Pin::new(s).poll_read(cx, buf),)+ }
            }
        }
        impl AsyncWrite for $ty {
            fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                match self.get_mut() { $($variant(s) => Pin::new(s).poll_write(cx, buf),)+ }
            }
            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() { $($variant(s) => Pin::new(s).poll_flush(cx),)+ }
            }
            fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() { $($variant(s) => Pin::new(s).poll_shutdown(cx),)+ }
            }
        }
    };
}

impl Stream {
    /// Writes what the socket takes at once, without waiting: `Ok(0)` when it takes nothing now
    /// or the stream is encrypted (TLS needs its records built and flushed by the async path).
    pub fn try_write_now(&self, buf: &[u8]) -> io::Result<usize> {
        let written = match self {
            Stream::Plain(Plain::Tcp(s)) => s.try_write(buf),
            #[cfg(unix)]
            Stream::Plain(Plain::Unix(s)) => s.try_write(buf),
            Stream::Tls(_) => return Ok(0),
        };
        match written {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            other => other,
        }
    }
}

#[cfg(unix)]
delegate_io!(Plain { Plain::Tcp, Plain::Unix });
#[cfg(not(unix))]
delegate_io!(Plain { Plain::Tcp });
delegate_io!(Stream { Stream::Plain, Stream::Tls });
