//! The first step of a capture: read every log file once and keep the lines that matter, sorted
//! by session and line number, in bounded memory.
//!
//! A log interleaves thousands of sessions, and a session's lines may be spread over rotated
//! files (given in any order: the line number puts them back in order). The lines go into a
//! [`Sorter`] keyed by (session, line number, arrival), which spills sorted runs to disk when
//! its budget is reached; reading it back gives each session's lines together and in order.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::pairing::matters;
use super::record::LogLine;
use super::source::{read_log_file, InputSummary, StderrInputs};
use super::{CaptureError, CaptureErrorKind, CaptureOptions, CaptureProgress, Stage};
use crate::spill::{Decoder, Encoder, Sorted, Sorter, Spill, SpillDir};

/// Records between progress snapshots.
const PROGRESS_EVERY: u64 = 20_000;
/// Memory for log lines waiting to be sorted.
const LINES_BUDGET: usize = 48 << 20;

/// A line that matters, keyed for the sort; the fields pairing reads are packed in `data`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct SessionLine {
    /// The session id's first 16 bytes, zero-padded: compares like the id itself, in one step
    /// for the ids PostgreSQL writes (`6afdf740.c2c`).
    prefix: u128,
    pub session: Box<str>,
    pub line: u64,
    /// Arrival order: equal line numbers (a session restarted in another file?) keep it.
    pub seq: u64,
    data: Box<[u8]>,
}

fn prefix(session: &str) -> u128 {
    let mut b = [0u8; 16];
    let n = session.len().min(16);
    b[..n].copy_from_slice(&session.as_bytes()[..n]);
    u128::from_be_bytes(b)
}

const LOG: u8 = 0;
const ERROR: u8 = 1;

impl SessionLine {
    fn new(l: &LogLine<'_>, seq: u64, enc: &mut Encoder) -> SessionLine {
        enc.clear();
        enc.str(l.log_time);
        enc.str(l.user);
        enc.str(l.database);
        enc.str(l.application_name);
        enc.u8(if l.severity == "ERROR" { ERROR } else { LOG });
        enc.str(l.sqlstate);
        enc.str(l.message);
        enc.str(l.detail);
        enc.str(l.context);
        enc.str(l.query);
        SessionLine {
            prefix: prefix(l.session_id),
            session: l.session_id.into(),
            line: l.session_line,
            seq,
            data: enc.as_bytes().into(),
        }
    }

    /// The line as pairing reads it, borrowing from this record.
    pub fn view(&self) -> io::Result<LogLine<'_>> {
        let mut d = Decoder::new(&self.data);
        Ok(LogLine {
            log_time: d.str()?,
            user: d.str()?,
            database: d.str()?,
            application_name: d.str()?,
            severity: if d.u8()? == ERROR { "ERROR" } else { "LOG" },
            sqlstate: d.str()?,
            message: d.str()?,
            detail: d.str()?,
            context: d.str()?,
            query: d.str()?,
            session_id: &self.session,
            session_line: self.line,
            // Only parse and bind durations are told apart by their tag, and they never get here.
            command_tag: "",
            // Only client backends' lines get here.
            backend_type: "",
            leader_pid: "",
        })
    }
}

impl Spill for SessionLine {
    fn encode(&self, out: &mut Encoder) {
        out.str(&self.session);
        out.u64(self.line);
        out.u64(self.seq);
        out.bytes(&self.data);
    }
    fn decode(input: &mut Decoder<'_>) -> io::Result<Self> {
        let session = input.str()?;
        Ok(SessionLine {
            prefix: prefix(session),
            session: session.into(),
            line: input.u64()?,
            seq: input.u64()?,
            data: input.bytes()?.into(),
        })
    }
    fn memory(&self) -> usize {
        // Two allocations, with the allocator's own overhead.
        self.session.len() + self.data.len() + 32
    }
}

/// What reading found.
pub(super) struct Reading {
    pub lines: Sorted<SessionLine>,
    pub inputs: Vec<InputSummary>,
    pub records: u64,
    pub bytes_read: u64,
    /// Warnings about how stderr logs were read (`%t`, sessions by pid, skipped lines).
    pub notes: Vec<String>,
}

/// Reads every log of `options`, keeping the lines that matter.
pub(super) fn read_logs(
    options: &CaptureOptions,
    dir: &SpillDir,
    bytes_total: u64,
    progress: &dyn Fn(CaptureProgress),
) -> Result<Reading, CaptureError> {
    let read = Arc::new(AtomicU64::new(0));
    let mut sorter = Sorter::new(dir, "lines", LINES_BUDGET);
    let mut records = 0u64;
    let mut inputs = Vec::new();
    let mut enc = Encoder::default();
    let mut spill_error: Option<io::Error> = None;
    let mut stderr = StderrInputs::new(options.log_line_prefix.clone());
    progress(CaptureProgress::reading(0, bytes_total, 0));
    for path in &options.logs {
        let summary = read_log_file(path, Arc::clone(&read), dir.path(), &mut stderr, |l| {
            records += 1;
            if records.is_multiple_of(PROGRESS_EVERY) {
                progress(CaptureProgress::reading(
                    read.load(Ordering::Relaxed),
                    bytes_total,
                    records,
                ));
            }
            // A parallel worker's lines (its own session id, no user or database) repeat what its
            // leader logs; background processes run no client statement.
            if l.session_id.is_empty()
                || !l.is_client_backend()
                || !matters(l.severity, l.message, l.command_tag, l.query)
            {
                return Ok(());
            }
            let line = SessionLine::new(l, sorter.len(), &mut enc);
            sorter.push(line).map_err(|e| {
                spill_error = Some(e);
                "stopped".to_string()
            })
        });
        match (summary, spill_error.take()) {
            (_, Some(e)) => return Err(spill_failed(dir, e)),
            (Err(message), None) => {
                return Err(CaptureError {
                    kind: CaptureErrorKind::Input,
                    message,
                })
            }
            (Ok(summary), None) => inputs.push(summary),
        }
    }
    progress(CaptureProgress {
        stage: Stage::Sorting,
        ..CaptureProgress::reading(read.load(Ordering::Relaxed), bytes_total, records)
    });
    let lines = sorter.finish().map_err(|e| spill_failed(dir, e))?;
    Ok(Reading {
        lines,
        inputs,
        records,
        bytes_read: read.load(Ordering::Relaxed),
        notes: stderr.notes(),
    })
}

/// Temporary files could not be written or read back (a full disk, most likely).
pub(super) fn spill_failed(dir: &SpillDir, e: io::Error) -> CaptureError {
    CaptureError {
        kind: CaptureErrorKind::Output,
        message: format!(
            "cannot use temporary files in {}: {e}; a capture needs free space of about twice the logs' size next to its output",
            dir.path().parent().unwrap_or(dir.path()).display()
        ),
    }
}
