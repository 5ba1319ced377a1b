//! Statement analysis: fingerprint, kind, whether it can change data, whether its effects may
//! reach beyond its database (`reach.rs`), and its effect on the transaction state of the session.
//!
//! Prefix tests get real workloads wrong (`/* app */ SELECT`, `WITH … INSERT`, `SELECT … FOR
//! UPDATE`, `SELECT nextval(…)`), so everything here comes from the parse tree. A statement the
//! parser rejects is treated as a write: read-only mode must never run something it cannot vouch for.

use std::hash::Hasher;

use pg_query::{NodeEnum, NodeRef};
use serde::Serialize;

use super::reach;
use super::tree::called_function;
use crate::fnv::Fnv;

/// The broad kind of a statement, for summaries and session classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum StatementKind {
    Select,
    Insert,
    Update,
    Delete,
    Merge,
    Ddl,
    Transaction,
    Utility,
    Copy,
    Call,
    /// The parser rejected the text.
    Unparsed,
}

impl StatementKind {
    pub const ALL: [StatementKind; 11] = [
        Self::Select,
        Self::Insert,
        Self::Update,
        Self::Delete,
        Self::Merge,
        Self::Ddl,
        Self::Transaction,
        Self::Utility,
        Self::Copy,
        Self::Call,
        Self::Unparsed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Select => "select",
            Self::Insert => "insert",
            Self::Update => "update",
            Self::Delete => "delete",
            Self::Merge => "merge",
            Self::Ddl => "ddl",
            Self::Transaction => "transaction",
            Self::Utility => "utility",
            Self::Copy => "copy",
            Self::Call => "call",
            Self::Unparsed => "unparsed",
        }
    }
}

/// How a statement moves the session's transaction state. For a multi-statement string this is
/// the net effect of its last transaction-control statement.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TxnEffect {
    #[default]
    None,
    Begin,
    /// COMMIT, END, ROLLBACK, ABORT, PREPARE TRANSACTION: the transaction block ends.
    End,
    Savepoint(String),
    Release(String),
    RollbackTo(String),
}

/// What the parse tree says about one statement text. The fingerprint is separate
/// ([`fingerprint`]): callers group texts before parsing them, and must not pay for it twice.
#[derive(Debug, Clone, PartialEq)]
pub struct StatementInfo {
    pub kind: StatementKind,
    /// True when executing it may change data (or when that cannot be ruled out).
    pub writes: bool,
    pub txn: TxnEffect,
    /// Number of statements in the text (a simple-query string may hold several).
    pub statements: usize,
    /// Its effects may reach beyond its database (roles, settings, files, other sessions, other
    /// databases or servers: `reach.rs`), or that cannot be ruled out.
    pub server_wide: bool,
    /// A `DO` block's code decided `server_wide`: fingerprints leave that code out, so other
    /// texts of the same fingerprint must be judged themselves.
    pub judged_by_body: bool,
}

/// Functions that change data or server state even when called from a plain SELECT.
/// User-defined functions cannot be judged from the text; read-only replay also runs its sessions
/// with `default_transaction_read_only = on`, so those still cannot write.
const WRITING_FUNCTIONS: &[&str] = &[
    "nextval",
    "setval",
    "lo_create",
    "lo_creat",
    "lo_unlink",
    "lo_import",
    "lo_from_bytea",
    "lo_put",
    "lowrite",
    "lo_truncate",
    "lo_truncate64",
    "pg_advisory_lock",
    "pg_advisory_xact_lock",
    "pg_try_advisory_lock",
    "pg_try_advisory_xact_lock",
    "pg_terminate_backend",
    "pg_cancel_backend",
    "pg_reload_conf",
    "pg_switch_wal",
    "pg_create_restore_point",
    "pg_notify",
    "pg_logical_emit_message",
    "pg_stat_reset",
    "pg_stat_statements_reset",
    "txid_current",
    "pg_current_xact_id",
    "dblink_exec",
];

/// Fingerprint only (cheap: no tree is handed back). Falls back to a hash of the whitespace- and
/// case-folded text when the parser rejects it, so unparseable statements still group sensibly.
pub fn fingerprint(sql: &str) -> u64 {
    match pg_query::fingerprint(sql, 0, 0) {
        Ok(fp) => fp.value,
        Err(_) => fallback_fingerprint(sql),
    }
}

fn fallback_fingerprint(sql: &str) -> u64 {
    // Case-folded, whitespace runs folded to one space; a leading run dropped.
    let mut h = Fnv::default();
    let mut last_space = true;
    for ch in sql.chars() {
        let c = if ch.is_whitespace() {
            if last_space {
                continue;
            }
            ' '
        } else {
            ch.to_ascii_lowercase()
        };
        last_space = c == ' ';
        h.write(c.encode_utf8(&mut [0u8; 4]).as_bytes());
    }
    h.finish()
}

/// Analyse one statement text (which may contain several statements).
pub fn analyze(sql: &str) -> StatementInfo {
    let parsed = match pg_query::parse(sql, 0) {
        Ok(p) => p,
        Err(_) => {
            return StatementInfo {
                kind: StatementKind::Unparsed,
                writes: true,
                txn: TxnEffect::None,
                statements: 1,
                server_wide: reach::by_words(sql),
                judged_by_body: false,
            }
        }
    };

    let mut kind: Option<StatementKind> = None;
    let mut writes = false;
    let mut txn = TxnEffect::None;
    let (mut server_wide, mut judged_by_body) = (false, false);
    let stmts = &parsed.protobuf.stmts;
    for raw in stmts {
        let Some(node) = raw.stmt.as_ref().and_then(|n| n.node.as_ref()) else {
            continue;
        };
        let (k, w) = top_level(node);
        if let NodeEnum::TransactionStmt(t) = node {
            txn = txn_effect(t);
        }
        // The kind of a multi-statement string is that of its most "significant" statement:
        // anything beats transaction control and utility, so "BEGIN; UPDATE …; COMMIT" is an update.
        kind = Some(match kind {
            None => k,
            Some(prev) if rank(k) > rank(prev) => k,
            Some(prev) => prev,
        });
        writes |= w;
        server_wide |= reach::top_level(node);
        if let Some(held) = reach::held_query(node) {
            server_wide |= held.nodes().into_iter().any(|(n, ..)| reach::nested(n));
        }
        if let Some(body) = reach::do_body(node) {
            judged_by_body = true;
            server_wide |= reach::by_words(body);
        }
    }
    // Nested writes: data-modifying CTEs, locking clauses in subqueries, writing functions.
    for (node, _, _, _) in parsed.protobuf.nodes() {
        writes |= nested_write(node);
        server_wide |= reach::nested(node);
    }
    StatementInfo {
        kind: kind.unwrap_or(StatementKind::Utility),
        writes,
        txn,
        statements: stmts.len().max(1),
        server_wide,
        judged_by_body,
    }
}

fn rank(kind: StatementKind) -> u8 {
    match kind {
        StatementKind::Transaction => 0,
        StatementKind::Utility => 1,
        StatementKind::Select => 2,
        _ => 3,
    }
}

/// Kind and write-ness of a top-level statement.
fn top_level(node: &NodeEnum) -> (StatementKind, bool) {
    use StatementKind as K;
    match node {
        NodeEnum::SelectStmt(s) => (
            K::Select,
            s.into_clause.is_some() || !s.locking_clause.is_empty(),
        ),
        NodeEnum::InsertStmt(_) => (K::Insert, true),
        NodeEnum::UpdateStmt(_) => (K::Update, true),
        NodeEnum::DeleteStmt(_) => (K::Delete, true),
        NodeEnum::MergeStmt(_) => (K::Merge, true),
        NodeEnum::CopyStmt(_) => (K::Copy, true),
        NodeEnum::CallStmt(_) | NodeEnum::DoStmt(_) => (K::Call, true),
        NodeEnum::TransactionStmt(t) => {
            // PREPARE TRANSACTION / COMMIT PREPARED touch two-phase state on the server.
            let two_phase = matches!(
                t.kind(),
                pg_query::protobuf::TransactionStmtKind::TransStmtPrepare
                    | pg_query::protobuf::TransactionStmtKind::TransStmtCommitPrepared
                    | pg_query::protobuf::TransactionStmtKind::TransStmtRollbackPrepared
            );
            (K::Transaction, two_phase)
        }
        // Session-local, cannot change data.
        NodeEnum::VariableSetStmt(_)
        | NodeEnum::VariableShowStmt(_)
        | NodeEnum::DiscardStmt(_)
        | NodeEnum::DeallocateStmt(_)
        | NodeEnum::PrepareStmt(_)
        | NodeEnum::DeclareCursorStmt(_)
        | NodeEnum::FetchStmt(_)
        | NodeEnum::ClosePortalStmt(_)
        | NodeEnum::ListenStmt(_)
        | NodeEnum::UnlistenStmt(_)
        | NodeEnum::ConstraintsSetStmt(_) => (K::Utility, false),
        // EXPLAIN without ANALYZE only plans; with ANALYZE it runs the statement, whose own
        // nodes are examined by `nested_write`.
        NodeEnum::ExplainStmt(_) => (K::Utility, false),
        // EXECUTE runs a statement we cannot see; NOTIFY, LOCK, VACUUM, CHECKPOINT act on shared
        // state. All are treated as writes.
        NodeEnum::ExecuteStmt(_)
        | NodeEnum::NotifyStmt(_)
        | NodeEnum::LockStmt(_)
        | NodeEnum::VacuumStmt(_)
        | NodeEnum::CheckPointStmt(_)
        | NodeEnum::ClusterStmt(_)
        | NodeEnum::ReindexStmt(_)
        | NodeEnum::LoadStmt(_) => (K::Utility, true),
        _ => (K::Ddl, true),
    }
}

fn nested_write(node: NodeRef<'_>) -> bool {
    match node {
        NodeRef::InsertStmt(_)
        | NodeRef::UpdateStmt(_)
        | NodeRef::DeleteStmt(_)
        | NodeRef::MergeStmt(_) => true,
        NodeRef::SelectStmt(s) => s.into_clause.is_some() || !s.locking_clause.is_empty(),
        NodeRef::FuncCall(_) => called_function(node).is_some_and(|name| {
            WRITING_FUNCTIONS
                .iter()
                .any(|w| w.eq_ignore_ascii_case(name))
        }),
        _ => false,
    }
}

fn txn_effect(t: &pg_query::protobuf::TransactionStmt) -> TxnEffect {
    use pg_query::protobuf::TransactionStmtKind as T;
    match t.kind() {
        T::TransStmtBegin | T::TransStmtStart => TxnEffect::Begin,
        T::TransStmtCommit | T::TransStmtRollback | T::TransStmtPrepare => TxnEffect::End,
        T::TransStmtSavepoint => TxnEffect::Savepoint(t.savepoint_name.clone()),
        T::TransStmtRelease => TxnEffect::Release(t.savepoint_name.clone()),
        T::TransStmtRollbackTo => TxnEffect::RollbackTo(t.savepoint_name.clone()),
        T::TransStmtCommitPrepared | T::TransStmtRollbackPrepared | T::Undefined => TxnEffect::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(sql: &str, kind: StatementKind, writes: bool) {
        let info = analyze(sql);
        assert_eq!((info.kind, info.writes), (kind, writes), "{sql}");
    }

    #[test]
    fn reads_and_writes_are_told_apart_by_the_tree() {
        use StatementKind as K;
        check("SELECT 1", K::Select, false);
        check(
            "/* app=shop */ SELECT * FROM t WHERE id = 1",
            K::Select,
            false,
        );
        check("-- leading\nselect 1", K::Select, false);
        check(
            "WITH x AS (INSERT INTO t VALUES (1) RETURNING *) SELECT * FROM x",
            K::Select,
            true,
        );
        check(
            "WITH d AS (DELETE FROM t RETURNING id) SELECT count(*) FROM d",
            K::Select,
            true,
        );
        check("SELECT * FROM t WHERE id = 1 FOR UPDATE", K::Select, true);
        check("SELECT * FROM t FOR SHARE SKIP LOCKED", K::Select, true);
        check(
            "SELECT * FROM (SELECT * FROM t FOR UPDATE) s",
            K::Select,
            true,
        );
        check("SELECT nextval('t_id_seq')", K::Select, true);
        check("SELECT pg_catalog.setval('s', 5)", K::Select, true);
        check("SELECT * INTO copy_t FROM t", K::Select, true);
        check(
            "SELECT lower(name), count(*) FROM t GROUP BY 1",
            K::Select,
            false,
        );
        check("INSERT INTO t VALUES (1)", K::Insert, true);
        check("UPDATE t SET a = 1", K::Update, true);
        check("DELETE FROM t", K::Delete, true);
        check("CREATE INDEX ON t (a)", K::Ddl, true);
        check("TRUNCATE t", K::Ddl, true);
        check("SET search_path = app", K::Utility, false);
        check("SHOW work_mem", K::Utility, false);
        check("EXPLAIN SELECT 1", K::Utility, false);
        check("EXPLAIN ANALYZE DELETE FROM t", K::Utility, true);
        check("BEGIN", K::Transaction, false);
        check("COPY t FROM STDIN", K::Copy, true);
        check("BEGIN; UPDATE t SET a = 1; COMMIT", K::Update, true);
        check("SELEKT broken", K::Unparsed, true);
    }

    #[test]
    fn transaction_control_is_recognised() {
        assert_eq!(analyze("BEGIN").txn, TxnEffect::Begin);
        assert_eq!(
            analyze("start transaction isolation level serializable").txn,
            TxnEffect::Begin
        );
        assert_eq!(analyze("COMMIT").txn, TxnEffect::End);
        assert_eq!(analyze("END").txn, TxnEffect::End);
        assert_eq!(analyze("ABORT").txn, TxnEffect::End);
        assert_eq!(analyze("ROLLBACK").txn, TxnEffect::End);
        assert_eq!(
            analyze("SAVEPOINT sp1").txn,
            TxnEffect::Savepoint("sp1".into())
        );
        assert_eq!(
            analyze("RELEASE SAVEPOINT sp1").txn,
            TxnEffect::Release("sp1".into())
        );
        assert_eq!(
            analyze("ROLLBACK TO SAVEPOINT sp1").txn,
            TxnEffect::RollbackTo("sp1".into())
        );
        assert_eq!(
            analyze("ROLLBACK TO sp1").txn,
            TxnEffect::RollbackTo("sp1".into())
        );
        assert_eq!(analyze("BEGIN; SELECT 1").txn, TxnEffect::Begin);
        assert_eq!(analyze("SELECT 1").txn, TxnEffect::None);
    }

    #[test]
    fn fingerprints_ignore_constants_only() {
        assert_eq!(
            fingerprint("SELECT * FROM t WHERE id = 1"),
            fingerprint("select * from t where id = 42")
        );
        assert_ne!(
            fingerprint("SELECT * FROM t WHERE id = 1"),
            fingerprint("SELECT * FROM u WHERE id = 1")
        );
        assert_eq!(
            fingerprint("not sql at  all"),
            fingerprint("NOT SQL AT ALL")
        );
    }
}
