//! Sending one statement and timing its full round trip, on either path: the direct protocol
//! loop (`wire.rs`, the default) or a tokio-postgres client (`Driver::TokioPostgres`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::time::Sleep;
use tokio_postgres::error::Severity;
use tokio_postgres::{Client, SimpleQueryMessage};

use super::answer::{nul_in_text, Answer};
use super::connect::{error_chain, Tls};
use super::returned::Returned;
use super::stop::{Stop, StopWatcher};
use super::wire::WireConn;

/// A session's connection.
pub enum Conn {
    Wire(WireConn),
    Client(Client),
}

impl Conn {
    /// Ends the session (a Terminate on the direct path; tokio-postgres sends its own on drop).
    pub fn close(self) {
        if let Conn::Wire(w) = self {
            w.terminate();
        }
    }
}

pub enum ExecOutcome {
    /// Ran; the rows, when asked for, are in the `Returned` given to `execute`.
    Ok {
        latency: Duration,
        rows: u64,
        server_us: Option<u32>,
    },
    /// The server answered with an error; the session can go on.
    Failed {
        latency: Duration,
        sqlstate: String,
        message: String,
        failed_block: Option<bool>,
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

/// Time allowed after the statement timeout for the server's own cancellation to arrive before
/// the client sends a cancel request, and again before it gives the connection up.
const GRACE: Duration = Duration::from_secs(2);

/// What a session watches while one of its statements is in flight: the run being stopped, and
/// the guard that gives up on a statement the server has not answered within its timeout.
///
/// Both are set up once per session and reused by every statement. Registering with a stop
/// token and the timer wheel afresh for each statement (and unregistering when it answered) cost
/// a session more than parsing the answer did; set up once, a statement only looks at them.
pub struct Watch<'a> {
    stop: StopWatcher<'a>,
    guard: Option<Guard>,
}

struct Guard {
    /// How long a statement may go unanswered: the statement timeout and the grace after it.
    after: Duration,
    /// Armed for the guard's deadline of some statement at or before the current one.
    timer: Pin<Box<Sleep>>,
}

impl Watch<'_> {
    /// Must be made inside the session's runtime (the guard's timer belongs to it).
    pub fn new(stop: &Stop, statement_timeout: Option<Duration>) -> Watch<'_> {
        Watch {
            stop: stop.watcher(),
            guard: statement_timeout.map(|t| {
                let after = t + GRACE;
                Guard {
                    after,
                    // Now is no later than the first statement's start, so this fires no later
                    // than that statement's deadline.
                    timer: Box::pin(tokio::time::sleep(after)),
                }
            }),
        }
    }

    fn poll_stopped(&mut self, cx: &mut Context<'_>) -> bool {
        self.stop.poll_stopped(cx)
    }

    /// Whether the statement that started at `started` has gone unanswered past its guard.
    ///
    /// A session's statements start one after another, so their deadlines only move later: a
    /// timer armed for an earlier statement's deadline can only fire early, never late. When it
    /// does, it is moved to the current statement's deadline, which arms the timer about once per
    /// guard period instead of once per statement.
    fn poll_expired(&mut self, cx: &mut Context<'_>, started: Instant) -> bool {
        let Some(guard) = &mut self.guard else {
            return false;
        };
        let deadline = tokio::time::Instant::from_std(started + guard.after);
        loop {
            if guard.timer.as_mut().poll(cx).is_pending() {
                return false;
            }
            if guard.timer.deadline() >= deadline {
                return true;
            }
            guard.timer.as_mut().reset(deadline);
        }
    }
}

/// Runs `sql` with the simple-query protocol; its latency counts from `started` (read just
/// before). Rows are counted, and kept as text in `returned` only when it is given (a statement
/// that returns generated keys).
pub async fn execute(
    conn: &mut Conn,
    tls: &Tls,
    started: Instant,
    sql: &str,
    watch: &mut Watch<'_>,
    returned: Option<&mut Returned>,
) -> ExecOutcome {
    match conn {
        Conn::Wire(w) => {
            let (io, target) = w.parts();
            guarded(io.query(sql, returned), || target.cancel(), started, watch).await
        }
        Conn::Client(client) => {
            let client = &*client;
            guarded(
                client_query(client, sql, returned),
                || async move { tls.cancel(&client.cancel_token()).await },
                started,
                watch,
            )
            .await
        }
    }
}

/// What ended the wait for an answer.
enum Waited {
    Answer(Answer),
    Stopped,
    Expired,
}

/// Waits for `run`, within the statement timeout's guard and until the run is stopped; either
/// sends a cancel request with `cancel`.
async fn guarded<F, C, CF>(
    run: F,
    cancel: C,
    started: Instant,
    watch: &mut Watch<'_>,
) -> ExecOutcome
where
    F: Future<Output = Answer>,
    C: Fn() -> CF,
    CF: Future<Output = ()>,
{
    tokio::pin!(run);
    let waited = std::future::poll_fn(|cx| {
        // The answer first: a statement that has completed is never reported as interrupted.
        if let Poll::Ready(answer) = run.as_mut().poll(cx) {
            return Poll::Ready(Waited::Answer(answer));
        }
        if watch.poll_stopped(cx) {
            return Poll::Ready(Waited::Stopped);
        }
        if watch.poll_expired(cx, started) {
            return Poll::Ready(Waited::Expired);
        }
        Poll::Pending
    })
    .await;
    // The cancel request goes out while the answer is still awaited, both within the grace: a
    // server that accepts the cancel connection and never answers on it (tokio-postgres waits
    // for the reply to its SSLRequest without a limit) must not hold the session, and with it
    // the run, past its deadline or a stop.
    let answer = match waited {
        Waited::Answer(answer) => answer,
        Waited::Stopped => {
            // Let the cancelled statement's error arrive so the connection is left clean.
            let _ = tokio::time::timeout(GRACE, answer_while(cancel(), run.as_mut())).await;
            return ExecOutcome::Interrupted;
        }
        Waited::Expired => {
            // The server should have cancelled it itself (statement_timeout); ask explicitly.
            match tokio::time::timeout(GRACE, answer_while(cancel(), run.as_mut())).await {
                Ok(answer) => answer,
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
    match answer {
        Answer::Done { rows, server_us } => ExecOutcome::Ok {
            latency,
            rows,
            server_us,
        },
        Answer::Failed {
            sqlstate,
            message,
            failed_block,
        } => ExecOutcome::Failed {
            latency,
            sqlstate,
            message,
            failed_block,
        },
        Answer::Lost { message, sqlstate } => ExecOutcome::Lost { message, sqlstate },
    }
}

/// `run`'s answer, with `side` driven alongside until it completes (it is dropped with the
/// returned future).
async fn answer_while<S, F>(side: S, run: Pin<&mut F>) -> Answer
where
    S: Future<Output = ()>,
    F: Future<Output = Answer>,
{
    let mut side = std::pin::pin!(side);
    let mut side_done = false;
    let mut run = run;
    std::future::poll_fn(move |cx| {
        if !side_done {
            side_done = side.as_mut().poll(cx).is_ready();
        }
        run.as_mut().poll(cx)
    })
    .await
}

/// One statement through tokio-postgres, streaming the rows.
async fn client_query(client: &Client, sql: &str, mut returned: Option<&mut Returned>) -> Answer {
    if memchr::memchr(0, sql.as_bytes()).is_some() {
        return nul_in_text();
    }
    let run = async {
        let mut rows = 0u64;
        let stream = client.simple_query_raw(sql).await?;
        futures_util::pin_mut!(stream);
        while let Some(msg) = stream.next().await {
            match msg? {
                SimpleQueryMessage::CommandComplete(n) => rows += n,
                SimpleQueryMessage::Row(row) => {
                    if let Some(r) = returned.as_deref_mut() {
                        if !r.has_columns() {
                            for c in row.columns() {
                                r.push_column(c.name());
                            }
                        }
                        r.push_row((0..row.len()).map(|i| row.get(i)));
                    }
                }
                _ => {}
            }
        }
        Ok::<u64, tokio_postgres::Error>(rows)
    };
    match run.await {
        // tokio-postgres hands notices to its connection task, not to the query: no server time.
        Ok(rows) => Answer::Done {
            rows,
            server_us: None,
        },
        Err(e) => classify(&e),
    }
}

fn classify(e: &tokio_postgres::Error) -> Answer {
    if let Some(db) = e.as_db_error() {
        let fatal = matches!(
            db.parsed_severity(),
            Some(Severity::Fatal) | Some(Severity::Panic)
        );
        if fatal {
            return Answer::Lost {
                message: db.message().to_string(),
                sqlstate: Some(db.code().code().to_string()),
            };
        }
        return Answer::Failed {
            sqlstate: db.code().code().to_string(),
            message: db.message().to_string(),
            failed_block: None,
        };
    }
    Answer::Lost {
        message: error_chain(e),
        sqlstate: None,
    }
}
