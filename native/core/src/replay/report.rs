//! What a replay produced: counts that always add up, per-session and per-fingerprint results.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::sql::StatementKind;
use crate::stats::LatencySummary;

/// Why a statement was deliberately not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Read-only mode and the statement may change data.
    ReadOnly,
    /// An earlier statement of its transaction failed; the transaction was rolled back.
    TransactionAborted,
    /// Its effects may reach beyond the target database (roles, server settings, other
    /// databases, the server's files and processes), and the replay was told not to send those.
    ServerWide,
}

/// Why a statement could not be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotExecutedReason {
    /// The session never got a connection.
    ConnectFailed,
    /// The connection broke before or while the statement ran.
    ConnectionLost,
    /// The server stopped answering; the run was ended.
    ServerUnavailable,
    /// The whole-run deadline passed.
    Deadline,
    /// The run was cancelled by the caller.
    Cancelled,
    /// The server did not answer within the statement timeout plus grace, even after a cancel
    /// request; the connection was abandoned.
    Unresponsive,
}

impl SkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::TransactionAborted => "transaction_aborted",
            Self::ServerWide => "server_wide",
        }
    }
}

impl NotExecutedReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ConnectFailed => "connect_failed",
            Self::ConnectionLost => "connection_lost",
            Self::ServerUnavailable => "server_unavailable",
            Self::Deadline => "deadline",
            Self::Cancelled => "cancelled",
            Self::Unresponsive => "unresponsive",
        }
    }
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Completed,
    ConnectFailed,
    ConnectionLost,
    ServerUnavailable,
    Deadline,
    Cancelled,
}

/// How the whole run ended. Anything but `Completed` means the results are incomplete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Completed,
    /// The server went away mid-replay.
    ServerUnavailable,
    DeadlineExceeded,
    Cancelled,
}

/// Executed / skipped / not executed, which always add up to `captured`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Accounting {
    pub captured: u64,
    pub executed: u64,
    pub ok: u64,
    pub errors: u64,
    pub skipped: u64,
    pub not_executed: u64,
    pub skipped_by_reason: BTreeMap<String, u64>,
    pub not_executed_by_reason: BTreeMap<String, u64>,
}

impl Accounting {
    pub fn adds_up(&self) -> bool {
        self.captured == self.executed + self.skipped + self.not_executed
            && self.executed == self.ok + self.errors
    }

    pub fn merge(&mut self, other: &Accounting) {
        self.captured += other.captured;
        self.executed += other.executed;
        self.ok += other.ok;
        self.errors += other.errors;
        self.skipped += other.skipped;
        self.not_executed += other.not_executed;
        for (k, v) in &other.skipped_by_reason {
            *self.skipped_by_reason.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.not_executed_by_reason {
            *self.not_executed_by_reason.entry(k.clone()).or_default() += v;
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionReport {
    /// Id in this replay (copies get new ids).
    pub id: u64,
    /// Id of the captured session it replays.
    pub source_id: u64,
    pub copy: u32,
    pub status: SessionStatus,
    /// The server's or client's message when the session did not complete.
    pub message: Option<String>,
    pub sqlstate: Option<String>,
    pub connect_attempts: u32,
    /// When the workload says the session starts, µs after replay start (after speed scaling).
    pub scheduled_start_us: u64,
    /// When its first statement was actually sent, µs after replay start.
    pub actual_start_us: Option<u64>,
    pub counts: Accounting,
}

/// One (SQLSTATE, first message) error group of a fingerprint.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorGroup {
    pub sqlstate: String,
    pub message: String,
    pub count: u64,
    /// Which captured statements failed, as (session index in the workload, statement index in
    /// that session): the first ones in the workload's order, at most
    /// [`super::tally::INSTANCES_KEPT`]. The comparison asks whether the same statements fail
    /// in every replay (a failure that does not depend on how sessions interleave).
    pub instances: Vec<(u32, u32)>,
}

/// How much of a replay has the server's own time per statement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ServerTimeReport {
    /// Successful statements.
    pub ok: u64,
    /// Those the server sent its duration line for.
    pub timed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FingerprintReport {
    /// 16 hex digits.
    pub fingerprint: String,
    pub normalized: String,
    pub kind: StatementKind,
    pub counts: Accounting,
    /// Latency of successful executions only: fast failures must not make a query look faster.
    pub latency: LatencySummary,
    /// Latency captured in the workload for the same statements.
    pub captured_latency: LatencySummary,
    pub rows: u64,
    pub errors: Vec<ErrorGroup>,
    /// Successful latencies (µs), ascending (sorted for the summaries without a copy); kept for
    /// comparisons, omitted from JSON.
    #[serde(skip)]
    pub samples: Vec<u32>,
    /// The server's own time of the successes it sent a duration line for, when measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_time: Option<LatencySummary>,
    /// Those times (µs), ascending; omitted from JSON like `samples`.
    #[serde(skip)]
    pub server_samples: Vec<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    pub status: RunStatus,
    /// Why the run did not complete, in one line.
    pub message: Option<String>,
    pub server_version: String,
    pub started_at: String,
    pub wall_time_us: u64,
    pub speed: f64,
    pub read_only: bool,
    pub sessions_planned: u64,
    pub sessions_completed: u64,
    pub sessions_failed: u64,
    /// Captured sessions (and their statements) left out by a class factor of 0.
    pub sessions_excluded: u64,
    pub statements_excluded: u64,
    pub totals: Accounting,
    pub latency: LatencySummary,
    pub sessions: Vec<SessionReport>,
    pub fingerprints: Vec<FingerprintReport>,
    pub warnings: Vec<String>,
    /// Generated keys carried from captured to replayed values; absent when the workload has
    /// none (or correlation was off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation: Option<super::keys::CorrelationReport>,
    /// Sequences aligned to capture time before the replay; absent when there were none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequences: Option<Vec<super::sequences::SequenceOutcome>>,
    /// How many successes have the server's own time; absent when it was not asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_time: Option<ServerTimeReport>,
}
