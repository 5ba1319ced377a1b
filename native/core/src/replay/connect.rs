//! Connecting a session: conninfo parsing, TLS, retries with backoff, and telling a transient
//! refusal ("too many clients") from a fatal one (wrong password).

use std::time::{Duration, Instant};

use tokio_postgres::config::SslMode;
use tokio_postgres::error::SqlState;
use tokio_postgres::{CancelToken, Client, Config, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_util::sync::CancellationToken;

/// How to secure connections, decided once from the conninfo (see `tls.rs` for the modes).
#[derive(Clone)]
pub enum Tls {
    Plain,
    Rustls(MakeRustlsConnect),
}

impl Tls {
    /// TLS as the conninfo's `sslmode` (and the libpq options taken out of it) ask.
    pub fn new(config: &Config, options: &super::tls::TlsOptions) -> Result<Tls, String> {
        if config.get_ssl_mode() == SslMode::Disable {
            return Ok(Tls::Plain);
        }
        Ok(Tls::Rustls(MakeRustlsConnect::new(
            super::tls::client_config(options)?,
        )))
    }

    /// Asks the server to cancel whatever `token`'s session is running. Best effort.
    pub async fn cancel(&self, token: &CancelToken) {
        let _ = match self {
            Tls::Plain => token.cancel_query(NoTls).await,
            Tls::Rustls(t) => token.cancel_query(t.clone()).await,
        };
    }

    /// Opens one connection; its I/O half is spawned and ends when the connection does.
    pub async fn connect(&self, config: &Config) -> Result<Client, tokio_postgres::Error> {
        match self {
            Tls::Plain => {
                let (client, conn) = config.connect(NoTls).await?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(client)
            }
            Tls::Rustls(t) => {
                let (client, conn) = config.connect(t.clone()).await?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok(client)
            }
        }
    }
}

/// A failed connection attempt, described without the conninfo (which may hold a password).
#[derive(Debug, Clone)]
pub struct ConnectFailure {
    pub message: String,
    pub sqlstate: Option<String>,
    /// Worth another attempt: the server is busy or refusing right now, not misconfigured.
    pub transient: bool,
    /// The server itself seems to be gone (refused, reset, shutting down).
    pub server_gone: bool,
}

impl ConnectFailure {
    pub fn from_error(e: &tokio_postgres::Error) -> ConnectFailure {
        if let Some(db) = e.as_db_error() {
            let code = db.code();
            let transient = *code == SqlState::TOO_MANY_CONNECTIONS
                || *code == SqlState::CONFIGURATION_LIMIT_EXCEEDED
                || *code == SqlState::CANNOT_CONNECT_NOW;
            return ConnectFailure {
                message: db.message().to_string(),
                sqlstate: Some(code.code().to_string()),
                transient,
                server_gone: *code == SqlState::CANNOT_CONNECT_NOW
                    || *code == SqlState::ADMIN_SHUTDOWN,
            };
        }
        ConnectFailure::without_sqlstate(error_chain(e))
    }

    /// A failure the server did not describe (socket, TLS, configuration), judged by its text.
    pub fn without_sqlstate(message: String) -> ConnectFailure {
        let lower = message.to_ascii_lowercase();
        // Refused/reset: the listener is gone or overloaded; a Unix-domain socket that does not
        // exist is the same (a server removes its socket when it stops). Timeouts: maybe a blip.
        // Anything else (TLS, bad config) will not fix itself.
        let server_gone = lower.contains("refused")
            || lower.contains("reset")
            || lower.contains("closed")
            || lower.contains("no such file or directory");
        let transient = server_gone || lower.contains("timed out") || lower.contains("timeout");
        ConnectFailure {
            message,
            sqlstate: None,
            transient,
            server_gone,
        }
    }

    pub fn timed_out(after: Duration) -> ConnectFailure {
        ConnectFailure {
            message: format!(
                "connection attempt timed out after {} ms",
                after.as_millis()
            ),
            sqlstate: None,
            transient: true,
            server_gone: false,
        }
    }
}

/// `Display` of an error and its causes on one line.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// Retry policy for opening a session's connection.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// One attempt may take this long.
    pub attempt_timeout: Duration,
    /// Transient failures are retried until this much time has passed since the first attempt.
    pub window: Duration,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

pub struct Connected<C> {
    pub conn: C,
    pub attempts: u32,
}

pub struct Refused {
    pub failure: ConnectFailure,
    pub attempts: u32,
    pub cancelled: bool,
}

/// Opens a tokio-postgres client, retrying as `connect_with_retry` does.
pub async fn connect_client_with_retry(
    tls: &Tls,
    config: &Config,
    policy: RetryPolicy,
    cancel: &CancellationToken,
    seed: u64,
) -> Result<Connected<Client>, Refused> {
    let open = || async {
        tls.connect(config)
            .await
            .map_err(|e| ConnectFailure::from_error(&e))
    };
    connect_with_retry(open, policy, cancel, seed).await
}

/// Connects with `open`, retrying transient failures with exponential backoff (plus jitter so
/// refused sessions do not retry in lockstep) until the retry window closes or `cancel` fires.
pub async fn connect_with_retry<C, F, Fut>(
    mut open: F,
    policy: RetryPolicy,
    cancel: &CancellationToken,
    seed: u64,
) -> Result<Connected<C>, Refused>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<C, ConnectFailure>>,
{
    let started = Instant::now();
    let mut backoff = policy.initial_backoff;
    let mut attempts = 0u32;
    let mut jitter = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    loop {
        attempts += 1;
        let attempt = tokio::select! {
            r = tokio::time::timeout(policy.attempt_timeout, open()) => r,
            _ = cancel.cancelled() => {
                return Err(Refused {
                    failure: ConnectFailure { message: "cancelled before connecting".into(), sqlstate: None, transient: false, server_gone: false },
                    attempts,
                    cancelled: true,
                });
            }
        };
        let failure = match attempt {
            Ok(Ok(conn)) => return Ok(Connected { conn, attempts }),
            Ok(Err(failure)) => failure,
            Err(_) => ConnectFailure::timed_out(policy.attempt_timeout),
        };
        if !failure.transient || started.elapsed() + backoff > policy.window {
            return Err(Refused {
                failure,
                attempts,
                cancelled: false,
            });
        }
        // xorshift jitter in [0, backoff/2)
        jitter ^= jitter << 13;
        jitter ^= jitter >> 7;
        jitter ^= jitter << 17;
        let half = backoff.as_micros().max(2) as u64 / 2;
        let wait = backoff + Duration::from_micros(jitter % half);
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = cancel.cancelled() => {
                return Err(Refused { failure, attempts, cancelled: true });
            }
        }
        backoff = (backoff * 2).min(policy.max_backoff);
    }
}

#[cfg(test)]
mod tests {
    use super::ConnectFailure;

    #[test]
    fn a_missing_socket_is_judged_like_a_refused_port() {
        for message in [
            "error connecting to server: Connection refused (os error 111)",
            "error connecting to server: No such file or directory (os error 2)",
        ] {
            let f = ConnectFailure::without_sqlstate(message.into());
            assert!(f.server_gone && f.transient, "{message}");
        }
        let f = ConnectFailure::without_sqlstate(
            "error performing TLS handshake: invalid dns name".into(),
        );
        assert!(!f.server_gone && !f.transient);
    }
}
