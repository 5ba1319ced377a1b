//! A client's opening: its startup packet (SSL and GSS encryption requests, cancel requests),
//! then authentication passed through to the server message by message until it is ready for
//! queries. The relay takes over from there.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::protocol::{encode, Message, Reader};
use super::Shared;

const SSL_REQUEST: i32 = 80_877_103;
const GSSENC_REQUEST: i32 = 80_877_104;
const CANCEL_REQUEST: i32 = 80_877_102;
/// A startup packet longer than this is not one (PostgreSQL's own limit is 10,000).
const STARTUP_AT_MOST: usize = 10_000;

/// What the client asked for in its startup packet.
pub(super) struct Startup {
    pub packet: Vec<u8>,
    pub user: String,
    pub database: String,
    pub application: String,
}

/// How a client opened its connection.
pub(super) enum Opening {
    Session(Startup),
    /// An SSLRequest, and the proxy has a certificate: the answer is `S` and a handshake.
    WantsTls,
    /// A cancel request (forwarded), or a client that went away before starting.
    Done,
}

/// Reads the startup packet, answering GSS encryption requests (and SSL ones, unless `offer_tls`)
/// with `N`, and forwarding a cancel request to the server.
pub(super) async fn read_startup<C>(
    client: &mut C,
    shared: &Shared,
    offer_tls: bool,
) -> io::Result<Opening>
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    loop {
        let len = client.read_i32().await?;
        let len = usize::try_from(len)
            .ok()
            .filter(|l| (8..=STARTUP_AT_MOST).contains(l));
        let Some(len) = len else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a startup packet",
            ));
        };
        let mut packet = vec![0u8; len];
        packet[..4].copy_from_slice(&(len as i32).to_be_bytes());
        client.read_exact(&mut packet[4..]).await?;
        let code = i32::from_be_bytes(packet[4..8].try_into().expect("4 bytes"));
        match code {
            SSL_REQUEST if offer_tls => return Ok(Opening::WantsTls),
            SSL_REQUEST | GSSENC_REQUEST => client.write_all(b"N").await?,
            CANCEL_REQUEST => {
                shared.stats.cancel_requests.fetch_add(1, Ordering::Relaxed);
                // The key is the server's own (BackendKeyData passed through unchanged).
                if let Ok(mut s) = shared.target.plain().await {
                    let _ = s.write_all(&packet).await;
                    let _ = s.flush().await;
                    // The server closes the connection when it has read the request.
                    let mut sink = [0u8; 1];
                    let _ = tokio::time::timeout(Duration::from_secs(5), s.read(&mut sink)).await;
                }
                return Ok(Opening::Done);
            }
            _ => {
                let mut r = Reader::new(&packet[8..]);
                let mut params = BTreeMap::new();
                while let Some(key) = r.cstr() {
                    if key.is_empty() {
                        break;
                    }
                    let Some(value) = r.cstr() else { break };
                    params.insert(key, value);
                }
                let user = params.get("user").cloned().unwrap_or_default();
                return Ok(Opening::Session(Startup {
                    database: params
                        .get("database")
                        .cloned()
                        .unwrap_or_else(|| user.clone()),
                    application: params.get("application_name").cloned().unwrap_or_default(),
                    user,
                    packet,
                }));
            }
        }
    }
}

/// Passes authentication through, message by message, until the server is ready for queries
/// (`true`) or refuses (`false`). The one change: `SCRAM-SHA-256-PLUS` is taken out of the
/// mechanisms the server offers, since channel binding cannot cross a proxy.
pub(super) async fn authenticate<C, S>(
    client: &mut C,
    server: &mut S,
    client_buf: &mut Vec<u8>,
    server_buf: &mut Vec<u8>,
    shared: &Shared,
) -> io::Result<bool>
where
    C: AsyncRead + AsyncWrite + Unpin,
    S: AsyncRead + AsyncWrite + Unpin,
{
    loop {
        let m = read_message(server, server_buf).await?;
        let kind = (m.tag == b'R')
            .then(|| Reader::new(&m.body).i32())
            .flatten();
        let out = match kind {
            Some(10) => encode(b'R', &without_channel_binding(&m.body)),
            _ => encode(m.tag, &m.body),
        };
        client.write_all(&out).await?;
        match (m.tag, kind) {
            // Cleartext, MD5, SASL, SASL continue, GSS, GSS continue, SSPI: the client answers.
            (b'R', Some(3 | 5 | 7 | 8 | 9 | 10 | 11)) => {
                let answer = read_message(client, client_buf).await?;
                server.write_all(&encode(answer.tag, &answer.body)).await?;
            }
            (b'S', _) => {
                let mut r = Reader::new(&m.body);
                if r.cstr().as_deref() == Some("server_version") {
                    if let Some(v) = r.cstr() {
                        let mut known = shared.server_version.lock().expect("not poisoned");
                        known.get_or_insert(v);
                    }
                }
            }
            (b'E', _) => return Ok(false),
            (b'Z', _) => return Ok(true),
            _ => {}
        }
    }
}

/// An AuthenticationSASL body without the `-PLUS` mechanisms.
fn without_channel_binding(body: &[u8]) -> Vec<u8> {
    let mut out = body[..4.min(body.len())].to_vec();
    let mut r = Reader::new(body.get(4..).unwrap_or_default());
    while let Some(mechanism) = r.cstr() {
        if mechanism.is_empty() {
            break;
        }
        if !mechanism.ends_with("-PLUS") {
            out.extend_from_slice(mechanism.as_bytes());
            out.push(0);
        }
    }
    out.push(0);
    out
}

/// Reads one whole message, keeping in `buf` whatever came after it.
async fn read_message<R: AsyncRead + Unpin>(r: &mut R, buf: &mut Vec<u8>) -> io::Result<Message> {
    loop {
        if buf.len() >= 5 {
            let len = u32::from_be_bytes(buf[1..5].try_into().expect("4 bytes")) as usize;
            if len < 4 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "bad message length",
                ));
            }
            if buf.len() > len {
                let body = buf[5..1 + len].to_vec();
                let tag = buf[0];
                buf.drain(..1 + len);
                return Ok(Message { tag, body });
            }
        }
        let mut chunk = [0u8; 8192];
        let n = r.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A FATAL ErrorResponse for the client.
pub(super) fn fatal(code: &str, message: &str) -> Vec<u8> {
    let body = format!("SFATAL\0VFATAL\0C{code}\0M{message}\0\0");
    encode(b'E', body.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_binding_is_not_offered() {
        let mut body = 10i32.to_be_bytes().to_vec();
        body.extend_from_slice(b"SCRAM-SHA-256-PLUS\0SCRAM-SHA-256\0\0");
        let out = without_channel_binding(&body);
        assert_eq!(&out[4..], b"SCRAM-SHA-256\0\0");
    }
}
