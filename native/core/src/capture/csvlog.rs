//! csvlog: one CSV row per entry, no header, quoted fields may span lines.
//!
//! Column positions (stable since 9.0; 13+ add `backend_type`, 14+ `leader_pid` and `query_id`
//! at the end): 0 log_time, 1 user_name, 2 database_name, 5 session_id, 6 session_line_num,
//! 7 command_tag, 11 error_severity, 12 sql_state_code, 13 message, 14 detail, 18 context,
//! 19 query, 22 application_name, 23 backend_type (13+), 24 leader_pid (14+). A column an older
//! layout does not have reads as empty.

use std::io::Read;

use super::record::LogLine;

/// Reads every row of `input`, handing each to `f`. A malformed row is an error naming its line.
pub fn read_csvlog(
    input: impl Read,
    mut f: impl FnMut(&LogLine<'_>) -> Result<(), String>,
) -> Result<(), String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(input);
    let mut row = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut row) {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(e) => {
                let line = e.position().map(|p| p.line()).unwrap_or(0);
                return Err(format!(
                    "line {line} is not a csvlog row ({e}); is this a PostgreSQL csvlog file?"
                ));
            }
        }
        if row.len() < 14 {
            let line = row.position().map(|p| p.line()).unwrap_or(0);
            return Err(format!(
                "line {line} has {} columns, a csvlog row has at least 23; is this a PostgreSQL csvlog file?",
                row.len()
            ));
        }
        let col = |i: usize| row.get(i).unwrap_or("");
        f(&LogLine {
            log_time: col(0),
            user: col(1),
            database: col(2),
            session_id: col(5),
            session_line: row.get(6).and_then(|s| s.parse().ok()).unwrap_or(0),
            command_tag: col(7),
            severity: col(11),
            sqlstate: col(12),
            message: col(13),
            detail: col(14),
            context: col(18),
            query: col(19),
            application_name: col(22),
            backend_type: col(23),
            leader_pid: col(24),
        })?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_multi_line_rows() {
        let text = "2026-11-22 11:15:21.828 EST,\"app\",\"shop\",3522,\"[local]\",6b031519.dc2,12,\"SELECT\",2026-11-22 11:15:21 EST,3/6,0,LOG,00000,\"duration: 0.003 ms  execute <unnamed>: SELECT\n  $1 AS x\",\"parameters: $1 = '81'\",,,,,,,,\"pgbench\",\"client backend\",,0\n";
        let mut rows = vec![];
        read_csvlog(text.as_bytes(), |r| {
            rows.push(r.to_record());
            Ok(())
        })
        .unwrap();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(r.user, "app");
        assert_eq!(r.session_id, "6b031519.dc2");
        assert_eq!(r.session_line, 12);
        assert_eq!(
            r.message,
            "duration: 0.003 ms  execute <unnamed>: SELECT\n  $1 AS x"
        );
        assert_eq!(r.detail, "parameters: $1 = '81'");
        assert_eq!(r.application_name, "pgbench");
    }

    #[test]
    fn refuses_other_files() {
        let err = read_csvlog("hello world\n".as_bytes(), |_| Ok(())).unwrap_err();
        assert!(err.contains("csvlog"), "{err}");
    }
}
