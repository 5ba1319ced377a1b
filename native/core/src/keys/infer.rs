//! Inferring a producer's captured key from the statements that follow it.
//!
//! A log capture records what a session sent, not what it got back. But an application that asks
//! for a generated id uses it, and the first time that id appears anywhere in the workload is in
//! a statement its own session sends soon after. The rule, for each statement in capture order:
//!
//! 1. its *new* literals are the integers and uuids that appear there for the first time in the
//!    whole workload (no statement of any session sent that value earlier);
//! 2. each new literal may belong to a producer of the same session among the [`WINDOW`]
//!    statements before it that still has no value, generates keys (INSERT … RETURNING or a
//!    sequence function) and does not contain that value itself;
//! 3. the literal's column context decides: stored into or compared with a column named after
//!    the producer's table and key (`order_id` for `orders.id`, or `id` of `orders` itself) scores
//!    3; another id-like column (`id`, `…_id`) or no known column scores 1; any other column
//!    (`quantity`, `price`), a `LIMIT`/`OFFSET`, an operand of arithmetic (`stock - 3`) or a
//!    function's argument rules it out;
//! 4. within a statement, the best-scoring (literal, producer) pairs are taken first; ties go to
//!    the nearest producer. A producer takes one value, a value goes to one producer.
//!
//! What it gets wrong is listed in docs/keys.md.

use std::collections::{HashMap, HashSet};

use pg_query::protobuf::AExprKind;
use pg_query::{Node, NodeEnum, NodeRef};

use super::producer::{const_location, ColumnContext, KeyOrigin};
use super::shapes::{masked, ShapeCache};
use super::{literal_key, uuid_like, Key, KeyLinks, Timeline};
use crate::fnv::FnvBuild;
use crate::sql::lex::{literals, Literal, LiteralKind};
use crate::workload::Workload;

/// How many statements back from a new literal its producer may be.
pub const WINDOW: u32 = 32;

/// Infers values for producers that have none; returns how many were inferred.
pub(super) fn infer(w: &Workload, t: &Timeline, links: &mut KeyLinks) -> u64 {
    let all = w.all_statements();
    // Producers still open: generate keys, no recorded value, have a key column.
    let mut open: HashMap<u32, (usize, KeyOrigin)> = HashMap::new();
    for (&g, p) in &links.producers {
        if !p.generates || links.produced.contains_key(&g) {
            continue;
        }
        if let Some(i) = key_column(&p.columns, &p.origins) {
            open.insert(g, (i, p.origins[i].clone()));
        }
    }
    if open.is_empty() {
        return 0;
    }
    // Values each open producer's own text contains: a literal it sent is not one it got back.
    let mut own: HashMap<u32, HashSet<u64>> = HashMap::new();
    for &g in open.keys() {
        let text = w.text(all[g as usize].text);
        own.insert(g, literals(text).iter().filter_map(literal_key).collect());
    }

    let mut seen: HashSet<u64> = HashSet::new();
    let mut inferred = 0u64;
    let mut places = PlaceCache::default();
    for &g in &t.order {
        let text = w.text(all[g as usize].text);
        let lits = literals(text);
        let mut fresh = Vec::new();
        let mut at = Vec::new();
        for (i, l) in lits.iter().enumerate() {
            if let Some(k) = literal_key(l) {
                if seen.insert(k) {
                    fresh.push((l, k));
                    at.push(i);
                }
            }
        }
        if fresh.is_empty() || open.is_empty() {
            continue;
        }
        let s = t.session[g as usize];
        let lo = g.saturating_sub(WINDOW).max(t.first[s as usize]);
        let candidates: Vec<u32> = (lo..g).rev().filter(|p| open.contains_key(p)).collect();
        if candidates.is_empty() {
            continue;
        }
        let places = places.get(text, &lits);
        let waiting: Vec<Candidate> = candidates
            .iter()
            .map(|p| Candidate {
                origin: &open[p].1,
                own: &own[p],
            })
            .collect();
        let taken = choose(&fresh, &waiting, |li| &places[at[li]]);
        for (li, near) in taken {
            let p = candidates[near];
            let (column_index, origin) = open.remove(&p).expect("each producer is taken once");
            let producer = &links.producers[&p];
            links.add_key(Key {
                producer: p,
                row: 0,
                column: producer.columns[column_index].clone(),
                column_index: column_index as u32,
                captured: captured_value(fresh[li].0),
                inferred: true,
                origin,
            });
            inferred += 1;
        }
    }
    inferred
}

/// A producer still waiting for its key, as one statement sees it.
pub(super) struct Candidate<'a> {
    pub origin: &'a KeyOrigin,
    /// Values the producer's own text holds (a literal it sent is not one it got back).
    pub own: &'a HashSet<u64>,
}

/// Rule 4 for one statement: which of its new literals (`fresh`, in text order, with their
/// value keys) go to which waiting producers (`candidates`, nearest first), given each
/// literal's place. Returns (literal index, candidate index) pairs in the order they are taken;
/// each literal and each producer appears at most once.
pub(super) fn choose<'c>(
    fresh: &[(&Literal<'_>, u64)],
    candidates: &[Candidate<'_>],
    place: impl Fn(usize) -> &'c Place,
) -> Vec<(usize, usize)> {
    // (score, nearness, literal index)
    let mut pairs = Vec::new();
    for (li, (_, k)) in fresh.iter().enumerate() {
        for (near, c) in candidates.iter().enumerate() {
            if c.own.contains(k) {
                continue;
            }
            let score = place_score(c.origin, place(li));
            if score > 0 {
                pairs.push((score, near, li));
            }
        }
    }
    pairs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut used_literals = HashSet::new();
    let mut used_producers = HashSet::new();
    let mut taken = Vec::new();
    for (_, near, li) in pairs {
        if used_literals.contains(&li) || used_producers.contains(&near) {
            continue;
        }
        used_literals.insert(li);
        used_producers.insert(near);
        taken.push((li, near));
    }
    taken
}

/// The captured value of a literal taken as a key: uuids in lower case, as [`literal_key`]
/// hashes them.
pub(super) fn captured_value(l: &Literal<'_>) -> String {
    let value = l.value.to_string();
    if l.kind == LiteralKind::String {
        value.to_ascii_lowercase()
    } else {
        value
    }
}

/// The returned column that carries the key: `id` if there is one, else the first column whose
/// origin is known.
pub(super) fn key_column(columns: &[String], origins: &[KeyOrigin]) -> Option<usize> {
    columns
        .iter()
        .position(|c| c == "id")
        .or_else(|| {
            origins
                .iter()
                .position(|o| !matches!(o, KeyOrigin::Unknown))
        })
        .or((columns.len() == 1).then_some(0))
}

/// The table and column a key origin names (`orders_id_seq` read as `orders`, `id`).
fn table_and_column(origin: &KeyOrigin) -> Option<(String, String)> {
    match origin {
        KeyOrigin::Column { table, column } => Some((base_name(table), column.clone())),
        KeyOrigin::Sequence(name) => {
            let stem = base_name(name);
            let stem = stem.strip_suffix("_seq")?;
            let (t, c) = stem.rsplit_once('_')?;
            Some((t.to_string(), c.to_string()))
        }
        KeyOrigin::Unknown => None,
    }
}

fn base_name(qualified: &str) -> String {
    qualified
        .rsplit('.')
        .next()
        .unwrap_or(qualified)
        .trim_matches('"')
        .to_ascii_lowercase()
}

/// `orders` → `order`, `categories` → `category`, `addresses` → `address`.
fn singular(table: &str) -> String {
    if let Some(stem) = table.strip_suffix("ies") {
        format!("{stem}y")
    } else if table.ends_with("sses") || table.ends_with("xes") || table.ends_with("ches") {
        table[..table.len() - 2].to_string()
    } else if let Some(stem) = table.strip_suffix('s') {
        stem.to_string()
    } else {
        table.to_string()
    }
}

/// How well a literal at `place` fits a producer's key (0 rules the pair out).
fn place_score(origin: &KeyOrigin, place: &Place) -> u8 {
    match place {
        Place::Column(ctx) => score(origin, Some(ctx)),
        Place::Unknown => score(origin, None),
        Place::NotKey | Place::Argument => 0,
    }
}

/// How well a literal's column context fits a producer's key (0 rules the pair out).
fn score(origin: &KeyOrigin, ctx: Option<&ColumnContext>) -> u8 {
    let Some(ctx) = ctx else {
        return 1;
    };
    let col = ctx.column.to_ascii_lowercase();
    if let Some((table, key)) = table_and_column(origin) {
        let same_table = ctx.table.as_deref().map(base_name).as_deref() == Some(table.as_str());
        if (same_table && col == key)
            || col == format!("{}_{key}", singular(&table))
            || col == format!("{table}_{key}")
        {
            return 3;
        }
    }
    let other_table = match (&ctx.table, table_and_column(origin)) {
        (Some(t), Some((table, _))) => base_name(t) != table,
        _ => false,
    };
    if col == "id" && !other_table {
        return 1;
    }
    // `product_id` names the products' key: not a key of this producer's table.
    match (col.strip_suffix("_id"), table_and_column(origin)) {
        (Some(prefix), Some((table, _))) if prefix != singular(&table) && prefix != table => 0,
        (Some(_), _) => 1,
        _ => 0,
    }
}

/// What a literal's position in its statement says about whether it can be a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Place {
    /// Compared with or stored into a column.
    Column(ColumnContext),
    /// A count, an offset or an operand of arithmetic (`LIMIT 3`, `OFFSET 20`, `stock - 3`):
    /// never a key.
    NotKey,
    /// A function's argument: a stored procedure may take an id, but a new value there is as
    /// likely a precision, a count or a flag, and is not inferred as a key.
    Argument,
    /// Nothing known (`SELECT 3`, `id = ANY(ARRAY[3])`).
    Unknown,
}

/// Whether a literal at `place` may carry a key when linking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Veto {
    /// It may.
    None,
    /// Never: a count, an offset or an operand of arithmetic (`LIMIT 3`, `stock - 3`).
    Always,
    /// Not an id: a number stored into or compared with a column that is not an id
    /// (`quantity = 3`). A value read back from such a column (`RETURNING stock`) may be.
    Ids,
}

/// The [`Veto`] on a literal at `place`. A uuid is a key wherever it stands.
pub(super) fn veto(l: &Literal<'_>, place: &Place) -> Veto {
    if uuid_like(&l.value) {
        return Veto::None;
    }
    match place {
        Place::NotKey => Veto::Always,
        Place::Column(ctx) if !id_column(&ctx.column) => Veto::Ids,
        _ => Veto::None,
    }
}

/// True when a key is an id as far as [`Veto::Ids`] goes: every key an INSERT or a sequence
/// generated, and a read-back of an id-like column (`RETURNING id`, not `RETURNING stock`).
pub(super) fn is_id(generates: bool, column: &str) -> bool {
    generates || id_column(column)
}

/// `id`, `…_id`, and the camel case an ORM quotes (`"orderId"`, `"customerID"`).
fn id_column(column: &str) -> bool {
    let lower = column.to_ascii_lowercase();
    lower == "id" || lower.ends_with("_id") || column.ends_with("Id") || column.ends_with("ID")
}

/// Shapes kept before the cache starts over.
const MAX_SHAPES: usize = 20_000;

/// [`Place`]s per statement *shape* (the text with its literal values masked): the parser runs
/// once per shape.
#[derive(Default)]
pub(super) struct PlaceCache {
    shapes: ShapeCache,
    places: HashMap<u64, Vec<Place>, FnvBuild>,
}

impl PlaceCache {
    /// The place of each of `lits` (the literals of `text`), by position in `lits`.
    pub fn get(&mut self, text: &str, lits: &[Literal<'_>]) -> &[Place] {
        let key = masked(text, lits);
        if self.places.len() >= MAX_SHAPES && !self.places.contains_key(&key) {
            self.places.clear();
        }
        if !self.places.contains_key(&key) {
            let columns = self.shapes.contexts(text, lits).to_vec();
            let other = other_places(text);
            let places = lits
                .iter()
                .zip(columns)
                .map(|(l, column)| match (other.get(&l.start), column) {
                    (Some(Place::NotKey), _) => Place::NotKey,
                    (_, Some(ctx)) => Place::Column(ctx),
                    (Some(p), None) => p.clone(),
                    (None, None) => Place::Unknown,
                })
                .collect();
            self.places.insert(key, places);
        }
        &self.places[&key]
    }
}

/// Constants of `sql` that are counts, offsets, operands of arithmetic
/// ([`Place::NotKey`]) or functions' arguments ([`Place::Argument`]), by byte offset.
fn other_places(sql: &str) -> HashMap<usize, Place> {
    let mut out = HashMap::new();
    let Ok(parsed) = pg_query::parse(sql, 0) else {
        return out;
    };
    let not_key = |node: Option<&Node>, out: &mut HashMap<usize, Place>| {
        if let Some(at) = node.and_then(const_location) {
            out.insert(at, Place::NotKey);
        }
    };
    for (node, _, _, _) in parsed.protobuf.nodes() {
        match node {
            NodeRef::SelectStmt(s) => {
                not_key(s.limit_count.as_deref(), &mut out);
                not_key(s.limit_offset.as_deref(), &mut out);
            }
            NodeRef::AExpr(e) if e.kind() == AExprKind::AexprOp => {
                let op = e.name.iter().rev().find_map(|n| match n.node.as_ref() {
                    Some(NodeEnum::String(s)) => Some(s.sval.as_str()),
                    _ => None,
                });
                if matches!(op, Some("+" | "-" | "*" | "/" | "%" | "^")) {
                    not_key(e.lexpr.as_deref(), &mut out);
                    not_key(e.rexpr.as_deref(), &mut out);
                }
            }
            NodeRef::FuncCall(f) => {
                for a in &f.args {
                    if let Some(at) = const_location(a) {
                        out.entry(at).or_insert(Place::Argument);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(table: Option<&str>, column: &str) -> ColumnContext {
        ColumnContext {
            table: table.map(str::to_string),
            column: column.into(),
        }
    }

    #[test]
    fn scores_prefer_the_column_named_after_the_key() {
        let orders = KeyOrigin::Column {
            table: "public.orders".into(),
            column: "id".into(),
        };
        assert_eq!(
            score(&orders, Some(&ctx(Some("order_items"), "order_id"))),
            3
        );
        assert_eq!(score(&orders, Some(&ctx(Some("orders"), "id"))), 3);
        assert_eq!(
            score(&orders, Some(&ctx(Some("order_items"), "product_id"))),
            0
        );
        assert_eq!(score(&orders, Some(&ctx(Some("products"), "id"))), 0);
        assert_eq!(score(&orders, Some(&ctx(None, "id"))), 1);
        assert_eq!(score(&KeyOrigin::Unknown, Some(&ctx(None, "parent_id"))), 1);
        assert_eq!(
            score(&orders, Some(&ctx(Some("order_items"), "quantity"))),
            0
        );
        assert_eq!(score(&orders, None), 1);
        let seq = KeyOrigin::Sequence("public.categories_id_seq".into());
        assert_eq!(score(&seq, Some(&ctx(None, "category_id"))), 3);
    }

    #[test]
    fn singulars() {
        assert_eq!(singular("orders"), "order");
        assert_eq!(singular("categories"), "category");
        assert_eq!(singular("addresses"), "address");
        assert_eq!(singular("boxes"), "box");
        assert_eq!(singular("staff"), "staff");
    }
}
