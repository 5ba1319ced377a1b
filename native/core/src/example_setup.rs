//! What a fingerprint's example statement needs run before it to execute as it did when captured.
//!
//! The plan probe executes one captured statement per fingerprint (EXPLAIN ANALYZE, rolled back)
//! when pg_stat_statements is not there. Run alone, a statement can fail where the captured one
//! did not, because it depends on what its transaction did first: a checkout's line insert
//! refers to `currval()` of the order the same transaction inserted a moment earlier, and fails
//! its foreign key without it. So the probe replays the example's transaction block up to the
//! example (inside its own transaction, which it rolls back), and measures only the example.

use std::collections::HashMap;

use crate::sql::TxnEffect;
use crate::workload::Workload;

/// For every fingerprint (in [`Workload::fingerprints`] order), the texts that ran before its
/// example in the example's transaction block, `BEGIN` excluded, in order.
///
/// Empty when the example ran outside a transaction block, or first in it, or when more than
/// `max` statements preceded it there (a probe should not replay a long batch; it then runs the
/// example alone, as before). Savepoint statements are kept: they are valid inside the probe's
/// own transaction and keep a later `ROLLBACK TO` meaningful.
pub fn example_setups(workload: &Workload, max: usize) -> Vec<Vec<u32>> {
    let fingerprints = workload.fingerprints();
    let mut wanted: HashMap<u32, usize> = fingerprints
        .iter()
        .enumerate()
        .map(|(i, f)| (f.example_text, i))
        .collect();
    let mut setups = vec![Vec::new(); fingerprints.len()];
    for session in 0..workload.sessions().len() {
        if wanted.is_empty() {
            break;
        }
        let statements = workload.statements_of(session);
        // Index of the first statement after the open block's BEGIN.
        let mut block_start: Option<usize> = None;
        for (i, statement) in statements.iter().enumerate() {
            if let Some(fingerprint) = wanted.remove(&statement.text) {
                if let Some(start) = block_start {
                    if i - start <= max {
                        setups[fingerprint] = statements[start..i].iter().map(|s| s.text).collect();
                    }
                }
            }
            match workload.txn_effect(statement.text) {
                TxnEffect::Begin => block_start = Some(i + 1),
                TxnEffect::End => block_start = None,
                _ => {}
            }
        }
    }
    setups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wkl::QueryKind;
    use crate::workload::{WorkloadBuilder, WorkloadInfo};

    fn workload(sessions: &[&[&str]]) -> Workload {
        let mut b = WorkloadBuilder::new(WorkloadInfo::default());
        for (id, statements) in sessions.iter().enumerate() {
            b.begin_session(id as u64 + 1, "u".into(), "d".into());
            for (offset, sql) in statements.iter().enumerate() {
                b.push_statement(sql, offset as u64, 1, QueryKind::Other, None);
            }
        }
        b.finish()
    }

    fn setup_of(w: &Workload, example_prefix: &str, max: usize) -> Vec<String> {
        let i = w
            .fingerprints()
            .iter()
            .position(|f| w.text(f.example_text).starts_with(example_prefix))
            .expect("fingerprint");
        example_setups(w, max)[i]
            .iter()
            .map(|&t| w.text(t).to_string())
            .collect()
    }

    #[test]
    fn an_example_in_a_transaction_gets_the_statements_before_it_in_that_block() {
        let w = workload(&[&[
            "SELECT 1",
            "BEGIN",
            "INSERT INTO orders (customer_id) VALUES (7)",
            "SAVEPOINT a",
            "INSERT INTO order_items (order_id, product_id) VALUES (currval('orders_id_seq'), 3)",
            "COMMIT",
            "INSERT INTO audit (note) VALUES ('x')",
        ]]);
        assert_eq!(
            setup_of(&w, "INSERT INTO order_items", 50),
            vec!["INSERT INTO orders (customer_id) VALUES (7)", "SAVEPOINT a"]
        );
        // Outside a block, or first in it: nothing to run first.
        assert!(setup_of(&w, "INSERT INTO audit", 50).is_empty());
        assert!(setup_of(&w, "INSERT INTO orders", 50).is_empty());
        assert!(setup_of(&w, "SELECT 1", 50).is_empty());
    }

    #[test]
    fn only_the_first_capture_of_the_example_counts_and_long_blocks_are_left_out() {
        let w = workload(&[
            &[
                "BEGIN",
                "SELECT 2",
                "SELECT 3",
                "SELECT 4",
                "UPDATE t SET x = 1",
                "COMMIT",
            ],
            &["BEGIN", "UPDATE t SET x = 1", "COMMIT"],
        ]);
        assert_eq!(setup_of(&w, "UPDATE t", 3).len(), 3);
        assert!(setup_of(&w, "UPDATE t", 2).is_empty());
    }
}
