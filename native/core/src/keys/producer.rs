//! Which statements hand out keys, and what a literal stands for: both read from PostgreSQL's
//! own parse tree.
//!
//! A *producer* returns values the server generated for it: `INSERT … RETURNING`, any
//! `UPDATE`/`DELETE … RETURNING` (whose values only count when the capture recorded them), and a
//! `SELECT` of `nextval`, `currval` or `lastval`. A literal's *column context* is the column it is
//! compared with or stored into (`order_id = 17`, `VALUES (17, …)` under `(order_id, …)`), which
//! is what tells a new order's id from a new quantity.

use std::collections::HashMap;

use pg_query::protobuf::{a_const, AExprKind};
use pg_query::{Node, NodeEnum, NodeRef};

/// Where the generated values of one returned column come from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyOrigin {
    /// A column of a table (`INSERT INTO orders … RETURNING id`): its default, serial or
    /// identity sequence.
    Column { table: String, column: String },
    /// A sequence named in `nextval('…')` / `currval('…')`.
    Sequence(String),
    /// `lastval()`: whatever sequence the session used last.
    Unknown,
}

/// What a producer statement returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Producer {
    /// Output column names in order; `*` for `RETURNING *`.
    pub columns: Vec<String>,
    /// Per output column, where its values come from.
    pub origins: Vec<KeyOrigin>,
    /// True when the values are new keys (an INSERT or a sequence function), not values an
    /// UPDATE or DELETE read back from existing rows.
    pub generates: bool,
    /// An `INSERT … ON CONFLICT … DO UPDATE`: a returned row may be an existing one, whose id no
    /// sequence handed out for this statement (so it says nothing of where the sequence stood).
    pub upsert: bool,
}

fn string_of(node: &Node) -> Option<&str> {
    match node.node.as_ref()? {
        NodeEnum::String(s) => Some(&s.sval),
        _ => None,
    }
}

fn last_name(fields: &[Node]) -> Option<String> {
    fields.iter().rev().find_map(string_of).map(str::to_string)
}

fn relation_name(r: &pg_query::protobuf::RangeVar) -> String {
    if r.schemaname.is_empty() {
        r.relname.clone()
    } else {
        format!("{}.{}", r.schemaname, r.relname)
    }
}

/// The columns a RETURNING list names (`*` as itself).
fn returned(table: &str, exprs: &[Node]) -> (Vec<String>, Vec<KeyOrigin>) {
    let mut columns = Vec::new();
    let mut origins = Vec::new();
    for e in exprs {
        let Some(NodeEnum::ResTarget(rt)) = e.node.as_ref() else {
            continue;
        };
        let source = match rt.val.as_ref().and_then(|v| v.node.as_ref()) {
            Some(NodeEnum::ColumnRef(c)) => match c.fields.last().and_then(|f| f.node.as_ref()) {
                Some(NodeEnum::AStar(_)) => Some("*".to_string()),
                _ => last_name(&c.fields),
            },
            _ => None,
        };
        let name = if rt.name.is_empty() {
            source.clone().unwrap_or_else(|| "?column?".into())
        } else {
            rt.name.clone()
        };
        origins.push(match source {
            Some(column) if column != "*" => KeyOrigin::Column {
                table: table.to_string(),
                column,
            },
            _ => KeyOrigin::Unknown,
        });
        columns.push(name);
    }
    (columns, origins)
}

/// A sequence function call in a SELECT list: its output name and origin.
fn sequence_call(rt: &pg_query::protobuf::ResTarget) -> Option<(String, KeyOrigin)> {
    let Some(NodeEnum::FuncCall(f)) = rt.val.as_ref().and_then(|v| v.node.as_ref()) else {
        return None;
    };
    let func = last_name(&f.funcname)?;
    let origin = match func.as_str() {
        "nextval" | "currval" => {
            let arg = f.args.first().and_then(|a| a.node.as_ref());
            let name = match arg {
                Some(NodeEnum::AConst(c)) => const_string(c),
                Some(NodeEnum::TypeCast(t)) => match t.arg.as_ref().and_then(|a| a.node.as_ref()) {
                    Some(NodeEnum::AConst(c)) => const_string(c),
                    _ => None,
                },
                _ => None,
            };
            name.map_or(KeyOrigin::Unknown, KeyOrigin::Sequence)
        }
        "lastval" => KeyOrigin::Unknown,
        _ => return None,
    };
    let name = if rt.name.is_empty() {
        func
    } else {
        rt.name.clone()
    };
    Some((name, origin))
}

fn const_string(c: &pg_query::protobuf::AConst) -> Option<String> {
    match c.val.as_ref()? {
        a_const::Val::Sval(s) => Some(s.sval.clone()),
        _ => None,
    }
}

/// A DML statement's RETURNING list as a producer (none when the list is empty).
fn returning(
    relation: &pg_query::protobuf::RangeVar,
    clause: &pg_query::protobuf::ReturningClause,
    generates: bool,
) -> Option<Producer> {
    let (columns, origins) = returned(&relation_name(relation), &clause.exprs);
    (!columns.is_empty()).then_some(Producer {
        columns,
        origins,
        generates,
        upsert: false,
    })
}

/// True when `node` certainly returns no rows: a transaction command, a `SET`, or an
/// INSERT/UPDATE/DELETE without RETURNING.
fn rowless(node: &NodeEnum) -> bool {
    let no_returning = |c: &Option<pg_query::protobuf::ReturningClause>| {
        c.as_ref().is_none_or(|c| c.exprs.is_empty())
    };
    match node {
        NodeEnum::TransactionStmt(_) | NodeEnum::VariableSetStmt(_) => true,
        NodeEnum::InsertStmt(s) => no_returning(&s.returning_clause),
        NodeEnum::UpdateStmt(s) => no_returning(&s.returning_clause),
        NodeEnum::DeleteStmt(s) => no_returning(&s.returning_clause),
        _ => false,
    }
}

/// The producer `sql` is, if it is one.
///
/// A text of several statements is a producer only when one of them returns rows and every
/// other one certainly returns none (`SET …; INSERT … RETURNING id`): at replay the rows of
/// every statement of a text are read into one table of rows under the first row description,
/// so a key's row would be read from another statement's rows (`INSERT INTO audit … RETURNING
/// id; INSERT INTO orders … RETURNING id` would give the audit row's id to every use of the
/// order's).
pub fn producer(sql: &str) -> Option<Producer> {
    let parsed = pg_query::parse(sql, 0).ok()?;
    let nodes: Vec<&NodeEnum> = parsed
        .protobuf
        .stmts
        .iter()
        .filter_map(|s| s.stmt.as_ref()?.node.as_ref())
        .collect();
    if nodes.len() != parsed.protobuf.stmts.len() {
        return None;
    }
    let mut with_rows = nodes.iter().filter(|n| !rowless(n));
    let node = with_rows.next()?;
    if with_rows.next().is_some() {
        return None;
    }
    match node {
        // Only an INSERT generates; UPDATE and DELETE read existing values back.
        NodeEnum::InsertStmt(s) => {
            let mut p = returning(s.relation.as_ref()?, s.returning_clause.as_ref()?, true)?;
            p.upsert = s.on_conflict_clause.as_ref().is_some_and(|c| {
                c.action() == pg_query::protobuf::OnConflictAction::OnconflictUpdate
            });
            Some(p)
        }
        NodeEnum::UpdateStmt(s) => {
            returning(s.relation.as_ref()?, s.returning_clause.as_ref()?, false)
        }
        NodeEnum::DeleteStmt(s) => {
            returning(s.relation.as_ref()?, s.returning_clause.as_ref()?, false)
        }
        NodeEnum::SelectStmt(s) if s.from_clause.is_empty() => {
            let mut columns = Vec::new();
            let mut origins = Vec::new();
            for t in &s.target_list {
                let Some(NodeEnum::ResTarget(rt)) = t.node.as_ref() else {
                    return None;
                };
                // Every output column must be a sequence call: `SELECT nextval(…), now()` is
                // rare, and a column we cannot explain would be matched by position.
                let (name, origin) = sequence_call(rt)?;
                columns.push(name);
                origins.push(origin);
            }
            (!columns.is_empty()).then_some(Producer {
                columns,
                origins,
                generates: true,
                upsert: false,
            })
        }
        _ => None,
    }
}

/// The column a literal is compared with or stored into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnContext {
    /// The statement's target table (INSERT/UPDATE/DELETE) or sole FROM table, when the column
    /// is not qualified by another name.
    pub table: Option<String>,
    pub column: String,
}

/// Column contexts of the constants in `sql`, by the constant's byte offset.
pub fn column_contexts(sql: &str) -> HashMap<usize, ColumnContext> {
    let mut out = HashMap::new();
    let Ok(parsed) = pg_query::parse(sql, 0) else {
        return out;
    };
    for (node, _, _, _) in parsed.protobuf.nodes() {
        match node {
            NodeRef::InsertStmt(s) => {
                let table = s.relation.as_ref().map(relation_name);
                let cols: Vec<String> = s
                    .cols
                    .iter()
                    .filter_map(|c| match c.node.as_ref() {
                        Some(NodeEnum::ResTarget(rt)) => Some(rt.name.clone()),
                        _ => None,
                    })
                    .collect();
                let Some(NodeEnum::SelectStmt(sel)) =
                    s.select_stmt.as_ref().and_then(|n| n.node.as_ref())
                else {
                    continue;
                };
                for row in &sel.values_lists {
                    let Some(NodeEnum::List(items)) = row.node.as_ref() else {
                        continue;
                    };
                    for (item, col) in items.items.iter().zip(&cols) {
                        if let Some(at) = const_location(item) {
                            out.insert(
                                at,
                                ColumnContext {
                                    table: table.clone(),
                                    column: col.clone(),
                                },
                            );
                        }
                    }
                }
            }
            NodeRef::UpdateStmt(s) => {
                let table = s.relation.as_ref().map(relation_name);
                for t in &s.target_list {
                    if let Some(NodeEnum::ResTarget(rt)) = t.node.as_ref() {
                        if let Some(at) = rt.val.as_deref().and_then(const_location) {
                            out.insert(
                                at,
                                ColumnContext {
                                    table: table.clone(),
                                    column: rt.name.clone(),
                                },
                            );
                        }
                    }
                }
            }
            NodeRef::AExpr(e) => {
                let kind = e.kind();
                if !matches!(kind, AExprKind::AexprOp | AExprKind::AexprIn) {
                    continue;
                }
                let (Some(l), Some(r)) = (e.lexpr.as_deref(), e.rexpr.as_deref()) else {
                    continue;
                };
                // `col = 17`, `17 = col`, `col IN (17, 18)`.
                for (col_side, const_side) in [(l, r), (r, l)] {
                    let Some(NodeEnum::ColumnRef(c)) = col_side.node.as_ref() else {
                        continue;
                    };
                    let Some(column) = last_name(&c.fields) else {
                        continue;
                    };
                    let qualifier = (c.fields.len() > 1)
                        .then(|| c.fields.first().and_then(string_of).map(str::to_string))
                        .flatten();
                    let targets: Vec<&Node> = match const_side.node.as_ref() {
                        Some(NodeEnum::List(list)) => list.items.iter().collect(),
                        _ => vec![const_side],
                    };
                    for t in targets {
                        if let Some(at) = const_location(t) {
                            out.insert(
                                at,
                                ColumnContext {
                                    table: qualifier.clone(),
                                    column: column.clone(),
                                },
                            );
                        }
                    }
                }
            }
            _ => {}
        }
    }
    // Unqualified columns of an UPDATE/DELETE/single-table SELECT belong to that table.
    if let Some(table) = single_table(&parsed) {
        for ctx in out.values_mut() {
            if ctx.table.is_none() {
                ctx.table = Some(table.clone());
            }
        }
    }
    out
}

fn single_table(parsed: &pg_query::ParseResult) -> Option<String> {
    let node = parsed.protobuf.stmts.last()?.stmt.as_ref()?.node.as_ref()?;
    match node {
        NodeEnum::UpdateStmt(s) if s.from_clause.is_empty() => {
            s.relation.as_ref().map(relation_name)
        }
        NodeEnum::DeleteStmt(s) if s.using_clause.is_empty() => {
            s.relation.as_ref().map(relation_name)
        }
        NodeEnum::SelectStmt(s) if s.from_clause.len() == 1 => match s.from_clause[0].node.as_ref()
        {
            Some(NodeEnum::RangeVar(r)) => Some(relation_name(r)),
            _ => None,
        },
        _ => None,
    }
}

/// Byte offset of a constant (possibly cast: `'…'::uuid`).
pub(super) fn const_location(node: &Node) -> Option<usize> {
    match node.node.as_ref()? {
        NodeEnum::AConst(c) => usize::try_from(c.location).ok(),
        NodeEnum::TypeCast(t) => match t.arg.as_ref()?.node.as_ref()? {
            NodeEnum::AConst(c) => usize::try_from(c.location).ok(),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_returning_is_a_producer_of_its_table_column() {
        let p = producer(
            "INSERT INTO shop.orders (customer_id) VALUES (4) RETURNING id, created_at AS at",
        )
        .unwrap();
        assert_eq!(p.columns, vec!["id", "at"]);
        assert_eq!(
            p.origins[0],
            KeyOrigin::Column {
                table: "shop.orders".into(),
                column: "id".into()
            }
        );
        assert!(p.generates);
        assert!(producer("INSERT INTO orders (customer_id) VALUES (4)").is_none());
    }

    #[test]
    fn sequence_functions_are_producers() {
        let p = producer("SELECT currval('orders_id_seq')").unwrap();
        assert_eq!(p.columns, vec!["currval"]);
        assert_eq!(p.origins[0], KeyOrigin::Sequence("orders_id_seq".into()));
        let p = producer("SELECT nextval('s'::regclass) AS id").unwrap();
        assert_eq!(p.columns, vec!["id"]);
        assert_eq!(
            producer("SELECT lastval()").unwrap().origins[0],
            KeyOrigin::Unknown
        );
        assert!(producer("SELECT count(*) FROM t").is_none());
        assert!(producer("SELECT nextval('s'), now()").is_none());
    }

    #[test]
    fn an_upsert_that_may_update_is_marked() {
        let p = producer(
            "INSERT INTO customers (email) VALUES ('a@b.c') ON CONFLICT (email) DO UPDATE SET email = excluded.email RETURNING id",
        )
        .unwrap();
        assert!(p.generates && p.upsert);
        let p = producer(
            "INSERT INTO customers (email) VALUES ('a@b.c') ON CONFLICT DO NOTHING RETURNING id",
        )
        .unwrap();
        assert!(!p.upsert);
        assert!(
            !producer("INSERT INTO orders (customer_id) VALUES (4) RETURNING id")
                .unwrap()
                .upsert
        );
    }

    #[test]
    fn a_text_whose_other_statements_return_rows_is_no_producer() {
        // Two statements return rows: at replay both sets of rows land in one table of rows.
        assert!(producer(
            "INSERT INTO audit (what) VALUES ('checkout') RETURNING id; INSERT INTO orders (customer) VALUES (1) RETURNING id"
        )
        .is_none());
        assert!(
            producer("SELECT 1; INSERT INTO orders (customer) VALUES (1) RETURNING id").is_none()
        );
        // The others return no rows: the producer's rows are the only ones.
        let p = producer(
            "SET search_path = shop; INSERT INTO orders (customer) VALUES (1) RETURNING id",
        )
        .unwrap();
        assert_eq!(p.columns, vec!["id"]);
        let p = producer(
            "BEGIN; INSERT INTO orders (customer) VALUES (1) RETURNING id; UPDATE stock SET n = n - 1; COMMIT",
        )
        .unwrap();
        assert_eq!(p.columns, vec!["id"]);
    }

    #[test]
    fn update_returning_reads_back_rather_than_generates() {
        let p =
            producer("UPDATE products SET stock = stock - 1 WHERE id = 3 RETURNING stock").unwrap();
        assert!(!p.generates);
    }

    #[test]
    fn contexts_name_the_column_a_literal_belongs_to() {
        let sql = "INSERT INTO order_items (order_id, product_id, quantity) VALUES (120001, 42, 3)";
        let c = column_contexts(sql);
        let at = sql.find("120001").unwrap();
        assert_eq!(c[&at].column, "order_id");
        assert_eq!(c[&at].table.as_deref(), Some("order_items"));
        assert_eq!(c[&sql.find("42").unwrap()].column, "product_id");

        let sql = "UPDATE orders SET status = 'paid' WHERE id = 77";
        let c = column_contexts(sql);
        let at = sql.find("77").unwrap();
        assert_eq!(
            c[&at],
            ColumnContext {
                table: Some("orders".into()),
                column: "id".into()
            }
        );

        let sql = "SELECT * FROM order_items i WHERE i.order_id IN (5, 6)";
        let c = column_contexts(sql);
        assert_eq!(c[&sql.find('6').unwrap()].column, "order_id");
        assert_eq!(c[&sql.find('6').unwrap()].table.as_deref(), Some("i"));
    }
}
