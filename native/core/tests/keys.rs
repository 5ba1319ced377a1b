//! Generated keys at replay, against a real server: a shop's checkout where every order's id comes
//! from `INSERT … RETURNING id` and is then used as a literal, by its own session and by another,
//! replayed on a database whose sequences stand elsewhere than at capture time.

mod support;

use std::sync::Arc;

use pg_retest_core::keys::KeySource;
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
fn checkout_workload(recorded: bool) -> Arc<Workload> {
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
    Arc::new(b.finish())
}

fn captured() -> u64 {
    SESSIONS * ORDERS_PER_SESSION * 6 + 2
}

async fn run(url: &str, w: Arc<Workload>, correlate: bool, align: bool) -> ReplayReport {
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
    let k = w.keys();
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
    let w = checkout_workload(true);
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
    let w = Arc::new(Workload::load(&path).unwrap());
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(w.keys().stats.source, KeySource::ResponseValues);

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
