//! jsonlog (PostgreSQL 15+): one JSON object per line; absent keys are empty fields.

use std::io::BufRead;

use serde::Deserialize;

use super::record::LogRecord;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Entry {
    timestamp: String,
    user: String,
    dbname: String,
    session_id: String,
    line_num: u64,
    ps: String,
    error_severity: String,
    state_code: String,
    message: String,
    detail: String,
    context: String,
    statement: String,
    application_name: String,
}

/// Reads every line of `input`, handing each entry to `f`. A line that is not a JSON object is
/// an error naming its line number.
pub fn read_jsonlog(
    input: impl BufRead,
    mut f: impl FnMut(LogRecord) -> Result<(), String>,
) -> Result<(), String> {
    for (index, line) in input.lines().enumerate() {
        let line = line.map_err(|e| format!("line {}: {e}", index + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let e: Entry = serde_json::from_str(&line).map_err(|e| {
            format!(
                "line {} is not a jsonlog entry ({e}); is this a PostgreSQL jsonlog file?",
                index + 1
            )
        })?;
        f(LogRecord {
            log_time: e.timestamp,
            user: e.user,
            database: e.dbname,
            session_id: e.session_id,
            session_line: e.line_num,
            command_tag: e.ps,
            severity: e.error_severity,
            sqlstate: e.state_code,
            message: e.message,
            detail: e.detail,
            context: e.context,
            query: e.statement,
            application_name: e.application_name,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_entries() {
        let text = r#"{"timestamp":"2026-11-22 11:15:33.687 EST","user":"postgres","dbname":"postgres","session_id":"6b031525.e90","line_num":2,"ps":"SELECT","error_severity":"ERROR","state_code":"22012","message":"division by zero","statement":"select 1/0","application_name":"psql"}"#;
        let mut rows = vec![];
        read_jsonlog(text.as_bytes(), |r| {
            rows.push(r);
            Ok(())
        })
        .unwrap();
        assert_eq!(rows[0].sqlstate, "22012");
        assert_eq!(rows[0].query, "select 1/0");
        assert_eq!(rows[0].session_line, 2);
        assert!(read_jsonlog("2026-11-22,x\n".as_bytes(), |_| Ok(())).is_err());
    }
}
