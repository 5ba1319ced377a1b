//! Replaying one session: wait for its start, get a connection, send its statements on schedule,
//! and account for every one of them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::connect::{connect_client_with_retry, connect_with_retry, Connected, Refused};
use super::exec::{execute, Conn, ExecOutcome, Watch};
use super::records::StatementRecord;
use super::report::{NotExecutedReason, SessionReport, SessionStatus, SkipReason};
use super::returned::Returned;
use super::stop::Stop;
use super::tally::{instance, Tally};
use super::txn::{Decision, TxnState};
use super::{handoff, Driver, Shared, StopReason};
use crate::scale::SessionPlan;
use crate::stats::micros;

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

pub async fn run_session(shared: Arc<Shared>, plan: SessionPlan) -> (SessionReport, Tally) {
    let workload = shared.workload();
    let statements = workload.statements_of(plan.source as usize);
    let speed = shared.opts.speed;
    // A child token per session: waiting on it registers with this session's token only, not
    // with one list shared (and locked) by every in-flight statement of the run.
    let stop = shared.stop.token().child_token();
    let scheduled = statements
        .first()
        .and_then(|s| due(plan.shift_us + s.start_offset_us, speed))
        .unwrap_or_default();
    let mut run = Run {
        shared: &shared,
        plan,
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
    };
    if statements.is_empty() {
        return finish(run);
    }
    run.tally.claim(
        statements
            .iter()
            .map(|st| workload.fingerprint_index(st.text)),
        &shared.slots,
        shared.server_slots.as_ref(),
    );

    // Arrive when the workload says this session arrives.
    if !sleep_until(shared.start + scheduled, &shared.stop, &stop).await {
        run.end_stopped(0).await;
        return finish(run);
    }
    // A cap on open sessions delays a session as a whole: its own timeline moves with it, so it
    // does not burst through its statements to catch up with the original schedule.
    let _permit = match &shared.limit {
        Some(sem) => tokio::select! {
            p = sem.clone().acquire_owned() => Some(p.expect("semaphore never closed")),
            _ = stop.cancelled() => {
                run.end_stopped(0).await;
                return finish(run);
            }
        },
        None => None,
    };
    let base = if speed > 0.0 {
        Instant::now() - scheduled
    } else {
        shared.start
    };

    shared
        .counters
        .sessions_connecting
        .fetch_add(1, Ordering::Relaxed);
    let connected = connect(&shared, &stop, plan.id).await;
    shared
        .counters
        .sessions_connecting
        .fetch_sub(1, Ordering::Relaxed);
    let mut conn = match connected {
        Ok(c) => {
            run.report.connect_attempts = c.attempts;
            c.conn
        }
        Err(refused) => {
            run.report.connect_attempts = refused.attempts;
            if refused.cancelled {
                run.end_stopped(0).await;
            } else {
                run.report.status = SessionStatus::ConnectFailed;
                run.report.message = Some(refused.failure.message.clone());
                run.report.sqlstate = refused.failure.sqlstate.clone();
                if refused.failure.server_gone {
                    shared.suspect_server();
                }
                run.not_executed_from(0, NotExecutedReason::ConnectFailed)
                    .await;
            }
            return finish(run);
        }
    };
    shared
        .counters
        .sessions_active
        .fetch_add(1, Ordering::Relaxed);

    let mut watch = Watch::new(&shared.stop, shared.opts.statement_timeout);
    let mut txn = TxnState::default();
    let first = workload.sessions()[plan.source as usize].range().0;
    let links = &shared.linked.keys;
    // Reused for every statement: the text with replayed keys, and a producer's rows.
    let mut rewritten = String::new();
    let mut returned = Returned::default();
    let mut i = 0usize;
    while i < statements.len() {
        let st = &statements[i];
        if let Some(d) = due(plan.shift_us + st.start_offset_us, speed) {
            if !sleep_until(base + d, &shared.stop, &stop).await {
                run.end_stopped(i).await;
                break;
            }
        } else if shared.stop.is_stopped() {
            run.end_stopped(i).await;
            break;
        }
        let fp_idx = workload.fingerprint_index(st.text);
        let fp = &workload.fingerprints()[fp_idx as usize];
        let effect = workload.txn_effect(st.text);

        // Before read-only: a server-wide statement that writes nothing (reading a server file)
        // must not slip through a read-only replay, and its reason is the more telling one.
        if shared.opts.skip_server_wide && workload.server_wide(st.text) {
            run.skip(i, SkipReason::ServerWide).await;
            i += 1;
            continue;
        }
        if shared.opts.read_only && fp.writes {
            run.skip(i, SkipReason::ReadOnly).await;
            i += 1;
            continue;
        }
        match txn.decide(effect) {
            Decision::Execute => {}
            Decision::Skip | Decision::SkipAndEndBlock => {
                run.skip(i, SkipReason::TransactionAborted).await;
                i += 1;
                continue;
            }
        }

        // One clock reading for the send and one for the answer (in `execute`): each statement's
        // own bookkeeping is derived from those two.
        let sent = Instant::now();
        let sent_at_us = || (sent - shared.start).as_micros() as u64;
        if run.report.actual_start_us.is_none() {
            run.report.actual_start_us = Some(sent_at_us());
        }
        let g = first + i as u32;
        let text = workload.text(st.text);
        let (sql, keep_rows) = match &shared.keys {
            Some(keys) => (
                if keys.rewrite_into(links, g, plan.copy, text, &mut rewritten) {
                    rewritten.as_str()
                } else {
                    text
                },
                !links.produced_by(g).is_empty(),
            ),
            None => (text, false),
        };
        if let Some(next) = statements.get(i + 1) {
            workload.prefetch_next(text, next.text);
        }
        let rows_wanted = keep_rows.then(|| {
            returned.clear();
            &mut returned
        });
        let outcome = execute(&mut conn, &shared.tls, sent, sql, &mut watch, rows_wanted).await;
        match outcome {
            ExecOutcome::Ok {
                latency,
                rows,
                server_us,
            } => {
                if let (Some(keys), true) = (&shared.keys, keep_rows) {
                    keys.register(links, g, plan.copy, &returned);
                }
                let us = micros(latency);
                run.tally.ok(fp_idx, us, rows, server_us);
                run.count_executed(false, sent);
                if run.recording() {
                    run.record(i, "ok", None, Some((sent_at_us(), us, rows)), None)
                        .await;
                }
                txn.succeeded(effect);
                if shared.server_slots.is_some() && sets_client_messages(sql) {
                    // The workload turned the server's duration lines off for this session
                    // (drivers do: `SET client_min_messages TO warning`); our own SET turns them
                    // back on, so that its later statements keep their server time.
                    let restored = execute(
                        &mut conn,
                        &shared.tls,
                        Instant::now(),
                        RESTORE_CLIENT_MESSAGES,
                        &mut watch,
                        None,
                    )
                    .await;
                    if run.ended_by(restored, i + 1).await {
                        break;
                    }
                }
            }
            ExecOutcome::Failed {
                latency,
                sqlstate,
                message,
                failed_block,
            } => {
                let us = micros(latency);
                let at = instance(run.plan.source, i as u32);
                run.tally.error(fp_idx, &sqlstate, &message, at);
                run.count_executed(true, sent);
                if run.recording() {
                    run.record(
                        i,
                        "error",
                        None,
                        Some((sent_at_us(), us, 0)),
                        Some((&sqlstate, &message)),
                    )
                    .await;
                }
                let upcoming = statements[i + 1..]
                    .iter()
                    .map(|s| workload.txn_effect(s.text));
                txn.server_says(failed_block);
                if txn.failed(effect, upcoming) {
                    // Our own ROLLBACK: not a workload statement, so not recorded. Unless it is
                    // answered, the session cannot go on: an answer still due would be read as
                    // the next statement's.
                    let rolled_back = execute(
                        &mut conn,
                        &shared.tls,
                        Instant::now(),
                        "ROLLBACK",
                        &mut watch,
                        None,
                    )
                    .await;
                    if run.ended_by(rolled_back, i + 1).await {
                        break;
                    }
                }
            }
            unusable => {
                run.ended_by(unusable, i).await;
                break;
            }
        }
        i += 1;
    }
    conn.close();
    shared
        .counters
        .sessions_active
        .fetch_sub(1, Ordering::Relaxed);
    finish(run)
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
    let (tls, config, policy) = (&shared.tls, &shared.pg_config, shared.opts.connect);
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
