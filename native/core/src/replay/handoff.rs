//! Opening a session for the direct protocol path (`wire.rs`): tokio-postgres authenticates, then
//! hands the stream over.
//!
//! tokio-postgres still does everything up to the server's first ReadyForQuery — TLS negotiation,
//! the startup packet with its options, every authentication method it knows (SCRAM with channel
//! binding included) and the server's refusals, as `tokio_postgres::Error`s with their SQLSTATE —
//! but over a stream we lend it (`Config::connect_raw`). The lent stream feeds tokio-postgres the
//! startup conversation one message at a time and never reads past the ReadyForQuery that ends
//! it, so when `connect_raw` returns no byte of the session sits in tokio-postgres's buffers: its
//! client and connection are dropped unpolled (dropping them sends nothing) and the stream is ours,
//! with the session's cancel key. With TLS, the handshake runs on our socket (tokio-postgres-rustls,
//! the connector the tokio-postgres path uses) and the encrypted stream is what comes back.
//!
//! The socket itself is opened here, as tokio-postgres's own `connect` would: every host and
//! `hostaddr` in turn, each resolved address, Unix sockets, `connect_timeout`, TCP_NODELAY,
//! keepalives, `tcp_user_timeout`, `load_balance_hosts` and `target_session_attrs` — except that
//! TLS is decided per host, as libpq does (none on a socket directory). The run's own connection
//! (`open_client`) is opened the same way and kept by tokio-postgres, so that it reaches the
//! server the sessions reach.

use std::borrow::Cow;
use std::future::Future;
use std::io;
use std::net::IpAddr;
#[cfg(unix)]
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use socket2::{SockRef, TcpKeepalive};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
#[cfg(unix)]
use tokio::net::UnixStream;
use tokio_postgres::config::{Host, LoadBalanceHosts, SslMode, TargetSessionAttrs};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio_postgres::{CancelToken, Client, Config, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::connect::{ConnectFailure, Tls};
use super::wire::WireConn;

/// A connected socket, before TLS.
pub enum Plain {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(UnixStream),
}

type TlsOverPlain = <MakeRustlsConnect as MakeTlsConnect<Plain>>::Stream;

/// An authenticated session's stream, as the direct path reads and writes it.
pub enum Stream {
    Plain(Plain),
    Tls(Box<TlsOverPlain>),
}

/// Where a session's server was reached, to send its cancel request the same way.
#[derive(Clone)]
enum Peer {
    Tcp(IpAddr),
    #[cfg(unix)]
    Unix(PathBuf),
}

/// Asks the server to cancel what a session is running, over a connection of its own.
pub struct CancelTarget {
    token: CancelToken,
    peer: Peer,
    port: u16,
    hostname: Option<String>,
    tls: Tls,
    connect_timeout: Option<Duration>,
}

impl CancelTarget {
    /// Best effort, like libpq's: the server says nothing about whether it worked.
    pub async fn cancel(&self) {
        let Ok(plain) = open_socket(&self.peer, self.port, self.connect_timeout, None).await else {
            return;
        };
        let _ = match &self.tls {
            Tls::Plain => self.token.cancel_query_raw(plain, NoTls).await,
            Tls::Rustls(make) => {
                let mut make = make.clone();
                let host = self.hostname.as_deref().unwrap_or("");
                match MakeTlsConnect::<Plain>::make_tls_connect(&mut make, host) {
                    Ok(connector) => self.token.cancel_query_raw(plain, connector).await,
                    Err(_) => return,
                }
            }
        };
    }
}

fn config_failure(message: &str) -> ConnectFailure {
    ConnectFailure::without_sqlstate(format!("invalid configuration: {message}"))
}

fn socket_failure(e: &io::Error) -> ConnectFailure {
    ConnectFailure::without_sqlstate(format!("error connecting to server: {e}"))
}

/// Opens and authenticates one session on the first host that accepts it.
pub async fn open(tls: &Tls, config: &Config, seed: u64) -> Result<WireConn, ConnectFailure> {
    first_accepting(config, seed, |peer, port, hostname| {
        open_at(tls, config, peer, port, hostname)
    })
    .await
}

/// A tokio-postgres client on the first host that accepts it, reached exactly as the sessions
/// reach theirs: the run's own connection (preflight, sequences, liveness probes), so that it
/// checks the host, socket and TLS the sessions will use. (tokio-postgres's own `connect` applies
/// one sslmode to every host, so with `sslmode=require` it would refuse the socket directory of
/// a mixed host list that the sessions use in the clear.) Its cancel token cannot reach the
/// server (the client was not told where its socket goes); nothing cancels on this connection.
pub async fn open_client(tls: &Tls, config: &Config, seed: u64) -> Result<Client, ConnectFailure> {
    first_accepting(config, seed, |peer, port, hostname| {
        client_at(tls, config, peer, port, hostname)
    })
    .await
}

/// Tries `at` on every host and `hostaddr` in turn (shuffled for `load_balance_hosts=random`),
/// each resolved address of a host name, until one accepts; else the last failure.
async fn first_accepting<T, F, Fut>(
    config: &Config,
    seed: u64,
    mut at: F,
) -> Result<T, ConnectFailure>
where
    F: FnMut(Peer, u16, Option<String>) -> Fut,
    Fut: Future<Output = Result<T, ConnectFailure>>,
{
    let hosts = config.get_hosts();
    let hostaddrs = config.get_hostaddrs();
    if hosts.is_empty() && hostaddrs.is_empty() {
        return Err(config_failure("both host and hostaddr are missing"));
    }
    if !hosts.is_empty() && !hostaddrs.is_empty() && hosts.len() != hostaddrs.len() {
        return Err(config_failure(&format!(
            "number of hosts ({}) is different from number of hostaddrs ({})",
            hosts.len(),
            hostaddrs.len()
        )));
    }
    let count = hosts.len().max(hostaddrs.len());
    let ports = config.get_ports();
    if ports.len() > 1 && ports.len() != count {
        return Err(config_failure("invalid number of ports"));
    }
    let random = config.get_load_balance_hosts() == LoadBalanceHosts::Random;
    let mut shuffle = Shuffle(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1);
    let mut order: Vec<usize> = (0..count).collect();
    if random {
        shuffle.apply(&mut order);
    }

    let mut last = None;
    for i in order {
        let host = hosts.get(i);
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        // The host name is what TLS verifies, even when `hostaddr` says where to connect.
        let hostname = match host {
            Some(Host::Tcp(h)) => Some(h.clone()),
            _ => None,
        };
        let peers = match (hostaddrs.get(i), host) {
            (Some(ip), _) => vec![Peer::Tcp(*ip)],
            (None, Some(Host::Tcp(name))) => {
                match tokio::net::lookup_host((name.as_str(), port)).await {
                    Ok(addrs) => {
                        let mut peers: Vec<Peer> = addrs.map(|a| Peer::Tcp(a.ip())).collect();
                        if random {
                            shuffle.apply(&mut peers);
                        }
                        peers
                    }
                    Err(e) => {
                        last = Some(socket_failure(&e));
                        continue;
                    }
                }
            }
            #[cfg(unix)]
            (None, Some(Host::Unix(dir))) => vec![Peer::Unix(dir.clone())],
            (None, None) => unreachable!("checked above: every index has a host or a hostaddr"),
        };
        if peers.is_empty() {
            last = Some(socket_failure(&io::Error::new(
                io::ErrorKind::InvalidInput,
                "could not resolve any addresses",
            )));
        }
        for peer in peers {
            match at(peer, port, hostname.clone()).await {
                Ok(conn) => return Ok(conn),
                Err(failure) => last = Some(failure),
            }
        }
    }
    Err(last.expect("at least one host was tried"))
}

async fn open_at(
    tls: &Tls,
    config: &Config,
    peer: Peer,
    port: u16,
    hostname: Option<String>,
) -> Result<WireConn, ConnectFailure> {
    let (plain, tls, config) = reach(tls, config, &peer, port).await?;
    let config = config.as_ref();
    let tap = Tap::lend(Stream::Plain(plain));
    let token = match tls {
        Tls::Plain => authenticate(config, &tap, NoTls).await?,
        Tls::Rustls(make) => {
            let upgrade = Upgrade {
                make: make.clone(),
                hostname: hostname.clone().unwrap_or_default(),
                tap: tap.clone(),
            };
            authenticate(config, &tap, upgrade).await?
        }
    };
    let stream = tap.take_back()?;
    let mut conn = WireConn::new(
        stream,
        CancelTarget {
            token,
            peer,
            port,
            hostname,
            tls: tls.clone(),
            connect_timeout: config.get_connect_timeout().copied(),
        },
    );
    check_session_attrs(&mut conn, config.get_target_session_attrs()).await?;
    Ok(conn)
}

/// A socket connected to `peer`, the TLS to use on it, and the config to authenticate with: a
/// socket directory among TCP hosts gets no TLS, as with libpq (see `parse_config`).
async fn reach<'a, 'c>(
    tls: &'a Tls,
    config: &'c Config,
    peer: &Peer,
    port: u16,
) -> Result<(Plain, &'a Tls, Cow<'c, Config>), ConnectFailure> {
    static PLAIN: Tls = Tls::Plain;
    let plain = open_socket(
        peer,
        port,
        config.get_connect_timeout().copied(),
        Some(config),
    )
    .await
    .map_err(|e| socket_failure(&e))?;
    let tls = match peer {
        #[cfg(unix)]
        Peer::Unix(_) => &PLAIN,
        Peer::Tcp(_) => tls,
    };
    let config = if matches!(tls, Tls::Plain) && config.get_ssl_mode() != SslMode::Disable {
        let mut c = config.clone();
        c.ssl_mode(SslMode::Disable);
        Cow::Owned(c)
    } else {
        Cow::Borrowed(config)
    };
    Ok((plain, tls, config))
}

/// `open_client` on one peer: tokio-postgres connects over the socket opened here and keeps it.
async fn client_at(
    tls: &Tls,
    config: &Config,
    peer: Peer,
    port: u16,
    hostname: Option<String>,
) -> Result<Client, ConnectFailure> {
    let (plain, tls, config) = reach(tls, config, &peer, port).await?;
    let config = config.as_ref();
    let client = match tls {
        Tls::Plain => keep(config, plain, NoTls).await?,
        Tls::Rustls(make) => {
            let mut make = make.clone();
            let host = hostname.as_deref().unwrap_or("");
            let connector = MakeTlsConnect::<Plain>::make_tls_connect(&mut make, host)
                .map_err(|e| ConnectFailure::without_sqlstate(format!("TLS: {e}")))?;
            keep(config, plain, connector).await?
        }
    };
    if let Some(refuse) = refused_read_only(config.get_target_session_attrs()) {
        let shown = client
            .simple_query("SHOW transaction_read_only")
            .await
            .map_err(|e| ConnectFailure::from_error(&e))?;
        let read_only = shown.iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0),
            _ => None,
        });
        if read_only == Some(refuse) {
            return Err(wrong_session_kind(config.get_target_session_attrs()));
        }
    }
    Ok(client)
}

/// Lets tokio-postgres open a session on `plain` and keep it: its connection half runs on its own
/// task until the client is dropped.
async fn keep<T>(config: &Config, plain: Plain, tls: T) -> Result<Client, ConnectFailure>
where
    T: TlsConnect<Plain>,
    T::Stream: Send + 'static,
{
    let (client, connection) = config
        .connect_raw(plain, tls)
        .await
        .map_err(|e| ConnectFailure::from_error(&e))?;
    tokio::spawn(connection);
    Ok(client)
}

/// Lets tokio-postgres open the session on `tap`; its client and connection are dropped unpolled.
async fn authenticate<T: TlsConnect<Tap>>(
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

/// `target_session_attrs`, checked as tokio-postgres does: by asking the session.
async fn check_session_attrs(
    conn: &mut WireConn,
    wanted: TargetSessionAttrs,
) -> Result<(), ConnectFailure> {
    let Some(refuse) = refused_read_only(wanted) else {
        return Ok(());
    };
    let read_only = conn.query_value("SHOW transaction_read_only").await?;
    if read_only.as_deref() == Some(refuse) {
        return Err(wrong_session_kind(wanted));
    }
    Ok(())
}

/// The `transaction_read_only` that `wanted` refuses; `None` when it accepts any session.
fn refused_read_only(wanted: TargetSessionAttrs) -> Option<&'static str> {
    match wanted {
        TargetSessionAttrs::ReadWrite => Some("on"),
        TargetSessionAttrs::ReadOnly => Some("off"),
        _ => None,
    }
}

/// The refusal of a session that is not what `target_session_attrs` asks for (tokio-postgres's
/// words).
fn wrong_session_kind(wanted: TargetSessionAttrs) -> ConnectFailure {
    ConnectFailure::without_sqlstate(if wanted == TargetSessionAttrs::ReadWrite {
        "error connecting to server: database does not allow writes".into()
    } else {
        "error connecting to server: database is not read only".into()
    })
}

/// Connects a socket as tokio-postgres does; `config` adds its TCP options (not for cancel
/// requests, which tokio-postgres also sends without them when it has no socket settings).
async fn open_socket(
    peer: &Peer,
    port: u16,
    timeout: Option<Duration>,
    config: Option<&Config>,
) -> io::Result<Plain> {
    async fn within<T>(
        f: impl Future<Output = io::Result<T>>,
        t: Option<Duration>,
    ) -> io::Result<T> {
        match t {
            Some(t) => tokio::time::timeout(t, f).await.unwrap_or_else(|_| {
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "connection timed out",
                ))
            }),
            None => f.await,
        }
    }
    match peer {
        Peer::Tcp(ip) => {
            let stream = within(TcpStream::connect((*ip, port)), timeout).await?;
            stream.set_nodelay(true)?;
            if let Some(config) = config {
                let sock = SockRef::from(&stream);
                #[cfg(target_os = "linux")]
                if let Some(t) = config.get_tcp_user_timeout() {
                    sock.set_tcp_user_timeout(Some(*t))?;
                }
                if config.get_keepalives() {
                    let mut keepalive = TcpKeepalive::new().with_time(config.get_keepalives_idle());
                    if let Some(interval) = config.get_keepalives_interval() {
                        keepalive = keepalive.with_interval(interval);
                    }
                    if let Some(retries) = config.get_keepalives_retries() {
                        keepalive = keepalive.with_retries(retries);
                    }
                    sock.set_tcp_keepalive(&keepalive)?;
                }
            }
            Ok(Plain::Tcp(stream))
        }
        #[cfg(unix)]
        Peer::Unix(dir) => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            Ok(Plain::Unix(
                within(UnixStream::connect(path), timeout).await?,
            ))
        }
    }
}

/// A small xorshift shuffle for `load_balance_hosts=random` (no need for a random crate).
struct Shuffle(u64);

impl Shuffle {
    fn apply<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            items.swap(i, (self.0 % (i as u64 + 1)) as usize);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The lent stream

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
struct Tap(Arc<Mutex<Lent>>);

impl Tap {
    fn lend(stream: Stream) -> Tap {
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

    /// The stream, once tokio-postgres has read exactly up to the end of the startup.
    fn take_back(&self) -> Result<Stream, ConnectFailure> {
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

/// The TLS connector tokio-postgres is given: runs the handshake on the socket it was lent and
/// lends the encrypted stream in its place, with a fresh count of messages.
struct Upgrade {
    make: MakeRustlsConnect,
    hostname: String,
    tap: Tap,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl TlsConnect<Tap> for Upgrade {
    type Stream = Tap;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Tap, BoxError>> + Send>>;

    fn connect(mut self, raw: Tap) -> Self::Future {
        Box::pin(async move {
            let plain = match raw.lent().stream.take() {
                Some(Stream::Plain(p)) => p,
                _ => return Err(taken().into()),
            };
            drop(raw);
            let connector =
                MakeTlsConnect::<Plain>::make_tls_connect(&mut self.make, &self.hostname)?;
            let tls = TlsConnect::<Plain>::connect(connector, plain).await?;
            {
                let mut lent = self.tap.lent();
                lent.stream = Some(Stream::Tls(Box::new(tls)));
                lent.reader = StartupReader::default();
            }
            Ok(self.tap)
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Byte streams

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
