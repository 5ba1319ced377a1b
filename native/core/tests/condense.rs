//! `condense` on a synthetic shop workload (no server needed): the budget holds, every hot
//! fingerprint keeps enough calls to be gated (a rare report too), transactions stay whole,
//! payments keep the checkouts that created their orders, cut sessions replay their settings
//! first, and a seed gives the same bytes every time.

use std::collections::HashMap;
use std::path::Path;

use chrono::DateTime;
use pg_retest_core::condense::{condense, CondenseOptions, CondenseSummary};
use pg_retest_core::seeded::SplitMix64;
use pg_retest_core::wkl::{
    read_workload, write_workload, Metadata, Query, QueryKind, ResponseRow, Session,
    WorkloadProfile,
};

const SECOND: u64 = 1_000_000;

fn query(sql: String, at: u64, kind: QueryKind, id: Option<u64>) -> Query {
    Query {
        sql,
        start_offset_us: at,
        duration_us: 800,
        kind,
        transaction_id: None,
        response_values: id.map(|id| {
            vec![ResponseRow {
                columns: vec![("id".into(), id.to_string())],
            }]
        }),
    }
}

/// 150 sessions over 10 minutes: each sets its search_path, then runs checkouts (an order
/// created with RETURNING id, its lines, in a transaction), reads, and payments of orders that
/// other sessions created earlier. A slow report runs 30 times, all in the last 20 seconds, and
/// an archiving job 30 times in the first 20.
fn shop() -> WorkloadProfile {
    let mut rng = SplitMix64::new(9);
    let mut next_order = 120_000u64;
    let mut created: Vec<u64> = Vec::new();
    // Sessions are generated in time slices so that payments can use earlier orders.
    let mut sessions: Vec<Session> = Vec::new();
    for s in 0..150u64 {
        let start = s * 4 * SECOND;
        let mut t = start;
        let mut q = Vec::new();
        let mut n = 0;
        let mark = |sql: &str, n: &mut u64| {
            *n += 1;
            format!("{sql} /* s{s} q{} */", *n - 1)
        };
        q.push(query(
            mark("SET search_path TO shop", &mut n),
            t,
            QueryKind::Other,
            None,
        ));
        for _ in 0..20 {
            t += 200_000 + rng.below(400_000);
            match rng.below(10) {
                0..=3 => {
                    next_order += 1;
                    let id = next_order;
                    q.push(query(mark("BEGIN", &mut n), t, QueryKind::Begin, None));
                    q.push(query(
                        mark(
                            &format!(
                                "INSERT INTO orders (customer_id) VALUES ({}) RETURNING id",
                                rng.below(900)
                            ),
                            &mut n,
                        ),
                        t + 1_000,
                        QueryKind::Insert,
                        Some(id),
                    ));
                    q.push(query(
                        mark(
                            &format!(
                                "INSERT INTO order_items (order_id, product_id) VALUES ({id}, {})",
                                rng.below(50)
                            ),
                            &mut n,
                        ),
                        t + 2_000,
                        QueryKind::Insert,
                        None,
                    ));
                    q.push(query(
                        mark("COMMIT", &mut n),
                        t + 3_000,
                        QueryKind::Commit,
                        None,
                    ));
                    created.push(id);
                }
                4 | 5 if created.len() > 40 => {
                    // An order created at least 40 checkouts ago, by another session.
                    let id = created[rng.below((created.len() - 40) as u64) as usize];
                    q.push(query(
                        mark(
                            &format!("UPDATE orders SET status = 'paid' WHERE id = {id}"),
                            &mut n,
                        ),
                        t,
                        QueryKind::Update,
                        None,
                    ));
                }
                _ => q.push(query(
                    mark(
                        &format!("SELECT * FROM products WHERE id = {}", rng.below(50)),
                        &mut n,
                    ),
                    t,
                    QueryKind::Select,
                    None,
                )),
            }
        }
        // Two slow jobs, each a tenth of the server time: one at the start, one at the end.
        let job = match s {
            0..5 => Some("SELECT archive_orders()"),
            145.. => Some("SELECT daily_report()"),
            _ => None,
        };
        if let Some(job) = job {
            for i in 0..6 {
                let mut report = query(
                    mark(job, &mut n),
                    t + (i + 1) * 500_000,
                    QueryKind::Select,
                    None,
                );
                report.duration_us = 50_000;
                q.push(report);
            }
        }
        sessions.push(Session {
            id: s + 1,
            user: "app".into(),
            database: "shop".into(),
            queries: q,
        });
    }
    let total = sessions.iter().map(|s| s.queries.len() as u64).sum();
    WorkloadProfile {
        version: 2,
        captured_at: DateTime::from_timestamp(1_795_000_000, 0).unwrap(),
        source_host: "test".into(),
        pg_version: "16".into(),
        capture_method: "csv_log".into(),
        metadata: Metadata {
            total_queries: total,
            total_sessions: sessions.len() as u64,
            capture_duration_us: 620 * SECOND,
            sequence_snapshot: None,
            pk_map: None,
        },
        sessions,
    }
}

fn run(dir: &Path, seed: u64, duration_s: u64) -> (CondenseSummary, WorkloadProfile, Vec<u8>) {
    let input = dir.join("shop.wkl");
    if !input.exists() {
        write_workload(&input, &shop()).unwrap();
    }
    let output = dir.join(format!("ci-{seed}-{duration_s}.wkl"));
    let summary = condense(
        &CondenseOptions {
            input,
            output: output.clone(),
            duration_us: Some(duration_s * SECOND),
            statements: None,
            min_share: 0.02,
            min_calls: 20,
            seed,
        },
        &|_| {},
    )
    .unwrap();
    let bytes = std::fs::read(&output).unwrap();
    (summary, read_workload(&output).unwrap(), bytes)
}

/// `(session, position)` from a statement's marker comment.
fn origin(sql: &str) -> (u64, u64) {
    let m = &sql[sql.find("/* s").unwrap() + 4..];
    let (s, rest) = m.split_once(" q").unwrap();
    (
        s.parse().unwrap(),
        rest.trim_end_matches(" */").parse().unwrap(),
    )
}

#[test]
fn condenses_to_the_budget_keeping_what_the_gate_needs() {
    let dir = tempfile::tempdir().unwrap();
    let original = shop();
    let (summary, w, bytes) = run(dir.path(), 1, 60);

    // The budget holds; the two jobs are gated too, although they ran only at the start and
    // at the very end.
    assert!(summary.fits, "{:?}", summary.warnings);
    let c = &summary.comparison;
    assert!(c.condensed.duration_us <= 60 * SECOND, "{:?}", c.condensed);
    assert!(c.condensed.statements < c.original.statements / 4);
    assert_eq!(c.dropped.hot_not_gated, 0, "{:?}", c.fingerprints);
    let report = c
        .fingerprints
        .iter()
        .find(|f| f.normalized.contains("daily_report"))
        .unwrap();
    assert!(report.hot && report.condensed_calls >= 20, "{report:?}");
    assert!(
        summary.windows.len() >= 2,
        "a window of its own for the report"
    );

    let by_origin: HashMap<(u64, u64), &Query> = original
        .sessions
        .iter()
        .flat_map(|s| s.queries.iter())
        .map(|q| (origin(&q.sql), q))
        .collect();
    let kept: HashMap<(u64, u64), u64> = w
        .sessions
        .iter()
        .flat_map(|s| s.queries.iter())
        .map(|q| (origin(&q.sql), q.start_offset_us))
        .collect();
    for s in &w.sessions {
        let o: Vec<(u64, u64)> = s.queries.iter().map(|q| origin(&q.sql)).collect();
        // One original session per condensed session, in order.
        assert!(
            o.windows(2).all(|p| p[0].0 == p[1].0 && p[0].1 < p[1].1),
            "{o:?}"
        );
        // Cut after its start, a session replays its setting first.
        assert!(s.queries[0].sql.starts_with("SET search_path"), "{o:?}");
        for (i, q) in s.queries.iter().enumerate() {
            // Transactions whole: BEGIN is followed by the original's next three statements.
            if q.sql.starts_with("BEGIN") {
                let want: Vec<(u64, u64)> = (0..4).map(|k| (o[i].0, o[i].1 + k)).collect();
                assert_eq!(&o[i..i + 4], &want[..]);
            }
            // A payment's order was created before it, in the condensed workload too.
            if let Some(id) = q
                .sql
                .strip_prefix("UPDATE orders SET status = 'paid' WHERE id = ")
            {
                let id: u64 = id.split(' ').next().unwrap().parse().unwrap();
                let creator = by_origin
                    .iter()
                    .find(|(_, c)| {
                        c.response_values
                            .as_ref()
                            .is_some_and(|r| r[0].columns[0].1 == id.to_string())
                    })
                    .map(|(k, _)| *k)
                    .unwrap();
                let created_at = kept
                    .get(&creator)
                    .unwrap_or_else(|| panic!("order {id} dropped"));
                assert!(*created_at < q.start_offset_us);
            }
        }
    }
    assert!(
        summary.pulled_in.transactions > 0,
        "payments pulled their checkouts in"
    );

    // The same seed, the same bytes.
    let again = dir.path().join("again");
    std::fs::create_dir(&again).unwrap();
    std::fs::copy(dir.path().join("shop.wkl"), again.join("shop.wkl")).unwrap();
    assert_eq!(run(&again, 1, 60).2, bytes);
}

#[test]
fn a_budget_larger_than_the_capture_keeps_it_all() {
    let dir = tempfile::tempdir().unwrap();
    let (summary, w, _) = run(dir.path(), 3, 3_600);
    assert_eq!(summary.comparison.dropped.statements, 0);
    assert_eq!(w.statement_count(), shop().statement_count());
    assert_eq!(summary.comparison.mix_distance, 0.0);
}

/// Windows are chosen in whole buckets (a sixteenth of the budget), and a round that overflows
/// reserves room for what the windows pull in. A reserve smaller than a bucket used to leave the
/// choice as it was, round after round, so some budgets were missed by a few milliseconds. The
/// data is a real capture (`tests/data/pgbench-checkouts.wkl.gz`: 8 pgbench clients of
/// checkouts with ids from RETURNING and 4 of payments of those orders, a connection per
/// transaction, captured from PostgreSQL 15's csvlog), on which 2.0 s was one of those budgets.
#[test]
fn every_budget_is_met_on_a_real_capture() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("checkouts.wkl");
    let packed = std::fs::File::open(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pgbench-checkouts.wkl.gz"),
    )
    .unwrap();
    std::io::copy(
        &mut flate2::read::GzDecoder::new(packed),
        &mut std::fs::File::create(&input).unwrap(),
    )
    .unwrap();
    let mut missed = Vec::new();
    // 0.8 s to 3.0 s in steps of 50 ms: budgets that fall anywhere between bucket edges.
    for budget in (800_000..=3 * SECOND).step_by(50_000) {
        let s = condense(
            &CondenseOptions {
                input: input.clone(),
                output: dir.path().join("ci.wkl"),
                duration_us: Some(budget),
                statements: None,
                min_share: 0.01,
                min_calls: 20,
                seed: 1,
            },
            &|_| {},
        )
        .unwrap();
        let length = s.comparison.condensed.duration_us;
        if !s.fits || length > budget {
            missed.push(format!("{budget} µs: {length} µs"));
        }
    }
    assert!(missed.is_empty(), "budgets not met: {missed:#?}");
}
