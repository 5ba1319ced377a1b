//! Replay engine against real PostgreSQL servers.

mod support;

use std::sync::Arc;
use std::time::Duration;

use pg_retest_core::linked::LinkedWorkload;
use pg_retest_core::replay::{
    replay, NotExecutedReason, Progress, ProgressSink, ReplayError, ReplayOptions, ReplayReport,
    RunStatus, SessionStatus,
};
use pg_retest_core::scale::{ClassFactors, ScaleOptions};
use pg_retest_core::wkl::QueryKind;
use pg_retest_core::workload::{WorkloadBuilder, WorkloadInfo};
use support::{fresh_database, replay_to_end, scalar, sql, Silence, SilencingProxy, TestServer};
use tokio_util::sync::CancellationToken;

fn info() -> WorkloadInfo {
    WorkloadInfo::default()
}

/// Sessions of (offset µs, sql).
fn workload(sessions: &[Vec<(u64, &str)>]) -> Arc<LinkedWorkload> {
    let mut b = WorkloadBuilder::new(info());
    for (i, s) in sessions.iter().enumerate() {
        b.begin_session(i as u64 + 1, "app".into(), "app".into());
        for (off, text) in s {
            b.push_statement(text, *off, 100, QueryKind::Other, None);
        }
    }
    Arc::new(LinkedWorkload::new(b.finish()))
}

fn opts(url: &str) -> ReplayOptions {
    ReplayOptions {
        conninfo: url.to_string(),
        speed: 0.0,
        ..Default::default()
    }
}

async fn run(w: Arc<LinkedWorkload>, o: ReplayOptions) -> ReplayReport {
    replay_to_end(w, o).await
}

fn assert_adds_up(r: &ReplayReport) {
    assert!(r.totals.adds_up(), "{:?}", r.totals);
    for s in &r.sessions {
        assert!(s.counts.adds_up(), "session {}: {:?}", s.id, s.counts);
    }
    let fp_captured: u64 = r.fingerprints.iter().map(|f| f.counts.captured).sum();
    assert_eq!(fp_captured, r.totals.captured);
    let sess_captured: u64 = r.sessions.iter().map(|s| s.counts.captured).sum();
    assert_eq!(sess_captured, r.totals.captured);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_statement_is_accounted_for_and_errors_keep_their_sqlstate() {
    let url = fresh_database("acct").await;
    sql(&url, "CREATE TABLE t (id int primary key, v text)").await;
    let w = workload(&[
        vec![
            (0, "INSERT INTO t VALUES (1, 'a')"),
            (1, "SELECT * FROM t"),
            (2, "SELECT * FROM missing_table"),
        ],
        vec![
            (0, "INSERT INTO t VALUES (2, 'b')"),
            (1, "SELECT * FROM missing_table WHERE x = 1"),
            (2, "SELECT 1"),
        ],
    ]);
    let r = run(w, opts(&url)).await;
    assert_eq!(r.status, RunStatus::Completed);
    assert_adds_up(&r);
    assert_eq!(
        (
            r.totals.captured,
            r.totals.executed,
            r.totals.ok,
            r.totals.errors
        ),
        (6, 6, 4, 2)
    );
    let missing: Vec<_> = r
        .fingerprints
        .iter()
        .filter(|f| f.normalized.contains("missing_table"))
        .collect();
    assert_eq!(
        missing.len(),
        2,
        "different shapes are different fingerprints"
    );
    for f in missing {
        assert_eq!(f.errors.len(), 1);
        assert_eq!(f.errors[0].sqlstate, "42P01");
        assert_eq!(
            f.latency.count, 0,
            "failures do not count as latency samples"
        );
    }
    let select_t = r
        .fingerprints
        .iter()
        .find(|f| f.normalized == "SELECT * FROM t")
        .unwrap();
    // Sessions run concurrently at speed 0: the other session's INSERT may or may not be first.
    assert!((1..=2).contains(&select_t.rows), "{}", select_t.rows);
    assert_eq!(scalar(&url, "SELECT count(*) FROM t").await, "2");
}

/// Turns on the server's duration line to the client in `url`'s database (what the gate does on
/// its replay databases).
async fn send_durations(url: &str) {
    let db = scalar(url, "SELECT current_database()").await;
    for setting in [
        "log_duration = on",
        "client_min_messages = log",
        "log_min_messages = fatal",
        "lc_messages = 'C'",
    ] {
        sql(url, &format!("ALTER DATABASE {db} SET {setting}")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_own_time_is_recorded_for_every_success_even_after_a_workload_set() {
    let url = fresh_database("servertime").await;
    send_durations(&url).await;
    let w = workload(&[vec![
        (0, "SELECT pg_sleep(0.005)"),
        (1, "SELECT 1"),
        (2, "SELECT * FROM missing_table"),
        (3, "SET client_min_messages TO warning"),
        (4, "SELECT pg_sleep(0.005)"),
        (5, "SELECT 2"),
    ]]);
    let r = run(
        Arc::clone(&w),
        ReplayOptions {
            server_time: true,
            ..opts(&url)
        },
    )
    .await;
    assert_adds_up(&r);
    let timed = r.server_time.expect("asked for");
    // Every success but the SET itself, whose duration line comes after it took effect; the
    // statements after it have theirs again (the engine set client_min_messages back).
    assert_eq!((timed.ok, timed.timed), (5, 4));
    let sleep = r
        .fingerprints
        .iter()
        .find(|f| f.normalized.contains("pg_sleep"))
        .unwrap();
    assert_eq!(sleep.server_samples.len(), 2);
    for (&server, &client) in sleep.server_samples.iter().zip(&sleep.samples) {
        // The server slept 5 ms; what the client waited includes that and the round trip.
        assert!(
            (5_000..=client).contains(&server),
            "{server} µs of {client} µs"
        );
    }
    let summary = sleep.server_time.expect("summarised");
    assert_eq!(summary.count, 2);
    let missing = r
        .fingerprints
        .iter()
        .find(|f| f.normalized.contains("missing_table"))
        .unwrap();
    assert!(missing.server_samples.is_empty());
    // The failure names its statement: session 0, statement 2.
    assert_eq!(missing.errors[0].instances, [(0, 2)]);

    // Not asked for: nothing recorded.
    let r = run(w, opts(&url)).await;
    assert!(r.server_time.is_none());
    assert!(r
        .fingerprints
        .iter()
        .all(|f| f.server_time.is_none() && f.server_samples.is_empty()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_statement_rolls_back_its_transaction_and_the_rest_is_skipped() {
    let url = fresh_database("txn").await;
    sql(&url, "CREATE TABLE t (id int primary key)").await;
    let w = workload(&[vec![
        (0, "INSERT INTO t VALUES (1)"),
        (1, "BEGIN"),
        (2, "INSERT INTO t VALUES (2)"),
        (3, "INSERT INTO t VALUES (1)"), // duplicate key
        (4, "INSERT INTO t VALUES (3)"),
        (5, "COMMIT"),
        (6, "INSERT INTO t VALUES (4)"),
    ]]);
    let r = run(w, opts(&url)).await;
    assert_adds_up(&r);
    assert_eq!(
        (r.totals.executed, r.totals.errors, r.totals.skipped),
        (5, 1, 2)
    );
    assert_eq!(
        r.totals.skipped_by_reason.get("transaction_aborted"),
        Some(&2)
    );
    assert_eq!(
        scalar(&url, "SELECT string_agg(id::text, ',' ORDER BY id) FROM t").await,
        "1,4"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_to_savepoint_recovers_as_the_application_did() {
    let url = fresh_database("savepoint").await;
    sql(&url, "CREATE TABLE t (id int primary key)").await;
    sql(&url, "INSERT INTO t VALUES (1)").await;
    let w = workload(&[vec![
        (0, "BEGIN"),
        (1, "INSERT INTO t VALUES (2)"),
        (2, "SAVEPOINT before_dup"),
        (3, "INSERT INTO t VALUES (1)"), // fails
        (4, "SELECT 'skipped while aborted'"),
        (5, "ROLLBACK TO SAVEPOINT before_dup"),
        (6, "INSERT INTO t VALUES (3)"),
        (7, "COMMIT"),
    ]]);
    let r = run(w, opts(&url)).await;
    assert_adds_up(&r);
    assert_eq!((r.totals.errors, r.totals.skipped, r.totals.ok), (1, 1, 6));
    assert_eq!(
        scalar(&url, "SELECT string_agg(id::text, ',' ORDER BY id) FROM t").await,
        "1,2,3"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_mode_runs_only_statements_that_cannot_write() {
    let url = fresh_database("readonly").await;
    sql(
        &url,
        "CREATE TABLE t (id serial primary key, v int); INSERT INTO t (v) VALUES (1), (2)",
    )
    .await;
    let w = workload(&[vec![
        (0, "SELECT v FROM t WHERE id = 1"),
        (1, "/* app=shop */ SELECT count(*) FROM t"),
        (
            2,
            "WITH x AS (INSERT INTO t (v) VALUES (9) RETURNING id) SELECT * FROM x",
        ),
        (3, "SELECT * FROM t WHERE id = 2 FOR UPDATE"),
        (4, "SELECT nextval('t_id_seq')"),
        (5, "UPDATE t SET v = 0"),
        (6, "BEGIN"),
        (7, "SELECT sum(v) FROM t"),
        (8, "COMMIT"),
    ]]);
    let mut o = opts(&url);
    o.read_only = true;
    let r = run(w, o).await;
    assert_adds_up(&r);
    assert_eq!(r.totals.skipped_by_reason.get("read_only"), Some(&4));
    assert_eq!((r.totals.ok, r.totals.errors), (5, 0));
    assert_eq!(
        scalar(&url, "SELECT count(*) || ':' || sum(v) FROM t").await,
        "2:3"
    );
    assert_eq!(scalar(&url, "SELECT last_value FROM t_id_seq").await, "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_over_the_timeout_fails_with_57014_and_the_session_goes_on() {
    let url = fresh_database("timeout").await;
    let w = workload(&[vec![(0, "SELECT pg_sleep(30)"), (1, "SELECT 42")]]);
    let mut o = opts(&url);
    // `SELECT 42` runs under the same timeout: a second, so that a backend a loaded machine
    // leaves waiting for the CPU still answers it in time.
    o.statement_timeout = Some(Duration::from_secs(1));
    let r = run(w, o).await;
    assert_adds_up(&r);
    assert_eq!((r.totals.ok, r.totals.errors), (1, 1));
    let slow = r
        .fingerprints
        .iter()
        .find(|f| f.normalized.contains("pg_sleep"))
        .unwrap();
    assert_eq!(slow.errors[0].sqlstate, "57014");
    assert!(
        r.wall_time_us < 20_000_000,
        "the timeout cut the 30 s sleep short"
    );
}

/// A statement the server never answers (a hung server, a dead network path) is given up
/// `statement_timeout` + 2 s + 2 s after it was sent, never sooner, and the session's rest is
/// counted as not executed. The silent statement comes after statements spread over more than
/// the guard's period (the timeout + 2 s), so the guard has fired idle and been moved on before
/// it matters. The timeout is a second, so that a loaded machine still answers the statements
/// before the silent one within it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_never_answered_is_given_up_after_the_timeout_and_two_graces() {
    let url = fresh_database("silent").await;
    let proxy = SilencingProxy::start(&url, "silence here").await;
    let w = workload(&[vec![
        (0, "SELECT 1"),
        (2_000_000, "SELECT 2"),
        (4_000_000, "SELECT 3 /* silence here */"),
        (4_000_001, "SELECT 4"),
    ]]);
    let mut o = opts(&proxy.url);
    o.speed = 1.0;
    o.statement_timeout = Some(Duration::from_secs(1));
    let r = run(w, o).await;
    assert_adds_up(&r);
    assert_eq!(r.status, RunStatus::Completed, "{:?}", r.message);
    assert_eq!(r.totals.ok, 2);
    assert_eq!(
        r.totals.not_executed_by_reason.get("unresponsive"),
        Some(&2)
    );
    let s = &r.sessions[0];
    assert_eq!(s.status, SessionStatus::ConnectionLost);
    assert!(
        s.message
            .as_deref()
            .unwrap()
            .contains("no answer 4000 ms after"),
        "{:?}",
        s.message
    );
    // Sent at 4 s, given up no sooner than 4 + 1 + 2 + 2 s (timers never fire early).
    assert!(
        r.wall_time_us >= 9_000_000,
        "given up too early: {} µs",
        r.wall_time_us
    );
    assert!(
        r.wall_time_us < 30_000_000,
        "given up too late: {} µs",
        r.wall_time_us
    );
}

/// A server that hangs entirely, cancel connections included: tokio-postgres's cancel request
/// waits for the answer to its SSLRequest (sslmode prefer, the default) without a limit, and it
/// used to hold the session, and so the run, past the statement's guard and past the deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wholly_hung_server_holds_no_session_past_its_guard_or_the_deadline() {
    let url = fresh_database("hung").await;
    let w = || {
        workload(&[vec![
            (0, "SELECT 1"),
            (1, "SELECT 2 /* hang here */"),
            (2, "SELECT 3"),
        ]])
    };
    // The statement's guard: the timeout, a grace, a cancel request and a grace.
    let proxy = SilencingProxy::start_with(&url, "hang here", Silence::Hung).await;
    let mut o = opts(&proxy.url);
    // Should it also cut `SELECT 1` short on a loaded machine, that changes nothing checked.
    o.statement_timeout = Some(Duration::from_millis(100));
    let r = run(w(), o).await;
    assert_adds_up(&r);
    assert_eq!(r.sessions[0].status, SessionStatus::ConnectionLost);
    assert_eq!(
        r.totals.not_executed_by_reason.get("unresponsive"),
        Some(&2)
    );
    assert!(
        r.wall_time_us < 30_000_000,
        "given up too late: {} µs",
        r.wall_time_us
    );
    // The deadline: the run stops, its cancel request hangs, the session still ends.
    let proxy = SilencingProxy::start_with(&url, "hang here", Silence::Hung).await;
    let mut o = opts(&proxy.url);
    // Seconds: `SELECT 1` must be answered before it, after a connect on a loaded machine.
    o.deadline = Some(Duration::from_secs(5));
    let r = run(w(), o).await;
    assert_adds_up(&r);
    assert_eq!((r.totals.ok, r.totals.not_executed), (1, 2));
    assert!(
        r.wall_time_us < 30_000_000,
        "stopped too late: {} µs",
        r.wall_time_us
    );
}

/// A server that still authenticates but answers no query: after a session's statement goes
/// unanswered, the liveness probe connects and its `SELECT 1` goes unanswered too. It used to
/// wait for ever, and the run with it; it gives up after 5 s and the server counts as gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_answers_no_query_is_judged_gone_by_a_bounded_probe() {
    let url = fresh_database("mute").await;
    // The marker is the probe's own query, which the session's statement also holds.
    let proxy = SilencingProxy::start(&url, "SELECT 1").await;
    let w = workload(&[vec![
        (0, "SELECT 2"),
        (1, "SELECT 1 AS mute"),
        (2, "SELECT 3"),
    ]]);
    let mut o = opts(&proxy.url);
    // Should it also cut `SELECT 2` short on a loaded machine, the session still goes on to the
    // unanswered statement.
    o.statement_timeout = Some(Duration::from_millis(100));
    let r = run(w, o).await;
    assert_eq!(r.status, RunStatus::ServerUnavailable, "{:?}", r.message);
    assert!(
        r.message
            .as_deref()
            .unwrap_or_default()
            .contains("did not answer SELECT 1 within 5 s"),
        "{:?}",
        r.message
    );
}

/// The engine's own ROLLBACK after a failure in a block, answered only after the statement's
/// guard: the session used to go on, and every later statement was given the answer still due
/// to the one before it (`SELECT 5` the ROLLBACK's, the series `SELECT 5`'s single row).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_rollback_ends_the_session_instead_of_shifting_answers() {
    let url = fresh_database("late_rollback").await;
    let proxy =
        SilencingProxy::start_with(&url, "ROLLBACK", Silence::Held(Duration::from_secs(30))).await;
    let w = workload(&[vec![
        (0, "BEGIN"),
        (1, "SELECT 1/0"),
        (2, "COMMIT"),
        (3, "SELECT 5 AS five"),
        (4, "SELECT generate_series(1, 3)"),
    ]]);
    let mut o = opts(&proxy.url);
    // `BEGIN` must succeed under it: a second, enough for a backend a loaded machine leaves
    // waiting for the CPU.
    o.statement_timeout = Some(Duration::from_secs(1));
    let r = run(w, o).await;
    assert_adds_up(&r);
    let s = &r.sessions[0];
    assert_eq!(s.status, SessionStatus::ConnectionLost, "{:?}", s.message);
    // BEGIN ran, the division failed; the rest, the block's COMMIT included, was never sent.
    assert_eq!((s.counts.ok, s.counts.errors, s.counts.skipped), (1, 1, 0));
    assert_eq!(
        r.totals.not_executed_by_reason.get("unresponsive"),
        Some(&3)
    );
}

/// A text of several statements that opens a block and fails inside it: its one effect (BEGIN)
/// does not say the block failed, the server's ReadyForQuery does. The engine rolls back and
/// skips to the block's end, where it used to run on into a cascade of 25P02.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_opened_and_failed_inside_one_text_is_rolled_back_and_skipped() {
    let url = fresh_database("multi_text_block").await;
    sql(&url, "CREATE TABLE t (id int primary key)").await;
    let w = workload(&[vec![
        (
            0,
            "BEGIN; INSERT INTO t VALUES (1); INSERT INTO t VALUES (1)",
        ),
        (1, "INSERT INTO t VALUES (2)"),
        (2, "SELECT count(*) FROM t"),
        (3, "COMMIT"),
        (4, "INSERT INTO t VALUES (3)"),
    ]]);
    let r = run(w, opts(&url)).await;
    assert_adds_up(&r);
    let errors: Vec<&str> = r
        .fingerprints
        .iter()
        .flat_map(|f| f.errors.iter().map(|e| e.sqlstate.as_str()))
        .collect();
    assert_eq!(errors, vec!["23505"]);
    assert_eq!((r.totals.ok, r.totals.skipped), (1, 3));
    assert_eq!(
        scalar(&url, "SELECT string_agg(id::text, ',') FROM t").await,
        "3"
    );
}

/// A NUL byte cannot go into a query message; the server would have refused the message with an
/// ERROR and carried on, and so does the session (it used to be ended as a lost connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_byte_in_a_text_fails_that_statement_only() {
    let url = fresh_database("nul_text").await;
    let w = workload(&[vec![
        (0, "SELECT 1"),
        (1, "SELECT 'a\u{0}b'"),
        (2, "SELECT 2"),
    ]]);
    let r = run(w, opts(&url)).await;
    assert_adds_up(&r);
    assert_eq!(r.sessions[0].status, SessionStatus::Completed);
    assert_eq!((r.totals.ok, r.totals.errors), (2, 1));
    let failed = r
        .fingerprints
        .iter()
        .find(|f| !f.errors.is_empty())
        .unwrap();
    assert_eq!(failed.errors[0].sqlstate, "08P01");
}

/// A session terminated while idle, over TCP and over the server's Unix-domain socket: the
/// server's FATAL (57P01) is its reason on both. Over the socket the next send fails at once
/// (EPIPE), and the unread FATAL used to be lost for "Broken pipe".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_terminated_while_idle_keeps_the_servers_reason_on_every_transport() {
    let server = TestServer::start(&[]);
    sql(&server.url(), "CREATE DATABASE idle_kill").await;
    let socket = format!(
        "host={} port={} user=postgres dbname=idle_kill",
        server.dir.display(),
        server.port
    );
    for conninfo in [support::with_dbname(&server.url(), "idle_kill"), socket] {
        let w = workload(&[
            vec![
                (0, "SELECT 1 AS victim"),
                // Seconds apart, so that a loaded machine still terminates the victim while
                // it is idle between them.
                (5_000_000, "SELECT 2"),
                (5_000_001, "SELECT 3"),
            ],
            vec![(
                1_000_000,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = current_database() AND query LIKE '%AS victim%' \
                 AND pid <> pg_backend_pid()",
            )],
        ]);
        let mut o = opts(&conninfo);
        o.speed = 1.0;
        let r = run(w, o).await;
        assert_adds_up(&r);
        let victim = &r.sessions[0];
        assert_eq!(victim.status, SessionStatus::ConnectionLost, "{conninfo}");
        assert_eq!(
            victim.sqlstate.as_deref(),
            Some("57P01"),
            "{conninfo}: {:?}",
            victim.message
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_ends_the_run_and_counts_what_was_left() {
    let url = fresh_database("deadline").await;
    let w = workload(&[
        vec![(0, "SELECT 1"), (60_000_000, "SELECT 2")],
        vec![(0, "SELECT pg_sleep(60)"), (1, "SELECT 3")],
    ]);
    let mut o = opts(&url);
    o.speed = 1.0;
    // Long enough for a loaded machine to connect and answer `SELECT 1` before it; the rest is
    // due at 60 s or sleeps for 60 s.
    o.deadline = Some(Duration::from_secs(5));
    let r = run(w, o).await;
    assert_eq!(r.status, RunStatus::DeadlineExceeded);
    assert!(r.message.as_deref().unwrap().contains("deadline"));
    assert_adds_up(&r);
    assert_eq!(r.totals.ok, 1);
    assert_eq!(r.totals.not_executed_by_reason.get("deadline"), Some(&3));
    assert!(r
        .sessions
        .iter()
        .all(|s| s.status == SessionStatus::Deadline));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_stops_in_flight_statements() {
    let url = fresh_database("cancel").await;
    let w = workload(&[vec![(0, "SELECT pg_sleep(60)"), (1, "SELECT 1")]]);
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        c2.cancel();
    });
    let r = tokio::time::timeout(Duration::from_secs(30), replay(w, opts(&url), None, cancel))
        .await
        .expect("cancel did not end the replay")
        .unwrap();
    assert_eq!(r.status, RunStatus::Cancelled);
    assert_adds_up(&r);
    assert_eq!(r.totals.not_executed_by_reason.get("cancelled"), Some(&2));
    assert_eq!(
        // This test's database only: the Rust and the TypeScript tests share the server.
        scalar(
            &url,
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = 'SELECT pg_sleep(60)' AND state = 'active'"
        )
        .await,
        "0"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_arrive_when_the_workload_says() {
    let url = fresh_database("arrival").await;
    // Seconds apart: a session's start is its first statement's send, after its connect, which
    // a loaded machine may take a second over; a replay that ignored the speed would still be
    // 2 s and 4 s late.
    let w = workload(&[
        vec![(0, "SELECT 1")],
        vec![(4_000_000, "SELECT 2")],
        vec![(8_000_000, "SELECT 3")],
    ]);
    let mut o = opts(&url);
    o.speed = 2.0;
    let r = run(w, o).await;
    assert_adds_up(&r);
    let starts: Vec<u64> = r
        .sessions
        .iter()
        .map(|s| s.actual_start_us.unwrap())
        .collect();
    let sched: Vec<u64> = r.sessions.iter().map(|s| s.scheduled_start_us).collect();
    assert_eq!(
        sched,
        vec![0, 2_000_000, 4_000_000],
        "speed 2 halves the offsets"
    );
    for (a, s) in starts.iter().zip(&sched) {
        assert!(*a >= *s, "never early: {a} < {s}");
        assert!(
            *a < *s + 1_500_000,
            "on time but for the connect: {a} vs {s}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_multiplies_sessions_and_per_class_zero_excludes_them() {
    let url = fresh_database("scale").await;
    sql(&url, "CREATE TABLE t (id int)").await;
    let w = workload(&[
        vec![(0, "SELECT 1"), (1, "SELECT 2")],
        vec![
            (0, "INSERT INTO t VALUES (1)"),
            (1, "INSERT INTO t VALUES (2)"),
        ],
    ]);
    let mut o = opts(&url);
    o.scale = ScaleOptions {
        scale: 3,
        stagger_ms: 10,
        per_class: ClassFactors::default(),
    };
    let r = run(Arc::clone(&w), o).await;
    assert_adds_up(&r);
    assert_eq!(r.sessions_planned, 6);
    assert_eq!(r.totals.captured, 12);
    let mut ids: Vec<u64> = r.sessions.iter().map(|s| s.id).collect();
    ids.dedup();
    assert_eq!(ids.len(), 6, "copies get their own ids");
    assert_eq!(scalar(&url, "SELECT count(*) FROM t").await, "6");

    let mut o = opts(&url);
    // The INSERT session is "bulk" (100% writes, no transactions): leave that class out.
    o.scale = ScaleOptions {
        scale: 2,
        stagger_ms: 0,
        per_class: ClassFactors {
            bulk: Some(0),
            ..Default::default()
        },
    };
    let r = run(w, o).await;
    assert_adds_up(&r);
    assert_eq!(
        (
            r.sessions_planned,
            r.sessions_excluded,
            r.statements_excluded
        ),
        (2, 1, 2)
    );
}

/// The message of a replay of one statement against `conninfo`, which must fail to start with a
/// connection error (after a short retry window).
async fn refused(conninfo: &str) -> String {
    let mut o = opts(conninfo);
    o.connect.window = Duration::from_millis(300);
    let err = replay(
        workload(&[vec![(0, "SELECT 1")]]),
        o,
        None,
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ReplayError::Connect { .. }), "{msg}");
    msg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_or_wrong_password_is_one_clear_error_without_secrets() {
    // Port 1 (tcpmux, long unused): nothing listens there, and no test server is given it (they
    // get ephemeral ports), whereas a port bound and let go could be taken again in between.
    let port = 1;
    let msg = refused(&format!("postgresql://app:s3cret-pw@127.0.0.1:{port}/db")).await;
    assert!(
        msg.contains(&format!("127.0.0.1:{port}/db as app")),
        "{msg}"
    );
    assert!(msg.contains("is the server running"), "{msg}");
    assert!(!msg.contains("s3cret"), "{msg}");
}

/// A socket directory where no server listens (none started, or it stopped and removed its
/// socket): retried like a refused TCP port, then one error saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_directory_without_a_server_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let msg = refused(&format!(
        "host={} port=5999 user=app dbname=db",
        dir.path().display()
    ))
    .await;
    assert!(
        msg.contains(&format!("{}:5999/db as app", dir.path().display())),
        "{msg}"
    );
    assert!(msg.contains("no server socket there"), "{msg}");
    assert!(!msg.contains("TLS"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_five_slots_and_twenty_uncapped_sessions_loses_nothing() {
    let server = TestServer::start(&[
        ("max_connections", "5"),
        ("superuser_reserved_connections", "0"),
    ]);
    let sessions: Vec<Vec<(u64, &str)>> = (0..20)
        .map(|_| {
            vec![
                (0, "SELECT pg_sleep(0.2)"),
                (1, "SELECT 1"),
                (2, "SELECT 2"),
            ]
        })
        .collect();
    // Generous retry window: every session gets in eventually.
    let r = run(workload(&sessions), opts(&server.url())).await;
    assert_adds_up(&r);
    assert_eq!(r.sessions.len(), 20);
    assert_eq!(
        r.totals.ok,
        60,
        "{:?}",
        r.sessions
            .iter()
            .map(|s| (&s.status, &s.message))
            .collect::<Vec<_>>()
    );
    assert!(
        r.sessions.iter().any(|s| s.connect_attempts > 1),
        "some sessions had to retry"
    );

    // Short window and long sessions: some are refused, and say so with the server's message.
    let sessions: Vec<Vec<(u64, &str)>> = (0..20)
        .map(|_| vec![(0, "SELECT pg_sleep(1.5)"), (1, "SELECT 1")])
        .collect();
    let mut o = opts(&server.url());
    o.connect.window = Duration::from_millis(200);
    let r = run(workload(&sessions), o).await;
    assert_adds_up(&r);
    assert_eq!(r.sessions.len(), 20);
    let refused: Vec<_> = r
        .sessions
        .iter()
        .filter(|s| s.status == SessionStatus::ConnectFailed)
        .collect();
    assert!(!refused.is_empty());
    for s in &refused {
        assert_eq!(s.sqlstate.as_deref(), Some("53300"));
        assert!(
            s.message.as_deref().unwrap().contains("too many clients"),
            "{:?}",
            s.message
        );
        assert_eq!(s.counts.not_executed, 2);
    }
    assert_eq!(
        r.totals
            .not_executed_by_reason
            .get(NotExecutedReason::ConnectFailed.as_str()),
        Some(&(2 * refused.len() as u64))
    );
    assert_eq!(r.sessions_failed, refused.len() as u64);
}

/// The statements a replay has executed so far, from its progress snapshots.
#[derive(Default)]
struct Executed(std::sync::atomic::AtomicU64);

impl ProgressSink for Executed {
    fn progress(&self, p: Progress) {
        self.0
            .store(p.executed, std::sync::atomic::Ordering::Relaxed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_dying_mid_replay_ends_the_run_with_an_error_and_counts() {
    let server = TestServer::start(&[]);
    let sessions: Vec<Vec<(u64, &str)>> = (0..4)
        .map(|_| {
            (0..100)
                .map(|k| (k * 100_000, "SELECT pg_sleep(0.05)"))
                .collect()
        })
        .collect();
    let mut o = opts(&server.url());
    o.speed = 1.0;
    let w = workload(&sessions);
    let executed = Arc::new(Executed::default());
    let sink: Arc<dyn ProgressSink> = executed.clone();
    let handle = tokio::spawn(replay(w, o, Some(sink), CancellationToken::new()));
    // The server dies once statements have run (a loaded machine may take a while to connect)
    // and long before the sessions' 10 s of them are through.
    tokio::time::timeout(Duration::from_secs(60), async {
        while executed.0.load(std::sync::atomic::Ordering::Relaxed) == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("no statement ran within 60 s");
    server.stop_immediately();
    let r = tokio::time::timeout(Duration::from_secs(60), handle)
        .await
        .expect("replay hung after the server died")
        .unwrap()
        .unwrap();
    assert_eq!(r.status, RunStatus::ServerUnavailable, "{:?}", r.message);
    assert!(r
        .message
        .as_deref()
        .unwrap()
        .contains("server became unavailable"));
    assert_adds_up(&r);
    assert_eq!(r.totals.captured, 400);
    assert!(r.totals.ok > 0 && r.totals.not_executed > 0);
    assert!(r
        .sessions
        .iter()
        .all(|s| s.status != SessionStatus::Completed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_results_file_has_a_line_per_statement() {
    let url = fresh_database("results").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.jsonl");
    let w = workload(&[
        vec![(0, "SELECT 1"), (1, "SELECT * FROM nope")],
        vec![(0, "SELECT 2")],
    ]);
    let mut o = opts(&url);
    o.results_path = Some(path.clone());
    let r = run(w, o).await;
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len() as u64, r.totals.captured + 2);
    assert_eq!(lines[0]["format"], "pg-retest-action/results");
    let errors: Vec<_> = lines.iter().filter(|l| l["outcome"] == "error").collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["sqlstate"], "42P01");
    assert_eq!(lines.last().unwrap()["summary"]["totals"]["captured"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_retest_results_can_be_written_for_pg_retest_compare() {
    let url = fresh_database("pgretest").await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.wkl");
    let w = workload(&[
        vec![(0, "SELECT 1"), (1, "SELECT * FROM nope")],
        vec![(0, "SELECT 2")],
    ]);
    let mut o = opts(&url);
    o.pg_retest_results_path = Some(out.clone());
    let r = run(w, o).await;
    assert_eq!(r.totals.captured, 3);
    let rows = pg_retest_core::wkl::read_pg_retest_results(&out).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].query_results.len(), 2);
    assert!(rows[0].query_results[0].success);
    assert_eq!(
        rows[0].query_results[1].error.as_deref(),
        Some("ERROR: relation \"nope\" does not exist")
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "temporary records file removed"
    );
    // And it is recognised as a results file, not a workload.
    let err = pg_retest_core::wkl::read_workload(&out)
        .unwrap_err()
        .to_string();
    assert!(err.contains("results"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_cap_limits_open_sessions_and_a_delayed_session_keeps_its_own_pace() {
    let url = fresh_database("cap").await;
    sql(&url, "CREATE TABLE seen (n int)").await;
    // Each session records how many client sessions are connected to this database right now.
    let probe = "INSERT INTO seen SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name = 'pg-retest-action'";
    let sessions: Vec<Vec<(u64, &str)>> = (0..6)
        .map(|_| {
            vec![
                (0, "SELECT pg_sleep(0.2)"),
                (1, probe),
                (1_500_000, "SELECT 1"),
            ]
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(&url);
    o.speed = 1.0;
    o.max_connections = Some(2);
    o.results_path = Some(dir.path().join("r.jsonl"));
    let r = run(workload(&sessions), o).await;
    assert_adds_up(&r);
    assert_eq!(r.totals.ok, 18);
    // At most one other session besides the probing one.
    assert_eq!(
        scalar(&url, "SELECT (max(n) <= 1)::text FROM seen").await,
        "true"
    );
    // A session that waited for a slot starts late but keeps its 1.5 s gap (no catch-up burst).
    let text = std::fs::read_to_string(dir.path().join("r.jsonl")).unwrap();
    let recs: Vec<serde_json::Value> = text
        .lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let last = r.sessions.iter().max_by_key(|s| s.actual_start_us).unwrap();
    assert!(
        last.actual_start_us.unwrap() >= 400_000,
        "waited for a slot: {:?}",
        last.actual_start_us
    );
    let starts: Vec<u64> = recs
        .iter()
        .filter(|v| v["session"] == last.id && v["start_us"].is_u64())
        .map(|v| v["start_us"].as_u64().unwrap())
        .collect();
    assert_eq!(starts.len(), 3);
    let gap = starts.iter().max().unwrap() - starts.iter().min().unwrap();
    // Captured 1.5 s apart. A session that had lost its own timeline would send the last
    // statement, long due after its wait for a slot, right after the 0.2 s sleep: a gap of
    // 0.2 s. The half second of margin is for CPU steal on a busy runner (it has shaved 30 ms).
    assert!(gap >= 1_000_000, "kept its own timeline: {starts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_killed_mid_session_is_reported_and_the_run_goes_on() {
    let url = fresh_database("killed").await;
    // The killer waits (up to 30 s) for the victim's statement to be running, then terminates
    // it: on a loaded machine either session may connect late. The victim sleeps for longer
    // than that, so it is still in its statement whenever it is found.
    let kill = "DO $$ BEGIN
        WHILE clock_timestamp() < statement_timestamp() + interval '30 s' LOOP
            PERFORM pg_stat_clear_snapshot();
            PERFORM pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND state = 'active'
                AND query LIKE '%victim%' AND pid <> pg_backend_pid();
            IF FOUND THEN RETURN; END IF;
            PERFORM pg_sleep(0.05);
        END LOOP;
        RAISE 'no victim within 30 s';
    END $$";
    let w = workload(&[
        vec![
            (0, "SELECT pg_sleep(60) /* victim */"),
            (1, "SELECT 1"),
            (2, "SELECT 2"),
        ],
        vec![(300_000, kill), (400_000, "SELECT 3")],
    ]);
    let mut o = opts(&url);
    o.speed = 1.0;
    let r = run(w, o).await;
    assert_adds_up(&r);
    assert_eq!(
        r.status,
        RunStatus::Completed,
        "the server is alive: {:?}",
        r.message
    );
    let victim = r
        .sessions
        .iter()
        .find(|s| s.status == SessionStatus::ConnectionLost)
        .expect("victim session");
    assert_eq!(victim.counts.not_executed, 3);
    assert_eq!(victim.sqlstate.as_deref(), Some("57P01"));
    assert!(
        victim
            .message
            .as_deref()
            .unwrap()
            .contains("terminating connection"),
        "{:?}",
        victim.message
    );
    assert_eq!(
        r.totals.not_executed_by_reason.get("connection_lost"),
        Some(&3)
    );
    assert_eq!(r.totals.ok, 2);
}
