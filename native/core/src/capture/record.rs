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
    /// `client backend`, `parallel worker`, `autovacuum worker`, … (csvlog 13+, jsonlog); empty
    /// when the log does not say.
    pub backend_type: String,
    /// The leader's pid, for a parallel worker (csvlog 14+, jsonlog); empty otherwise.
    pub leader_pid: String,
}

/// A log entry as a reader sees it, borrowing from the reader's buffer: most of a busy log is
/// dropped without a single allocation (parse and bind lines, checkpoints, connections).
#[derive(Debug, Clone, Copy, Default)]
pub struct LogLine<'a> {
    pub log_time: &'a str,
    pub user: &'a str,
    pub database: &'a str,
    pub session_id: &'a str,
    pub session_line: u64,
    pub command_tag: &'a str,
    pub severity: &'a str,
    pub sqlstate: &'a str,
    pub message: &'a str,
    pub detail: &'a str,
    pub context: &'a str,
    pub query: &'a str,
    pub application_name: &'a str,
    pub backend_type: &'a str,
    pub leader_pid: &'a str,
}

impl LogRecord {
    pub fn as_line(&self) -> LogLine<'_> {
        LogLine {
            log_time: &self.log_time,
            user: &self.user,
            database: &self.database,
            session_id: &self.session_id,
            session_line: self.session_line,
            command_tag: &self.command_tag,
            severity: &self.severity,
            sqlstate: &self.sqlstate,
            message: &self.message,
            detail: &self.detail,
            context: &self.context,
            query: &self.query,
            application_name: &self.application_name,
            backend_type: &self.backend_type,
            leader_pid: &self.leader_pid,
        }
    }
}

impl LogLine<'_> {
    /// True when the entry is a client's own session: not a parallel worker (whose ERROR repeats
    /// its leader's, under a session id of its own), nor any other background process. Logs
    /// without `backend_type` (csvlog before PostgreSQL 13) are taken as they are.
    pub fn is_client_backend(&self) -> bool {
        if !self.leader_pid.is_empty() || self.backend_type == "parallel worker" {
            return false;
        }
        self.backend_type.is_empty() || self.backend_type == "client backend"
    }

    pub fn to_record(&self) -> LogRecord {
        LogRecord {
            log_time: self.log_time.into(),
            user: self.user.into(),
            database: self.database.into(),
            session_id: self.session_id.into(),
            session_line: self.session_line,
            command_tag: self.command_tag.into(),
            severity: self.severity.into(),
            sqlstate: self.sqlstate.into(),
            message: self.message.into(),
            detail: self.detail.into(),
            context: self.context.into(),
            query: self.query.into(),
            application_name: self.application_name.into(),
            backend_type: self.backend_type.into(),
            leader_pid: self.leader_pid.into(),
        }
    }
}
