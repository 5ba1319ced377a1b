//! The run's own connection: the preflight before any session (one connection, so that a wrong
//! password or a dead server is one clear error instead of N refused sessions; it also aligns
//! the workload's sequences and asks the server's version), and the liveness probe that later
//! asks whether the server is still there.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::connect::{
    self, connect_client_with_retry, connect_with_retry, Connected, Refused, RetryPolicy,
};
use super::error::ReplayError;
use super::handoff;
use super::options::{describe_target, Driver, ReplayOptions, Target};
use super::sequences::{self, SequenceOutcome};
use crate::linked::LinkedWorkload;

/// How long a liveness probe waits for the answer to its `SELECT 1`, once connected.
const PROBE_ANSWER: Duration = Duration::from_secs(5);

/// What the preflight learnt of the server.
pub(super) struct Preflight {
    pub server_version: String,
    /// Where the workload's sequences were put, when they were aligned.
    pub sequences: Option<Vec<SequenceOutcome>>,
}

/// Connects once before any session: retried briefly (a server that is still starting), never
/// longer than asked. Aligns the sequences when the replay writes and asks the server's version.
pub(super) async fn preflight(
    target: &Target,
    opts: &ReplayOptions,
    linked: &LinkedWorkload,
    cancel: &CancellationToken,
) -> Result<Preflight, ReplayError> {
    let policy = RetryPolicy {
        window: opts.connect.window.min(Duration::from_secs(5)),
        ..opts.connect
    };
    let client = match connect_own_client(target, opts.driver, policy, cancel, 1).await {
        Ok(c) => c.conn,
        Err(r) if r.cancelled => return Err(ReplayError::Cancelled),
        Err(r) => {
            let hint = hint_for(r.failure.sqlstate.as_deref(), &r.failure.message);
            return Err(ReplayError::Connect {
                target: describe_target(&target.pg_config),
                message: r.failure.message,
                sqlstate: r.failure.sqlstate,
                hint,
            });
        }
    };
    // Writes only: a read-only replay inserts nothing that a sequence could number.
    let sequences = if opts.align_sequences && !opts.read_only {
        Some(align_sequences(&client, linked).await).filter(|s| !s.is_empty())
    } else {
        None
    };
    Ok(Preflight {
        server_version: server_version(&client).await,
        sequences,
    })
}

/// The server's `server_version`, or `unknown`.
async fn server_version(client: &tokio_postgres::Client) -> String {
    let shown = client.simple_query("SHOW server_version").await.ok();
    shown
        .and_then(|msgs| {
            msgs.into_iter().find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            })
        })
        .unwrap_or_else(|| "unknown".into())
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

/// `Some(reason)` when the server does not accept a connection and answer `SELECT 1`.
/// A server that refuses with an SQLSTATE ("too many clients") is alive.
pub(super) async fn probe(target: &Target, driver: Driver) -> Option<String> {
    let policy = RetryPolicy {
        attempt_timeout: Duration::from_secs(5),
        window: Duration::from_secs(3),
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_millis(500),
    };
    // Not tied to `stop`: the final probe runs after the run has been stopped.
    let never = CancellationToken::new();
    match connect_own_client(target, driver, policy, &never, 0).await {
        // Bounded like the connection: the final probe is awaited before the run ends, and
        // a server that authenticates but answers nothing must not hold it.
        Ok(c) => match tokio::time::timeout(PROBE_ANSWER, c.conn.simple_query("SELECT 1")).await {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(connect::error_chain(&e)),
            Err(_) => Some(format!(
                "the server accepted a connection but did not answer SELECT 1 within {} s",
                PROBE_ANSWER.as_secs()
            )),
        },
        Err(r) if r.failure.sqlstate.is_some() && !r.failure.server_gone => None,
        Err(r) => Some(r.failure.message),
    }
}

/// The run's own connection (preflight, sequence alignment, liveness probes), with retries. On
/// the direct path it reaches the server as the sessions do (`handoff::open_client`: host by
/// host, TLS decided per peer); on the tokio-postgres path, as that path's sessions do.
async fn connect_own_client(
    target: &Target,
    driver: Driver,
    policy: RetryPolicy,
    cancel: &CancellationToken,
    seed: u64,
) -> Result<Connected<tokio_postgres::Client>, Refused> {
    let (tls, config) = (&target.tls, &target.pg_config);
    match driver {
        Driver::Wire => {
            let open = || handoff::open_client(tls, config, seed);
            connect_with_retry(open, policy, cancel, seed).await
        }
        Driver::TokioPostgres => connect_client_with_retry(tls, config, policy, cancel, seed).await,
    }
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
