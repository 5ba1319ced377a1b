//! One log entry, whichever format it came from: only the fields capture uses.

/// A csvlog row or a jsonlog object, reduced to what capture needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogRecord {
    /// As written (`2026-11-22 11:15:33.687 EST`); parsed later, when the record is used.
    pub log_time: String,
    pub user: String,
    pub database: String,
    /// `6b031525.e8e`: backend start time and pid, unique per connection.
    pub session_id: String,
    /// Position in the session; orders a session's lines across rotated files.
    pub session_line: u64,
    /// `SELECT`, `idle`, `PARSE`, `BIND`, … (the ps display).
    pub command_tag: String,
    /// `LOG`, `ERROR`, `FATAL`, …
    pub severity: String,
    pub sqlstate: String,
    pub message: String,
    pub detail: String,
    pub context: String,
    /// The statement an ERROR belongs to (csvlog `query`, jsonlog `statement`).
    pub query: String,
    pub application_name: String,
}
