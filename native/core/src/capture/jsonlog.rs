//! jsonlog (PostgreSQL 15+): one JSON object per line; absent keys are empty fields.

use std::borrow::Cow;
use std::io::BufRead;

use serde::Deserialize;

use super::record::LogLine;

/// One entry; strings without escapes are borrowed from the line.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Entry<'a> {
    #[serde(borrow)]
    timestamp: Cow<'a, str>,
    #[serde(borrow)]
    user: Cow<'a, str>,
    #[serde(borrow)]
    dbname: Cow<'a, str>,
    #[serde(borrow)]
    session_id: Cow<'a, str>,
    line_num: u64,
    #[serde(borrow)]
    ps: Cow<'a, str>,
    #[serde(borrow)]
    error_severity: Cow<'a, str>,
    #[serde(borrow)]
    state_code: Cow<'a, str>,
    #[serde(borrow)]
    message: Cow<'a, str>,
    #[serde(borrow)]
    detail: Cow<'a, str>,
    #[serde(borrow)]
    context: Cow<'a, str>,
    #[serde(borrow)]
    statement: Cow<'a, str>,
    #[serde(borrow)]
    application_name: Cow<'a, str>,
    #[serde(borrow)]
    backend_type: Cow<'a, str>,
    /// A number, written only for a parallel worker.
    leader_pid: Option<serde_json::Number>,
}

/// Reads every line of `input`, handing each entry to `f`. A line that is not a JSON object is
/// an error naming its line number.
pub fn read_jsonlog(
    mut input: impl BufRead,
    mut f: impl FnMut(&LogLine<'_>) -> Result<(), String>,
) -> Result<(), String> {
    let mut buf = Vec::new();
    let mut index = 0usize;
    loop {
        buf.clear();
        let n = input
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("line {}: {e}", index + 1))?;
        if n == 0 {
            return Ok(());
        }
        index += 1;
        let line = std::str::from_utf8(&buf)
            .map_err(|_| format!("line {index}: stream did not contain valid UTF-8"))?;
        if line.trim().is_empty() {
            continue;
        }
        let e: Entry = serde_json::from_str(line).map_err(|e| {
            format!("line {index} is not a jsonlog entry ({e}); is this a PostgreSQL jsonlog file?")
        })?;
        let leader_pid = e
            .leader_pid
            .as_ref()
            .map(|n| n.to_string())
            .unwrap_or_default();
        f(&LogLine {
            log_time: &e.timestamp,
            user: &e.user,
            database: &e.dbname,
            session_id: &e.session_id,
            session_line: e.line_num,
            command_tag: &e.ps,
            severity: &e.error_severity,
            sqlstate: &e.state_code,
            message: &e.message,
            detail: &e.detail,
            context: &e.context,
            query: &e.statement,
            application_name: &e.application_name,
            backend_type: &e.backend_type,
            leader_pid: &leader_pid,
        })?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_entries() {
        let text = r#"{"timestamp":"2026-11-22 11:15:33.687 EST","user":"postgres","dbname":"postgres","session_id":"6b031525.e90","line_num":2,"ps":"SELECT","error_severity":"ERROR","state_code":"22012","message":"division by zero","statement":"select 1/0","application_name":"psql"}"#;
        let mut rows = vec![];
        read_jsonlog(text.as_bytes(), |r| {
            rows.push(r.to_record());
            Ok(())
        })
        .unwrap();
        assert_eq!(rows[0].sqlstate, "22012");
        assert_eq!(rows[0].query, "select 1/0");
        assert_eq!(rows[0].session_line, 2);
        assert!(read_jsonlog("2026-11-22,x\n".as_bytes(), |_| Ok(())).is_err());
    }
}
