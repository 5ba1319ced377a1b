//! Lending a session's stream to tokio-postgres for its start-up (TLS negotiation, the startup
//! packet, authentication), and taking it back with nothing left unread.
//!
//! tokio-postgres does everything up to the server's first ReadyForQuery — every authentication
//! method it knows (SCRAM with channel binding included) and the server's refusals, as
//! `tokio_postgres::Error`s with their SQLSTATE — over the stream lent here
//! (`Config::connect_raw`). The lent stream feeds it the start-up conversation one message at a
//! time and never reads past the ReadyForQuery that ends it, so when `connect_raw` returns no
//! byte of the session sits in tokio-postgres's buffers: its client and connection are dropped
//! unpolled (dropping them sends nothing) and the stream is ours, with the session's cancel key.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, TlsConnect, TlsStream};
use tokio_postgres::{CancelToken, Config};

use super::connect::ConnectFailure;
use super::stream::{Plain, Stream};

/// The first bytes of an SSLRequest: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

/// How far tokio-postgres may read: message by message, up to the first ReadyForQuery.
#[derive(Default)]
struct StartupReader {
    /// The one-byte answer to an SSLRequest comes next (it is not a message).
    ssl_answer: bool,
    header: [u8; 5],
    have: usize,
    body_left: usize,
    ready: bool,
}

impl StartupReader {
    /// How many bytes may be read now without crossing into the next message.
    fn allowance(&self) -> Option<usize> {
        if self.ready {
            None
        } else if self.ssl_answer {
            Some(1)
        } else if self.have < self.header.len() {
            Some(self.header.len() - self.have)
        } else {
            Some(self.body_left)
        }
    }

    /// Follows the message framing over bytes just read (never more than `allowance`).
    fn consumed(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if self.ssl_answer {
            self.ssl_answer = bytes.is_empty();
            return Ok(());
        }
        while !bytes.is_empty() {
            if self.have < self.header.len() {
                let k = (self.header.len() - self.have).min(bytes.len());
                self.header[self.have..self.have + k].copy_from_slice(&bytes[..k]);
                self.have += k;
                bytes = &bytes[k..];
                if self.have == self.header.len() {
                    let len = u32::from_be_bytes([
                        self.header[1],
                        self.header[2],
                        self.header[3],
                        self.header[4],
                    ]) as usize;
                    if len < 4 {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "invalid message length from the server",
                        ));
                    }
                    self.body_left = len - 4;
                    if self.body_left == 0 {
                        self.message_done();
                    }
                }
            } else {
                let k = self.body_left.min(bytes.len());
                self.body_left -= k;
                bytes = &bytes[k..];
                if self.body_left == 0 {
                    self.message_done();
                }
            }
        }
        Ok(())
    }

    fn message_done(&mut self) {
        if self.header[0] == b'Z' {
            self.ready = true;
        }
        self.have = 0;
    }
}

struct Lent {
    stream: Option<Stream>,
    reader: StartupReader,
    wrote: bool,
}

/// The stream as lent to tokio-postgres; a clone is how we take it back.
#[derive(Clone)]
pub struct Tap(Arc<Mutex<Lent>>);

impl Tap {
    pub fn lend(stream: Stream) -> Tap {
        Tap(Arc::new(Mutex::new(Lent {
            stream: Some(stream),
            reader: StartupReader::default(),
            wrote: false,
        })))
    }

    fn lent(&self) -> std::sync::MutexGuard<'_, Lent> {
        // Only ever locked for one poll, never across an await: a panic there is a bug anyway.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The plain socket, taken out to run the TLS handshake on it (`upgrade.rs`).
    pub fn take_plain(&self) -> io::Result<Plain> {
        match self.lent().stream.take() {
            Some(Stream::Plain(p)) => Ok(p),
            _ => Err(taken()),
        }
    }

    /// Lends `stream` (the encrypted one) in place of the socket taken out, with a fresh count
    /// of messages: the start-up goes on over it.
    pub fn lend_again(&self, stream: Stream) {
        let mut lent = self.lent();
        lent.stream = Some(stream);
        lent.reader = StartupReader::default();
    }

    /// The stream, once tokio-postgres has read exactly up to the end of the startup.
    pub fn take_back(&self) -> Result<Stream, ConnectFailure> {
        let mut lent = self.lent();
        if !lent.reader.ready {
            return Err(ConnectFailure::without_sqlstate(
                "the server's start-up messages did not end with ReadyForQuery".into(),
            ));
        }
        lent.stream.take().ok_or_else(|| {
            ConnectFailure::without_sqlstate("the session's stream was already taken".into())
        })
    }
}

fn taken() -> io::Error {
    io::Error::other("the session's stream is no longer lent")
}

impl AsyncRead for Tap {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut guard = self.lent();
        let lent = &mut *guard;
        let Some(allowed) = lent.reader.allowance() else {
            return Poll::Ready(Err(io::Error::other(
                "read past the end of the start-up messages",
            )));
        };
        let Some(stream) = lent.stream.as_mut() else {
            return Poll::Ready(Err(taken()));
        };
        let mut chunk = [0u8; 512];
        let n = allowed.min(chunk.len()).min(buf.remaining());
        let mut part = ReadBuf::new(&mut chunk[..n]);
        ready!(Pin::new(stream).poll_read(cx, &mut part))?;
        let got = part.filled();
        lent.reader.consumed(got)?;
        buf.put_slice(got);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Tap {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut guard = self.lent();
        let lent = &mut *guard;
        if !lent.wrote {
            lent.wrote = true;
            lent.reader.ssl_answer = buf.starts_with(&SSL_REQUEST);
        }
        match lent.stream.as_mut() {
            Some(s) => Pin::new(s).poll_write(cx, buf),
            None => Poll::Ready(Err(taken())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.lent().stream.as_mut() {
            Some(s) => Pin::new(s).poll_flush(cx),
            None => Poll::Ready(Err(taken())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.lent().stream.as_mut() {
            Some(s) => Pin::new(s).poll_shutdown(cx),
            None => Poll::Ready(Err(taken())),
        }
    }
}

impl TlsStream for Tap {
    fn channel_binding(&self) -> ChannelBinding {
        match self.lent().stream.as_ref() {
            Some(Stream::Tls(s)) => s.channel_binding(),
            _ => ChannelBinding::none(),
        }
    }
}

/// Lets tokio-postgres open the session on `tap`; its client and connection are dropped unpolled.
pub async fn authenticate<T: TlsConnect<Tap>>(
    config: &Config,
    tap: &Tap,
    tls: T,
) -> Result<CancelToken, ConnectFailure> {
    let (client, connection) = config
        .connect_raw(tap.clone(), tls)
        .await
        .map_err(|e| ConnectFailure::from_error(&e))?;
    let token = client.cancel_token();
    drop((client, connection));
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `bytes` through the reader as tokio-postgres would read them: never more than allowed.
    fn follow(reader: &mut StartupReader, mut bytes: &[u8]) -> usize {
        let mut read = 0;
        while let Some(n) = reader.allowance() {
            if bytes.is_empty() {
                break;
            }
            let k = n.min(bytes.len()).min(3);
            reader.consumed(&bytes[..k]).unwrap();
            bytes = &bytes[k..];
            read += k;
        }
        read
    }

    #[test]
    fn the_reader_stops_exactly_after_ready_for_query() {
        let mut wire = Vec::new();
        wire.extend_from_slice(b"R\0\0\0\x08\0\0\0\0"); // AuthenticationOk
        wire.extend_from_slice(b"S\0\0\0\x0ba\0bcde\0"); // ParameterStatus
        wire.extend_from_slice(b"Z\0\0\0\x05I"); // ReadyForQuery
        let startup = wire.len();
        wire.extend_from_slice(b"N\0\0\0\x04"); // anything the server sends later
        let mut reader = StartupReader::default();
        assert_eq!(follow(&mut reader, &wire), startup);
        assert!(reader.ready);
        assert_eq!(reader.allowance(), None);
    }

    #[test]
    fn the_answer_to_an_ssl_request_is_one_byte_before_any_message() {
        let mut reader = StartupReader {
            ssl_answer: true,
            ..Default::default()
        };
        assert_eq!(reader.allowance(), Some(1));
        reader.consumed(b"N").unwrap();
        assert_eq!(reader.allowance(), Some(5));
    }

    #[test]
    fn a_bad_length_is_an_error() {
        let mut reader = StartupReader::default();
        assert!(reader.consumed(b"R\0\0\0\x02").is_err());
    }
}
