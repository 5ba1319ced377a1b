//! Progress while a replay runs: the live counters the sessions bump, and the snapshots a
//! caller receives.

use std::sync::atomic::AtomicU64;

/// Live counters, read by the progress reporter.
#[derive(Debug, Default)]
pub struct Counters {
    pub executed: AtomicU64,
    pub errors: AtomicU64,
    pub skipped: AtomicU64,
    pub not_executed: AtomicU64,
    pub sessions_connecting: AtomicU64,
    pub sessions_active: AtomicU64,
    pub sessions_done: AtomicU64,
}

/// A progress snapshot.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Progress {
    pub elapsed_ms: u64,
    pub statements_planned: u64,
    pub executed: u64,
    pub errors: u64,
    pub skipped: u64,
    pub not_executed: u64,
    pub sessions_planned: u64,
    pub sessions_active: u64,
    pub sessions_done: u64,
    pub done: bool,
}

/// Receives progress snapshots (from a timer task; keep it cheap).
pub trait ProgressSink: Send + Sync {
    fn progress(&self, p: Progress);
}
