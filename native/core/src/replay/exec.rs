//! Sending one statement and timing its full round trip.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio_postgres::error::Severity;
use tokio_postgres::{Client, SimpleQueryMessage};
use tokio_util::sync::CancellationToken;

use super::connect::{error_chain, Tls};

pub enum ExecOutcome {
    Ok {
        latency: Duration,
        rows: u64,
    },
    /// The server answered with an error; the session can go on.
    Failed {
        latency: Duration,
        sqlstate: String,
        message: String,
    },
    /// The connection broke (FATAL from the server, reset, closed).
    Lost {
        message: String,
        sqlstate: Option<String>,
    },
    /// No answer within the timeout guard even after a cancel request.
    Unresponsive {
        message: String,
    },
    /// The run was stopped while the statement was in flight (it was cancelled server-side).
    Interrupted,
}

/// Time allowed after the statement timeout for the server's own cancellation to arrive before
/// the client sends a cancel request, and again before it gives the connection up.
const GRACE: Duration = Duration::from_secs(2);

/// Runs `sql` with the simple-query protocol, streaming the rows (counted, never buffered).
pub async fn execute(
    client: &Client,
    tls: &Tls,
    sql: &str,
    statement_timeout: Option<Duration>,
    stop: &CancellationToken,
) -> ExecOutcome {
    let started = Instant::now();
    let run = async {
        let mut rows = 0u64;
        let stream = client.simple_query_raw(sql).await?;
        futures_util::pin_mut!(stream);
        while let Some(msg) = stream.next().await {
            if let SimpleQueryMessage::CommandComplete(n) = msg? {
                rows += n;
            }
        }
        Ok::<u64, tokio_postgres::Error>(rows)
    };
    tokio::pin!(run);

    let guard = statement_timeout.map(|t| t + GRACE);
    let first = tokio::select! {
        r = &mut run => Some(r),
        _ = sleep_opt(guard) => None,
        _ = stop.cancelled() => {
            tls.cancel(&client.cancel_token()).await;
            // Let the cancelled statement's error arrive so the connection is left clean.
            let _ = tokio::time::timeout(GRACE, &mut run).await;
            return ExecOutcome::Interrupted;
        }
    };
    let result = match first {
        Some(r) => r,
        None => {
            // The server should have cancelled it itself (statement_timeout); ask explicitly.
            tls.cancel(&client.cancel_token()).await;
            match tokio::time::timeout(GRACE, &mut run).await {
                Ok(r) => r,
                Err(_) => {
                    return ExecOutcome::Unresponsive {
                        message: format!(
                        "no answer {} ms after the statement timeout, even after a cancel request",
                        (2 * GRACE).as_millis()
                    ),
                    }
                }
            }
        }
    };
    let latency = started.elapsed();
    match result {
        Ok(rows) => ExecOutcome::Ok { latency, rows },
        Err(e) => classify(&e, latency),
    }
}

async fn sleep_opt(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

fn classify(e: &tokio_postgres::Error, latency: Duration) -> ExecOutcome {
    if let Some(db) = e.as_db_error() {
        let fatal = matches!(
            db.parsed_severity(),
            Some(Severity::Fatal) | Some(Severity::Panic)
        );
        if fatal {
            return ExecOutcome::Lost {
                message: db.message().to_string(),
                sqlstate: Some(db.code().code().to_string()),
            };
        }
        return ExecOutcome::Failed {
            latency,
            sqlstate: db.code().code().to_string(),
            message: db.message().to_string(),
        };
    }
    ExecOutcome::Lost {
        message: error_chain(e),
        sqlstate: None,
    }
}
