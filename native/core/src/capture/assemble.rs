//! The capture itself: read the logs, pair each session's lines, complete the SQL, filter, and
//! assemble a pg-retest profile with offsets on one global timeline, plus the sidecar.
//!
//! Offsets: `start_offset_us` = statement start − start of the earliest captured statement, for
//! every session. pg-retest calls the field session-relative, but its replay sleeps every session
//! until `replay start + offset` from one shared instant, so global offsets keep the arrival
//! pattern there too (see docs/capture.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::kind::{pg_retest_kind, TransactionCounter};
use super::pairing::{pair_session, LoggedStatement, Style};
use super::record::LogRecord;
use super::source::read_log_file;
use super::substitute::{has_placeholders, substitute};
use super::time::{Micros, Zones};
use super::{
    CaptureError, CaptureErrorKind, CaptureOptions, CaptureProgress, CaptureSummary,
    FailedStatement,
};
use crate::wkl::{self, Metadata, Query, Session, WorkloadProfile};

/// Records between progress snapshots.
const PROGRESS_EVERY: u64 = 20_000;
/// The style heuristics need this many statements before they say anything.
const MIN_STATEMENTS_FOR_HINTS: usize = 20;

/// `workload.wkl` → `workload.wkl.capture.json`.
pub fn sidecar_path(workload: &Path) -> PathBuf {
    let mut name = workload
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".capture.json");
    workload.with_file_name(name)
}

fn input_error(message: String) -> CaptureError {
    CaptureError {
        kind: CaptureErrorKind::Input,
        message,
    }
}

/// A statement that made it into the workload, before numbering.
struct Kept {
    start_us: Micros,
    duration_us: u64,
    sql: String,
    failed: Option<super::pairing::Failure>,
}

struct SessionOut {
    key: String,
    user: String,
    database: String,
    statements: Vec<Kept>,
}

/// Only these lines matter; the rest of a busy log is dropped as it is read.
fn relevant(r: &LogRecord) -> bool {
    if r.session_id.is_empty() {
        return false;
    }
    match r.severity.as_str() {
        "LOG" => {
            r.message.starts_with("duration: ")
                || r.message.starts_with("statement: ")
                || r.message.starts_with("execute ")
        }
        "ERROR" => !r.query.is_empty(),
        _ => false,
    }
}

/// Runs a capture; `progress` gets a snapshot now and then and a last one with `done`.
pub fn capture(
    options: &CaptureOptions,
    progress: &dyn Fn(CaptureProgress),
) -> Result<CaptureSummary, CaptureError> {
    if options.logs.is_empty() {
        return Err(input_error(
            "no log file given; pass --log FILE (csvlog or jsonlog, plain or .gz)".into(),
        ));
    }
    let zones = Zones::new(options.zone_offsets.clone());
    let mut bytes_total = 0;
    for path in &options.logs {
        let meta = std::fs::metadata(path)
            .map_err(|e| input_error(format!("cannot read log file {}: {e}", path.display())))?;
        bytes_total += meta.len();
    }

    // Read: keep the relevant lines, grouped by session, in a stable order.
    let read = Arc::new(AtomicU64::new(0));
    let mut records_seen = 0u64;
    let mut by_session: BTreeMap<String, Vec<(u64, u64, LogRecord)>> = BTreeMap::new();
    let mut inputs = Vec::new();
    let mut sequence = 0u64;
    progress(CaptureProgress {
        bytes_read: 0,
        bytes_total,
        records: 0,
        done: false,
    });
    for path in &options.logs {
        let summary = read_log_file(path, Arc::clone(&read), |r| {
            records_seen += 1;
            if records_seen.is_multiple_of(PROGRESS_EVERY) {
                progress(CaptureProgress {
                    bytes_read: read.load(Ordering::Relaxed),
                    bytes_total,
                    records: records_seen,
                    done: false,
                });
            }
            if relevant(&r) {
                sequence += 1;
                by_session.entry(r.session_id.clone()).or_default().push((
                    r.session_line,
                    sequence,
                    r,
                ));
            }
            Ok(())
        })
        .map_err(input_error)?;
        inputs.push(summary);
    }

    // Pair and complete.
    let (mut combined, mut start_lines) = (0u64, 0u64);
    let mut excluded: BTreeMap<String, u64> = BTreeMap::new();
    let mut missing_durations = 0u64;
    let mut sessions: Vec<SessionOut> = Vec::new();
    let mut shortest_duration: Option<u64> = None;
    let mut timed = 0usize;
    for (key, mut records) in by_session {
        records.sort_by_key(|(line, seq, _)| (*line, *seq));
        let records: Vec<LogRecord> = records.into_iter().map(|(_, _, r)| r).collect();
        let first = &records[0];
        let (user, database, application) = (
            first.user.clone(),
            first.database.clone(),
            first.application_name.clone(),
        );
        let logged = pair_session(&records, &zones)
            .map_err(|e| input_error(format!("session {key}: {e}")))?;
        let mut kept = Vec::new();
        for s in logged {
            let sql = match complete_sql(&s) {
                Ok(sql) => sql,
                Err(reason) => {
                    *excluded.entry(reason.into()).or_default() += 1;
                    continue;
                }
            };
            if let Some(reason) =
                options
                    .filters
                    .exclude(&database, &user, &application, s.start_us, &sql)
            {
                *excluded.entry(reason.as_str().into()).or_default() += 1;
                continue;
            }
            match s.style {
                Style::Combined => combined += 1,
                Style::StartLine => start_lines += 1,
                Style::ErrorOnly => {}
            }
            if s.duration_missing {
                missing_durations += 1;
            } else if s.failed.is_none() {
                timed += 1;
                shortest_duration =
                    Some(shortest_duration.map_or(s.duration_us, |d| d.min(s.duration_us)));
            }
            kept.push(Kept {
                start_us: s.start_us,
                duration_us: s.duration_us,
                sql,
                failed: s.failed,
            });
        }
        if !kept.is_empty() {
            sessions.push(SessionOut {
                key,
                user,
                database,
                statements: kept,
            });
        }
    }

    // Number sessions by start (then by the server's session id): deterministic.
    sessions.sort_by(|a, b| {
        (a.statements[0].start_us, &a.key).cmp(&(b.statements[0].start_us, &b.key))
    });
    let t0 = sessions
        .iter()
        .flat_map(|s| s.statements.iter().map(|q| q.start_us))
        .min();
    let end = sessions
        .iter()
        .flat_map(|s| {
            s.statements
                .iter()
                .map(|q| q.start_us + q.duration_us as i64)
        })
        .max();
    let mut txns = TransactionCounter::default();
    let mut failed = Vec::new();
    let mut out_sessions = Vec::with_capacity(sessions.len());
    for (index, s) in sessions.into_iter().enumerate() {
        let id = index as u64 + 1;
        let kinds: Vec<_> = s
            .statements
            .iter()
            .map(|q| pg_retest_kind(&q.sql))
            .collect();
        let txn_ids = txns.assign(&kinds);
        let mut queries = Vec::with_capacity(s.statements.len());
        for (i, q) in s.statements.into_iter().enumerate() {
            if let Some(f) = q.failed {
                failed.push(FailedStatement {
                    session_id: id,
                    statement_index: i,
                    sqlstate: f.sqlstate,
                    message: f.message,
                });
            }
            queries.push(Query {
                sql: q.sql,
                start_offset_us: u64::try_from(q.start_us - t0.unwrap_or(0)).unwrap_or(0),
                duration_us: q.duration_us,
                kind: kinds[i],
                transaction_id: txn_ids[i],
                response_values: None,
            });
        }
        out_sessions.push(Session {
            id,
            user: s.user,
            database: s.database,
            queries,
        });
    }

    let first_at = t0.and_then(DateTime::<Utc>::from_timestamp_micros);
    let duration_us = match (t0, end) {
        (Some(a), Some(b)) => u64::try_from(b - a).unwrap_or(0),
        _ => 0,
    };
    let statements: u64 = out_sessions.iter().map(|s| s.queries.len() as u64).sum();
    let mut profile = WorkloadProfile {
        version: 2,
        captured_at: first_at.unwrap_or(DateTime::<Utc>::UNIX_EPOCH),
        source_host: options
            .source_host
            .clone()
            .unwrap_or_else(|| "unknown".into()),
        pg_version: options
            .pg_version
            .clone()
            .unwrap_or_else(|| "unknown".into()),
        capture_method: "csv_log".into(),
        metadata: Metadata {
            total_queries: statements,
            total_sessions: out_sessions.len() as u64,
            capture_duration_us: duration_us,
            sequence_snapshot: None,
            pk_map: None,
        },
        sessions: out_sessions,
    };

    // Keys are inferred over the whole capture (a session's ids may be used by another) and
    // written on their producers, so the file carries its links.
    let keys = crate::keys::record_inferred(&mut profile);

    let log_style = match (combined > 0, start_lines > 0) {
        (true, false) => "min_duration",
        (false, true) => "statement_duration",
        (true, true) => "mixed",
        (false, false) => "none",
    };
    let warnings = warnings(
        &excluded,
        missing_durations,
        log_style,
        shortest_duration,
        timed,
        statements,
    );
    let incomplete = excluded.contains_key("truncated_parameters")
        || excluded.contains_key("missing_parameters")
        || missing_durations > 0
        || warnings
            .iter()
            .any(|w| w.contains("log_min_duration_statement"));
    if statements == 0 {
        return Err(input_error(format!(
            "no statement to capture in {} ({} lines read, {} left out by filters or as unreplayable); \
             log with log_min_duration_statement = 0, or log_statement = 'all' and log_duration = on, in English (lc_messages = 'C')",
            options.logs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
            records_seen,
            excluded.values().sum::<u64>()
        )));
    }

    let sidecar = sidecar_path(&options.output);
    let summary = CaptureSummary {
        format: "pg-retest-action capture",
        version: 1,
        workload: options.output.display().to_string(),
        sidecar: sidecar.display().to_string(),
        inputs,
        log_style,
        sessions: profile.sessions.len() as u64,
        statements,
        first_statement_at: first_at
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)),
        duration_us,
        failed_statements: failed.len() as u64,
        excluded,
        missing_durations,
        incomplete,
        warnings,
        failed,
        keys,
    };
    wkl::write_workload(&options.output, &profile).map_err(|e| CaptureError {
        kind: CaptureErrorKind::Output,
        message: e.to_string(),
    })?;
    let json = serde_json::to_vec_pretty(&summary).expect("the summary serializes");
    write_file(&sidecar, &json)?;
    progress(CaptureProgress {
        bytes_read: read.load(Ordering::Relaxed),
        bytes_total,
        records: records_seen,
        done: true,
    });
    Ok(summary)
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CaptureError> {
    let temp = path.with_extension("json.tmp");
    std::fs::write(&temp, bytes)
        .and_then(|_| std::fs::rename(&temp, path))
        .map_err(|e| CaptureError {
            kind: CaptureErrorKind::Output,
            message: format!("cannot write {}: {e}", path.display()),
        })
}

/// The SQL to replay, or why there is none that would be faithful.
fn complete_sql(s: &LoggedStatement) -> Result<String, &'static str> {
    if let Some(p) = &s.params {
        if !p.truncated.is_empty() && (s.extended || has_placeholders(&s.sql)) {
            return Err("truncated_parameters");
        }
    }
    // `statement:` text is what the client sent; `$n` there belongs to the SQL itself (PREPARE).
    if !s.extended && s.params.is_none() {
        return Ok(s.sql.clone());
    }
    if !has_placeholders(&s.sql) {
        return Ok(s.sql.clone());
    }
    let empty = BTreeMap::new();
    let values = s.params.as_ref().map_or(&empty, |p| &p.values);
    substitute(&s.sql, values).map_err(|_| "missing_parameters")
}

fn warnings(
    excluded: &BTreeMap<String, u64>,
    missing_durations: u64,
    log_style: &str,
    shortest: Option<u64>,
    timed: usize,
    statements: u64,
) -> Vec<String> {
    let mut w = Vec::new();
    if let Some(n) = excluded.get("truncated_parameters") {
        w.push(format!(
            "{n} statement(s) left out: a bind parameter was cut by log_parameter_max_length; set it to -1 to log whole values"
        ));
    }
    if let Some(n) = excluded.get("missing_parameters") {
        w.push(format!(
            "{n} statement(s) left out: placeholders without logged values (failed extended-protocol statements need log_parameter_max_length_on_error = -1)"
        ));
    }
    if missing_durations > 0 {
        w.push(format!(
            "{missing_durations} statement(s) have no logged duration (captured with 0 µs); turn on log_duration with log_statement = 'all'"
        ));
    }
    if log_style == "min_duration" && timed >= MIN_STATEMENTS_FOR_HINTS {
        if let Some(d) = shortest.filter(|d| *d >= 1_000) {
            w.push(format!(
                "the shortest logged duration is {:.1} ms over {timed} statements: log_min_duration_statement looks > 0, so faster statements are missing; set it to 0",
                d as f64 / 1000.0
            ));
        }
    }
    let _ = statements;
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::params::parse_params;

    fn logged(sql: &str, extended: bool, detail: &str) -> LoggedStatement {
        LoggedStatement {
            start_us: 0,
            duration_us: 1,
            sql: sql.into(),
            extended,
            params: parse_params(detail),
            failed: None,
            duration_missing: false,
            style: Style::Combined,
        }
    }

    #[test]
    fn completes_or_refuses() {
        assert_eq!(
            complete_sql(&logged(
                "SELECT $1, $2",
                true,
                "parameters: $1 = 'a', $2 = NULL"
            ))
            .unwrap(),
            "SELECT 'a', NULL"
        );
        assert_eq!(
            complete_sql(&logged("SELECT $1", true, "parameters: $1 = 'aaaa...'")),
            Err("truncated_parameters")
        );
        assert_eq!(
            complete_sql(&logged("SELECT $1", true, "")),
            Err("missing_parameters")
        );
        assert_eq!(
            complete_sql(&logged("PREPARE p AS SELECT $1", false, "")).unwrap(),
            "PREPARE p AS SELECT $1"
        );
        assert_eq!(
            complete_sql(&logged("SELECT 1", true, "")).unwrap(),
            "SELECT 1"
        );
    }

    #[test]
    fn a_failed_statement_takes_its_parameters_from_the_error_context() {
        let s = logged(
            "select 1/$1::int",
            false,
            "unnamed portal with parameters: $1 = '0'",
        );
        assert_eq!(complete_sql(&s).unwrap(), "select 1/'0'::int");
    }

    #[test]
    fn sidecar_name() {
        assert_eq!(
            sidecar_path(Path::new("/x/w.wkl")),
            PathBuf::from("/x/w.wkl.capture.json")
        );
    }

    #[test]
    fn hints_at_a_duration_threshold() {
        let w = warnings(&BTreeMap::new(), 0, "min_duration", Some(250_000), 50, 50);
        assert!(w[0].contains("log_min_duration_statement"), "{w:?}");
        assert!(warnings(&BTreeMap::new(), 0, "min_duration", Some(20), 50, 50).is_empty());
    }

    fn write_log(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const CSV: &str = "\
2026-11-22 11:15:21.000 EST,\"app\",\"shop\",1,\"[local]\",aa.1,1,\"SELECT\",2026-11-22 11:15:21 EST,3/6,0,LOG,00000,\"duration: 1.000 ms  execute <unnamed>: SELECT $1, '$1'\",\"parameters: $1 = 'it''s'\",,,,,,,,\"web\",\"client backend\",,0
2026-11-22 11:15:22.000 EST,\"app\",\"shop\",2,\"[local]\",bb.2,1,\"SELECT\",2026-11-22 11:15:22 EST,3/6,0,LOG,00000,\"duration: 2.000 ms  statement: BEGIN\",,,,,,,,,\"web\",\"client backend\",,0
2026-11-22 11:15:22.500 EST,\"app\",\"shop\",2,\"[local]\",bb.2,2,\"SELECT\",2026-11-22 11:15:22 EST,3/6,0,ERROR,22012,\"division by zero\",,,,,,\"select 1/0\",,,\"web\",\"client backend\",,0
2026-11-22 11:15:23.000 EST,\"app\",\"shop\",2,\"[local]\",bb.2,3,\"SELECT\",2026-11-22 11:15:22 EST,3/6,0,LOG,00000,\"duration: 0.100 ms  statement: ROLLBACK\",,,,,,,,,\"web\",\"client backend\",,0
2026-11-22 11:15:23.000 EST,\"app\",\"shop\",2,\"[local]\",bb.2,4,\"SHOW\",2026-11-22 11:15:22 EST,3/6,0,LOG,00000,\"duration: 0.100 ms  statement: SHOW work_mem\",,,,,,,,,\"web\",\"client backend\",,0
";

    #[test]
    fn captures_a_csvlog_deterministically() {
        let dir = tempfile::tempdir().unwrap();
        let log = write_log(dir.path(), "a.csv", CSV);
        let out = dir.path().join("w.wkl");
        let opts = CaptureOptions {
            logs: vec![log],
            output: out.clone(),
            ..Default::default()
        };
        let s = capture(&opts, &|_| {}).unwrap();
        assert_eq!((s.sessions, s.statements, s.failed_statements), (2, 4, 1));
        assert_eq!(s.excluded.get("noise"), Some(&1));
        let first = std::fs::read(&out).unwrap();
        let p = wkl::read_workload(&out).unwrap();
        assert_eq!(p.sessions[0].queries[0].sql, "SELECT 'it''s', '$1'");
        assert_eq!(p.sessions[0].queries[0].start_offset_us, 0);
        // Session 1 starts at 20.999 (ends 21.000 after 1 ms), session 2 at 21.998.
        assert_eq!(p.sessions[1].queries[0].start_offset_us, 999_000);
        assert_eq!(
            p.sessions[1]
                .queries
                .iter()
                .map(|q| q.transaction_id)
                .collect::<Vec<_>>(),
            vec![Some(1), Some(1), Some(1)]
        );
        assert_eq!(s.failed[0].session_id, 2);
        assert_eq!(s.failed[0].statement_index, 1);
        assert_eq!(p.captured_at.to_rfc3339(), "2026-11-22T16:15:20.999+00:00");
        capture(&opts, &|_| {}).unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), first, "same log, same bytes");
        assert!(sidecar_path(&out).exists());
    }

    #[test]
    fn gzip_input_gives_the_same_workload() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let plain = write_log(dir.path(), "a.csv", CSV);
        let gz = dir.path().join("a.csv.gz");
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        enc.write_all(CSV.as_bytes()).unwrap();
        enc.finish().unwrap();
        let (a, b) = (dir.path().join("a.wkl"), dir.path().join("b.wkl"));
        capture(
            &CaptureOptions {
                logs: vec![plain],
                output: a.clone(),
                ..Default::default()
            },
            &|_| {},
        )
        .unwrap();
        let s = capture(
            &CaptureOptions {
                logs: vec![gz],
                output: b.clone(),
                ..Default::default()
            },
            &|_| {},
        )
        .unwrap();
        assert!(s.inputs[0].compressed);
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    }

    #[test]
    fn empty_capture_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let log = write_log(dir.path(), "a.csv", "");
        let err = capture(
            &CaptureOptions {
                logs: vec![log],
                output: dir.path().join("w.wkl"),
                ..Default::default()
            },
            &|_| {},
        )
        .unwrap_err();
        assert_eq!(err.kind, CaptureErrorKind::Input);
        assert!(
            err.message.contains("log_min_duration_statement = 0"),
            "{}",
            err.message
        );
    }
}
