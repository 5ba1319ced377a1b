use super::*;
use crate::wkl::{QueryKind, ResponseRow};
use crate::workload::{WorkloadBuilder, WorkloadInfo};

/// Sessions of (offset, sql); offsets are on one timeline.
fn workload(sessions: &[&[(u64, &str)]]) -> Workload {
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    for (i, s) in sessions.iter().enumerate() {
        b.begin_session(i as u64 + 1, "u".into(), "d".into());
        for (at, sql) in s.iter() {
            b.push_statement(sql, *at, 10, QueryKind::Other, None);
        }
    }
    b.finish()
}

fn used_values(w: &Workload, g: u32) -> Vec<String> {
    let text = w.text(w.all_statements()[g as usize].text);
    w.keys()
        .uses_in(g)
        .iter()
        .map(|u| text[u.start as usize..u.end as usize].to_string())
        .collect()
}

#[test]
fn infers_the_returned_id_from_the_statements_that_use_it() {
    let w = workload(&[
        &[
            (0, "SELECT * FROM products WHERE id = 42"),
            (10, "BEGIN"),
            (11, "INSERT INTO orders (customer_id, total) VALUES (7, 19.90) RETURNING id"),
            // product 43 and quantity 5 are new values too, but their columns say what they are.
            (12, "INSERT INTO order_items (product_id, order_id, quantity) VALUES (43, 120001, 5) RETURNING id"),
            (13, "UPDATE orders SET total = 25.00 WHERE id = 120001"),
            (14, "COMMIT"),
        ],
        &[
            (20, "SELECT status FROM orders WHERE id = 120001"),
            (30, "SELECT status FROM orders WHERE id = 120001"),
        ],
    ]);
    let k = w.keys();
    assert_eq!(k.stats.source, KeySource::Inferred);
    assert_eq!(k.stats.producers, 2);
    assert_eq!(k.keys.len(), 1, "{:?}", k.keys);
    assert_eq!(k.keys[0].captured, "120001");
    assert_eq!(k.keys[0].producer, 2);
    assert_eq!(k.keys[0].column, "id");
    // Every later use, in its own and another session; the producer's own text is not a use.
    assert_eq!(used_values(&w, 3), vec!["120001"]);
    assert_eq!(used_values(&w, 4), vec!["120001"]);
    assert_eq!(used_values(&w, 6), vec!["120001"]);
    assert_eq!(used_values(&w, 7), vec!["120001"]);
    assert!(used_values(&w, 2).is_empty());
    assert_eq!(k.stats.links, 4);
    assert_eq!(
        k.sequence_hints(),
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
fn a_value_seen_before_its_producer_is_linked_in_its_own_session_only() {
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    b.begin_session(1, "u".into(), "d".into());
    b.push_statement("SELECT * FROM t LIMIT 3", 0, 1, QueryKind::Select, None);
    b.push_statement(
        "INSERT INTO t (a) VALUES ('x') RETURNING id",
        5,
        1,
        QueryKind::Insert,
        None,
    );
    b.set_response_values(vec![ResponseRow {
        columns: vec![("id".into(), "3".into())],
    }]);
    b.push_statement(
        "UPDATE t SET a = 'y' WHERE id = 3",
        6,
        1,
        QueryKind::Update,
        None,
    );
    b.begin_session(2, "u".into(), "d".into());
    b.push_statement("SELECT * FROM u LIMIT 3", 9, 1, QueryKind::Select, None);
    let w = b.finish();
    let k = w.keys();
    assert_eq!(k.stats.source, KeySource::ResponseValues);
    assert_eq!(used_values(&w, 2), vec!["3"]);
    assert!(used_values(&w, 0).is_empty(), "before the producer");
    assert!(
        used_values(&w, 3).is_empty(),
        "another session, ambiguous value"
    );
    assert_eq!(k.stats.ambiguous, 1);
}

#[test]
fn recorded_values_keep_only_key_like_columns_and_every_row() {
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    b.begin_session(1, "u".into(), "d".into());
    b.push_statement(
        "INSERT INTO t (a) VALUES (1), (2) RETURNING id, a, note",
        0,
        1,
        QueryKind::Insert,
        None,
    );
    let row = |id: &str, a: &str| ResponseRow {
        columns: vec![
            ("id".into(), id.into()),
            ("a".into(), a.into()),
            ("note".into(), "hello".into()),
        ],
    };
    b.set_response_values(vec![row("8801", "1"), row("8802", "2")]);
    b.push_statement(
        "SELECT * FROM t WHERE id IN (8801, 8802) AND note <> '8801' AND code <> '8801x'",
        1,
        1,
        QueryKind::Select,
        None,
    );
    let w = b.finish();
    let k = w.keys();
    // ids and the small integers of column a; the text column is not a key.
    assert_eq!(k.keys.len(), 4);
    assert_eq!(k.keys[1].row, 0);
    assert_eq!(k.keys[2].captured, "8802");
    assert_eq!(k.keys[2].row, 1);
    // A quoted integer is that integer (drivers' parameters come back quoted); other text is not.
    assert_eq!(used_values(&w, 1), vec!["8801", "8802", "'8801'"]);
}

#[test]
fn uuid_keys_are_inferred_and_linked_as_strings() {
    let w = workload(&[&[
        (0, "INSERT INTO carts (owner) VALUES ('ann') RETURNING id"),
        (1, "INSERT INTO cart_items (cart_id, sku) VALUES ('6F9619FF-8B86-D011-B42D-00C04FC964FF', 'A-1')"),
        (2, "DELETE FROM cart_items WHERE cart_id = '6f9619ff-8b86-d011-b42d-00c04fc964ff'"),
    ]]);
    let k = w.keys();
    assert_eq!(k.keys.len(), 1);
    assert_eq!(k.keys[0].captured, "6f9619ff-8b86-d011-b42d-00c04fc964ff");
    assert_eq!(k.stats.links, 2);
    assert!(k.uses_in(1)[0].quoted);
}

#[test]
fn a_producer_whose_key_is_never_used_does_not_take_the_next_ones() {
    // The audit row's id is never used; the next order's id must go to the next order.
    let w = workload(&[&[
        (
            0,
            "INSERT INTO orders (customer_id) VALUES (1) RETURNING id",
        ),
        (
            1,
            "INSERT INTO audit_log (what) VALUES ('order') RETURNING id",
        ),
        (
            2,
            "INSERT INTO order_items (order_id, quantity) VALUES (500, 2)",
        ),
        (
            3,
            "INSERT INTO orders (customer_id) VALUES (1) RETURNING id",
        ),
        (
            4,
            "INSERT INTO order_items (order_id, quantity) VALUES (501, 2)",
        ),
    ]]);
    let k = w.keys();
    let by_producer: Vec<(u32, &str)> = k
        .keys
        .iter()
        .map(|k| (k.producer, k.captured.as_str()))
        .collect();
    assert_eq!(by_producer, vec![(0, "500"), (3, "501")]);
}

#[test]
fn workloads_without_producers_cost_nothing() {
    let w = workload(&[&[(0, "SELECT 1"), (1, "UPDATE t SET a = 2 WHERE id = 3")]]);
    assert!(w.keys().is_empty());
    assert_eq!(w.keys().stats, KeyStats::default());
}

#[test]
fn a_session_runs_in_order_even_when_log_times_say_otherwise() {
    // Log times have millisecond precision: the line's insert appears to start before the
    // order's insert it follows. It is still the order's id, used after the order was created.
    let w = workload(&[&[
        (
            1_000,
            "INSERT INTO orders (customer_id) VALUES (1) RETURNING id",
        ),
        (
            990,
            "INSERT INTO order_items (order_id, quantity) VALUES (500, 2)",
        ),
        (2_000, "UPDATE orders SET total = 1 WHERE id = 500"),
    ]]);
    assert_eq!(used_values(&w, 1), vec!["500"]);
    assert_eq!(used_values(&w, 2), vec!["500"]);
    assert_eq!(w.keys().stats.ambiguous, 0);
}

#[test]
fn values_read_back_by_update_returning_stay_in_their_session() {
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    b.begin_session(1, "u".into(), "d".into());
    b.push_statement(
        "UPDATE products SET stock = stock - 1 WHERE id = 3 RETURNING stock",
        0,
        1,
        QueryKind::Update,
        None,
    );
    b.set_response_values(vec![ResponseRow {
        columns: vec![("stock".into(), "497".into())],
    }]);
    b.push_statement(
        "INSERT INTO stock_log (product_id, stock) VALUES (3, 497)",
        1,
        1,
        QueryKind::Insert,
        None,
    );
    b.begin_session(2, "u".into(), "d".into());
    // Product 497 in another session is not that stock level.
    b.push_statement(
        "SELECT * FROM products WHERE id = 497",
        5,
        1,
        QueryKind::Select,
        None,
    );
    let w = b.finish();
    assert_eq!(used_values(&w, 1), vec!["497"]);
    assert!(used_values(&w, 2).is_empty());
}
