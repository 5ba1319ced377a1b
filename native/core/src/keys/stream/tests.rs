//! The streaming passes against the whole-workload rule ([`KeyLinks::build`]) on random
//! workloads: the same keys, the same links, the same counts.

use super::*;
use crate::keys::KeyLinks;
use crate::seeded::SplitMix64;
use crate::wkl::QueryKind;
use crate::workload::{Workload, WorkloadBuilder, WorkloadInfo};

/// A statement: text, offset, recorded rows.
type Stmt = (String, u64, Option<Vec<ResponseRow>>);

fn random_sessions(seed: u64) -> Vec<Vec<Stmt>> {
    let mut r = SplitMix64::new(seed);
    let mut next_id = 500u64;
    let sessions = 1 + r.below(6);
    (0..sessions)
        .map(|_| {
            let mut t = r.below(50);
            let mut recent: Vec<u64> = Vec::new();
            (0..1 + r.below(45))
                .map(|_| {
                    // Mostly forward; sometimes a millisecond-precision step back.
                    t = (t + r.below(10)).saturating_sub(if r.below(8) == 0 { 12 } else { 0 });
                    let id = if !recent.is_empty() && r.below(3) > 0 {
                        recent[r.below(recent.len() as u64) as usize]
                    } else if r.below(3) == 0 {
                        r.below(12)
                    } else {
                        next_id += 1;
                        recent.push(next_id);
                        next_id
                    };
                    let small = r.below(9);
                    let (sql, rec) = match r.below(11) {
                        0 | 1 => (format!("INSERT INTO orders (customer_id, total) VALUES ({small}, 1.5) RETURNING id"), None),
                        2 => ("SELECT nextval('lines_id_seq')".to_string(), None),
                        3 => (format!("INSERT INTO order_items (order_id, product_id, quantity) VALUES ({id}, {small}, 2)"), None),
                        4 => (format!("UPDATE orders SET status = 'paid' WHERE id = '{id}'"), None),
                        5 => (format!("SELECT * FROM orders WHERE id = {id} AND customer_id = {small}"), None),
                        6 => (
                            format!("UPDATE products SET stock = stock - 1 WHERE id = {small} RETURNING stock"),
                            Some(vec![ResponseRow { columns: vec![("stock".into(), (r.below(20)).to_string())] }]),
                        ),
                        7 => {
                            next_id += 1;
                            let rows = match r.below(3) {
                                0 => vec![ResponseRow { columns: vec![("id".into(), next_id.to_string())] }],
                                1 => vec![ResponseRow { columns: vec![("total".into(), "1.5".into())] }],
                                _ => vec![],
                            };
                            (format!("INSERT INTO orders (customer_id) VALUES ({small}) RETURNING id"), Some(rows))
                        }
                        8 => ("BEGIN".to_string(), None),
                        9 => ("COMMIT".to_string(), None),
                        _ => (format!("SELECT * FROM order_items WHERE order_id IN ({id}, {})", id + 1), None),
                    };
                    (sql, t, rec)
                })
                .collect()
        })
        .collect()
}

fn whole(sessions: &[Vec<Stmt>]) -> Workload {
    let mut b = WorkloadBuilder::new(WorkloadInfo::default());
    for (i, s) in sessions.iter().enumerate() {
        b.begin_session(i as u64 + 1, "u".into(), "d".into());
        for (sql, at, rec) in s {
            b.push_statement(sql, *at, 1, QueryKind::Other, None);
            if let Some(rows) = rec {
                b.set_response_values(rows.clone());
            }
        }
    }
    b.finish()
}

/// (producer global index, user global index) per link; inferred (producer, column, value).
type Found = (KeyStats, Vec<(u32, u32)>, Vec<(u32, String, String)>);

fn streamed(sessions: &[Vec<Stmt>]) -> Found {
    let parent = tempfile::tempdir().unwrap();
    let dir = SpillDir::new_in(parent.path()).unwrap();
    let first: Vec<u32> = sessions
        .iter()
        .scan(0u32, |n, s| {
            let f = *n;
            *n += s.len() as u32;
            Some(f)
        })
        .collect();
    let walk = |f: &mut dyn FnMut(SessionOrder, u32, i64, &Stmt)| {
        for (i, s) in sessions.iter().enumerate() {
            let order = SessionOrder {
                first_start: 0,
                index: i as u32,
            };
            let mut at = 0i64;
            for (pos, st) in s.iter().enumerate() {
                at = at.max(st.1 as i64);
                f(order, pos as u32, at, st);
            }
        }
    };
    let mut scan = KeyScan::new(&dir);
    let mut last = None;
    walk(&mut |order, pos, at, st| {
        if last != Some(order) {
            scan.begin_session(order);
            last = Some(order);
        }
        scan.statement(pos, at, &st.0, st.2.as_deref(), Tag::default())
            .unwrap();
    });
    let mut inf = scan.finish().unwrap().inferrer().unwrap();
    let mut inferred = Vec::new();
    let mut last = None;
    walk(&mut |order, pos, at, st| {
        if last != Some(order) {
            inf.begin_session(order);
            last = Some(order);
        }
        for k in inf
            .statement(pos, at, &st.0, st.2.as_deref(), Tag::default())
            .unwrap()
        {
            inferred.push((
                first[order.index as usize] + k.producer_pos,
                k.column,
                k.value,
            ));
        }
    });
    let g = |r: Rank| first[r.session.index as usize] + r.pos;
    let mut links = Vec::new();
    let stats = inf
        .finish(|l| links.push((g(l.producer), g(l.user))))
        .unwrap();
    links.sort_unstable();
    inferred.sort();
    (stats, links, inferred)
}

fn reference(w: &Workload) -> Found {
    let k = &KeyLinks::build(w);
    let mut links = Vec::new();
    for g in 0..w.statement_count() as u32 {
        for u in k.uses_in(g) {
            links.push((k.keys[u.key as usize].producer, g));
        }
    }
    links.sort_unstable();
    let mut inferred: Vec<_> = k
        .keys
        .iter()
        .filter(|k| k.inferred)
        .map(|k| (k.producer, k.column.clone(), k.captured.clone()))
        .collect();
    inferred.sort();
    (k.stats.clone(), links, inferred)
}

#[test]
fn the_streamed_rule_finds_what_the_whole_workload_rule_finds() {
    let mut interesting = 0;
    for seed in 0..300 {
        let sessions = random_sessions(seed);
        let expected = reference(&whole(&sessions));
        assert_eq!(streamed(&sessions), expected, "seed {seed}");
        interesting += usize::from(expected.0.inferred > 0 && expected.0.ambiguous > 0);
    }
    assert!(
        interesting > 20,
        "the cases exercise inference and ambiguity ({interesting})"
    );
}
