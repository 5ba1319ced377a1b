//! `statementExamples`: one real captured statement per fingerprint, so that the gate can
//! EXPLAIN what the workload actually ran (with its literals) rather than the normalized text,
//! whose `$n` placeholders PostgreSQL cannot plan without types.

use napi_derive::napi;
use pg_retest_core::example_setup::example_setups;

use crate::workload::Workload;

/// One fingerprint of a workload and a captured statement that has it.
#[napi(object)]
pub struct StatementExample {
    /// 16 hex digits, as in replay reports.
    pub fingerprint: String,
    /// The statement with literals replaced by `$n`.
    pub normalized: String,
    /// select, insert, update, … (the parse tree's kind, as in replay reports).
    pub kind: String,
    /// Whether the statement may change data (by the parse tree; unparsed text counts as a write).
    pub writes: bool,
    /// The first captured text with this fingerprint, literals included: not for public reports.
    pub example: String,
    /// The statements that ran before `example` in its transaction block (BEGIN excluded), for a
    /// probe that executes it; empty outside a block or when the block is long.
    pub setup: Vec<String>,
}

/// A probe replays at most this many statements before an example.
const MAX_SETUP_STATEMENTS: usize = 50;

/// Every fingerprint of `workload` with one captured statement of it, in the order the
/// fingerprints were first seen.
#[napi(catch_unwind)]
pub fn statement_examples(workload: &Workload) -> Vec<StatementExample> {
    let inner = &workload.inner.workload;
    let setups = example_setups(inner, MAX_SETUP_STATEMENTS);
    inner
        .fingerprints()
        .iter()
        .zip(setups)
        .map(|(entry, setup)| StatementExample {
            fingerprint: format!("{:016x}", entry.fingerprint),
            normalized: entry.normalized.clone(),
            kind: entry.kind.as_str().to_string(),
            writes: entry.writes,
            example: inner.text(entry.example_text).to_string(),
            setup: setup
                .into_iter()
                .map(|t| inner.text(t).to_string())
                .collect(),
        })
        .collect()
}
