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
        /// The rows themselves, when asked for (a statement that returns generated keys).
        returned: Option<Returned>,
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
    Unresponsive { message: String },
    /// The run was stopped while the statement was in flight (it was cancelled server-side).
    Interrupted,
}

/// Rows a statement returned, as text; kept only for statements whose keys are tracked.
#[derive(Debug, Default)]
pub struct Returned {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
}

/// More rows than any RETURNING whose keys a later statement uses; the rest are counted only.
const MAX_RETURNED_ROWS: usize = 10_000;

/// Time allowed after the statement timeout for the server's own cancellation to arrive before
/// the client sends a cancel request, and again before it gives the connection up.
const GRACE: Duration = Duration::from_secs(2);

/// Runs `sql` with the simple-query protocol, streaming the rows: counted, and kept as text only
/// when `keep_rows` (a statement that returns generated keys).
pub async fn execute(
    client: &Client,
    tls: &Tls,
    sql: &str,
    statement_timeout: Option<Duration>,
    stop: &CancellationToken,
    keep_rows: bool,
) -> ExecOutcome {
    let started = Instant::now();
    let run = async {
        let mut rows = 0u64;
        let mut returned = keep_rows.then(Returned::default);
        let stream = client.simple_query_raw(sql).await?;
        futures_util::pin_mut!(stream);
        while let Some(msg) = stream.next().await {
            match msg? {
                SimpleQueryMessage::CommandComplete(n) => rows += n,
                SimpleQueryMessage::Row(row) => {
                    if let Some(r) = returned.as_mut() {
                        if r.columns.is_empty() {
                            r.columns =
                                row.columns().iter().map(|c| c.name().to_string()).collect();
                        }
                        if r.rows.len() < MAX_RETURNED_ROWS {
                            r.rows.push(
                                (0..row.len())
                                    .map(|i| row.get(i).map(str::to_string))
                                    .collect(),
                            );
                        }
                    }
                }
                _ => {}
            }
        }
        Ok::<(u64, Option<Returned>), tokio_postgres::Error>((rows, returned))
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
        Ok((rows, returned)) => ExecOutcome::Ok {
            latency,
            rows,
            returned,
        },
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
