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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::read::read_logs;
use super::sessions::build_sessions;
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
    let dir = spill_dir(&options.output)?;

    let reading = read_logs(options, &dir, bytes_total, progress)?;
    let read_done = CaptureProgress::reading(reading.bytes_read, bytes_total, reading.records);
    let records_seen = reading.records;
    let inputs = reading.inputs;
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

    let warnings = warnings(
        &counts.excluded,
        counts.missing_durations,
        log_style,
        counts.shortest_duration,
        counts.timed,
    );
    let incomplete = counts.excluded.contains_key("truncated_parameters")
        || counts.excluded.contains_key("missing_parameters")
        || counts.missing_durations > 0
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

fn warnings(
    excluded: &BTreeMap<String, u64>,
    missing_durations: u64,
    log_style: &str,
    shortest: Option<u64>,
    timed: usize,
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
        let w = warnings(&BTreeMap::new(), 0, "min_duration", Some(250_000), 50);
        assert!(w[0].contains("log_min_duration_statement"), "{w:?}");
        assert!(warnings(&BTreeMap::new(), 0, "min_duration", Some(20), 50).is_empty());
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
