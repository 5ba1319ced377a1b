//! Replaying one session: wait for its start, get a connection, send its statements on schedule,
//! and account for every one of them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;

use super::connect::{connect_client_with_retry, connect_with_retry, Connected, Refused};
use super::exec::{execute, Conn, ExecOutcome, Watch};
use super::handoff;
use super::options::Driver;
use super::records::StatementRecord;
use super::report::{NotExecutedReason, SessionReport, SessionStatus, SkipReason};
use super::returned::Returned;
use super::shared::Shared;
use super::stop::Stop;
use super::stop::StopReason;
use super::tally::{instance, Tally};
use super::txn::{Decision, TxnState};
use crate::scale::SessionPlan;
use crate::sql::TxnEffect;
use crate::stats::micros;
use crate::workload::Statement;

/// When the statement at `offset_us` (already shifted) is due, relative to the time base.
fn due(offset_us: u64, speed: f64) -> Option<Duration> {
    if speed <= 0.0 {
        None
    } else {
        Some(Duration::from_secs_f64(offset_us as f64 / 1e6 / speed))
    }
}

/// Sleeps until `at`; false when the run was stopped first.
async fn sleep_until(at: Instant, stop: &Stop, token: &CancellationToken) -> bool {
    if Instant::now() >= at {
        return !stop.is_stopped();
    }
    tokio::select! {
        _ = tokio::time::sleep_until(at.into()) => true,
        _ = token.cancelled() => false,
    }
}

/// Progress counters are shared by every session; bumping them per statement would bounce
/// their cache line between cores, so sessions add in batches.
/// A batch is flushed when it is this big or this old, so progress stays live for paced replays.
const COUNTER_BATCH: u64 = 32;
const COUNTER_MAX_AGE: Duration = Duration::from_millis(50);

struct Run<'a> {
    shared: &'a Arc<Shared>,
    plan: SessionPlan,
    /// When its first statement is due, after the run's start.
    scheduled: Duration,
    tally: Tally,
    report: SessionReport,
    unflushed_executed: u64,
    unflushed_errors: u64,
    /// When the batch is flushed however small it is.
    flush_by: Instant,
}

impl Run<'_> {
    fn fingerprint_index(&self, i: usize) -> u32 {
        let st = &self
            .shared
            .workload()
            .statements_of(self.plan.source as usize)[i];
        self.shared.workload().fingerprint_index(st.text)
    }

    /// Whether statements are written to a results file (most replays write none: the
    /// statement loop then skips building records altogether).
    fn recording(&self) -> bool {
        self.shared.records.is_some()
    }

    async fn record(
        &self,
        i: usize,
        outcome: &str,
        reason: Option<&str>,
        exec: Option<(u64, u32, u64)>,
        err: Option<(&str, &str)>,
    ) {
        let Some(tx) = &self.shared.records else {
            return;
        };
        let fp = &self.shared.workload().fingerprints()[self.fingerprint_index(i) as usize];
        let rec = StatementRecord {
            session: self.plan.id,
            source_session: self.plan.source,
            index: i as u32,
            fingerprint: format!("{:016x}", fp.fingerprint),
            outcome: outcome.to_string(),
            reason: reason.map(str::to_string),
            start_us: exec.map(|e| e.0),
            latency_us: exec.map(|e| e.1),
            rows: exec.map(|e| e.2),
            sqlstate: err.map(|e| e.0.to_string()),
            message: err.map(|e| e.1.to_string()),
        };
        // A closed channel means the writer failed; the report still has every count.
        let _ = tx.send(Some(rec)).await;
    }

    /// Counts a statement sent at `sent` (near enough to when it ended for a batch's age).
    fn count_executed(&mut self, error: bool, sent: Instant) {
        self.unflushed_executed += 1;
        self.unflushed_errors += u64::from(error);
        if self.unflushed_executed >= COUNTER_BATCH || sent >= self.flush_by {
            self.flush_counters_at(sent);
        }
    }

    fn flush_counters(&mut self) {
        self.flush_counters_at(Instant::now());
    }

    fn flush_counters_at(&mut self, now: Instant) {
        let c = &self.shared.counters;
        c.executed.fetch_add(
            std::mem::take(&mut self.unflushed_executed),
            Ordering::Relaxed,
        );
        c.errors.fetch_add(
            std::mem::take(&mut self.unflushed_errors),
            Ordering::Relaxed,
        );
        self.flush_by = now + COUNTER_MAX_AGE;
    }

    async fn skip(&mut self, i: usize, reason: SkipReason) {
        self.tally.skip(self.fingerprint_index(i), reason);
        self.shared.counters.skipped.fetch_add(1, Ordering::Relaxed);
        self.record(i, "skipped", Some(reason.as_str()), None, None)
            .await;
    }

    async fn not_executed_from(&mut self, from: usize, reason: NotExecutedReason) {
        let n = self
            .shared
            .workload()
            .statements_of(self.plan.source as usize)
            .len();
        for i in from..n {
            self.tally.not_executed(self.fingerprint_index(i), reason);
            self.record(i, "not_executed", Some(reason.as_str()), None, None)
                .await;
        }
        self.shared
            .counters
            .not_executed
            .fetch_add((n - from) as u64, Ordering::Relaxed);
    }

    fn stopped_status(&self) -> (SessionStatus, NotExecutedReason) {
        match self.shared.stop_reason() {
            Some(StopReason::Deadline) => (SessionStatus::Deadline, NotExecutedReason::Deadline),
            Some(StopReason::ServerUnavailable(_)) => (
                SessionStatus::ServerUnavailable,
                NotExecutedReason::ServerUnavailable,
            ),
            _ => (SessionStatus::Cancelled, NotExecutedReason::Cancelled),
        }
    }

    async fn end_stopped(&mut self, from: usize) {
        let (status, reason) = self.stopped_status();
        self.report.status = status;
        self.not_executed_from(from, reason).await;
    }

    /// Ends the session on an outcome that leaves its connection unusable (lost, unresponsive,
    /// stopped), counting the statements from `from` on as not executed. False for an answer:
    /// the session goes on.
    async fn ended_by(&mut self, outcome: ExecOutcome, from: usize) -> bool {
        let reason = match outcome {
            ExecOutcome::Ok { .. } | ExecOutcome::Failed { .. } => return false,
            ExecOutcome::Interrupted => {
                self.end_stopped(from).await;
                return true;
            }
            ExecOutcome::Lost { message, sqlstate } => {
                self.report.message = Some(message);
                self.report.sqlstate = sqlstate;
                NotExecutedReason::ConnectionLost
            }
            ExecOutcome::Unresponsive { message } => {
                self.report.message = Some(message);
                NotExecutedReason::Unresponsive
            }
        };
        self.shared.suspect_server();
        self.report.status = SessionStatus::ConnectionLost;
        self.not_executed_from(from, reason).await;
        true
    }
}

/// Replays one planned session: arrive when the workload says it arrives, wait for a connection
/// slot, connect, send its statements on schedule, and account for every one of them.
pub async fn run_session(shared: Arc<Shared>, plan: SessionPlan) -> (SessionReport, Tally) {
    let mut run = Run::new(&shared, plan);
    if run.statements().is_empty() {
        return finish(run);
    }
    run.claim_slots();
    // A child token per session: waiting on it registers with this session's token only, not
    // with one list shared (and locked) by every in-flight statement of the run.
    let stop = shared.stop.token().child_token();
    if !run.arrive(&stop).await {
        return finish(run);
    }
    let Ok(_permit) = run.wait_for_slot(&stop).await else {
        return finish(run);
    };
    let base = run.time_base();
    let Some(conn) = run.connect(&stop).await else {
        return finish(run);
    };
    run.send_statements(conn, base, &stop).await;
    finish(run)
}

/// The run was stopped while the session waited.
struct Stopped;

/// What the statement loop keeps from one statement to the next.
struct Sending<'a> {
    conn: Conn,
    watch: Watch<'a>,
    txn: TxnState,
    /// Reused for every statement: the text with replayed keys, and a producer's rows.
    rewritten: String,
    returned: Returned,
}

impl<'a> Run<'a> {
    fn new(shared: &'a Arc<Shared>, plan: SessionPlan) -> Run<'a> {
        let workload = shared.workload();
        let scheduled = workload
            .statements_of(plan.source as usize)
            .first()
            .and_then(|s| due(plan.shift_us + s.start_offset_us, shared.opts.speed))
            .unwrap_or_default();
        Run {
            shared,
            plan,
            scheduled,
            tally: Tally::default(),
            unflushed_executed: 0,
            unflushed_errors: 0,
            flush_by: Instant::now() + COUNTER_MAX_AGE,
            report: SessionReport {
                id: plan.id,
                source_id: workload.sessions()[plan.source as usize].id,
                copy: plan.copy,
                status: SessionStatus::Completed,
                message: None,
                sqlstate: None,
                connect_attempts: 0,
                scheduled_start_us: scheduled.as_micros() as u64,
                actual_start_us: None,
                counts: Default::default(),
            },
        }
    }

    /// The session's statements in the workload.
    fn statements(&self) -> &'a [Statement] {
        self.shared
            .workload()
            .statements_of(self.plan.source as usize)
    }

    /// Claims the latency slots of the session's statements.
    fn claim_slots(&mut self) {
        let (shared, statements) = (self.shared, self.statements());
        let workload = shared.workload();
        self.tally.claim(
            statements
                .iter()
                .map(|st| workload.fingerprint_index(st.text)),
            &shared.slots,
            shared.server_slots.as_ref(),
        );
    }

    /// Arrives when the workload says this session arrives; false when the run was stopped
    /// first (its statements are then accounted for).
    async fn arrive(&mut self, stop: &CancellationToken) -> bool {
        let shared = self.shared;
        if sleep_until(shared.start + self.scheduled, &shared.stop, stop).await {
            return true;
        }
        self.end_stopped(0).await;
        false
    }

    /// A cap on open sessions delays a session as a whole: its own timeline moves with it (see
    /// `time_base`), so it does not burst through its statements to catch up with the original
    /// schedule.
    async fn wait_for_slot(
        &mut self,
        stop: &CancellationToken,
    ) -> Result<Option<OwnedSemaphorePermit>, Stopped> {
        let shared = self.shared;
        let Some(sem) = &shared.limit else {
            return Ok(None);
        };
        tokio::select! {
            p = sem.clone().acquire_owned() => Ok(Some(p.expect("semaphore never closed"))),
            _ = stop.cancelled() => {
                self.end_stopped(0).await;
                Err(Stopped)
            }
        }
    }

    /// The instant the session's offsets count from: now, less its scheduled start (so a wait
    /// for a slot moves its whole timeline), or the run's start when nothing is paced.
    fn time_base(&self) -> Instant {
        if self.shared.opts.speed > 0.0 {
            Instant::now() - self.scheduled
        } else {
            self.shared.start
        }
    }

    /// The session's connection; `None` when it could not be opened (its statements are then
    /// accounted for, and the server suspected when it seems gone).
    async fn connect(&mut self, stop: &CancellationToken) -> Option<Conn> {
        let shared = self.shared;
        let counters = &shared.counters;
        counters.sessions_connecting.fetch_add(1, Ordering::Relaxed);
        let connected = connect(shared, stop, self.plan.id).await;
        counters.sessions_connecting.fetch_sub(1, Ordering::Relaxed);
        match connected {
            Ok(c) => {
                self.report.connect_attempts = c.attempts;
                Some(c.conn)
            }
            Err(refused) => {
                self.report.connect_attempts = refused.attempts;
                if refused.cancelled {
                    self.end_stopped(0).await;
                } else {
                    self.report.status = SessionStatus::ConnectFailed;
                    self.report.message = Some(refused.failure.message.clone());
                    self.report.sqlstate = refused.failure.sqlstate.clone();
                    if refused.failure.server_gone {
                        shared.suspect_server();
                    }
                    self.not_executed_from(0, NotExecutedReason::ConnectFailed)
                        .await;
                }
                None
            }
        }
    }

    /// Sends the statements on schedule over `conn`, until the last one or until the session
    /// cannot go on; then closes the connection.
    async fn send_statements(&mut self, conn: Conn, base: Instant, stop: &CancellationToken) {
        let shared = self.shared;
        let (workload, statements) = (shared.workload(), self.statements());
        let speed = shared.opts.speed;
        shared
            .counters
            .sessions_active
            .fetch_add(1, Ordering::Relaxed);
        let mut s = Sending {
            conn,
            watch: Watch::new(&shared.stop, shared.opts.statement_timeout),
            txn: TxnState::default(),
            rewritten: String::new(),
            returned: Returned::default(),
        };
        let first = workload.sessions()[self.plan.source as usize].range().0;
        let plan = self.plan;
        for (i, st) in statements.iter().enumerate() {
            if let Some(d) = due(plan.shift_us + st.start_offset_us, speed) {
                if !sleep_until(base + d, &shared.stop, stop).await {
                    self.end_stopped(i).await;
                    break;
                }
            } else if shared.stop.is_stopped() {
                self.end_stopped(i).await;
                break;
            }
            let fp = workload.fingerprint_index(st.text);
            let effect = workload.txn_effect(st.text);
            if let Some(reason) = self.skip_reason(st, fp, effect, &mut s.txn) {
                self.skip(i, reason).await;
                continue;
            }

            // One clock reading for the send and one for the answer (in `execute`): each
            // statement's own bookkeeping is derived from those two.
            let sent = Instant::now();
            if self.report.actual_start_us.is_none() {
                self.report.actual_start_us = Some((sent - shared.start).as_micros() as u64);
            }
            let g = first + i as u32;
            let text = workload.text(st.text);
            let (sql, keep_rows) = self.text_to_send(g, text, &mut s.rewritten);
            if let Some(next) = statements.get(i + 1) {
                workload.prefetch_next(text, next.text);
            }
            let rows_wanted = keep_rows.then(|| {
                s.returned.clear();
                &mut s.returned
            });
            let outcome = execute(
                &mut s.conn,
                &shared.target.tls,
                sent,
                sql,
                &mut s.watch,
                rows_wanted,
            )
            .await;
            let goes_on = match outcome {
                ExecOutcome::Ok {
                    latency,
                    rows,
                    server_us,
                } => {
                    if let (Some(keys), true) = (&shared.keys, keep_rows) {
                        keys.register(&shared.linked.keys, g, plan.copy, &s.returned);
                    }
                    let us = self.count_ok(fp, sent, latency, rows, server_us);
                    if self.recording() {
                        let at = self.sent_at_us(sent);
                        self.record(i, "ok", None, Some((at, us, rows)), None).await;
                    }
                    s.txn.succeeded(effect);
                    let restore = shared.server_slots.is_some() && sets_client_messages(sql);
                    !restore || self.restore_client_messages(&mut s, i).await
                }
                ExecOutcome::Failed {
                    latency,
                    sqlstate,
                    message,
                    failed_block,
                } => {
                    let us = self.count_error(fp, i, sent, latency, (&sqlstate, &message));
                    if self.recording() {
                        let at = self.sent_at_us(sent);
                        let error = Some((sqlstate.as_str(), message.as_str()));
                        self.record(i, "error", None, Some((at, us, 0)), error)
                            .await;
                    }
                    s.txn.server_says(failed_block);
                    let upcoming = statements[i + 1..]
                        .iter()
                        .map(|st| workload.txn_effect(st.text));
                    !s.txn.failed(effect, upcoming) || self.roll_back(&mut s, i).await
                }
                unusable => {
                    self.ended_by(unusable, i).await;
                    false
                }
            };
            if !goes_on {
                break;
            }
        }
        s.conn.close();
        shared
            .counters
            .sessions_active
            .fetch_sub(1, Ordering::Relaxed);
    }

    /// Why the statement is not sent, if it is not: server-wide and read-only filters, then a
    /// transaction the server has aborted. (Inlined, as is `text_to_send`: left to itself the
    /// compiler calls both out of the session's loop, 55 instructions a statement.)
    #[inline(always)]
    fn skip_reason(
        &self,
        st: &Statement,
        fp: u32,
        effect: &TxnEffect,
        txn: &mut TxnState,
    ) -> Option<SkipReason> {
        let (workload, opts) = (self.shared.workload(), &self.shared.opts);
        // Before read-only: a server-wide statement that writes nothing (reading a server file)
        // must not slip through a read-only replay, and its reason is the more telling one.
        if opts.skip_server_wide && workload.server_wide(st.text) {
            return Some(SkipReason::ServerWide);
        }
        if opts.read_only && workload.fingerprints()[fp as usize].writes {
            return Some(SkipReason::ReadOnly);
        }
        match txn.decide(effect) {
            Decision::Execute => None,
            Decision::Skip | Decision::SkipAndEndBlock => Some(SkipReason::TransactionAborted),
        }
    }

    /// The text to send for statement `g` (with this replay's keys where it carries captured
    /// ones), and whether its rows are wanted (it produces keys).
    #[inline(always)]
    fn text_to_send<'t>(
        &self,
        g: u32,
        text: &'t str,
        rewritten: &'t mut String,
    ) -> (&'t str, bool) {
        let shared = self.shared;
        let Some(keys) = &shared.keys else {
            return (text, false);
        };
        let links = &shared.linked.keys;
        let sql = if keys.rewrite_into(links, g, self.plan.copy, text, rewritten) {
            rewritten.as_str()
        } else {
            text
        };
        (sql, !links.produced_by(g).is_empty())
    }

    /// Counts a statement that ran; its latency in µs.
    fn count_ok(
        &mut self,
        fp: u32,
        sent: Instant,
        latency: Duration,
        rows: u64,
        server_us: Option<u32>,
    ) -> u32 {
        let us = micros(latency);
        self.tally.ok(fp, us, rows, server_us);
        self.count_executed(false, sent);
        us
    }

    /// Counts statement `i`, which the server refused; its latency in µs.
    fn count_error(
        &mut self,
        fp: u32,
        i: usize,
        sent: Instant,
        latency: Duration,
        (sqlstate, message): (&str, &str),
    ) -> u32 {
        let us = micros(latency);
        let at = instance(self.plan.source, i as u32);
        self.tally.error(fp, sqlstate, message, at);
        self.count_executed(true, sent);
        us
    }

    /// The workload turned the server's duration lines off for this session after statement `i`
    /// (drivers do: `SET client_min_messages TO warning`); our own SET turns them back on, so
    /// that its later statements keep their server time. False when the session cannot go on.
    async fn restore_client_messages(&mut self, s: &mut Sending<'_>, i: usize) -> bool {
        let restored = execute(
            &mut s.conn,
            &self.shared.target.tls,
            Instant::now(),
            RESTORE_CLIENT_MESSAGES,
            &mut s.watch,
            None,
        )
        .await;
        !self.ended_by(restored, i + 1).await
    }

    /// Rolls back the transaction statement `i` failed in, which the workload would not have
    /// ended itself. Our own ROLLBACK: not a workload statement, so not recorded. Unless it is
    /// answered, the session cannot go on (false): an answer still due would be read as the
    /// next statement's.
    async fn roll_back(&mut self, s: &mut Sending<'_>, i: usize) -> bool {
        let rolled_back = execute(
            &mut s.conn,
            &self.shared.target.tls,
            Instant::now(),
            "ROLLBACK",
            &mut s.watch,
            None,
        )
        .await;
        !self.ended_by(rolled_back, i + 1).await
    }

    /// µs after the replay's start when a statement was sent.
    fn sent_at_us(&self, sent: Instant) -> u64 {
        (sent - self.shared.start).as_micros() as u64
    }
}

/// What the engine sends after a workload statement that set `client_min_messages`, when the
/// server's own times are measured (they come as LOG notices).
const RESTORE_CLIENT_MESSAGES: &str = "SET client_min_messages = log";

/// Whether `sql` may set `client_min_messages` (a cheap test on the text; a false positive only
/// costs one more `SET`).
fn sets_client_messages(sql: &str) -> bool {
    const NAME: &[u8] = b"client_min_messages";
    sql.len() >= NAME.len()
        && sql
            .as_bytes()
            .windows(NAME.len())
            .any(|w| w.eq_ignore_ascii_case(NAME))
}

/// Opens the session's connection on the path the options choose, with retries.
async fn connect(
    shared: &Shared,
    stop: &CancellationToken,
    seed: u64,
) -> Result<Connected<Conn>, Refused> {
    let (tls, config, policy) = (
        &shared.target.tls,
        &shared.target.pg_config,
        shared.opts.connect,
    );
    match shared.opts.driver {
        Driver::Wire => {
            let open = || async { handoff::open(tls, config, seed).await.map(Conn::Wire) };
            connect_with_retry(open, policy, stop, seed).await
        }
        Driver::TokioPostgres => connect_client_with_retry(tls, config, policy, stop, seed)
            .await
            .map(|c| Connected {
                conn: Conn::Client(c.conn),
                attempts: c.attempts,
            }),
    }
}

fn finish(mut run: Run<'_>) -> (SessionReport, Tally) {
    run.flush_counters();
    run.report.counts = run.tally.counts.clone();
    run.shared
        .counters
        .sessions_done
        .fetch_add(1, Ordering::Relaxed);
    (run.report, run.tally)
}
