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
    KeyLinks::build(w)
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
    let k = &KeyLinks::build(&w);
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
    let k = &KeyLinks::build(&w);
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
        "SELECT * FROM t WHERE id IN (8801, 8802) AND parent_id = '8801' AND code <> '8801x' AND note <> '8801'",
        1,
        1,
        QueryKind::Select,
        None,
    );
    let w = b.finish();
    let k = &KeyLinks::build(&w);
    // ids and the small integers of column a; the text column is not a key.
    assert_eq!(k.keys.len(), 4);
    assert_eq!(k.keys[1].row, 0);
    assert_eq!(k.keys[2].captured, "8802");
    assert_eq!(k.keys[2].row, 1);
    // A quoted integer is that integer (drivers' parameters come back quoted); other text is not,
    // and an id compared with a column that is not an id (`note`) is not that id.
    assert_eq!(used_values(&w, 1), vec!["8801", "8802", "'8801'"]);
}

#[test]
fn uuid_keys_are_inferred_and_linked_as_strings() {
    let w = workload(&[&[
        (0, "INSERT INTO carts (owner) VALUES ('ann') RETURNING id"),
        (1, "INSERT INTO cart_items (cart_id, sku) VALUES ('6F9619FF-8B86-D011-B42D-00C04FC964FF', 'A-1')"),
        (2, "DELETE FROM cart_items WHERE cart_id = '6f9619ff-8b86-d011-b42d-00c04fc964ff'"),
    ]]);
    let k = &KeyLinks::build(&w);
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
    let k = &KeyLinks::build(&w);
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
    assert!(KeyLinks::build(&w).is_empty());
    assert_eq!(KeyLinks::build(&w).stats, KeyStats::default());
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
    assert_eq!(KeyLinks::build(&w).stats.ambiguous, 0);
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

/// Sessions of (offset, sql, recorded id).
fn recorded_workload(sessions: &[&[(u64, &str, Option<&str>)]]) -> Workload {
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    for (i, s) in sessions.iter().enumerate() {
        b.begin_session(i as u64 + 1, "u".into(), "d".into());
        for (at, sql, id) in s.iter() {
            b.push_statement(sql, *at, 10, QueryKind::Other, None);
            if let Some(id) = id {
                b.set_response_values(vec![ResponseRow {
                    columns: vec![("id".into(), id.to_string())],
                }]);
            }
        }
    }
    b.finish()
}

/// What the streaming passes link, as (producer, user) global indices, sessions in order.
fn streamed_links(w: &Workload) -> Vec<(u32, u32)> {
    use super::stream::{KeyScan, Rank, SessionOrder, Tag};
    use crate::spill::SpillDir;
    let parent = tempfile::tempdir().unwrap();
    let dir = SpillDir::new_in(parent.path()).unwrap();
    let all = w.all_statements();
    let walk = |f: &mut dyn FnMut(Option<SessionOrder>, u32, i64, u32)| {
        for (s, entry) in w.sessions().iter().enumerate() {
            let (start, len) = entry.range();
            let mut at = 0i64;
            f(
                Some(SessionOrder {
                    first_start: 0,
                    index: s as u32,
                }),
                0,
                0,
                0,
            );
            for g in start..start + len {
                at = at.max(all[g as usize].start_offset_us as i64);
                f(None, g - start, at, g);
            }
        }
    };
    let mut scan = KeyScan::new(&dir);
    walk(&mut |order, pos, at, g| match order {
        Some(o) => scan.begin_session(o),
        None => scan
            .statement(
                pos,
                at,
                w.text(all[g as usize].text),
                w.response_values(g),
                Tag::default(),
            )
            .unwrap(),
    });
    let mut inf = scan.finish().unwrap().inferrer().unwrap();
    walk(&mut |order, pos, at, g| match order {
        Some(o) => inf.begin_session(o),
        None => {
            inf.statement(
                pos,
                at,
                w.text(all[g as usize].text),
                w.response_values(g),
                Tag::default(),
            )
            .unwrap();
        }
    });
    let first: Vec<u32> = w.sessions().iter().map(|e| e.range().0).collect();
    let g = |r: Rank| first[r.session.index as usize] + r.pos;
    let mut links = Vec::new();
    inf.finish(|l| links.push((g(l.producer), g(l.user))))
        .unwrap();
    links.sort_unstable();
    links
}

/// What [`KeyLinks::build`] links, as (producer, user) global indices.
fn whole_links(w: &Workload) -> Vec<(u32, u32)> {
    let k = &KeyLinks::build(w);
    let mut links = Vec::new();
    for g in 0..w.statement_count() as u32 {
        for u in k.uses_in(g) {
            links.push((k.keys[u.key as usize].producer, g));
        }
    }
    links.sort_unstable();
    links
}

#[test]
fn an_update_returning_does_not_hide_the_insert_that_generated_the_id() {
    let w = recorded_workload(&[
        &[
            (
                0,
                "INSERT INTO orders (customer_id) VALUES (7) RETURNING id",
                Some("120001"),
            ),
            (
                10,
                "UPDATE orders SET status = 'paid' WHERE id = 120001 RETURNING id",
                Some("120001"),
            ),
        ],
        &[(20, "SELECT status FROM orders WHERE id = 120001", None)],
    ]);
    assert_eq!(
        used_values(&w, 1),
        vec!["120001"],
        "its own session: linked"
    );
    assert_eq!(
        used_values(&w, 2),
        vec!["120001"],
        "another session uses the order the INSERT created"
    );
    // To the INSERT, not to the read-back.
    assert_eq!(whole_links(&w), vec![(0, 1), (0, 2)]);
    assert_eq!(streamed_links(&w), whole_links(&w));
}

#[test]
fn a_back_office_update_returning_does_not_unlink_the_producers_own_session() {
    let w = recorded_workload(&[
        &[
            (
                0,
                "INSERT INTO orders (customer_id) VALUES (7) RETURNING id",
                Some("120001"),
            ),
            (
                30,
                "UPDATE orders SET total = 25.00 WHERE id = 120001",
                None,
            ),
        ],
        &[(
            10,
            "UPDATE orders SET status = 'shipped' WHERE id = 120001 RETURNING id",
            Some("120001"),
        )],
    ]);
    assert_eq!(used_values(&w, 2), vec!["120001"], "back office: linked");
    assert_eq!(
        used_values(&w, 1),
        vec!["120001"],
        "the producer's own session"
    );
    assert_eq!(streamed_links(&w), whole_links(&w));
}

#[test]
fn a_read_back_of_an_id_an_insert_generated_leaves_its_uses_to_the_insert() {
    // Session 3 creates product 497; session 1 reads it back (UPDATE … RETURNING id) and uses
    // it; session 2 uses it too. Every use is the INSERT's: the read-back is no key of its own.
    let w = recorded_workload(&[
        &[
            (
                10,
                "UPDATE products SET stock = stock - 1 WHERE sku = 'a' RETURNING id",
                Some("497"),
            ),
            (
                20,
                "INSERT INTO stock_log (product_id, delta) VALUES (497, 1)",
                None,
            ),
        ],
        &[(30, "SELECT * FROM products WHERE id = 497", None)],
        &[(
            0,
            "INSERT INTO products (sku) VALUES ('a') RETURNING id",
            Some("497"),
        )],
    ]);
    assert_eq!(whole_links(&w), vec![(3, 1), (3, 2)]);
    assert_eq!(streamed_links(&w), whole_links(&w));
}

#[test]
fn an_exponent_is_not_an_integer_literal() {
    let sql = "UPDATE products SET weight = 2.5e-5, ratio = 1E+3 WHERE category_id = 5";
    let v: Vec<String> = crate::sql::lex::literals(sql)
        .iter()
        .map(|l| l.value.to_string())
        .collect();
    assert_eq!(v, vec!["5"]);
}

#[test]
fn a_key_is_not_linked_inside_an_exponent() {
    let w = recorded_workload(&[&[
        (
            0,
            "INSERT INTO categories (name) VALUES ('x') RETURNING id",
            Some("5"),
        ),
        (
            10,
            "UPDATE products SET weight = 2.5e-5 WHERE category_id = 5",
            None,
        ),
    ]]);
    let text = w.text(w.all_statements()[1].text);
    let at: Vec<usize> = KeyLinks::build(&w)
        .uses_in(1)
        .iter()
        .map(|u| u.start as usize)
        .collect();
    assert_eq!(
        at,
        vec![text.rfind('5').unwrap()],
        "only category_id, not the exponent"
    );
}

#[test]
fn a_string_with_a_backslash_quote_under_standard_conforming_strings_off() {
    // Valid (and sent) only with standard_conforming_strings off: the string is
    // `customer's ref 120001, call back`.
    let w = workload(&[&[
        (0, "SET standard_conforming_strings = off"),
        (1, "INSERT INTO orders (customer_id) VALUES (7) RETURNING id"),
        (2, "INSERT INTO order_items (order_id, product_id, quantity) VALUES (120001, 43, 1)"),
        (3, "INSERT INTO notes (order_id, body) VALUES (120001, 'customer\\'s ref 120001, call back')"),
    ]]);
    assert_eq!(KeyLinks::build(&w).keys.len(), 1);
    assert_eq!(
        KeyLinks::build(&w).uses_in(3).len(),
        1,
        "the second 120001 is inside the note's text: {:?}",
        KeyLinks::build(&w).uses_in(3)
    );
}

#[test]
fn a_key_value_reused_as_a_quantity_or_limit_is_not_rewritten() {
    let w = recorded_workload(&[
        &[
            (
                0,
                "INSERT INTO orders (customer_id) VALUES (7) RETURNING id",
                Some("3"),
            ),
            (
                10,
                "INSERT INTO order_items (order_id, product_id, quantity) VALUES (3, 17, 3)",
                None,
            ),
            (
                15,
                "UPDATE products SET stock = stock - 3 WHERE id = 17",
                None,
            ),
        ],
        &[(20, "SELECT * FROM products ORDER BY id LIMIT 3", None)],
    ]);
    assert_eq!(
        KeyLinks::build(&w).uses_in(1).len(),
        1,
        "order_id only, not the quantity"
    );
    assert!(used_values(&w, 2).is_empty(), "arithmetic");
    assert!(used_values(&w, 3).is_empty(), "a LIMIT in another session");
    assert_eq!(streamed_links(&w), whole_links(&w));
}

#[test]
fn a_limit_is_not_inferred_as_a_key() {
    let w = workload(&[
        &[
            (
                0,
                "INSERT INTO audit_log (message) VALUES ('login') RETURNING id",
            ),
            (
                10,
                "SELECT * FROM orders ORDER BY created_at DESC LIMIT 250",
            ),
        ],
        &[(20, "SELECT * FROM products ORDER BY id LIMIT 250")],
    ]);
    assert!(
        KeyLinks::build(&w).keys.is_empty(),
        "{:?}",
        KeyLinks::build(&w).keys
    );
    assert!(used_values(&w, 2).is_empty());
}

#[test]
fn offsets_arithmetic_and_function_arguments_are_not_inferred_as_keys() {
    for later in [
        "SELECT * FROM orders ORDER BY id OFFSET 250",
        "UPDATE products SET stock = stock - 250 WHERE sku = 'a'",
        "SELECT round(total, 250) FROM orders",
    ] {
        let w = workload(&[&[
            (
                0,
                "INSERT INTO audit_log (message) VALUES ('login') RETURNING id",
            ),
            (10, later),
        ]]);
        assert!(
            KeyLinks::build(&w).keys.is_empty(),
            "{later}: {:?}",
            KeyLinks::build(&w).keys
        );
    }
    // With no column known, a value is still taken.
    let w = workload(&[&[
        (
            0,
            "INSERT INTO audit_log (message) VALUES ('login') RETURNING id",
        ),
        (10, "SELECT 250"),
    ]]);
    assert_eq!(KeyLinks::build(&w).keys.len(), 1);
}

#[test]
fn adjacent_string_constants_are_one_value() {
    // PostgreSQL joins string constants separated by a newline: the value is 'ref 120001'.
    let w = recorded_workload(&[&[
        (
            0,
            "INSERT INTO orders (customer_id) VALUES (7) RETURNING id",
            Some("120001"),
        ),
        (
            10,
            "UPDATE orders SET note = 'ref '\n'120001' WHERE id = 120001",
            None,
        ),
    ]]);
    assert_eq!(
        KeyLinks::build(&w).uses_in(1).len(),
        1,
        "{:?}",
        KeyLinks::build(&w).uses_in(1)
    );
}

#[test]
fn a_negative_value_is_not_inferred_or_linked() {
    // `-1` is the constant -1: its `1` is not the key a sequence handed out.
    let w = workload(&[&[
        (0, "SELECT nextval('refunds_id_seq')"),
        (10, "INSERT INTO refunds (id, amount) VALUES (-1, 9.90)"),
    ]]);
    assert!(
        KeyLinks::build(&w).keys.is_empty(),
        "{:?}",
        KeyLinks::build(&w).keys
    );
    let w = recorded_workload(&[&[
        (
            0,
            "INSERT INTO orders (customer_id) VALUES (7) RETURNING id",
            Some("1"),
        ),
        (10, "UPDATE orders SET total = -1 WHERE id = 1", None),
    ]]);
    assert_eq!(used_values(&w, 1), vec!["1"]);
    let text = w.text(w.all_statements()[1].text);
    assert_eq!(
        KeyLinks::build(&w).uses_in(1)[0].start as usize,
        text.rfind('1').unwrap()
    );
}
