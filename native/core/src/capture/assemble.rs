//! The capture itself, in three steps over data that need not fit in memory:
//!
//! 1. [`super::read`]: read the logs once, keeping the lines that matter, sorted by session;
//! 2. [`super::sessions`]: pair, complete and filter each session; kept statements go to a
//!    temporary store, literals to the key scan;
//! 3. [`super::write`]: number the sessions, write the workload statement by statement with the
//!    keys inferred on the way, then count the keys' links.
//!
//! Offsets: `start_offset_us` = statement start − start of the earliest captured statement, for
//! every session. pg-retest calls the field session-relative, but its replay sleeps every session
//! until `replay start + offset` from one shared instant, so global offsets keep the arrival
//! pattern there too (see docs/capture.md).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::read::read_logs;
use super::sessions::{build_sessions, Counts};
use super::time::Zones;
use super::write::write_workload;
use super::{
    CaptureError, CaptureErrorKind, CaptureOptions, CaptureProgress, CaptureSummary, Stage,
};
use crate::spill::SpillDir;

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

/// The directory temporary files go to: the output's (a disk the user chose, with room for
/// the workload), created fresh and removed at the end.
fn spill_dir(output: &Path) -> Result<SpillDir, CaptureError> {
    let parent = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    SpillDir::new_in(&parent).map_err(|e| CaptureError {
        kind: CaptureErrorKind::Output,
        message: format!("cannot create temporary files in {}: {e}", parent.display()),
    })
}

/// Runs a capture; `progress` gets a snapshot now and then and a last one with `done`.
pub fn capture(
    options: &CaptureOptions,
    progress: &dyn Fn(CaptureProgress),
) -> Result<CaptureSummary, CaptureError> {
    if options.logs.is_empty() {
        return Err(input_error(
            "no log file given; pass --log FILE (csvlog, jsonlog or stderr, plain or .gz)".into(),
        ));
    }
    let zones = Zones::new(options.zone_offsets.clone());
    let mut bytes_total = 0;
    for path in &options.logs {
        let meta = std::fs::metadata(path)
            .map_err(|e| input_error(format!("cannot read log file {}: {e}", path.display())))?;
        bytes_total += meta.len();
    }
    let dir = spill_dir(&options.output)?;

    let reading = read_logs(options, &dir, bytes_total, progress)?;
    let read_done = CaptureProgress::reading(reading.bytes_read, bytes_total, reading.records);
    let records_seen = reading.records;
    let inputs = reading.inputs;
    let notes = reading.notes;
    let mut sessions = build_sessions(reading.lines, &zones, &options.filters, &dir, &|n| {
        progress(CaptureProgress {
            stage: Stage::Sorting,
            statements: n,
            ..read_done
        })
    })?;
    let statements = sessions.statements;
    let counts = std::mem::take(&mut sessions.counts);
    let log_style = match (counts.combined > 0, counts.start_lines > 0) {
        (true, false) => "min_duration",
        (false, true) => "statement_duration",
        (true, true) => "mixed",
        (false, false) => "none",
    };
    let (Some(t0), Some(end)) = (sessions.t0, sessions.end) else {
        return Err(input_error(format!(
            "no statement to capture in {} ({} lines read, {} left out by filters or as unreplayable); \
             log with log_min_duration_statement = 0, or log_statement = 'all' and log_duration = on, in English (lc_messages = 'C')",
            options.logs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
            records_seen,
            counts.excluded.values().sum::<u64>()
        )));
    };
    let duration_us = u64::try_from(end - t0).unwrap_or(0);
    let first_at = DateTime::<Utc>::from_timestamp_micros(t0);

    let writing = |n| {
        progress(CaptureProgress {
            stage: Stage::Writing,
            statements: n,
            statements_total: statements,
            ..read_done
        })
    };
    let written = write_workload(sessions, options, t0, duration_us, &dir, &writing)?;

    let mut warnings = warnings(&counts, log_style, statements);
    warnings.extend(notes);
    let incomplete = counts.excluded.contains_key("truncated_parameters")
        || counts.excluded.contains_key("missing_parameters")
        || counts.missing_durations > 0
        || too_many_unpaired(counts.unpaired_durations, statements)
        || warnings
            .iter()
            .any(|w| w.contains("log_min_duration_statement"));
    let sidecar = sidecar_path(&options.output);
    let summary = CaptureSummary {
        format: "pg-retest-action capture",
        version: 1,
        workload: options.output.display().to_string(),
        sidecar: sidecar.display().to_string(),
        inputs,
        log_style,
        sessions: written.sessions,
        statements,
        first_statement_at: first_at
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)),
        duration_us,
        failed_statements: written.failed.len() as u64,
        excluded: counts.excluded,
        missing_durations: counts.missing_durations,
        unpaired_durations: counts.unpaired_durations,
        duplicate_entries: counts.duplicate_entries,
        incomplete,
        warnings,
        failed: written.failed,
        keys: written.keys,
    };
    let json = serde_json::to_vec_pretty(&summary).expect("the summary serializes");
    write_file(&sidecar, &json)?;
    progress(CaptureProgress {
        stage: Stage::Writing,
        statements,
        statements_total: statements,
        done: true,
        ..read_done
    });
    // The temporary files go with `dir`, here or on any early return.
    drop(dir);
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

/// Bare durations without a statement line: a few are expected (a session whose start line is
/// in a log file not given); more than [`UNPAIRED_DURATIONS_TOLERATED`] and more than 1% of the
/// captured statements say that `log_statement` leaves statements out.
fn too_many_unpaired(unpaired: u64, statements: u64) -> bool {
    unpaired > UNPAIRED_DURATIONS_TOLERATED && unpaired * 100 > statements
}

/// See [`too_many_unpaired`].
const UNPAIRED_DURATIONS_TOLERATED: u64 = 5;

fn warnings(counts: &Counts, log_style: &str, statements: u64) -> Vec<String> {
    let excluded = &counts.excluded;
    let missing_durations = counts.missing_durations;
    let (shortest, timed) = (counts.shortest_duration, counts.timed);
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
    if let Some(n) = excluded.get("password") {
        w.push(format!(
            "{n} statement(s) left out: they set a password or carry one (CREATE/ALTER ROLE ... PASSWORD, a user mapping's or a connection string's password), which a workload must not hold in clear text; create those roles on the replay server with the schema or seed"
        ));
    }
    if missing_durations > 0 {
        w.push(format!(
            "{missing_durations} statement(s) have no logged duration (captured with 0 µs); turn on log_duration with log_statement = 'all'"
        ));
    }
    if too_many_unpaired(counts.unpaired_durations, statements) {
        w.push(format!(
            "{} duration line(s) follow no logged statement: log_statement does not log every statement (e.g. 'mod' with log_duration = on), so those statements are missing; use log_statement = 'all' with log_duration = on, or log_min_duration_statement = 0",
            counts.unpaired_durations
        ));
    }
    if counts.duplicate_entries > 0 {
        w.push(format!(
            "{} log entries were read more than once (same session and line number: the csvlog and jsonlog of one server, or a file given twice) and captured once",
            counts.duplicate_entries
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
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::pairing::{LoggedStatement, Style};
    use crate::capture::params::parse_params;
    use crate::capture::sessions::complete_sql;
    use crate::wkl;

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
            application: String::new(),
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
    fn an_error_only_statement_keeps_its_placeholders_only_in_prepare_or_create() {
        let error_only = |sql: &str| LoggedStatement {
            style: Style::ErrorOnly,
            ..logged(sql, false, "")
        };
        assert_eq!(
            complete_sql(&error_only("SELECT 1/$1::int")),
            Err("missing_parameters")
        );
        for sql in [
            "PREPARE p(int) AS SELECT 1/$1",
            "  /* app */ prepare p(int) AS SELECT 1/$1",
            "-- x\nCREATE RULE r AS ON INSERT TO t DO ALSO SELECT $1",
            "SELECT '$1', 1/0",
        ] {
            assert_eq!(complete_sql(&error_only(sql)).unwrap(), sql);
        }
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
        let counts = |shortest| Counts {
            shortest_duration: Some(shortest),
            timed: 50,
            ..Default::default()
        };
        let w = warnings(&counts(250_000), "min_duration", 50);
        assert!(w[0].contains("log_min_duration_statement"), "{w:?}");
        assert!(warnings(&counts(20), "min_duration", 50).is_empty());
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

    // ---- review tests ----

    /// A PostgreSQL 15 csvlog row: 26 columns, the given ones set (quoted), the rest empty.
    fn csv_row(fields: &[(usize, &str)]) -> String {
        let mut cols = vec![String::new(); 26];
        for (i, v) in fields {
            cols[*i] = if v.is_empty() {
                String::new()
            } else {
                format!("\"{}\"", v.replace('"', "\"\""))
            };
        }
        cols.join(",") + "\n"
    }

    /// A client backend's row: time, session, line, severity, message, detail, app, context, query.
    #[allow(clippy::too_many_arguments)]
    fn client_row(
        time: &str,
        session: &str,
        line: &str,
        severity: &str,
        sqlstate: &str,
        message: &str,
        detail: &str,
        context: &str,
        query: &str,
        app: &str,
    ) -> String {
        csv_row(&[
            (0, time),
            (1, "app"),
            (2, "shop"),
            (5, session),
            (6, line),
            (7, "SELECT"),
            (11, severity),
            (12, sqlstate),
            (13, message),
            (14, detail),
            (18, context),
            (19, query),
            (22, app),
            (23, "client backend"),
        ])
    }

    /// A client backend's LOG line (a statement, a duration).
    fn log_row(time: &str, session: &str, line: &str, message: &str, app: &str) -> String {
        client_row(
            time, session, line, "LOG", "00000", message, "", "", "", app,
        )
    }

    fn run(dir: &Path, logs: Vec<PathBuf>, filters: crate::capture::Filters) -> CaptureSummary {
        capture(
            &CaptureOptions {
                logs,
                output: dir.join("w.wkl"),
                filters,
                ..Default::default()
            },
            &|_| {},
        )
        .unwrap()
    }

    #[test]
    fn a_parallel_workers_error_is_not_a_session() {
        // PostgreSQL 15 logs a failing parallel query twice: the worker's own ERROR (its own
        // session id, no user/database/ps since it has no MyProcPort, backend_type
        // "parallel worker", leader_pid set), then the leader's with CONTEXT "parallel worker".
        let q = "select count(1/(a-a)) from t";
        let mut text = log_row(
            "2026-11-26 09:18:39.000 UTC",
            "6745a1a0.458f",
            "1",
            "duration: 1.000 ms  statement: SELECT 1",
            "psql",
        );
        text += &csv_row(&[
            (0, "2026-11-26 09:18:39.387 UTC"),
            (3, "17809"),
            (5, "6745a1af.4591"),
            (6, "1"),
            (8, "2026-11-26 09:18:39 UTC"),
            (11, "ERROR"),
            (12, "22012"),
            (13, "division by zero"),
            (19, q),
            (22, "psql"),
            (23, "parallel worker"),
            (24, "17807"),
        ]);
        text += &client_row(
            "2026-11-26 09:18:39.387 UTC",
            "6745a1a0.458f",
            "2",
            "ERROR",
            "22012",
            "division by zero",
            "",
            "parallel worker",
            q,
            "psql",
        );
        let dir = tempfile::tempdir().unwrap();
        let log = write_log(dir.path(), "a.csv", &text);
        let s = run(dir.path(), vec![log], Default::default());
        let p = wkl::read_workload(&dir.path().join("w.wkl")).unwrap();
        let users: Vec<_> = p.sessions.iter().map(|s| s.user.clone()).collect();
        // Before the fix: 2 sessions, the second a phantom one with user "" replaying the query.
        assert_eq!(s.sessions, 1, "sessions by user: {users:?}");
        assert_eq!(s.failed_statements, 1);
    }

    #[test]
    fn a_failed_extended_statement_without_logged_values_is_not_kept_with_placeholders() {
        // log_min_duration_statement = 0 and log_parameter_max_length_on_error = 0 (the default):
        // an extended-protocol statement failing at execute logs only ERROR + STATEMENT, with
        // its `$1` and no values anywhere.
        let mut text = log_row(
            "2026-11-22 11:15:21.000 UTC",
            "aa.1",
            "1",
            "duration: 1.000 ms  execute <unnamed>: SELECT 1",
            "web",
        );
        text += &client_row(
            "2026-11-22 11:15:22.000 UTC",
            "aa.1",
            "2",
            "ERROR",
            "22012",
            "division by zero",
            "",
            "",
            "SELECT 1/$1::int",
            "web",
        );
        let dir = tempfile::tempdir().unwrap();
        let log = write_log(dir.path(), "a.csv", &text);
        let s = run(dir.path(), vec![log], Default::default());
        let p = wkl::read_workload(&dir.path().join("w.wkl")).unwrap();
        let sqls: Vec<_> = p.sessions[0]
            .queries
            .iter()
            .map(|q| q.sql.clone())
            .collect();
        // Before the fix: "SELECT 1/$1::int" is written as is (replay: "there is no parameter $1"),
        // nothing counted, no warning, `incomplete` false.
        assert!(!sqls.iter().any(|q| q.contains("$1")), "{sqls:?}");
        assert_eq!(s.excluded.get("missing_parameters"), Some(&1));
        assert!(s.incomplete);
    }

    #[test]
    fn the_same_entries_in_csvlog_and_jsonlog_are_captured_once() {
        // log_destination = 'csvlog,jsonlog' (docs/capture.md: "or both") writes every entry to
        // both files; passing both (e.g. --log 'log/postgresql-*') doubles every statement.
        let csv = log_row(
            "2026-11-22 11:15:21.000 UTC",
            "aa.1",
            "1",
            "duration: 1.000 ms  statement: UPDATE t SET n = n + 1",
            "web",
        );
        let json = r#"{"timestamp":"2026-11-22 11:15:21.000 UTC","user":"app","dbname":"shop","pid":1,"session_id":"aa.1","line_num":1,"ps":"UPDATE","error_severity":"LOG","message":"duration: 1.000 ms  statement: UPDATE t SET n = n + 1","application_name":"web","backend_type":"client backend","query_id":0}
"#;
        let dir = tempfile::tempdir().unwrap();
        let a = write_log(dir.path(), "postgresql-Mon.csv", &csv);
        let b = write_log(dir.path(), "postgresql-Mon.json", json);
        let s = run(dir.path(), vec![a, b], Default::default());
        // Before the fix: 2 statements (the UPDATE twice), no warning.
        assert_eq!(s.statements, 1, "warnings: {:?}", s.warnings);
    }

    #[test]
    fn durations_without_a_statement_line_make_the_capture_incomplete() {
        // log_statement = 'mod' + log_duration = on: an UPDATE logs its start line and a
        // duration; each SELECT only a bare duration. The SELECTs are missing from the capture.
        let mut text = log_row(
            "2026-11-22 11:15:21.000 UTC",
            "aa.1",
            "1",
            "statement: UPDATE t SET n = n + 1",
            "web",
        );
        text += &log_row(
            "2026-11-22 11:15:21.001 UTC",
            "aa.1",
            "2",
            "duration: 1.000 ms",
            "web",
        );
        for i in 0..30 {
            text += &log_row(
                &format!("2026-11-22 11:15:22.{i:03} UTC"),
                "aa.1",
                &(3 + i).to_string(),
                "duration: 0.500 ms",
                "web",
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let log = write_log(dir.path(), "a.csv", &text);
        let s = run(dir.path(), vec![log], Default::default());
        assert_eq!(s.statements, 1);
        // Before the fix: 30 executed statements silently missing; incomplete false, no warning.
        assert!(s.incomplete, "warnings: {:?}", s.warnings);
    }

    #[test]
    fn application_name_is_the_statements_not_the_sessions_first() {
        // pgbouncer (which tracks application_name) or `SET application_name` after connecting:
        // one server session runs statements under several application names.
        let mut text = log_row(
            "2026-11-22 11:15:21.000 UTC",
            "aa.1",
            "1",
            "duration: 1.000 ms  statement: SELECT 'billing'",
            "billing",
        );
        for i in 0..3 {
            text += &log_row(
                &format!("2026-11-22 11:15:22.{i:03} UTC"),
                "aa.1",
                &(2 + i).to_string(),
                "duration: 0.500 ms  statement: SELECT 'web'",
                "web",
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let log = write_log(dir.path(), "a.csv", &text);
        let out = capture(
            &CaptureOptions {
                logs: vec![log],
                output: dir.path().join("w.wkl"),
                filters: crate::capture::Filters {
                    application_names: vec!["web".into()],
                    ..Default::default()
                },
                ..Default::default()
            },
            &|_| {},
        );
        // Before the fix: every statement is left out ("application_name": 4) -> "no statement".
        let s = out.map_err(|e| e.message).unwrap();
        assert_eq!(s.statements, 3);
    }

    #[test]
    fn a_parallel_workers_jsonlog_error_and_older_csvlog_layouts() {
        // jsonlog: the worker's entry has backend_type and a numeric leader_pid.
        let json = r#"{"timestamp":"2026-11-22 11:15:21.000 UTC","user":"app","dbname":"shop","session_id":"aa.1","line_num":1,"error_severity":"LOG","message":"duration: 1.000 ms  statement: SELECT 1","application_name":"web","backend_type":"client backend"}
{"timestamp":"2026-11-22 11:15:22.000 UTC","session_id":"bb.2","line_num":1,"error_severity":"ERROR","state_code":"22012","message":"division by zero","statement":"select 1/0 from t","application_name":"web","backend_type":"parallel worker","leader_pid":17807}
{"timestamp":"2026-11-22 11:15:22.000 UTC","session_id":"cc.3","line_num":1,"error_severity":"LOG","message":"statement: VACUUM t","backend_type":"autovacuum worker"}
"#;
        let dir = tempfile::tempdir().unwrap();
        let log = write_log(dir.path(), "a.json", json);
        let s = run(dir.path(), vec![log], Default::default());
        assert_eq!((s.sessions, s.statements, s.failed_statements), (1, 1, 0));
        // PostgreSQL 12 (23 columns, no backend_type): every row is taken; 13 (24 columns,
        // backend_type but no leader_pid): the worker is told by its backend_type.
        let v12 = "2026-11-22 11:15:21.000 UTC,\"app\",\"shop\",1,\"[local]\",aa.1,1,\"SELECT\",2026-11-22 11:15:21 UTC,3/6,0,LOG,00000,\"duration: 1.000 ms  statement: SELECT 1\",,,,,,,,,\"web\"\n";
        let v13 = "2026-11-22 11:15:21.000 UTC,\"app\",\"shop\",1,\"[local]\",bb.2,1,\"SELECT\",2026-11-22 11:15:21 UTC,3/6,0,LOG,00000,\"duration: 1.000 ms  statement: SELECT 2\",,,,,,,,,\"web\",\"client backend\"\n\
2026-11-22 11:15:22.000 UTC,,,2,,cc.3,1,,2026-11-22 11:15:21 UTC,3/6,0,ERROR,22012,\"division by zero\",,,,,,\"select 1/0 from t\",,,\"web\",\"parallel worker\"\n";
        let dir = tempfile::tempdir().unwrap();
        let a = write_log(dir.path(), "12.csv", v12);
        let b = write_log(dir.path(), "13.csv", v13);
        let s = run(dir.path(), vec![a, b], Default::default());
        assert_eq!((s.sessions, s.statements, s.failed_statements), (2, 2, 0));
    }

    #[test]
    fn a_file_given_twice_is_captured_once_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let log = write_log(dir.path(), "a.csv", CSV);
        let s = run(dir.path(), vec![log.clone(), log], Default::default());
        assert_eq!((s.sessions, s.statements, s.failed_statements), (2, 4, 1));
        assert_eq!(s.duplicate_entries, 5);
        assert!(
            s.warnings.iter().any(|w| w.contains("more than once")),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn statements_that_set_a_password_are_left_out_with_their_errors() {
        // A logged ALTER ROLE, a CREATE ROLE that failed on a typo (PostgreSQL quotes the
        // unquoted password in its syntax error) and a connection string with a password.
        let mut text = log_row(
            "2026-11-22 11:15:21.000 UTC",
            "aa.1",
            "1",
            "duration: 1.000 ms  statement: ALTER ROLE app PASSWORD 'hunter2-alter'",
            "psql",
        );
        text += &client_row(
            "2026-11-22 11:15:21.100 UTC",
            "aa.1",
            "2",
            "ERROR",
            "42601",
            "syntax error at or near \"hunter2typo\"",
            "",
            "",
            "CREATE ROLE app2 LOGIN PASSWORD hunter2typo",
            "psql",
        );
        text += &log_row(
            "2026-11-22 11:15:21.200 UTC",
            "aa.1",
            "3",
            "duration: 1.000 ms  statement: SELECT dblink_connect('host=db password=hunter2-conn')",
            "psql",
        );
        text += &log_row(
            "2026-11-22 11:15:21.300 UTC",
            "aa.1",
            "4",
            "duration: 1.000 ms  statement: UPDATE users SET password = 'not a role password' WHERE id = 1",
            "psql",
        );
        let dir = tempfile::tempdir().unwrap();
        let log = write_log(dir.path(), "a.csv", &text);
        let s = run(dir.path(), vec![log], Default::default());
        // Before: all four kept, the passwords in the .wkl and the typo's in the sidecar.
        assert_eq!(s.statements, 1);
        assert_eq!(s.excluded.get("password"), Some(&3));
        assert!(s.failed.is_empty(), "{:?}", s.failed);
        assert!(
            s.warnings.iter().any(|w| w.contains("set a password")),
            "{:?}",
            s.warnings
        );
        assert!(!s.incomplete);
        for file in ["w.wkl", "w.wkl.capture.json"] {
            let bytes = std::fs::read(dir.path().join(file)).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains("hunter2"), "{file}: {text}");
        }
    }

    #[test]
    fn a_few_unpaired_durations_are_counted_without_a_warning() {
        // A session whose start line is in a file not given: one bare duration, tolerated.
        let mut text = log_row(
            "2026-11-22 11:15:21.000 UTC",
            "aa.1",
            "7",
            "duration: 1.000 ms",
            "web",
        );
        text += &log_row(
            "2026-11-22 11:15:21.100 UTC",
            "aa.1",
            "8",
            "statement: UPDATE t SET n = 1",
            "web",
        );
        text += &log_row(
            "2026-11-22 11:15:21.200 UTC",
            "aa.1",
            "9",
            "duration: 1.000 ms",
            "web",
        );
        let dir = tempfile::tempdir().unwrap();
        let log = write_log(dir.path(), "a.csv", &text);
        let s = run(dir.path(), vec![log], Default::default());
        assert_eq!((s.statements, s.unpaired_durations), (1, 1));
        assert!(!s.incomplete, "{:?}", s.warnings);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }
}
