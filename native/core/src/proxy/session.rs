//! One client connection: its startup packet, the connection to the server, authentication
//! passed through, then the bytes relayed both ways as they come while a copy of each chunk
//! goes to the session's recorder on the side.
//!
//! The relay never waits for the recorder: chunks go through a bounded queue with `try_send`,
//! and one that does not fit is counted as lost (the recorder then stops reading that session,
//! whose statements up to there are kept, and the capture says so).

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::opening::{authenticate, fatal, read_startup, Opening, Startup};
use super::protocol::Framer;
use super::recorder::Recorder;
use super::store::{SessionEnd, StoreMsg};
use super::Shared;
use crate::capture::time::Micros;
use crate::replay::stream::Stream;

/// Chunks waiting for a session's recorder before the relay starts counting them lost.
const TAP_QUEUE: usize = 4096;
/// Relay buffer per direction.
const RELAY_BUFFER: usize = 64 * 1024;
/// Once one direction has ended, how long the other may still deliver what is in flight.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Bytes copied for recorders and not yet read by them, over all sessions: past this, chunks are
/// lost rather than held (a stalled recorder must not grow the proxy without bound).
const QUEUED_AT_MOST: usize = 256 << 20;

/// The relay's end of a session's recorder queue.
#[derive(Clone)]
struct Tap {
    tx: mpsc::Sender<Chunk>,
    /// The proxy's count of bytes queued for all recorders.
    queued: Arc<AtomicUsize>,
    lost: Arc<AtomicU64>,
}

impl Tap {
    /// Queues a copy of `bytes` without waiting; `false` when it did not fit (counted as lost).
    fn offer(&self, from_client: bool, bytes: &[u8], after_gap: bool) -> bool {
        let n = bytes.len();
        let queued = &self.queued;
        if queued.fetch_add(n, Ordering::Relaxed) + n > QUEUED_AT_MOST {
            queued.fetch_sub(n, Ordering::Relaxed);
            self.lost.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let chunk = Chunk {
            from_client,
            at: Instant::now(),
            bytes: bytes.to_vec(),
            after_gap,
        };
        match self.tx.try_send(chunk) {
            Ok(()) => true,
            Err(e) => {
                queued.fetch_sub(n, Ordering::Relaxed);
                let full = matches!(e, mpsc::error::TrySendError::Full(_));
                if full {
                    self.lost.fetch_add(1, Ordering::Relaxed);
                }
                !full
            }
        }
    }
}

/// A chunk of bytes one side sent, as the relay saw it.
struct Chunk {
    from_client: bool,
    at: Instant,
    bytes: Vec<u8>,
    /// Chunks before this one were lost (the recorder's queue was full).
    after_gap: bool,
}

/// Serves one client until both sides are done; records its statements.
pub(super) async fn serve(
    socket: TcpStream,
    shared: Arc<Shared>,
    session: u64,
    cut: CancellationToken,
) {
    // A client that never finishes its opening must not hold the stop up.
    let opened = tokio::select! {
        _ = cut.cancelled() => return,
        opened = open_client(socket, &shared) => opened,
    };
    match opened {
        Some(Opened::Plain(socket, startup)) => relay(socket, startup, shared, session, cut).await,
        Some(Opened::Tls(tls, startup)) => relay(*tls, startup, shared, session, cut).await,
        None => {}
    }
}

/// A client's connection once its startup packet is read, over TLS if it asked for it.
enum Opened {
    Plain(TcpStream, Startup),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>, Startup),
}

async fn open_client(mut socket: TcpStream, shared: &Shared) -> Option<Opened> {
    let offer_tls = shared.client_tls.is_some();
    match read_startup(&mut socket, shared, offer_tls).await.ok()? {
        Opening::Session(startup) => Some(Opened::Plain(socket, startup)),
        Opening::WantsTls => {
            let acceptor = shared.client_tls.clone()?;
            socket.write_all(b"S").await.ok()?;
            let mut tls = acceptor.accept(socket).await.ok()?;
            match read_startup(&mut tls, shared, false).await.ok()? {
                Opening::Session(startup) => Some(Opened::Tls(Box::new(tls), startup)),
                _ => None,
            }
        }
        Opening::Done => None,
    }
}

/// A session after its startup packet: the server's connection, authentication, the relay.
async fn relay<C>(
    mut client: C,
    startup: Startup,
    shared: Arc<Shared>,
    session: u64,
    cut: CancellationToken,
) where
    C: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let opened = tokio::select! {
        _ = cut.cancelled() => return,
        opened = open_server(&mut client, &startup, &shared) => opened,
    };
    let Some((mut server, from_client, from_server)) = opened else {
        return;
    };
    shared.stats.authenticated.fetch_add(1, Ordering::Relaxed);

    let (tx, queue) = mpsc::channel(TAP_QUEUE);
    let recorder = tokio::spawn(record(queue, shared.clone(), session, startup));
    let lost = Arc::new(AtomicU64::new(0));
    let tap = Tap {
        tx,
        queued: shared.queued_bytes.clone(),
        lost: lost.clone(),
    };
    // Bytes read past the end of authentication belong to the relay.
    if forward_early(&tap, true, from_client, &mut server)
        .await
        .is_err()
        || forward_early(&tap, false, from_server, &mut client)
            .await
            .is_err()
    {
        return;
    }
    let (cr, cw) = tokio::io::split(client);
    let (sr, sw) = tokio::io::split(server);
    let mut up = tokio::spawn(pump(cr, sw, true, tap.clone()));
    let mut down = tokio::spawn(pump(sr, cw, false, tap));
    // Whichever side ends first, the other may still deliver what is in flight.
    let (mut up_done, mut down_done) = (false, false);
    tokio::select! {
        _ = &mut up => {
            up_done = true;
            down_done = tokio::time::timeout(CLOSE_GRACE, &mut down).await.is_ok();
        }
        _ = &mut down => {
            down_done = true;
            up_done = tokio::time::timeout(CLOSE_GRACE, &mut up).await.is_ok();
        }
        _ = cut.cancelled() => {}
    }
    for (task, done) in [(up, up_done), (down, down_done)] {
        if !done {
            task.abort();
            let _ = task.await;
        }
    }
    let lost = lost.load(Ordering::Relaxed);
    shared.stats.lost_chunks.fetch_add(lost, Ordering::Relaxed);
    let _ = recorder.await;
}

/// Connects to the server, sends the client's startup packet and passes authentication
/// through; the server's stream and the bytes each side sent past the end of it, or `None` when
/// the session ends there (the server unreachable, authentication refused).
async fn open_server<C>(
    client: &mut C,
    startup: &Startup,
    shared: &Shared,
) -> Option<(Stream, Vec<u8>, Vec<u8>)>
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    let mut server = match shared.target.connect().await {
        Ok(s) => s,
        Err(e) => {
            let _ = client
                .write_all(&fatal("08006", &format!("pg-retest-action proxy: {e}")))
                .await;
            return None;
        }
    };
    server.write_all(&startup.packet).await.ok()?;
    let mut from_client = Vec::new();
    let mut from_server = Vec::new();
    let ready = authenticate(
        client,
        &mut server,
        &mut from_client,
        &mut from_server,
        shared,
    )
    .await
    .ok()?;
    ready.then_some((server, from_client, from_server))
}

/// Relays (and records) what was read from one side along with the end of authentication.
async fn forward_early<W: AsyncWrite + Unpin>(
    tap: &Tap,
    from_client: bool,
    bytes: Vec<u8>,
    to: &mut W,
) -> io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    // Queued before it is sent, so that the answer cannot be read before it.
    tap.offer(from_client, &bytes, false);
    to.write_all(&bytes).await
}

/// Copies `from` to `to` chunk by chunk, a copy of each to the recorder first (so a client's
/// message is queued before the server can answer it).
async fn pump<R, W>(mut from: R, mut to: W, from_client: bool, tap: Tap)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; RELAY_BUFFER];
    let mut gap = false;
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        gap = !tap.offer(from_client, &buf[..n], gap);
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// The session's recorder: frames both directions, reads the statements, hands each to the
/// store as it completes and the session's counts at its end.
async fn record(
    mut queue: mpsc::Receiver<Chunk>,
    shared: Arc<Shared>,
    session: u64,
    startup: Startup,
) {
    let mut recorder = Recorder::new();
    let (mut client, mut server) = (Framer::default(), Framer::default());
    let mut messages = Vec::new();
    let mut seq = 0u32;
    let mut excluded: BTreeMap<String, u64> = BTreeMap::new();
    let mut failed_kept = 0u64;
    while let Some(chunk) = queue.recv().await {
        shared
            .queued_bytes
            .fetch_sub(chunk.bytes.len(), Ordering::Relaxed);
        if chunk.after_gap {
            recorder
                .broken
                .get_or_insert_with(|| "the recorder fell behind: traffic was not recorded".into());
        }
        if recorder.broken.is_none() {
            let at = shared.clock.micros(chunk.at);
            let framer = if chunk.from_client {
                &mut client
            } else {
                &mut server
            };
            messages.clear();
            if let Err(e) = framer.feed(&chunk.bytes, &mut messages) {
                recorder.broken = Some(e);
            }
            for m in &messages {
                if chunk.from_client {
                    recorder.client(m, at);
                } else {
                    recorder.server(m, at);
                }
            }
        }
        let done: Vec<_> = recorder.done.drain(..).collect();
        for mut r in done {
            if let Some(u) = &r.unresolved {
                let types = shared
                    .describer
                    .parameter_types(&startup.database, &u.sql)
                    .await;
                if let Err(reason) = r.resolve(types.as_deref()) {
                    *recorder
                        .uncounted
                        .not_replayable
                        .entry(reason.into())
                        .or_default() += 1;
                    continue;
                }
            }
            if let Some(reason) = shared.filters.exclude(
                &startup.database,
                &startup.user,
                &startup.application,
                r.start_us as Micros,
                &r.sql,
            ) {
                *excluded.entry(reason.as_str().into()).or_default() += 1;
                continue;
            }
            failed_kept += u64::from(r.failed.is_some());
            let _ = shared
                .store
                .send(StoreMsg::Statement {
                    session,
                    seq,
                    statement: r,
                })
                .await;
            seq += 1;
        }
    }
    let unfinished = recorder.unfinished();
    let _ = shared
        .store
        .send(StoreMsg::SessionEnd(SessionEnd {
            session,
            user: startup.user,
            database: startup.database,
            statements: seq,
            failed: failed_kept,
            excluded,
            uncounted: recorder.uncounted,
            unfinished,
            broken: recorder.broken,
        }))
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_that_does_not_fit_is_lost_and_counted_never_waited_for() {
        let (tx, mut rx) = mpsc::channel(1);
        let tap = Tap {
            tx,
            queued: Arc::new(AtomicUsize::new(0)),
            lost: Arc::new(AtomicU64::new(0)),
        };
        assert!(tap.offer(true, b"Q1", false));
        assert!(!tap.offer(true, b"Q22", false), "the queue holds one chunk");
        assert_eq!(tap.lost.load(Ordering::Relaxed), 1);
        assert_eq!(tap.queued.load(Ordering::Relaxed), 2);
        assert_eq!(rx.try_recv().unwrap().bytes, b"Q1");
        // Over the byte budget: lost too, even with room in the queue.
        tap.queued.store(QUEUED_AT_MOST, Ordering::Relaxed);
        assert!(!tap.offer(false, b"x", true));
        assert_eq!(tap.lost.load(Ordering::Relaxed), 2);
    }
}
