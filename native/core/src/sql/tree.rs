//! Names read out of PostgreSQL's parse tree, shared by the statement analysis (`analysis.rs`) and
//! the server-wide reach (`reach.rs`).

use pg_query::{NodeEnum, NodeRef};

/// The name a function call names, without its schema (`pg_catalog.setval` is `setval`).
pub(super) fn called_function(node: NodeRef<'_>) -> Option<&str> {
    let NodeRef::FuncCall(f) = node else {
        return None;
    };
    f.funcname.last().and_then(|n| match n.node.as_ref() {
        Some(NodeEnum::String(s)) => Some(s.sval.as_str()),
        _ => None,
    })
}
