//! The two ways a session talks to the server — its own protocol loop on the socket (the default)
//! and a tokio-postgres client (the earlier path, `Driver::TokioPostgres`) — replay the same
//! workload to the same counts, rows, errors, skips, lost connections and keys.

mod support;

use std::sync::Arc;

use pg_retest_core::linked::LinkedWorkload;
use pg_retest_core::replay::{Driver, ReplayOptions, ReplayReport, RunStatus, SessionStatus};
use pg_retest_core::wkl::{QueryKind, ResponseRow};
use pg_retest_core::workload::{WorkloadBuilder, WorkloadInfo};
use support::{fresh_database, replay_to_end, scalar, sql};

const SCHEMA: &str = "
    CREATE TABLE orders (id bigserial PRIMARY KEY, note text NOT NULL);
    CREATE TABLE items (id bigserial PRIMARY KEY, order_id bigint NOT NULL REFERENCES orders (id), big text);
    CREATE TABLE uniq (n int PRIMARY KEY);
    CREATE TABLE counters (k int PRIMARY KEY, v int NOT NULL);
    INSERT INTO counters VALUES (1, 10), (2, 20), (3, 30);
    SELECT setval('orders_id_seq', 5000), setval('items_id_seq', 700);
";

fn statement(b: &mut WorkloadBuilder, t: &mut u64, text: &str, kind: QueryKind) {
    *t += 10;
    b.push_statement(text, *t, 5, kind, None);
}

fn returning(b: &mut WorkloadBuilder, column: &str, value: &str) {
    b.set_response_values(vec![ResponseRow {
        columns: vec![(column.into(), value.into())],
    }]);
}

/// Three independent sessions (each on its own rows, so the order between them changes nothing).
fn workload() -> Arc<LinkedWorkload> {
    use QueryKind::*;
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    let t = &mut 0u64;

    // Transactions, keys (a producer whose row is larger than the receive buffer), an aborted
    // block that is rolled back and skipped, a savepoint the workload recovers with.
    b.begin_session(1, "app".into(), "shop".into());
    statement(&mut b, t, "BEGIN", Begin);
    statement(
        &mut b,
        t,
        "INSERT INTO orders (note) VALUES ('first') RETURNING id",
        Insert,
    );
    returning(&mut b, "id", "101");
    statement(
        &mut b,
        t,
        "INSERT INTO items (order_id, big) VALUES (101, repeat('x', 20000)) RETURNING id, big",
        Insert,
    );
    returning(&mut b, "id", "9");
    statement(
        &mut b,
        t,
        "UPDATE orders SET note = 'second' WHERE id = 101",
        Update,
    );
    statement(
        &mut b,
        t,
        "UPDATE items SET big = 'small' WHERE id = 9",
        Update,
    );
    statement(&mut b, t, "COMMIT", Commit);
    statement(
        &mut b,
        t,
        "SELECT id, note FROM orders WHERE id = 101",
        Select,
    );
    statement(&mut b, t, "BEGIN", Begin);
    statement(
        &mut b,
        t,
        "INSERT INTO orders (note) VALUES ('lost')",
        Insert,
    );
    statement(&mut b, t, "SELECT 1 / 0", Select);
    statement(
        &mut b,
        t,
        "INSERT INTO orders (note) VALUES ('skipped')",
        Insert,
    );
    statement(&mut b, t, "COMMIT", Commit);
    statement(&mut b, t, "BEGIN", Begin);
    statement(&mut b, t, "SAVEPOINT s", Other);
    statement(&mut b, t, "INSERT INTO uniq VALUES (1)", Insert);
    statement(&mut b, t, "INSERT INTO uniq VALUES (1)", Insert);
    statement(&mut b, t, "INSERT INTO uniq VALUES (3)", Insert);
    statement(&mut b, t, "ROLLBACK TO SAVEPOINT s", Other);
    statement(&mut b, t, "INSERT INTO uniq VALUES (2)", Insert);
    statement(&mut b, t, "COMMIT", Commit);

    // Rows in many messages and in messages larger than the buffer, errors, notices, parameter
    // reports, several statements in one query, row counts of writes, a server-side timeout.
    b.begin_session(2, "app".into(), "shop".into());
    statement(
        &mut b,
        t,
        "SELECT g FROM generate_series(1, 5000) g",
        Select,
    );
    statement(
        &mut b,
        t,
        "SELECT repeat('y', 100000) FROM generate_series(1, 3)",
        Select,
    );
    statement(&mut b, t, "SELECT * FROM missing_table", Select);
    statement(&mut b, t, "DO $$ BEGIN RAISE NOTICE 'hello'; END $$", Other);
    statement(&mut b, t, "SET application_name = 'renamed'", Other);
    statement(&mut b, t, "SELECT 1; SELECT 2 UNION ALL SELECT 3", Select);
    statement(&mut b, t, "UPDATE counters SET v = v + 1", Update);
    statement(&mut b, t, "DELETE FROM counters WHERE v > 1000", Delete);
    // A second: the `RESET` after the sleep runs under it too, and must not be cut short on a
    // loaded machine.
    statement(&mut b, t, "SET statement_timeout = '1s'", Other);
    statement(&mut b, t, "SELECT pg_sleep(2)", Select);
    statement(&mut b, t, "RESET statement_timeout", Other);
    statement(&mut b, t, "SELECT 'still here'", Select);

    // A session whose connection the server ends.
    b.begin_session(3, "app".into(), "shop".into());
    statement(&mut b, t, "SELECT 42", Select);
    statement(
        &mut b,
        t,
        "SELECT pg_terminate_backend(pg_backend_pid())",
        Select,
    );
    statement(&mut b, t, "SELECT 43", Select);
    Arc::new(LinkedWorkload::new(b.finish()))
}

/// Everything a replay reports but its timings.
fn outcome(r: &ReplayReport) -> Vec<String> {
    let mut out = vec![
        format!("status {:?} {:?}", r.status, r.message),
        format!("totals {:?}", r.totals),
        format!("correlation {:?}", r.correlation),
    ];
    let mut fps: Vec<String> = r
        .fingerprints
        .iter()
        .map(|f| {
            let errors: Vec<_> = f
                .errors
                .iter()
                .map(|e| (&e.sqlstate, &e.message, e.count))
                .collect();
            format!(
                "fingerprint {} {:?} rows {} errors {:?} samples {}",
                f.normalized,
                f.counts,
                f.rows,
                errors,
                f.samples.len()
            )
        })
        .collect();
    fps.sort();
    out.extend(fps);
    out.extend(r.sessions.iter().map(|s| {
        format!(
            "session {} {:?} {:?} {:?} {:?}",
            s.id, s.status, s.sqlstate, s.message, s.counts
        )
    }));
    out
}

async fn replay_on(driver: Driver) -> (ReplayReport, String) {
    let url = fresh_database("drivers").await;
    let report = replay_at(driver, &url, url.clone()).await;
    (report, url)
}

/// Loads the schema through `url` and replays over `conninfo`, which names the same database.
async fn replay_at(driver: Driver, url: &str, conninfo: String) -> ReplayReport {
    sql(url, SCHEMA).await;
    let o = ReplayOptions {
        conninfo,
        speed: 0.0,
        driver,
        // The captured ids (101, 9) are not where the sequences stand: only correlation finds
        // the rows, on either path.
        align_sequences: false,
        ..Default::default()
    };
    replay_to_end(workload(), o).await
}

async fn state(url: &str) -> String {
    scalar(
        url,
        "SELECT concat_ws(' | ',
            (SELECT string_agg(id || ':' || note, ',' ORDER BY id) FROM orders),
            (SELECT string_agg(id || ':' || order_id || ':' || big, ',' ORDER BY id) FROM items),
            (SELECT string_agg(n::text, ',' ORDER BY n) FROM uniq),
            (SELECT string_agg(k || ':' || v, ',' ORDER BY k) FROM counters))",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_paths_replay_a_workload_to_the_same_report_and_data() {
    let (wire, wire_url) = replay_on(Driver::Wire).await;
    let (client, client_url) = replay_on(Driver::TokioPostgres).await;
    assert_eq!(outcome(&wire), outcome(&client));
    assert_eq!(state(&wire_url).await, state(&client_url).await);

    // And the shared answer is the right one.
    let r = &wire;
    assert_eq!(r.status, RunStatus::Completed, "{:?}", r.message);
    assert!(r.totals.adds_up());
    let rows = |normalized_prefix: &str| {
        r.fingerprints
            .iter()
            .find(|f| f.normalized.starts_with(normalized_prefix))
            .unwrap_or_else(|| panic!("no fingerprint {normalized_prefix}"))
            .rows
    };
    assert_eq!(rows("SELECT g FROM generate_series"), 5000);
    assert_eq!(rows("SELECT repeat"), 3);
    assert_eq!(
        rows("SELECT id, note FROM orders"),
        1,
        "found by its replayed id"
    );
    assert_eq!(
        rows("SELECT $1; SELECT"),
        3,
        "rows of every statement in the query"
    );
    assert_eq!(rows("UPDATE counters"), 3);
    let mut sqlstates: Vec<&str> = r
        .fingerprints
        .iter()
        .flat_map(|f| f.errors.iter().map(|e| e.sqlstate.as_str()))
        .collect();
    sqlstates.sort();
    assert_eq!(sqlstates, ["22012", "23505", "42P01", "57014"]);
    let skipped = r.totals.skipped_by_reason.get("transaction_aborted");
    assert_eq!(
        skipped,
        Some(&3),
        "INSERT and COMMIT of the aborted block, the INSERT after 23505"
    );
    let correlation = r.correlation.as_ref().expect("keys were correlated");
    assert_eq!((correlation.substituted, correlation.unresolved), (4, 0));
    let lost = &r.sessions[2];
    assert_eq!(lost.status, SessionStatus::ConnectionLost);
    assert_eq!(lost.sqlstate.as_deref(), Some("57P01"));
    assert_eq!((lost.counts.ok, lost.counts.not_executed), (1, 2));
    assert_eq!(
        state(&wire_url).await,
        "5001:second | 701:5001:small | 2 | 1:11,2:21,3:31"
    );
}

/// A socket directory as the host, with the default sslmode (`prefer`) and with `require`: libpq
/// ignores sslmode on a Unix-domain socket (the server offers no TLS there), and so do both paths.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_paths_replay_over_a_unix_socket_whatever_the_sslmode() {
    let (reference, _) = replay_on(Driver::Wire).await;
    let server = support::TestServer::start(&[]);
    let cases = [
        (Driver::Wire, ""),
        (Driver::TokioPostgres, ""),
        (Driver::Wire, " sslmode=require"),
        (Driver::TokioPostgres, " sslmode=require"),
    ];
    for (i, (driver, sslmode)) in cases.into_iter().enumerate() {
        let name = format!("over_socket_{i}");
        sql(&server.url(), &format!("CREATE DATABASE {name}")).await;
        let conninfo = format!(
            "host={} port={} user=postgres dbname={name}{sslmode}",
            server.dir.display(),
            server.port
        );
        let url = support::with_dbname(&server.url(), &name);
        let report = replay_at(driver, &url, conninfo).await;
        assert_eq!(
            outcome(&report),
            outcome(&reference),
            "{driver:?} over the socket{sslmode}"
        );
    }
}

/// A host list that mixes the server's socket directory with its TCP address, under
/// `sslmode=require`, against a server without TLS: libpq connects over the socket in the clear
/// (sslmode does not apply there) and so must the run. Its own connection (the preflight, which
/// also aligns sequences) used to go through tokio-postgres's `connect`, which applies one
/// sslmode to every host: it was refused TLS on both and the replay never started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_host_list_with_sslmode_require_replays_over_its_socket() {
    let (reference, _) = replay_on(Driver::Wire).await;
    let server = support::TestServer::start(&[]);
    let dir = server.dir.display().to_string();
    for (i, hosts) in [format!("{dir},127.0.0.1"), format!("127.0.0.1,{dir}")]
        .into_iter()
        .enumerate()
    {
        let name = format!("mixed_hosts_{i}");
        sql(&server.url(), &format!("CREATE DATABASE {name}")).await;
        let conninfo = format!(
            "host={hosts} port={port},{port} user=postgres dbname={name} sslmode=require",
            port = server.port
        );
        let url = support::with_dbname(&server.url(), &name);
        let report = replay_at(Driver::Wire, &url, conninfo).await;
        assert_eq!(outcome(&report), outcome(&reference), "hosts {hosts}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_fails_cleanly_for_lack_of_data_and_copy_out_is_counted() {
    let url = fresh_database("copy").await;
    sql(&url, "CREATE TABLE t (n int)").await;
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    b.begin_session(1, "app".into(), "db".into());
    b.push_statement("COPY t FROM STDIN", 0, 5, QueryKind::Other, None);
    b.push_statement(
        "COPY (SELECT generate_series(1, 10)) TO STDOUT",
        10,
        5,
        QueryKind::Other,
        None,
    );
    b.push_statement("SELECT 1", 20, 5, QueryKind::Select, None);
    // `prefer` against a server without TLS: the session asks, hears no, and goes on in the clear
    // (the stream lent to tokio-postgres passes on that one-byte answer). `read-write`: the
    // session asks the server, on its own loop, whether it takes writes.
    let separator = if url.contains('?') { '&' } else { '?' };
    let conninfo = format!("{url}{separator}target_session_attrs=read-write")
        .replace("sslmode=disable", "sslmode=prefer");
    let o = ReplayOptions {
        conninfo,
        speed: 0.0,
        ..Default::default()
    };
    let r = replay_to_end(Arc::new(LinkedWorkload::new(b.finish())), o).await;
    assert_eq!(r.status, RunStatus::Completed, "{:?}", r.message);
    assert_eq!((r.totals.ok, r.totals.errors), (2, 1));
    let copy_in = r
        .fingerprints
        .iter()
        .find(|f| f.normalized.contains("FROM STDIN"))
        .unwrap();
    assert_eq!(copy_in.errors[0].sqlstate, "57014");
    assert!(
        copy_in.errors[0]
            .message
            .contains("the workload has no data"),
        "{}",
        copy_in.errors[0].message
    );
    let copy_out = r
        .fingerprints
        .iter()
        .find(|f| f.normalized.contains("TO STDOUT"))
        .unwrap();
    assert_eq!(copy_out.rows, 10);
    assert_eq!(r.sessions[0].status, SessionStatus::Completed);
}
