//! The replay engine.
//!
//! One tokio task and one connection per planned session, simple-query protocol, one target.
//!
//! ## Timing
//! Every statement is due at `start + (shift + start_offset_us) / speed`, where `start` is the
//! moment the replay begins and `shift` is a scaled copy's stagger. Offsets are read as positions
//! on one timeline shared by all sessions: that is what the file gives. A workload whose offsets
//! are global (our capture writes them so) keeps its arrival pattern, sessions starting when
//! they started; a pg-retest proxy capture, whose offsets restart at 0 in every session, starts
//! all sessions near the beginning, as pg-retest itself does. A session connects when its first
//! statement is due, not at t0. Timing is absolute: a slow statement does not push later ones
//! back. `speed` 0 sends everything as fast as possible. With a cap on open sessions
//! (`max_connections`), a session that waits for a slot has its whole timeline moved by the wait.
//!
//! ## Accountability
//! Every statement of every planned session ends up executed (ok or error), skipped (read-only
//! filter, aborted transaction) or not executed (with the reason), per session, per fingerprint
//! and overall, so `captured = executed + skipped + not_executed` always holds. A session that
//! cannot connect is retried with backoff for a bounded window, then reported with the server's
//! message. A broken connection triggers a probe of the server; if the server is gone the run ends
//! at once with status `server_unavailable`.

mod affinity;
mod answer;
mod cancel;
mod connect;
mod exec;
mod handoff;
mod keys;
mod latency;
mod lend;
pub mod pg_retest_results;
pub mod records;
pub mod report;
mod returned;
pub mod sequences;
mod session;
mod socket;
mod stop;
mod stream;
mod tally;
mod tls;
mod txn;
mod upgrade;
mod wire;
mod workers;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use thiserror::Error;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use connect::RetryPolicy;
use connect::{connect_client_with_retry, connect_with_retry, Connected, Refused, Tls};
pub use keys::CorrelationReport;
pub use report::*;
pub use sequences::SequenceOutcome;

use crate::classify::classify_sessions;
use crate::fnv::FnvBuild;
use crate::linked::LinkedWorkload;
use crate::scale::{plan_sessions, ScaleError, ScaleOptions};
use crate::stats::{summarize, summarize_sorted_runs};
use crate::workload::Workload;

/// How long a liveness probe waits for the answer to its `SELECT 1`, once connected.
const PROBE_ANSWER: Duration = Duration::from_secs(5);

/// Everything a replay can be told.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// libpq-style conninfo or URL of the one target database.
    pub conninfo: String,
    /// 1 = captured timing, k = k× faster, 0 = as fast as possible.
    pub speed: f64,
    /// Execute only statements that cannot change data (and run sessions read-only).
    pub read_only: bool,
    /// Skip statements whose effects may reach beyond the target database (`sql::analyze`'s
    /// `server_wide`): for a server the caller did not start.
    pub skip_server_wide: bool,
    pub scale: ScaleOptions,
    /// Cap on concurrently open sessions.
    pub max_connections: Option<u32>,
    /// Server-side statement timeout for every statement.
    pub statement_timeout: Option<Duration>,
    /// The whole replay ends (statements left are "not executed: deadline") after this long.
    pub deadline: Option<Duration>,
    pub connect: RetryPolicy,
    /// Per-statement results file (JSON Lines).
    pub results_path: Option<PathBuf>,
    /// Also write pg-retest's results format (readable by `pg-retest compare`).
    pub pg_retest_results_path: Option<PathBuf>,
    pub application_name: String,
    pub progress_interval: Duration,
    /// Send the ids this replay's producers get where the workload used captured ones.
    pub correlate_keys: bool,
    /// Put the workload's sequences where they stood at capture time before replaying.
    pub align_sequences: bool,
    /// How sessions send their statements once connected.
    pub driver: Driver,
    /// Threads the sessions run on (each with its own single-threaded runtime); `None` = one per
    /// core.
    pub worker_threads: Option<std::num::NonZeroUsize>,
    /// Keep each of those threads on one CPU of the process's affinity mask (Linux).
    pub pin_threads: bool,
    /// Record the server's own time for each successful statement, from the `duration` LOG
    /// notice a database with `log_duration = on` and `client_min_messages = log` sends (the
    /// caller sets those; direct path only). Costs one `u32` per statement.
    pub server_time: bool,
}

/// How a session talks to the server once tokio-postgres has connected and authenticated it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Driver {
    /// The session's own simple-query loop on the authenticated socket (`wire.rs`): one task per
    /// session, reused buffers, only command tags, errors and producers' rows parsed.
    #[default]
    Wire,
    /// A tokio-postgres client per session (a connection task, a channel, messages parsed in
    /// full): the earlier path, kept to compare the two.
    TokioPostgres,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        Self {
            conninfo: String::new(),
            speed: 1.0,
            read_only: false,
            skip_server_wide: false,
            scale: ScaleOptions::default(),
            max_connections: None,
            statement_timeout: None,
            deadline: None,
            connect: RetryPolicy {
                attempt_timeout: Duration::from_secs(10),
                window: Duration::from_secs(30),
                initial_backoff: Duration::from_millis(50),
                max_backoff: Duration::from_secs(1),
            },
            results_path: None,
            pg_retest_results_path: None,
            application_name: "pg-retest-action".into(),
            progress_interval: Duration::from_millis(250),
            correlate_keys: true,
            align_sequences: true,
            driver: Driver::default(),
            worker_threads: None,
            pin_threads: true,
            server_time: false,
        }
    }
}

/// Errors that prevent a replay from starting. Once sessions run, problems are results.
#[derive(Debug, Error)]
pub enum ReplayError {
    #[error("invalid replay option: {0}")]
    InvalidOption(String),
    #[error("{0}; use a postgres:// URL or key=value pairs")]
    Conninfo(String),
    #[error("the replay was cancelled before it started")]
    Cancelled,
    #[error("cannot connect to PostgreSQL at {target}: {message}{hint}")]
    Connect {
        target: String,
        message: String,
        sqlstate: Option<String>,
        hint: &'static str,
    },
    #[error("cannot write results file {path}: {source}")]
    ResultsFile {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot start the replay's worker threads: {0}")]
    Runtime(std::io::Error),
    #[error("TLS setup failed: {0}")]
    Tls(String),
    #[error(transparent)]
    Scale(#[from] ScaleError),
}

/// Live counters, read by the progress reporter.
#[derive(Debug, Default)]
pub struct Counters {
    pub executed: AtomicU64,
    pub errors: AtomicU64,
    pub skipped: AtomicU64,
    pub not_executed: AtomicU64,
    pub sessions_connecting: AtomicU64,
    pub sessions_active: AtomicU64,
    pub sessions_done: AtomicU64,
}

/// A progress snapshot.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Progress {
    pub elapsed_ms: u64,
    pub statements_planned: u64,
    pub executed: u64,
    pub errors: u64,
    pub skipped: u64,
    pub not_executed: u64,
    pub sessions_planned: u64,
    pub sessions_active: u64,
    pub sessions_done: u64,
    pub done: bool,
}

/// Receives progress snapshots (from a timer task; keep it cheap).
pub trait ProgressSink: Send + Sync {
    fn progress(&self, p: Progress);
}

#[derive(Debug, Clone)]
pub enum StopReason {
    Cancelled,
    Deadline,
    ServerUnavailable(String),
}

pub(crate) struct Shared {
    /// The workload and its key links.
    pub linked: Arc<LinkedWorkload>,
    pub opts: ReplayOptions,
    pub pg_config: tokio_postgres::Config,
    pub tls: Tls,
    pub start: Instant,
    pub stop: stop::Stop,
    pub counters: Counters,
    pub limit: Option<Arc<Semaphore>>,
    pub records: Option<tokio::sync::mpsc::Sender<Option<records::StatementRecord>>>,
    probing: AtomicBool,
    /// Replayed key values, when the workload has links and correlation is on.
    pub keys: Option<keys::KeyState>,
    /// Where the sessions write their latencies.
    pub slots: latency::Slots,
    /// Where the server's own times go, when they are recorded.
    pub server_slots: Option<latency::Slots>,
}

impl Shared {
    pub fn workload(&self) -> &Workload {
        &self.linked.workload
    }

    pub fn stop_reason(&self) -> Option<&StopReason> {
        self.stop.reason()
    }

    fn stop_with(&self, reason: StopReason) {
        self.stop.stop(reason);
    }

    /// A connection broke or was refused: find out, in the background, whether the server itself
    /// is gone; if so, stop the run. One probe at a time.
    pub fn suspect_server(self: &Arc<Self>) {
        if self.stop.is_stopped() || self.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = Arc::clone(self);
        tokio::spawn(async move {
            if let Some(message) = me.probe().await {
                me.stop_with(StopReason::ServerUnavailable(message));
            }
            me.probing.store(false, Ordering::Release);
        });
    }

    /// `Some(reason)` when the server does not accept a connection and answer `SELECT 1`.
    /// A server that refuses with an SQLSTATE ("too many clients") is alive.
    async fn probe(&self) -> Option<String> {
        let policy = RetryPolicy {
            attempt_timeout: Duration::from_secs(5),
            window: Duration::from_secs(3),
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(500),
        };
        // Not tied to `stop`: the final probe runs after the run has been stopped.
        let never = CancellationToken::new();
        match connect_own_client(
            &self.tls,
            &self.pg_config,
            self.opts.driver,
            policy,
            &never,
            0,
        )
        .await
        {
            // Bounded like the connection: the final probe is awaited before the run ends, and
            // a server that authenticates but answers nothing must not hold it.
            Ok(c) => {
                match tokio::time::timeout(PROBE_ANSWER, c.conn.simple_query("SELECT 1")).await {
                    Ok(Ok(_)) => None,
                    Ok(Err(e)) => Some(connect::error_chain(&e)),
                    Err(_) => Some(format!(
                        "the server accepted a connection but did not answer SELECT 1 within {} s",
                        PROBE_ANSWER.as_secs()
                    )),
                }
            }
            Err(r) if r.failure.sqlstate.is_some() && !r.failure.server_gone => None,
            Err(r) => Some(r.failure.message),
        }
    }
}

/// The run's own connection (preflight, sequence alignment, liveness probes), with retries. On
/// the direct path it reaches the server as the sessions do (`handoff::open_client`: host by
/// host, TLS decided per peer); on the tokio-postgres path, as that path's sessions do.
async fn connect_own_client(
    tls: &Tls,
    config: &tokio_postgres::Config,
    driver: Driver,
    policy: RetryPolicy,
    cancel: &CancellationToken,
    seed: u64,
) -> Result<Connected<tokio_postgres::Client>, Refused> {
    match driver {
        Driver::Wire => {
            let open = || handoff::open_client(tls, config, seed);
            connect_with_retry(open, policy, cancel, seed).await
        }
        Driver::TokioPostgres => connect_client_with_retry(tls, config, policy, cancel, seed).await,
    }
}

/// Describes the target for messages: never the password.
pub fn describe_target(cfg: &tokio_postgres::Config) -> String {
    let host = match cfg.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    let user = cfg.get_user().unwrap_or("(default user)");
    let db = cfg.get_dbname().unwrap_or(user);
    format!("{host}:{port}/{db} as {user}")
}

fn hint_for(sqlstate: Option<&str>, message: &str) -> &'static str {
    let m = message.to_ascii_lowercase();
    match sqlstate {
        Some("28P01") | Some("28000") => "; check the user name and password",
        Some("3D000") => "; create the database or point the connection string at an existing one",
        Some("53300") => "; the server has no free connection slots: raise max_connections or lower the replay's concurrency",
        Some("57P03") => "; the server is starting up or shutting down: wait for it and retry",
        // PgBouncer refuses startup parameters it does not know; the replay sends `options`
        // only to carry a statement timeout or read-only mode.
        Some("08P01") if m.contains("unsupported startup parameter") => {
            "; a connection pooler refuses the startup parameter `options`, which carries the statement timeout and read-only mode: set them on the database role instead (ALTER ROLE … SET statement_timeout = …) and leave them off here"
        }
        _ if m.contains("refused") => "; is the server running and listening on that host and port?",
        _ if m.contains("no such file or directory") => {
            "; no server socket there: is the server running, and are the socket directory and port right?"
        }
        _ if m.contains("timed out") => "; check the host, port and any firewall between here and the server",
        _ if m.contains("tls") || m.contains("certificate") || m.contains("ssl") => {
            "; check sslmode and the server's certificate (or use sslmode=disable for a local server)"
        }
        _ => "",
    }
}

fn parse_config(
    opts: &ReplayOptions,
) -> Result<(tokio_postgres::Config, tls::TlsOptions), ReplayError> {
    let (conninfo, tls_options) = tls::split_tls_options(&opts.conninfo);
    let mut cfg: tokio_postgres::Config = conninfo
        .parse()
        .map_err(|e: tokio_postgres::Error| ReplayError::Conninfo(connect::error_chain(&e)))?;
    if cfg.get_application_name().is_none() {
        cfg.application_name(&opts.application_name);
    }
    if cfg.get_connect_timeout().is_none() {
        cfg.connect_timeout(opts.connect.attempt_timeout);
    }
    let mut options = cfg.get_options().unwrap_or("").to_string();
    if let Some(t) = opts.statement_timeout {
        options.push_str(&format!(" -c statement_timeout={}", t.as_millis().max(1)));
    }
    if opts.read_only {
        // Belt and braces: the parser filter decides what is sent, the server refuses any write
        // the filter could not see (a user function that writes).
        options.push_str(" -c default_transaction_read_only=on");
    }
    if !options.trim().is_empty() {
        cfg.options(options.trim());
    }
    if only_unix_sockets(&cfg) {
        // libpq ignores sslmode on a Unix-domain socket (the server offers no TLS there);
        // without this, the default `prefer` would try a handshake against a path.
        cfg.ssl_mode(tokio_postgres::config::SslMode::Disable);
    }
    Ok((cfg, tls_options))
}

/// Every host is a socket directory (`host=/var/run/postgresql`) and no `hostaddr` overrides one.
fn only_unix_sockets(cfg: &tokio_postgres::Config) -> bool {
    let hosts = cfg.get_hosts();
    !hosts.is_empty()
        && cfg.get_hostaddrs().is_empty()
        && hosts
            .iter()
            .all(|h| !matches!(h, tokio_postgres::config::Host::Tcp(_)))
}

fn validate(opts: &ReplayOptions) -> Result<(), ReplayError> {
    if !opts.speed.is_finite() || opts.speed < 0.0 {
        return Err(ReplayError::InvalidOption(format!(
            "speed must be 0 (as fast as possible) or a positive number, got {}",
            opts.speed
        )));
    }
    if opts.max_connections == Some(0) {
        return Err(ReplayError::InvalidOption(
            "max_connections must be at least 1".into(),
        ));
    }
    if opts.progress_interval.is_zero() {
        return Err(ReplayError::InvalidOption(
            "progress interval must be positive".into(),
        ));
    }
    if opts.statement_timeout == Some(Duration::ZERO) {
        return Err(ReplayError::InvalidOption(
            "statement timeout must be positive (leave it unset for none)".into(),
        ));
    }
    Ok(())
}

/// Aligns the sequences the workload draws from: the capture's snapshot when it has one, else
/// the smallest keys it handed out.
async fn align_sequences(
    client: &tokio_postgres::Client,
    linked: &LinkedWorkload,
) -> Vec<SequenceOutcome> {
    match linked.workload.info.sequence_snapshot.as_deref() {
        Some(snapshot) if !snapshot.is_empty() => {
            sequences::restore_snapshot(client, snapshot).await
        }
        _ => sequences::align_inferred(client, &linked.keys.sequence_hints()).await,
    }
}

/// Replays `linked` against `opts.conninfo`.
///
/// Returns `Err` only when the replay cannot start (bad options, target unreachable before any
/// session ran, results file not writable). Once started, it always returns a report whose
/// status says whether the run completed, and whose counts add up.
pub async fn replay(
    linked: Arc<LinkedWorkload>,
    opts: ReplayOptions,
    progress: Option<Arc<dyn ProgressSink>>,
    cancel: CancellationToken,
) -> Result<ReplayReport, ReplayError> {
    let workload = &linked.workload;
    validate(&opts)?;
    let (pg_config, tls_options) = parse_config(&opts)?;
    let tls = Tls::new(&pg_config, &tls_options).map_err(ReplayError::Tls)?;
    let classes = classify_sessions(workload);
    let plan = plan_sessions(workload, &classes, &opts.scale)?;

    // Preflight: one connection before any session, so a wrong password or a dead server is one
    // clear error instead of N refused sessions.
    let target = describe_target(&pg_config);
    // Preflight retries briefly (a server that is still starting), never longer than asked.
    let preflight_policy = RetryPolicy {
        window: opts.connect.window.min(Duration::from_secs(5)),
        ..opts.connect
    };
    let mut sequences = None;
    let server_version =
        match connect_own_client(&tls, &pg_config, opts.driver, preflight_policy, &cancel, 1).await
        {
            Ok(c) => {
                // Writes only: a read-only replay inserts nothing that a sequence could number.
                if opts.align_sequences && !opts.read_only {
                    sequences = Some(align_sequences(&c.conn, &linked).await)
                        .filter(|s: &Vec<SequenceOutcome>| !s.is_empty());
                }
                let v = c
                    .conn
                    .simple_query("SHOW server_version")
                    .await
                    .ok()
                    .and_then(|msgs| {
                        msgs.into_iter().find_map(|m| match m {
                            tokio_postgres::SimpleQueryMessage::Row(r) => {
                                r.get(0).map(str::to_string)
                            }
                            _ => None,
                        })
                    });
                v.unwrap_or_else(|| "unknown".into())
            }
            Err(r) if r.cancelled => return Err(ReplayError::Cancelled),
            Err(r) => {
                let hint = hint_for(r.failure.sqlstate.as_deref(), &r.failure.message);
                return Err(ReplayError::Connect {
                    target,
                    message: r.failure.message,
                    sqlstate: r.failure.sqlstate,
                    hint,
                });
            }
        };

    let started_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    // pg-retest's format is built from our per-statement records; without a results file of our
    // own, they go to a temporary one beside the requested output.
    let records_path = opts.results_path.clone().or_else(|| {
        opts.pg_retest_results_path.as_ref().map(|p| {
            let mut name = p.file_name().map(|n| n.to_os_string()).unwrap_or_default();
            name.push(".records.jsonl.tmp");
            p.with_file_name(name)
        })
    });
    let writer = match &records_path {
        Some(path) => Some(
            records::RecordWriter::create(
                path,
                &records::Header {
                    format: records::FORMAT.into(),
                    version: records::FORMAT_VERSION,
                    started_at: started_at.clone(),
                    server_version: server_version.clone(),
                },
            )
            .map_err(|source| ReplayError::ResultsFile {
                path: path.display().to_string(),
                source,
            })?,
        ),
        None => None,
    };

    let statements_planned: u64 = plan
        .sessions
        .iter()
        .map(|p| workload.statements_of(p.source as usize).len() as u64)
        .sum();
    let sessions_planned = plan.sessions.len() as u64;
    // Before the sessions start, so that their scratch memory is free again when they end.
    let planned = latency::Planned::of(workload, &plan.sessions);
    let captured = planned.captured(workload, &plan.sessions);
    let slots = latency::Slots::new(&planned);
    let server_slots = opts.server_time.then(|| latency::Slots::new(&planned));
    drop(planned);
    let shared = Arc::new(Shared {
        linked: Arc::clone(&linked),
        limit: opts
            .max_connections
            .map(|n| Arc::new(Semaphore::new(n as usize))),
        opts: opts.clone(),
        pg_config,
        tls,
        start: Instant::now(),
        stop: stop::Stop::default(),
        counters: Counters::default(),
        records: writer.as_ref().map(|w| w.sender.clone()),
        probing: AtomicBool::new(false),
        keys: (opts.correlate_keys && !linked.keys.is_empty()).then(keys::KeyState::default),
        slots,
        server_slots,
    });

    // The caller's cancellation and the deadline both stop the run through one token.
    let watcher = {
        let shared = Arc::clone(&shared);
        let deadline = opts.deadline;
        tokio::spawn(async move {
            let deadline_sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = cancel.cancelled() => shared.stop_with(StopReason::Cancelled),
                _ = deadline_sleep => shared.stop_with(StopReason::Deadline),
                _ = shared.stop.token().cancelled() => {}
            }
        })
    };
    let snapshot = {
        let shared = Arc::clone(&shared);
        move |done: bool| {
            let c = &shared.counters;
            Progress {
                elapsed_ms: shared.start.elapsed().as_millis() as u64,
                statements_planned,
                executed: c.executed.load(Ordering::Relaxed),
                errors: c.errors.load(Ordering::Relaxed),
                skipped: c.skipped.load(Ordering::Relaxed),
                not_executed: c.not_executed.load(Ordering::Relaxed),
                sessions_planned,
                sessions_active: c.sessions_active.load(Ordering::Relaxed),
                sessions_done: c.sessions_done.load(Ordering::Relaxed),
                done,
            }
        }
    };
    let ticker_stop = CancellationToken::new();
    let ticker = progress.clone().map(|sink| {
        let snapshot = snapshot.clone();
        let ticker_stop = ticker_stop.clone();
        let every = opts.progress_interval;
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(every);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tokio::select! {
                    _ = interval.tick() => sink.progress(snapshot(false)),
                    _ = ticker_stop.cancelled() => break,
                }
            }
        })
    });

    let mut outcomes = workers::start(&shared, &plan.sessions).map_err(ReplayError::Runtime)?;
    let mut session_reports = Vec::with_capacity(plan.sessions.len());
    let mut merged: HashMap<u32, tally::FingerprintTally> = HashMap::new();
    let mut extents: HashMap<u32, Vec<(usize, usize)>, FnvBuild> = HashMap::default();
    let mut server_extents: HashMap<u32, Vec<(usize, usize)>, FnvBuild> = HashMap::default();
    let mut totals = Accounting::default();
    let mut warnings = Vec::new();
    while let Some(outcome) = outcomes.recv().await {
        match outcome {
            Ok((rep, t)) => {
                totals.merge(&t.counts);
                for (fp, ft) in t.by_fingerprint {
                    let m = merged.entry(fp).or_default();
                    if let Some(region) = &ft.samples {
                        extents.entry(fp).or_default().push(region.extent());
                    }
                    if let Some(region) = &ft.server {
                        server_extents.entry(fp).or_default().push(region.extent());
                    }
                    m.counts.merge(&ft.counts);
                    m.rows += ft.rows;
                    for (code, e) in ft.errors {
                        m.errors.entry(code).or_default().merge(e);
                    }
                }
                session_reports.push(rep);
            }
            // A panic is a bug; it must not make statements vanish, so it is surfaced loudly.
            Err(e) => warnings.push(format!("a session task failed unexpectedly: {e}")),
        }
    }
    // Sessions that lost their connection may all have ended before a background probe could
    // decide; ask once more, so a dead server is never reported as a completed run.
    let lost = session_reports.iter().any(|s| {
        matches!(
            s.status,
            SessionStatus::ConnectionLost | SessionStatus::ConnectFailed
        )
    });
    if lost && shared.stop_reason().is_none() {
        if let Some(message) = shared.probe().await {
            shared.stop_with(StopReason::ServerUnavailable(message));
        }
    }
    let wall_time_us = shared.start.elapsed().as_micros() as u64;
    ticker_stop.cancel();
    if let Some(t) = ticker {
        let _ = t.await;
    }
    watcher.abort();
    if let Some(sink) = &progress {
        sink.progress(snapshot(true));
    }

    session_reports.sort_by_key(|r| r.id);
    if totals.captured != statements_planned {
        warnings.push(format!(
            "accounting mismatch: {} statements planned, {} accounted for",
            statements_planned, totals.captured
        ));
    }
    let (status, message) = match shared.stop_reason() {
        None => (RunStatus::Completed, None),
        Some(StopReason::Cancelled) => (
            RunStatus::Cancelled,
            Some("the replay was cancelled".to_string()),
        ),
        Some(StopReason::Deadline) => (
            RunStatus::DeadlineExceeded,
            Some(format!(
                "the replay did not finish within its deadline of {} s",
                opts.deadline.map(|d| d.as_secs_f64()).unwrap_or(0.0)
            )),
        ),
        Some(StopReason::ServerUnavailable(m)) => (
            RunStatus::ServerUnavailable,
            Some(format!(
                "the server became unavailable during the replay: {m}"
            )),
        ),
    };

    // Every session has ended, and with it its regions: the samples can be packed.
    let mut samples = shared.slots.collect(extents);
    let mut server_samples = shared
        .server_slots
        .as_ref()
        .map(|s| s.collect(server_extents));
    let mut fingerprints = Vec::with_capacity(merged.len());
    for (fp_idx, mut ft) in merged {
        let entry = &workload.fingerprints()[fp_idx as usize];
        let mut samples = samples.remove(&fp_idx).unwrap_or_default();
        // Sorted in place: the report's samples are ascending (see latency.rs).
        let latency = summarize(&mut samples);
        let mut server = server_samples
            .as_mut()
            .map(|s| s.remove(&fp_idx).unwrap_or_default());
        let server_time = server.as_mut().map(|s| summarize(s));
        let captured_latency = captured.get(&fp_idx).copied().unwrap_or_default();
        let mut errors: Vec<ErrorGroup> = ft
            .errors
            .drain()
            .map(|(sqlstate, e)| ErrorGroup {
                sqlstate,
                message: e.first_message,
                count: e.count,
                instances: e.instances.iter().map(|&i| split_instance(i)).collect(),
            })
            .collect();
        errors.sort_by(|a, b| b.count.cmp(&a.count).then(a.sqlstate.cmp(&b.sqlstate)));
        fingerprints.push(FingerprintReport {
            fingerprint: format!("{:016x}", entry.fingerprint),
            normalized: entry.normalized.clone(),
            kind: entry.kind,
            counts: ft.counts,
            latency,
            captured_latency,
            rows: ft.rows,
            errors,
            samples,
            server_time,
            server_samples: server.unwrap_or_default(),
        });
    }
    fingerprints.sort_by(|a, b| {
        b.counts
            .captured
            .cmp(&a.counts.captured)
            .then(a.fingerprint.cmp(&b.fingerprint))
    });
    let latency = summarize_sorted_runs(
        &fingerprints
            .iter()
            .map(|f| f.samples.as_slice())
            .collect::<Vec<_>>(),
    );

    let server_time = opts.server_time.then(|| server_time_report(&fingerprints));
    let sessions_completed = session_reports
        .iter()
        .filter(|s| s.status == SessionStatus::Completed)
        .count() as u64;
    let report = ReplayReport {
        status,
        message,
        server_version,
        started_at,
        wall_time_us,
        speed: opts.speed,
        read_only: opts.read_only,
        sessions_planned,
        sessions_completed,
        sessions_failed: sessions_planned - sessions_completed,
        sessions_excluded: plan.excluded_sessions,
        statements_excluded: plan.excluded_statements,
        totals,
        latency,
        sessions: session_reports,
        fingerprints,
        warnings,
        correlation: shared.keys.as_ref().map(|k| k.report(&linked.keys)),
        sequences,
        server_time,
    };
    drop(shared);
    if let (Some(w), Some(records_path)) = (writer, &records_path) {
        let shown = records_path.display().to_string();
        w.finish(&report)
            .await
            .map_err(|source| ReplayError::ResultsFile {
                path: shown.clone(),
                source,
            })?;
        if let Some(out) = &opts.pg_retest_results_path {
            let rows =
                pg_retest_results::from_records(records_path, workload).map_err(|source| {
                    ReplayError::ResultsFile {
                        path: shown.clone(),
                        source,
                    }
                })?;
            crate::wkl::write_pg_retest_results(out, &rows).map_err(|e| {
                ReplayError::ResultsFile {
                    path: out.display().to_string(),
                    source: std::io::Error::other(e.to_string()),
                }
            })?;
            if opts.results_path.is_none() {
                let _ = std::fs::remove_file(records_path);
            }
        }
    }
    Ok(report)
}

/// (session index in the workload, statement index in it) of a failing statement.
fn split_instance(i: tally::Instance) -> (u32, u32) {
    ((i >> 32) as u32, i as u32)
}

/// How many successes had the server's own time: all, unless the server did not send its
/// duration lines (the settings are not in effect) or a statement ran where they are not sent.
fn server_time_report(fingerprints: &[FingerprintReport]) -> ServerTimeReport {
    let ok: u64 = fingerprints.iter().map(|f| f.counts.ok).sum();
    let timed = fingerprints
        .iter()
        .map(|f| f.server_samples.len() as u64)
        .sum();
    ServerTimeReport { ok, timed }
}

#[cfg(test)]
mod tests {
    use super::hint_for;

    #[test]
    fn a_pooler_refusing_the_options_parameter_gets_the_fix() {
        let hint = hint_for(Some("08P01"), "unsupported startup parameter: options");
        assert!(
            hint.contains("ALTER ROLE … SET statement_timeout"),
            "{hint}"
        );
        // Another protocol violation is not about the startup parameters.
        assert_eq!(hint_for(Some("08P01"), "invalid message length"), "");
    }
}
