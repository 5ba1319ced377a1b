//! Capture through a wire-protocol proxy: clients connect to the proxy as to their server, the
//! proxy relays every byte to `--target` and back unchanged, and records on the side what each
//! session ran, into a `.wkl` workload (`capture_method` `proxy`) and its sidecar.
//!
//! - [`upstream`]: the target server, reached with the replay engine's socket and TLS code;
//! - [`opening`]: a client's startup packet and its authentication, passed through;
//! - [`session`]: one client connection, its relay and its recorder on the side;
//! - [`client_tls`]: TLS towards clients; [`describe`]: parameter types asked of the server;
//! - [`protocol`]: message framing; [`recorder`]: a session's statements from its messages;
//! - [`binary`]: binary-format values as literals;
//! - [`store`]: the recorded statements, spilled to disk, then written as a workload.
//!
//! What the proxy sees that a log does not: the rows `RETURNING` and sequence calls gave back
//! (written as `response_values`, so key correlation needs no inference), binary parameters, and
//! every statement of a pipeline.

pub mod binary;
mod client_tls;
mod describe;
mod opening;
pub mod protocol;
pub mod recorder;
mod session;
mod store;
mod upstream;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

pub use client_tls::ClientTls;

use crate::capture::{sidecar_path, FailedStatement, Filters};
use crate::spill::SpillDir;
use store::{Store, StoreMsg};
use upstream::Target;

/// Messages queued for the store before a session's recorder waits for it.
const STORE_QUEUE: usize = 16 * 1024;

/// What to listen on, where to relay, what to write.
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    /// `HOST:PORT` (port 0: any free port, see [`Proxy::local_addr`]).
    pub listen: String,
    /// A libpq URL or keyword string; only host, port and TLS options are used (clients bring
    /// their own user, database and password).
    pub target: String,
    pub output: PathBuf,
    /// Stop by itself after this long.
    pub duration: Option<Duration>,
    /// After a stop, how long open sessions may go on before they are cut.
    pub grace: Duration,
    /// Keep driver `SET`s, `SHOW` and catalog queries (left out by default, as in `capture`).
    pub include_noise: bool,
    /// A certificate for clients that ask for TLS; without it they are answered `N`.
    pub client_tls: Option<ClientTls>,
}

/// Why the proxy could not run: bad input (exit 2), the target (exit 3), or the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyErrorKind {
    Input,
    Target,
    Output,
}

#[derive(Debug, Clone)]
pub struct ProxyError {
    pub kind: ProxyErrorKind,
    pub message: String,
}

impl std::fmt::Display for ProxyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProxyError {}

fn error(kind: ProxyErrorKind, message: String) -> ProxyError {
    ProxyError { kind, message }
}

/// Wall-clock microseconds for the relay's monotonic instants.
struct Clock {
    instant: Instant,
    unix_us: i64,
}

impl Clock {
    fn now() -> Clock {
        let unix_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        Clock {
            instant: Instant::now(),
            unix_us,
        }
    }

    fn micros(&self, at: Instant) -> i64 {
        self.unix_us + at.saturating_duration_since(self.instant).as_micros() as i64
    }
}

#[derive(Default)]
struct Stats {
    authenticated: AtomicU64,
    cancel_requests: AtomicU64,
    lost_chunks: AtomicU64,
}

/// What every session shares.
struct Shared {
    target: Target,
    store: mpsc::Sender<StoreMsg>,
    clock: Clock,
    filters: Filters,
    stats: Stats,
    server_version: Mutex<Option<String>>,
    client_tls: Option<tokio_rustls::TlsAcceptor>,
    /// Asks the server for the parameter types of statements that did not declare them.
    describer: describe::Describer,
    /// Bytes copied for the recorders and not yet read by them (see `session::Tap`).
    queued_bytes: Arc<std::sync::atomic::AtomicUsize>,
}

/// COPY statements seen, for the sidecar.
#[derive(Debug, Clone, Serialize)]
pub struct CopyCounts {
    /// Not replayable (the workload holds no data for them): counted in `not_replayable` too.
    pub from_stdin: u64,
    /// Recorded: replay runs them and reads the rows.
    pub to_stdout: u64,
}

/// What a proxy capture did; also the sidecar's content (readable where a log capture's is).
#[derive(Debug, Clone, Serialize)]
pub struct ProxySummary {
    pub format: &'static str,
    pub version: u32,
    pub capture_method: &'static str,
    pub workload: String,
    pub sidecar: String,
    pub listen: String,
    pub target: String,
    pub inputs: Vec<BTreeMap<String, String>>,
    pub log_style: &'static str,
    /// Client connections that authenticated.
    pub connections: u64,
    /// Sessions with at least one statement (the workload's sessions).
    pub sessions: u64,
    pub statements: u64,
    pub first_statement_at: Option<String>,
    pub duration_us: u64,
    pub failed_statements: u64,
    /// Statements left out by the capture's filters (`password`, `noise`).
    pub excluded: BTreeMap<String, u64>,
    /// Statements that ran but cannot be replayed as SQL text, by reason.
    pub not_replayable: BTreeMap<String, u64>,
    pub copy: CopyCounts,
    /// Executes the server skipped after an error earlier in their pipeline (never ran).
    pub skipped_after_error: u64,
    /// Parse or Describe messages the server refused (their statements never ran); a refused Bind
    /// fails the statement its Execute would have run, which is recorded as failed.
    pub protocol_errors: u64,
    /// Statements sent but not answered when their session ended.
    pub unfinished: u64,
    pub cancel_requests: u64,
    /// Chunks of traffic relayed but not recorded because a session's recorder fell behind.
    pub lost_chunks: u64,
    /// Sessions whose recording stopped before they ended.
    pub incomplete_sessions: u64,
    /// Statements that carry the rows they returned (`response_values`).
    pub statements_with_returned_rows: u64,
    pub incomplete: bool,
    pub warnings: Vec<String>,
    pub failed: Vec<FailedStatement>,
}

/// A proxy listening, ready to run.
pub struct Proxy {
    listener: TcpListener,
    target: Target,
    client_tls: Option<tokio_rustls::TlsAcceptor>,
    options: ProxyOptions,
}

impl Proxy {
    /// Reads the target, listens (a port in use is bad input) and checks that the target
    /// accepts a connection with the TLS it asks for.
    pub async fn bind(options: ProxyOptions) -> Result<Proxy, ProxyError> {
        let target = Target::parse(&options.target).map_err(|m| error(ProxyErrorKind::Input, m))?;
        let client_tls = match &options.client_tls {
            Some(tls) => {
                Some(client_tls::acceptor(tls).map_err(|m| error(ProxyErrorKind::Input, m))?)
            }
            None => None,
        };
        let listener = TcpListener::bind(&options.listen).await.map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
                "; choose another --listen port or stop what uses it"
            } else {
                "; give --listen as HOST:PORT of this machine"
            };
            error(
                ProxyErrorKind::Input,
                format!("cannot listen on {}: {e}{hint}", options.listen),
            )
        })?;
        target.check().await.map_err(|m| {
            error(
                ProxyErrorKind::Target,
                format!("cannot reach the target {}: {m}", target.address),
            )
        })?;
        Ok(Proxy {
            listener,
            target,
            client_tls,
            options,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Relays and records until `stop` (or `--duration`), then writes the workload and its
    /// sidecar.
    pub async fn run(self, stop: CancellationToken) -> Result<ProxySummary, ProxyError> {
        let Proxy {
            listener,
            target,
            client_tls,
            options,
        } = self;
        let listen = listener
            .local_addr()
            .map_or_else(|_| options.listen.clone(), |a| a.to_string());
        let parent = options
            .output
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let dir = SpillDir::new_in(parent).map_err(|e| {
            error(
                ProxyErrorKind::Output,
                format!("cannot write next to {}: {e}", options.output.display()),
            )
        })?;
        let (store_tx, mut store_rx) = mpsc::channel(STORE_QUEUE);
        let store_dir = dir.clone();
        let collector = tokio::task::spawn_blocking(move || {
            let mut store = Store::new(&store_dir);
            let mut failure = None;
            while let Some(msg) = store_rx.blocking_recv() {
                if failure.is_none() {
                    if let Err(e) = store.take(msg) {
                        failure = Some(e.to_string());
                    }
                }
            }
            (store, failure)
        });
        let shared = Arc::new(Shared {
            describer: target.describer(),
            target,
            store: store_tx,
            clock: Clock::now(),
            filters: Filters {
                include_noise: options.include_noise,
                ..Default::default()
            },
            stats: Stats::default(),
            server_version: Mutex::new(None),
            client_tls,
            queued_bytes: Default::default(),
        });
        let cut = CancellationToken::new();
        let mut sessions = JoinSet::new();
        let mut next_session = 0u64;
        let deadline = async {
            match options.duration {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = &mut deadline => break,
                accepted = listener.accept() => {
                    let Ok((socket, _)) = accepted else {
                        // Out of file descriptors, most likely: give the sessions a moment.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    };
                    let _ = socket.set_nodelay(true);
                    next_session += 1;
                    sessions.spawn(session::serve(socket, shared.clone(), next_session, cut.clone()));
                }
                Some(_) = sessions.join_next(), if !sessions.is_empty() => {}
            }
        }
        drop(listener);
        // Open sessions may finish what they do; past the grace period they are cut.
        let drained = tokio::time::timeout(options.grace, async {
            while sessions.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            cut.cancel();
            while sessions.join_next().await.is_some() {}
        }
        let cut_sessions = drained.is_err();
        let stats = (
            shared.stats.authenticated.load(Ordering::Relaxed),
            shared.stats.cancel_requests.load(Ordering::Relaxed),
            shared.stats.lost_chunks.load(Ordering::Relaxed),
        );
        let pg_version = shared
            .server_version
            .lock()
            .expect("not poisoned")
            .clone()
            .unwrap_or_else(|| "unknown".into());
        let source_host = shared.target.address.clone();
        drop(shared);
        let (store, failure) = collector.await.map_err(|e| {
            error(
                ProxyErrorKind::Output,
                format!("the capture's store failed: {e}"),
            )
        })?;
        if let Some(f) = failure {
            return Err(error(
                ProxyErrorKind::Output,
                format!(
                    "cannot hold the recorded statements in {}: {f}",
                    dir.path().display()
                ),
            ));
        }
        let written = store
            .write(&options.output, &source_host, &pg_version)
            .map_err(|m| error(ProxyErrorKind::Output, m))?;
        let summary = summarize(&options, listen, source_host, written, stats, cut_sessions);
        let sidecar = sidecar_path(&options.output);
        let json = serde_json::to_vec_pretty(&summary).expect("a summary serializes");
        std::fs::write(&sidecar, json).map_err(|e| {
            error(
                ProxyErrorKind::Output,
                format!("cannot write {}: {e}", sidecar.display()),
            )
        })?;
        Ok(summary)
    }
}

fn summarize(
    options: &ProxyOptions,
    listen: String,
    target: String,
    written: store::Written,
    (connections, cancel_requests, lost_chunks): (u64, u64, u64),
    cut_sessions: bool,
) -> ProxySummary {
    let t = &written.totals;
    let mut warnings = Vec::new();
    if lost_chunks > 0 || t.broken_sessions > 0 {
        let why = t.broken_reasons.first().cloned().unwrap_or_default();
        warnings.push(format!(
            "{} session(s) were recorded only in part ({why}); their statements after that point are missing",
            t.broken_sessions.max(u64::from(lost_chunks > 0))
        ));
    }
    let not_replayable: u64 = t.not_replayable.values().sum();
    if not_replayable > 0 {
        let reasons: Vec<String> = t
            .not_replayable
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        warnings.push(format!(
            "{not_replayable} statement(s) ran but cannot be replayed as SQL text and are not in the workload: {}",
            reasons.join(", ")
        ));
    }
    if let Some(n) = t.excluded.get("password").filter(|n| **n > 0) {
        warnings.push(format!(
            "{n} statement(s) that set a password were left out (a workload must not hold one)"
        ));
    }
    if cut_sessions {
        warnings.push(format!(
            "sessions still open {} s after the stop were cut; {} statement(s) in flight were not recorded",
            options.grace.as_secs(),
            t.unfinished
        ));
    }
    if t.statements == 0 {
        warnings.push(format!(
            "no statement was recorded: did the clients connect to {listen} (not to the server itself)?"
        ));
    }
    let incomplete = lost_chunks > 0 || t.broken_sessions > 0 || not_replayable > 0;
    ProxySummary {
        format: "pg-retest-action capture",
        version: 1,
        capture_method: "proxy",
        workload: options.output.display().to_string(),
        sidecar: sidecar_path(&options.output).display().to_string(),
        listen,
        target,
        inputs: Vec::new(),
        log_style: "proxy",
        connections: connections.max(t.connections),
        sessions: written.sessions,
        statements: t.statements,
        first_statement_at: t.t0.and_then(|us| {
            chrono::DateTime::<chrono::Utc>::from_timestamp_micros(us).map(|d| d.to_rfc3339())
        }),
        duration_us: written.duration_us,
        failed_statements: written.failed.len() as u64,
        excluded: t.excluded.clone(),
        not_replayable: t.not_replayable.clone(),
        copy: CopyCounts {
            from_stdin: t.copy_from_stdin,
            to_stdout: t.copy_to_stdout,
        },
        skipped_after_error: t.skipped_after_error,
        protocol_errors: t.protocol_errors,
        unfinished: t.unfinished,
        cancel_requests,
        lost_chunks,
        incomplete_sessions: t.broken_sessions,
        statements_with_returned_rows: written.producers,
        incomplete,
        warnings,
        failed: written.failed,
    }
}
