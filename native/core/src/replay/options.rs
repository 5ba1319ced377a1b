//! What a replay can be told (`ReplayOptions`), checked, and turned into the connection every
//! session opens: the options phase of a replay, before anything is sent.

use std::path::PathBuf;
use std::time::Duration;

use super::connect::{self, RetryPolicy, Tls};
use super::error::ReplayError;
use super::tls;
use crate::scale::ScaleOptions;

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

/// The server a replay's sessions reach, and how: the connection settings and the TLS to use.
pub(crate) struct Target {
    pub pg_config: tokio_postgres::Config,
    pub tls: Tls,
}

impl Target {
    /// Checks `opts` and resolves its connection string, refusing what cannot work before
    /// anything is sent.
    pub fn of(opts: &ReplayOptions) -> Result<Target, ReplayError> {
        validate(opts)?;
        let (pg_config, tls_options) = parse_config(opts)?;
        let tls = Tls::new(&pg_config, &tls_options).map_err(ReplayError::Tls)?;
        Ok(Target { pg_config, tls })
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
