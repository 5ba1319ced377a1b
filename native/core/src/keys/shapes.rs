//! The parser's answers about a statement, kept per *shape*: the text with its literal values
//! masked.
//!
//! Whether a statement is a producer, and which column each of its literals belongs to, depends
//! on its structure, not on its values: `INSERT … VALUES ('7', 19.90) RETURNING id` and the same
//! INSERT with other values give the same answers. A captured log repeats a few hundred shapes
//! millions of times, so the parser runs once per shape. The one answer a value decides is a
//! sequence call's origin (`nextval('orders_id_seq')`): such a producer is parsed again with its
//! own text.

use std::collections::HashMap;
use std::hash::Hasher;
use std::rc::Rc;

use super::producer::{column_contexts, producer, ColumnContext, KeyOrigin, Producer};
use crate::fnv::{Fnv, FnvBuild};
use crate::sql::lex::{Literal, LiteralKind};

/// Shapes kept before the cache starts over: a workload of ever-new shapes (generated SQL)
/// costs a parse per statement, never unbounded memory.
const MAX_SHAPES: usize = 20_000;

#[derive(Default)]
pub(crate) struct ShapeCache {
    producers: HashMap<u64, Option<Rc<Producer>>, FnvBuild>,
    contexts: HashMap<u64, Vec<Option<ColumnContext>>, FnvBuild>,
}

/// A hash of `text` with each literal replaced by its kind: texts with the same key differ only
/// in their literal values.
pub(super) fn masked(text: &str, lits: &[Literal<'_>]) -> u64 {
    let mut h = Fnv::default();
    let mut at = 0;
    for l in lits {
        h.write(&text.as_bytes()[at..l.start]);
        h.write_u8(match l.kind {
            LiteralKind::Integer => 0xf0,
            LiteralKind::String => 0xf1,
        });
        at = l.end;
    }
    h.write(&text.as_bytes()[at..]);
    h.finish()
}

impl ShapeCache {
    /// What [`producer`] says about `text` (whose literals are `lits`).
    pub fn producer(&mut self, text: &str, lits: &[Literal<'_>]) -> Option<Rc<Producer>> {
        let key = masked(text, lits);
        if self.producers.len() >= MAX_SHAPES {
            self.producers.clear();
        }
        let cached = self
            .producers
            .entry(key)
            .or_insert_with(|| producer(text).map(Rc::new))
            .clone();
        match cached {
            Some(p)
                if p.origins
                    .iter()
                    .any(|o| matches!(o, KeyOrigin::Sequence(_))) =>
            {
                producer(text).map(Rc::new)
            }
            other => other,
        }
    }

    /// The column context of each of `lits`, by position in `lits`.
    pub fn contexts(&mut self, text: &str, lits: &[Literal<'_>]) -> &[Option<ColumnContext>] {
        let key = masked(text, lits);
        if self.contexts.len() >= MAX_SHAPES && !self.contexts.contains_key(&key) {
            self.contexts.clear();
        }
        self.contexts.entry(key).or_insert_with(|| {
            let by_offset = column_contexts(text);
            lits.iter()
                .map(|l| by_offset.get(&l.start).cloned())
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::lex::literals;

    #[test]
    fn one_answer_per_shape_except_a_sequence_name() {
        let mut c = ShapeCache::default();
        let a = "INSERT INTO order_items (order_id, quantity) VALUES (120001, 3)";
        let b = "INSERT INTO order_items (order_id, quantity) VALUES ('120002', 4)";
        let (la, lb) = (literals(a), literals(b));
        assert_ne!(
            masked(a, &la),
            masked(b, &lb),
            "a quoted value is another shape"
        );
        let ctx = c.contexts(a, &la).to_vec();
        assert_eq!(ctx[0].as_ref().unwrap().column, "order_id");
        assert_eq!(ctx[1].as_ref().unwrap().column, "quantity");
        let x = "SELECT nextval('orders_id_seq')";
        let y = "SELECT nextval('lines_id_seq')";
        assert_eq!(masked(x, &literals(x)), masked(y, &literals(y)));
        assert_eq!(
            c.producer(y, &literals(y)).unwrap().origins,
            vec![KeyOrigin::Sequence("lines_id_seq".into())]
        );
        assert_eq!(
            c.producer(x, &literals(x)).unwrap().origins,
            vec![KeyOrigin::Sequence("orders_id_seq".into())]
        );
    }
}
