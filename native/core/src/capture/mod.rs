//! Capture: PostgreSQL server logs (csvlog, jsonlog or stderr, plain or gzip, rotated files)
//! into a `.wkl` workload that both this engine and pg-retest replay.
//!
//! - [`source`], [`csvlog`], [`jsonlog`], [`stderr`] (with [`prefix`], the server's
//!   `log_line_prefix`): reading files into [`record::LogRecord`]s;
//! - [`time`]: log timestamps in any `log_timezone`;
//! - [`pairing`]: a session's lines into statements with start and duration, in both logging styles;
//! - [`params`], [`substitute`]: extended-protocol parameters back into the SQL;
//! - [`filter`]: the caller's filters and the capture's noise;
//! - [`password`]: statements that set or carry a password, never kept;
//! - [`kind`]: pg-retest's statement kinds and transaction ids;
//! - [`read`], [`sessions`], [`write`] and [`assemble`]: the capture's steps, in memory bounded
//!   whatever the logs' size (temporary files hold what does not fit), and the sidecar.
//!
//! The output depends only on the logs and the options: the same logs give a byte-identical
//! file (sessions ordered by start, `captured_at` = the first statement's start).

mod assemble;
mod csvlog;
pub mod filter;
mod jsonlog;
pub mod kind;
pub mod pairing;
pub mod params;
pub mod password;
pub mod prefix;
mod read;
pub mod record;
mod sessions;
pub mod source;
pub mod stderr;
pub mod substitute;
pub mod time;
pub mod wrapper;
mod write;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

pub use assemble::{capture, sidecar_path};
pub use filter::Filters;

/// What to capture and where to write it.
#[derive(Debug, Clone, Default)]
pub struct CaptureOptions {
    /// Log files in time order (rotated files: oldest first; the order within a session comes
    /// from its line numbers, so a wrong order does not scramble sessions).
    pub logs: Vec<PathBuf>,
    pub output: PathBuf,
    pub filters: Filters,
    /// The server's `log_line_prefix`, for stderr logs (verbatim); without it a stderr log is
    /// read with the known platform prefix that fits it.
    pub log_line_prefix: Option<String>,
    /// Time zone abbreviations → minutes east of UTC, beyond the built-in unambiguous ones.
    pub zone_offsets: BTreeMap<String, i32>,
    /// Written into the profile (informational); default `unknown`.
    pub source_host: Option<String>,
    pub pg_version: Option<String>,
}

/// What a capture is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Reading the log files (`bytes_read` of `bytes_total`).
    Reading,
    /// Putting each session's lines together and completing its statements (`statements` so
    /// far).
    Sorting,
    /// Writing the workload (`statements` of `statements_total`).
    Writing,
}

/// A progress snapshot.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CaptureProgress {
    pub stage: Stage,
    pub bytes_read: u64,
    pub bytes_total: u64,
    pub records: u64,
    pub statements: u64,
    pub statements_total: u64,
    pub done: bool,
}

impl CaptureProgress {
    pub(crate) fn reading(bytes_read: u64, bytes_total: u64, records: u64) -> Self {
        CaptureProgress {
            stage: Stage::Reading,
            bytes_read,
            bytes_total,
            records,
            statements: 0,
            statements_total: 0,
            done: false,
        }
    }
}

/// Why a capture failed: the input (exit 2) or writing the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureErrorKind {
    Input,
    Output,
}

#[derive(Debug, Clone)]
pub struct CaptureError {
    pub kind: CaptureErrorKind,
    pub message: String,
}

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CaptureError {}

/// A failed statement, by its place in the written workload.
#[derive(Debug, Clone, Serialize)]
pub struct FailedStatement {
    pub session_id: u64,
    /// 0-based position in the session's statements.
    pub statement_index: usize,
    pub sqlstate: String,
    pub message: String,
}

/// What a capture did; also the sidecar's content.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureSummary {
    pub format: &'static str,
    pub version: u32,
    pub workload: String,
    pub sidecar: String,
    pub inputs: Vec<source::InputSummary>,
    /// `min_duration` (statement and duration on one line), `statement_duration` (separate
    /// lines), `mixed`, or `none` when no statement was found.
    pub log_style: &'static str,
    pub sessions: u64,
    pub statements: u64,
    /// RFC 3339; the start of the first captured statement (also the profile's `captured_at`).
    pub first_statement_at: Option<String>,
    pub duration_us: u64,
    pub failed_statements: u64,
    /// Statements left out, by reason: filters (`database`, `user`, `application_name`,
    /// `time_window`, `noise`), statements that set or carry a password (`password`: a
    /// workload must not hold one in clear text) and what cannot be replayed faithfully
    /// (`truncated_parameters`, `missing_parameters`).
    pub excluded: BTreeMap<String, u64>,
    /// Statements logged at their start with neither a duration nor an error after them.
    pub missing_durations: u64,
    /// Bare `duration: X ms` lines that followed no logged statement (not those of a parse, bind
    /// or portal fetch): statements `log_statement` did not log. Beyond a few, a warning and
    /// `incomplete`.
    pub unpaired_durations: u64,
    /// Log entries read more than once (same session id and line number), captured once.
    pub duplicate_entries: u64,
    /// True when the log shows that statements are missing or incomplete (see `warnings`).
    pub incomplete: bool,
    pub warnings: Vec<String>,
    pub failed: Vec<FailedStatement>,
    /// Generated keys inferred from the captured statements and recorded on their producers
    /// (`response_values`), so that replay can carry the ids it gets to where they are used.
    pub keys: crate::keys::KeyStats,
}
