//! Generated keys at replay, against a real server: a shop's checkout where every order's id comes
//! from `INSERT … RETURNING id` and is then used as a literal, by its own session and by another,
//! replayed on a database whose sequences stand elsewhere than at capture time.

mod support;

use std::sync::Arc;

use pg_retest_core::keys::{KeyOrigin, KeySource, SequenceHint};
use pg_retest_core::linked::LinkedWorkload;
use pg_retest_core::replay::{ReplayOptions, ReplayReport};
use pg_retest_core::wkl::{
    self, Metadata, Query, QueryKind, ResponseRow, SequenceState, Session, WorkloadProfile,
};
use pg_retest_core::workload::{Workload, WorkloadBuilder, WorkloadInfo};
use support::{fresh_database, replay_to_end, scalar, sql};

const SESSIONS: u64 = 6;
const ORDERS_PER_SESSION: u64 = 5;
/// The first id the capture's orders got (the production sequence stood at 100).
const FIRST_ID: u64 = 101;
/// How long after the checkout sessions' last statement the back-office session uses their ids.
const BACK_OFFICE_SLACK_US: u64 = 2_000_000;

const SCHEMA: &str = "
    CREATE TABLE products (id int PRIMARY KEY, stock int NOT NULL);
    INSERT INTO products SELECT g, 1000 FROM generate_series(1, 10) g;
    CREATE TABLE orders (id bigserial PRIMARY KEY, customer int NOT NULL, total numeric NOT NULL DEFAULT 0);
    CREATE TABLE order_items (
        id bigserial PRIMARY KEY,
        order_id bigint NOT NULL REFERENCES orders (id),
        product_id int NOT NULL REFERENCES products (id),
        quantity int NOT NULL);
    INSERT INTO orders (customer) SELECT g FROM generate_series(1, 100) g;
";

/// Six checkout sessions interleaved on one timeline (so the capture's ids alternate between
/// sessions), and a back-office session that later reads two of their orders.
/// With `recorded`, each RETURNING carries its captured row as a pg-retest proxy writes it.
///
/// The back-office statements are the only uses of a key outside its producer's session (each
/// checkout session uses only its own orders, one statement after another). The replay never
/// waits for a key another session has yet to return (`KeyState::rewrite_into`): a use sent
/// before its producer's response goes out unresolved. So they come [`BACK_OFFICE_SLACK_US`]
/// after the last checkout statement, and at least that long after their producers (orders 104
/// at 6 ms and 118 at 34 ms): at speed 1 a checkout session would have to lag the timeline by
/// about 2 s, not tens of ms, for the counts below to change.
fn checkout_workload(recorded: bool) -> Arc<LinkedWorkload> {
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    let mut txn = 0u64;
    for s in 0..SESSIONS {
        b.begin_session(s + 1, "app".into(), "shop".into());
        for j in 0..ORDERS_PER_SESSION {
            let n = j * SESSIONS + s;
            let id = FIRST_ID + n;
            let t = n * 2_000;
            let product = 1 + n % 10;
            let qty = 1 + n % 3;
            txn += 1;
            b.push_statement("BEGIN", t, 10, QueryKind::Begin, Some(txn));
            b.push_statement(
                &format!("INSERT INTO orders (customer, total) VALUES ({s}, 0) RETURNING id"),
                t + 100,
                10,
                QueryKind::Insert,
                Some(txn),
            );
            if recorded {
                b.set_response_values(vec![ResponseRow {
                    columns: vec![("id".into(), id.to_string())],
                }]);
            }
            b.push_statement(
                &format!(
                    "INSERT INTO order_items (order_id, product_id, quantity) VALUES ({id}, {product}, {qty}) RETURNING id"
                ),
                t + 200,
                10,
                QueryKind::Insert,
                Some(txn),
            );
            if recorded {
                b.set_response_values(vec![ResponseRow {
                    columns: vec![("id".into(), (5_000 + n).to_string())],
                }]);
            }
            b.push_statement(
                &format!("UPDATE products SET stock = stock - {qty} WHERE id = {product}"),
                t + 300,
                10,
                QueryKind::Update,
                Some(txn),
            );
            b.push_statement(
                &format!("UPDATE orders SET total = total + 9.50 WHERE id = {id}"),
                t + 400,
                10,
                QueryKind::Update,
                Some(txn),
            );
            b.push_statement("COMMIT", t + 500, 10, QueryKind::Commit, Some(txn));
        }
    }
    b.begin_session(SESSIONS + 1, "backoffice".into(), "shop".into());
    // The checkout timeline ends before this (its last statement is at `last` − 1,500 µs).
    let last = SESSIONS * ORDERS_PER_SESSION * 2_000;
    for n in [3u64, 17] {
        b.push_statement(
            &format!(
                "UPDATE orders SET total = total + 1 WHERE id = {}",
                FIRST_ID + n
            ),
            last + BACK_OFFICE_SLACK_US + n,
            10,
            QueryKind::Update,
            None,
        );
    }
    Arc::new(LinkedWorkload::new(b.finish()))
}

fn captured() -> u64 {
    SESSIONS * ORDERS_PER_SESSION * 6 + 2
}

async fn run(url: &str, w: Arc<LinkedWorkload>, correlate: bool, align: bool) -> ReplayReport {
    let o = ReplayOptions {
        conninfo: url.to_string(),
        speed: 1.0,
        correlate_keys: correlate,
        align_sequences: align,
        ..Default::default()
    };
    replay_to_end(w, o).await
}

/// A database as the seed leaves it, with the orders sequence moved far from capture time.
async fn shop(prefix: &str) -> String {
    let url = fresh_database(prefix).await;
    sql(&url, SCHEMA).await;
    sql(&url, "SELECT setval('orders_id_seq', 5000)").await;
    url
}

fn errors_by_sqlstate(r: &ReplayReport, sqlstate: &str) -> u64 {
    r.fingerprints
        .iter()
        .flat_map(|f| f.errors.iter())
        .filter(|e| e.sqlstate == sqlstate)
        .map(|e| e.count)
        .sum()
}

#[test]
fn the_workload_links_every_use_of_a_returned_id() {
    let w = checkout_workload(false);
    let k = &w.keys;
    assert_eq!(k.stats.source, KeySource::Inferred);
    // Order inserts and item inserts return ids; only the orders' are ever used.
    assert_eq!(k.stats.producers, SESSIONS * ORDERS_PER_SESSION * 2);
    assert_eq!(k.stats.producers_with_values, SESSIONS * ORDERS_PER_SESSION);
    // Each order id: its item insert and its total update, and two back-office updates.
    assert_eq!(k.stats.links, SESSIONS * ORDERS_PER_SESSION * 2 + 2);
    let mut inferred: Vec<u64> = k.keys.iter().map(|k| k.captured.parse().unwrap()).collect();
    inferred.sort_unstable();
    let expected: Vec<u64> = (FIRST_ID..FIRST_ID + SESSIONS * ORDERS_PER_SESSION).collect();
    assert_eq!(inferred, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_correlation_the_ids_miss_and_transactions_are_skipped() {
    // The failure this module exists for: it must be visible, or the next tests prove nothing.
    let url = shop("keys_none").await;
    let r = run(&url, checkout_workload(false), false, false).await;
    assert!(errors_by_sqlstate(&r, "23503") > 0, "{:?}", r.totals);
    assert!(r.totals.skipped > 0);
    assert!(r.correlation.is_none() && r.sequences.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inferred_keys_carry_the_replayed_ids_to_every_use() {
    // Sequences left where they are: only correlation can make the ids meet.
    let url = shop("keys_inferred").await;
    let r = run(&url, checkout_workload(false), true, false).await;
    assert_eq!(r.totals.captured, captured());
    assert_eq!(
        r.totals.executed,
        captured(),
        "{:?}",
        r.fingerprints
            .iter()
            .flat_map(|f| f.errors.clone())
            .collect::<Vec<_>>()
    );
    assert_eq!(r.totals.errors, 0);
    let c = r.correlation.as_ref().expect("correlation report");
    assert_eq!(c.source, KeySource::Inferred);
    // Including the back-office session's two, which its 2 s lead over the producers makes
    // independent of how the sessions interleave (see `checkout_workload`).
    assert_eq!(c.substituted, SESSIONS * ORDERS_PER_SESSION * 2 + 2);
    assert_eq!(c.unresolved, 0);
    // The replayed orders are the sequence's, and each has its line and its total.
    let lines = scalar(
        &url,
        "SELECT count(*) FROM order_items i JOIN orders o ON o.id = i.order_id WHERE o.id > 5000",
    )
    .await;
    assert_eq!(lines, (SESSIONS * ORDERS_PER_SESSION).to_string());
    let bumped = scalar(
        &url,
        "SELECT count(*) FROM orders WHERE id > 5000 AND total = 10.50",
    )
    .await;
    assert_eq!(
        bumped, "2",
        "the back-office session's updates reached the replayed orders"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_response_values_are_used_like_pg_retest_proxy_captures() {
    let url = shop("keys_recorded").await;
    let r = run(&url, checkout_workload(true), true, true).await;
    assert_eq!(r.totals.executed, captured());
    assert_eq!(r.totals.errors, 0);
    let c = r.correlation.as_ref().unwrap();
    assert_eq!(c.source, KeySource::ResponseValues);
    assert_eq!(c.unresolved, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequences_are_set_to_capture_time_unless_the_rows_are_already_there() {
    let url = shop("keys_seq").await;
    let r = run(&url, checkout_workload(false), true, true).await;
    let seqs = r.sequences.as_ref().expect("sequence report");
    let orders = seqs
        .iter()
        .find(|s| s.sequence.contains("orders_id_seq"))
        .unwrap();
    assert_eq!(
        (orders.action, orders.value, orders.source),
        ("set", Some(FIRST_ID as i64), "inferred"),
        "{orders:?}"
    );
    assert_eq!(r.totals.errors, 0);
    // The replay's orders took the capture's ids.
    let min = scalar(&url, "SELECT min(id) FROM orders WHERE id > 100").await;
    assert_eq!(min, FIRST_ID.to_string());

    // A seed that already holds those ids: moving the sequence back would collide.
    let url = shop("keys_seq_kept").await;
    sql(
        &url,
        "INSERT INTO orders (id, customer) SELECT g, 0 FROM generate_series(101, 150) g",
    )
    .await;
    let r = run(&url, checkout_workload(false), true, true).await;
    let orders = r
        .sequences
        .as_ref()
        .unwrap()
        .iter()
        .find(|s| s.sequence.contains("orders_id_seq"))
        .unwrap();
    assert_eq!(orders.action, "kept");
    assert!(
        orders.reason.as_deref().unwrap().contains("up to 150"),
        "{orders:?}"
    );
    assert_eq!(r.totals.errors, 0, "correlation still links the ids");
}

/// The checkout workload as a pg-retest proxy writes it: array form on disk, every RETURNING row
/// in `response_values`, and the capture's `sequence_snapshot`.
fn proxy_capture_file(dir: &std::path::Path) -> std::path::PathBuf {
    let linked = checkout_workload(true);
    let w = &linked.workload;
    let mut sessions = Vec::new();
    for (s, entry) in w.sessions().iter().enumerate() {
        let (first, _) = entry.range();
        let queries = w
            .statements_of(s)
            .iter()
            .enumerate()
            .map(|(i, st)| Query {
                sql: w.text(st.text).to_string(),
                start_offset_us: st.start_offset_us,
                duration_us: st.duration_us,
                kind: st.captured_kind,
                transaction_id: (st.transaction_id > 0).then_some(st.transaction_id),
                response_values: w.response_values(first + i as u32).map(<[_]>::to_vec),
            })
            .collect();
        sessions.push(Session {
            id: entry.id,
            user: entry.user.clone(),
            database: entry.database.clone(),
            queries,
        });
    }
    let profile = WorkloadProfile {
        version: 2,
        captured_at: chrono::Utc::now(),
        source_host: "localhost:5460".into(),
        pg_version: "unknown".into(),
        capture_method: "proxy".into(),
        metadata: Metadata {
            total_queries: w.statement_count(),
            total_sessions: w.sessions().len() as u64,
            capture_duration_us: 0,
            sequence_snapshot: Some(vec![SequenceState {
                schema: "public".into(),
                name: "orders_id_seq".into(),
                last_value: Some(FIRST_ID as i64 - 1),
                increment_by: 1,
                start_value: 1,
                min_value: 1,
                max_value: i64::MAX,
                cycle: false,
                is_called: true,
            }]),
            pk_map: None,
        },
        sessions,
    };
    let path = dir.join("proxy.wkl");
    wkl::write_workload(&path, &profile).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pg_retest_proxy_file_replays_with_its_response_values_and_sequence_snapshot() {
    let dir = std::env::temp_dir().join(format!("pg-retest-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = proxy_capture_file(&dir);
    // Array form, six query fields: what pg-retest itself reads.
    let bytes = std::fs::read(&path).unwrap();
    let profile = wkl::decode_workload(&bytes).unwrap();
    assert!(profile.sessions[0].queries[1].response_values.is_some());
    let w = Arc::new(LinkedWorkload::new(Workload::load(&path).unwrap()));
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(w.keys.stats.source, KeySource::ResponseValues);

    let url = shop("keys_proxy").await;
    let r = run(&url, w, true, true).await;
    assert_eq!(r.totals.executed, captured());
    assert_eq!(r.totals.errors, 0);
    let seq = &r.sequences.as_ref().unwrap()[0];
    assert_eq!(
        (seq.action, seq.source, seq.value),
        ("set", "snapshot", Some(FIRST_ID as i64))
    );
    let min = scalar(&url, "SELECT min(id) FROM orders WHERE id > 100").await;
    assert_eq!(min, FIRST_ID.to_string());
}

// ------------------------------------------------------------------ sequence alignment: what it
// may take from the workload, and what it must not do to the database.

/// One session of (offset, sql, recorded id).
fn one_session(statements: &[(u64, &str, Option<&str>)]) -> Arc<LinkedWorkload> {
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    b.begin_session(1, "app".into(), "shop".into());
    for (at, text, id) in statements {
        b.push_statement(text, *at, 10, QueryKind::Insert, None);
        if let Some(id) = id {
            b.set_response_values(vec![ResponseRow {
                columns: vec![("id".into(), id.to_string())],
            }]);
        }
    }
    Arc::new(LinkedWorkload::new(b.finish()))
}

async fn run_fast(url: &str, w: Arc<LinkedWorkload>, align: bool) -> ReplayReport {
    replay_to_end(
        w,
        ReplayOptions {
            conninfo: url.to_string(),
            speed: 0.0,
            correlate_keys: true,
            align_sequences: align,
            ..Default::default()
        },
    )
    .await
}

fn all_errors(r: &ReplayReport) -> Vec<String> {
    r.fingerprints
        .iter()
        .flat_map(|f| f.errors.iter())
        .map(|e| format!("{} {}", e.sqlstate, e.message))
        .collect()
}

#[test]
fn sequence_hints_ignore_explicit_ids_and_upserts() {
    let w = one_session(&[
        (0, "INSERT INTO orders (customer_id) VALUES (7) RETURNING id", Some("120001")),
        // An explicit id, and an upsert that may have found its row: neither drew from the
        // sequence.
        (10, "INSERT INTO orders (id, customer_id) VALUES (5, 7) RETURNING id", Some("5")),
        (20, "INSERT INTO customers (email) VALUES ('a@b.c') ON CONFLICT (email) DO UPDATE SET email = excluded.email RETURNING id", Some("42")),
        // A literal of another column that happens to equal the key is no explicit id.
        (30, "INSERT INTO orders (customer_id) VALUES (120002) RETURNING id", Some("120002")),
    ]);
    assert_eq!(
        w.keys.sequence_hints(),
        vec![SequenceHint {
            origin: KeyOrigin::Column {
                table: "orders".into(),
                column: "id".into()
            },
            min_value: 120001
        }]
    );
}

#[test]
fn a_descending_sequences_hint_is_its_first_and_largest_key() {
    let w = one_session(&[
        (
            0,
            "INSERT INTO refunds (amount) VALUES (1) RETURNING id",
            Some("-1"),
        ),
        (
            10,
            "INSERT INTO refunds (amount) VALUES (2) RETURNING id",
            Some("-2"),
        ),
        (
            20,
            "INSERT INTO refunds (amount) VALUES (3) RETURNING id",
            Some("-3"),
        ),
    ]);
    assert_eq!(w.keys.sequence_hints()[0].min_value, -1);
    // Counting down from a positive start: the session's order tells.
    let w = one_session(&[
        (
            0,
            "INSERT INTO refunds (amount) VALUES (1) RETURNING id",
            Some("900"),
        ),
        (
            10,
            "INSERT INTO refunds (amount) VALUES (2) RETURNING id",
            Some("899"),
        ),
    ]);
    assert_eq!(w.keys.sequence_hints()[0].min_value, 900);
}

#[test]
fn a_text_of_several_row_returning_statements_produces_no_key() {
    // At replay both statements' rows are read into one table of rows: the key's row would be
    // the audit row's id.
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    b.begin_session(1, "app".into(), "shop".into());
    b.push_statement(
        "INSERT INTO audit (what) VALUES ('checkout') RETURNING id; INSERT INTO orders (customer) VALUES (1) RETURNING id",
        0, 10, QueryKind::Insert, None,
    );
    b.push_statement(
        "UPDATE orders SET total = 7 WHERE id = 101",
        1000,
        10,
        QueryKind::Update,
        None,
    );
    let w = LinkedWorkload::new(b.finish());
    assert!(w.keys.keys.is_empty(), "{:?}", w.keys.keys);
    assert!(!w.keys.is_producer(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_statement_text_never_gives_another_statements_id_to_a_use() {
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    b.begin_session(1, "app".into(), "shop".into());
    b.push_statement(
        "INSERT INTO audit (what) VALUES ('checkout') RETURNING id; INSERT INTO orders (customer) VALUES (1) RETURNING id",
        0, 10, QueryKind::Insert, None,
    );
    b.push_statement(
        "UPDATE orders SET total = 7 WHERE id = 101",
        1000,
        10,
        QueryKind::Update,
        None,
    );
    let w = Arc::new(LinkedWorkload::new(b.finish()));
    let url = fresh_database("keys_multi").await;
    // The audit row's id (11) is an existing order's.
    sql(&url, "CREATE TABLE audit (id bigserial PRIMARY KEY, what text);
               SELECT setval('audit_id_seq', 10);
               CREATE TABLE orders (id bigserial PRIMARY KEY, customer int NOT NULL, total int NOT NULL DEFAULT 0);
               INSERT INTO orders (customer) SELECT g FROM generate_series(1, 50) g;
               SELECT setval('orders_id_seq', 5000);").await;
    let r = run_fast(&url, w, false).await;
    assert!(all_errors(&r).is_empty(), "{:?}", all_errors(&r));
    let touched = scalar(
        &url,
        "SELECT count(*) FROM orders WHERE total = 7 AND id <> 5001",
    )
    .await;
    assert_eq!(touched, "0", "correlation: {:?}", r.correlation);
}

/// An INSERT … RETURNING id with an explicit id: its key is not a value the sequence handed out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_id_does_not_pull_the_sequence_back() {
    let w = one_session(&[
        (
            0,
            "INSERT INTO orders (customer) VALUES (1) RETURNING id",
            Some("101"),
        ),
        (
            10,
            "INSERT INTO orders (id, customer) VALUES (5, 2) RETURNING id",
            Some("5"),
        ),
    ]);
    let url = fresh_database("keys_explicit").await;
    sql(
        &url,
        "CREATE TABLE orders (id bigserial PRIMARY KEY, customer int NOT NULL)",
    )
    .await;
    let r = run_fast(&url, w, true).await;
    assert!(
        all_errors(&r).is_empty(),
        "{:?} {:?}",
        all_errors(&r),
        r.sequences
    );
    assert_eq!(
        scalar(
            &url,
            "SELECT string_agg(id::text, ',' ORDER BY id) FROM orders"
        )
        .await,
        "5,101"
    );
}

/// `INSERT INTO orders … RETURNING id` and `nextval('orders_id_seq')` draw from one sequence: it
/// is set once, to the smallest captured value, whatever name each gives it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_sequence_named_two_ways_is_set_once_to_the_smallest_value() {
    let w = one_session(&[
        (
            0,
            "INSERT INTO orders (customer) VALUES (1) RETURNING id",
            Some("101"),
        ),
        (10, "SELECT nextval('orders_id_seq') AS id", Some("102")),
    ]);
    let url = fresh_database("keys_seqnames").await;
    sql(
        &url,
        "CREATE TABLE orders (id bigserial PRIMARY KEY, customer int NOT NULL)",
    )
    .await;
    let r = run_fast(&url, w, true).await;
    assert!(all_errors(&r).is_empty(), "{:?}", all_errors(&r));
    let seqs = r.sequences.as_ref().unwrap();
    assert_eq!(seqs.len(), 1, "{seqs:?}");
    assert_eq!(
        scalar(&url, "SELECT min(id) FROM orders").await,
        "101",
        "{seqs:?}"
    );
}

/// A descending sequence hands out -1, -2, -3: its first value is the largest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_descending_sequence_is_aligned_to_its_first_value() {
    let w = one_session(&[
        (
            0,
            "INSERT INTO refunds (amount) VALUES (1) RETURNING id",
            Some("-1"),
        ),
        (
            10,
            "INSERT INTO refunds (amount) VALUES (2) RETURNING id",
            Some("-2"),
        ),
        (
            20,
            "INSERT INTO refunds (amount) VALUES (3) RETURNING id",
            Some("-3"),
        ),
        (30, "UPDATE refunds SET amount = 10 WHERE id = -1", None),
    ]);
    let url = fresh_database("keys_desc").await;
    sql(
        &url,
        "CREATE SEQUENCE refunds_id_seq INCREMENT -1 MAXVALUE -1 START -1;
         CREATE TABLE refunds (id bigint PRIMARY KEY DEFAULT nextval('refunds_id_seq'), amount numeric NOT NULL);
         ALTER SEQUENCE refunds_id_seq OWNED BY refunds.id;",
    )
    .await;
    let r = run_fast(&url, w, true).await;
    assert!(all_errors(&r).is_empty(), "{:?}", all_errors(&r));
    let ids = scalar(
        &url,
        "SELECT string_agg(id::text, ',' ORDER BY id DESC) FROM refunds",
    )
    .await;
    assert_eq!(ids, "-1,-2,-3", "sequences: {:?}", r.sequences);

    // Rows down to -2 already there: setting the sequence back to -1 would collide.
    let url = fresh_database("keys_desc_kept").await;
    sql(
        &url,
        "CREATE SEQUENCE refunds_id_seq INCREMENT -1 MAXVALUE -1 START -1;
         CREATE TABLE refunds (id bigint PRIMARY KEY DEFAULT nextval('refunds_id_seq'), amount numeric NOT NULL);
         ALTER SEQUENCE refunds_id_seq OWNED BY refunds.id;
         INSERT INTO refunds (amount) VALUES (0), (0);",
    )
    .await;
    let r = run_fast(&url, w_desc_again(), true).await;
    let seq = &r.sequences.as_ref().unwrap()[0];
    assert_eq!(seq.action, "kept", "{seq:?}");
    assert!(all_errors(&r).is_empty(), "{:?}", all_errors(&r));
}

fn w_desc_again() -> Arc<LinkedWorkload> {
    one_session(&[
        (
            0,
            "INSERT INTO refunds (amount) VALUES (1) RETURNING id",
            Some("-1"),
        ),
        (
            10,
            "INSERT INTO refunds (amount) VALUES (2) RETURNING id",
            Some("-2"),
        ),
    ])
}

/// A sequence used as a column default without OWNED BY (hand-written schemas): the column
/// whose default calls it is what the guard checks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unowned_sequence_is_not_set_back_under_its_columns_ids() {
    let w = one_session(&[
        (0, "SELECT nextval('order_seq') AS id", Some("101")),
        (
            10,
            "INSERT INTO orders (id, customer) VALUES (101, 1)",
            None,
        ),
    ]);
    let url = fresh_database("keys_unowned").await;
    sql(&url, "CREATE SEQUENCE order_seq;
               CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT nextval('order_seq'), customer int NOT NULL);
               INSERT INTO orders (customer) SELECT g FROM generate_series(1, 150) g;").await;
    let r = run_fast(&url, w, true).await;
    assert!(
        all_errors(&r).is_empty(),
        "{:?} {:?}",
        all_errors(&r),
        r.sequences
    );
    let seq = &r.sequences.as_ref().unwrap()[0];
    assert_eq!(seq.action, "kept", "{seq:?}");
    assert!(
        seq.reason.as_deref().unwrap().contains("up to 150"),
        "{seq:?}"
    );
}

/// A sequence no column uses: nothing to check its ids against, so it only moves forward.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequence_no_column_uses_is_never_moved_back() {
    let w = one_session(&[(0, "SELECT nextval('ticket_seq') AS id", Some("101"))]);
    let url = fresh_database("keys_nocolumn").await;
    sql(
        &url,
        "CREATE SEQUENCE ticket_seq; SELECT setval('ticket_seq', 500);",
    )
    .await;
    let r = run_fast(&url, w, true).await;
    let seq = &r.sequences.as_ref().unwrap()[0];
    assert_eq!(seq.action, "kept", "{seq:?}");
    assert_eq!(scalar(&url, "SELECT nextval('ticket_seq')").await, "502");

    // Forward is fine.
    let w = one_session(&[(0, "SELECT nextval('ticket_seq') AS id", Some("900"))]);
    let url = fresh_database("keys_nocolumn_fwd").await;
    sql(
        &url,
        "CREATE SEQUENCE ticket_seq; SELECT setval('ticket_seq', 500);",
    )
    .await;
    let r = run_fast(&url, w, true).await;
    let seq = &r.sequences.as_ref().unwrap()[0];
    assert_eq!((seq.action, seq.value), ("set", Some(900)), "{seq:?}");
}
