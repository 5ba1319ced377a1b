//! The pg-retest workload profile, field for field.
//!
//! Field order is the on-disk order: rmp-serde writes structs as positional arrays, so reordering a
//! field here changes the file format. Trailing fields that older pg-retest versions did not write
//! carry `#[serde(default)]`, which is what lets a short array (v1 queries, 3-element metadata)
//! decode. Never add a field to these structs: pg-retest rejects arrays longer than it expects, so
//! anything of our own goes into a sidecar file instead.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A captured workload: sessions of timed SQL statements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadProfile {
    /// 1 or 2; pg-retest never branches on it and neither do we.
    pub version: u8,
    /// When the profile was built (not when capture started).
    pub captured_at: DateTime<Utc>,
    pub source_host: String,
    pub pg_version: String,
    /// `csv_log`, `proxy`, `synthetic`, …; `+compiled` suffix means sequences should be restored.
    pub capture_method: String,
    pub sessions: Vec<Session>,
    pub metadata: Metadata,
}

/// One client connection as captured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: u64,
    /// Informational: replay always uses the single target connection string.
    pub user: String,
    /// Informational, like `user`.
    pub database: String,
    pub queries: Vec<Query>,
}

/// One statement (or a multi-statement simple-query string) with its captured timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Query {
    /// Sent verbatim with the simple-query protocol.
    pub sql: String,
    /// Microseconds from the start of the replay timeline (see the engine docs for the rule).
    pub start_offset_us: u64,
    /// Latency observed at capture time.
    pub duration_us: u64,
    /// Kind as classified at capture time (pg-retest's prefix rules; we re-classify by parsing).
    pub kind: QueryKind,
    #[serde(default)]
    pub transaction_id: Option<u64>,
    #[serde(default)]
    pub response_values: Option<Vec<ResponseRow>>,
}

/// pg-retest's statement kinds, written as their names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum QueryKind {
    Select,
    Insert,
    Update,
    Delete,
    Ddl,
    Begin,
    Commit,
    Rollback,
    Other,
}

/// A row returned at capture time (`[[column, text value], …]`; NULL is the string "NULL").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseRow {
    pub columns: Vec<(String, String)>,
}

/// Totals recorded when the profile was written, plus optional correlation data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    pub total_queries: u64,
    pub total_sessions: u64,
    pub capture_duration_us: u64,
    #[serde(default)]
    pub sequence_snapshot: Option<Vec<SequenceState>>,
    #[serde(default)]
    pub pk_map: Option<Vec<TablePk>>,
}

/// A sequence as it was when captured (from `pg_sequences`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceState {
    pub schema: String,
    pub name: String,
    pub last_value: Option<i64>,
    pub increment_by: i64,
    pub start_value: i64,
    pub min_value: i64,
    pub max_value: i64,
    pub cycle: bool,
    pub is_called: bool,
}

/// A table's primary key columns in ordinal order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TablePk {
    pub schema: String,
    pub table: String,
    pub columns: Vec<String>,
}

impl WorkloadProfile {
    /// Number of statements over all sessions (recomputed; `metadata.total_queries` may be stale).
    pub fn statement_count(&self) -> u64 {
        self.sessions.iter().map(|s| s.queries.len() as u64).sum()
    }
}
