//! From one session's log lines to the statements it executed, with start time and duration.
//!
//! Two logging styles, and a mix of both, give the same statements:
//! - `log_min_duration_statement = 0`: one line per statement, written when it ends:
//!   `duration: 1.2 ms  statement: …` / `duration: 1.2 ms  execute <unnamed>: …`;
//! - `log_statement = 'all'` + `log_duration = on`: `statement: …` / `execute S_1: …` when it
//!   starts, then a bare `duration: 1.2 ms` when it ends (paired here, per session).
//!
//! Either way the start is the end's log time minus the duration. A statement that fails logs no
//! duration but an ERROR with the statement text: it is kept, marked failed, timed from its
//! `statement:` line to the ERROR when there is one (an ERROR naming another statement is a
//! statement of its own). `parse`/`bind` lines of the extended protocol are not executions and
//! are skipped; a bare duration with no statement before it is counted (`unpaired_durations`).

use super::params::{parse_params, Params};
use super::record::{LogLine, LogRecord};
use super::time::{Micros, Zones};

/// How a statement ended, when it failed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Failure {
    pub sqlstate: String,
    pub message: String,
}

/// A statement as the log shows it, before parameters are put in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedStatement {
    pub start_us: Micros,
    pub duration_us: u64,
    pub sql: String,
    /// Sent with the extended protocol (`execute …`): `$n` are bind parameters.
    pub extended: bool,
    pub params: Option<Params>,
    pub failed: Option<Failure>,
    /// Logged at its start, but no duration and no error followed.
    pub duration_missing: bool,
    /// Which logging style the statement came from (counted over the kept statements).
    pub style: Style,
    /// The session's `application_name` when the statement was logged (it can change within a
    /// session: `SET application_name`, a pooler).
    pub application: String,
}

/// How a statement reached the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// One line with statement and duration (`log_min_duration_statement`).
    Combined,
    /// A line at its start (`log_statement`), then a duration or an ERROR.
    StartLine,
    /// Only an ERROR line names it.
    ErrorOnly,
}

enum Line<'a> {
    /// `duration: X ms  statement: …` / `… execute NAME: …`
    Combined(u64, &'a str, bool),
    /// `statement: …` / `execute NAME: …`
    Start(&'a str, bool),
    /// `duration: X ms`
    Duration(u64),
    /// `execute fetch from NAME: …` at its start: a further fetch from an open portal, whose
    /// bare duration follows (the statement was counted at its first execute).
    Fetch,
    Other,
}

fn classify(message: &str) -> Line<'_> {
    if let Some(rest) = message.strip_prefix("duration: ") {
        let Some((ms, after)) = rest.split_once(" ms") else {
            return Line::Other;
        };
        let Ok(ms) = ms.trim().parse::<f64>() else {
            return Line::Other;
        };
        let us = (ms * 1000.0).round().max(0.0) as u64;
        let after = after.trim_start();
        if after.is_empty() {
            return Line::Duration(us);
        }
        return match statement_text(after) {
            Some((sql, extended)) => Line::Combined(us, sql, extended),
            None => Line::Other, // parse, bind, fastpath, execute fetch from
        };
    }
    match statement_text(message) {
        Some((sql, extended)) => Line::Start(sql, extended),
        None if message.starts_with("execute fetch from ") => Line::Fetch,
        None => Line::Other,
    }
}

/// `statement: SQL` → (SQL, false); `execute NAME: SQL` → (SQL, true).
fn statement_text(text: &str) -> Option<(&str, bool)> {
    if let Some(sql) = text.strip_prefix("statement: ") {
        return Some((sql, false));
    }
    let rest = text.strip_prefix("execute ")?;
    if rest.starts_with("fetch from ") {
        // A further fetch from an open portal: the statement was counted at its first execute.
        return None;
    }
    let (_, sql) = rest.split_once(": ")?;
    Some((sql, true))
}

struct Pending {
    time_us: Micros,
    sql: String,
    extended: bool,
    params: Option<Params>,
    application: String,
}

impl Pending {
    fn into_statement(
        self,
        duration: Option<u64>,
        failed: Option<Failure>,
        end_us: Micros,
    ) -> LoggedStatement {
        let duration_us = match (&failed, duration) {
            (_, Some(d)) => d,
            (Some(_), None) => u64::try_from(end_us - self.time_us).unwrap_or(0),
            (None, None) => 0,
        };
        LoggedStatement {
            start_us: self.time_us,
            duration_us,
            sql: self.sql,
            extended: self.extended,
            params: self.params,
            duration_missing: duration.is_none() && failed.is_none(),
            failed,
            style: Style::StartLine,
            application: self.application,
        }
    }
}

/// Pairs one session's records (already in session order) into statements.
pub fn pair_session(records: &[LogRecord], zones: &Zones) -> Result<Vec<LoggedStatement>, String> {
    let mut out = Vec::new();
    let mut pairer = Pairer::new(zones);
    for r in records {
        pairer.push(&r.as_line(), &mut out)?;
    }
    pairer.finish(&mut out);
    Ok(out)
}

/// Pairs a session's records as they come (in session order): a statement logged at its start
/// waits here for its duration or its error.
pub struct Pairer<'z> {
    zones: &'z Zones,
    pending: Option<Pending>,
    /// A further fetch from a portal started: the next bare duration is its own.
    fetching: bool,
    /// Bare `duration: X ms` lines (not of a parse, bind or fetch) with no statement logged
    /// before them: statements `log_statement` did not log (`'mod'`, `'ddl'`, `'none'` with
    /// `log_duration = on`), missing from the capture.
    pub unpaired_durations: u64,
}

impl<'z> Pairer<'z> {
    pub fn new(zones: &'z Zones) -> Self {
        Pairer {
            zones,
            pending: None,
            fetching: false,
            unpaired_durations: 0,
        }
    }

    /// Takes the session's next record; the statements it completes go to `out`.
    pub fn push(&mut self, r: &LogLine<'_>, out: &mut Vec<LoggedStatement>) -> Result<(), String> {
        let zones = self.zones;
        let time = || zones.parse(r.log_time);
        let pending = &mut self.pending;
        if r.severity == "ERROR" {
            if r.query.is_empty() {
                return Ok(()); // not about a client statement
            }
            self.fetching = false;
            let failure = Failure {
                sqlstate: r.sqlstate.to_string(),
                message: r.message.to_string(),
            };
            let t = time()?;
            // The waiting statement failed only when the error names it; otherwise it ended
            // (its duration not logged) and the error is another statement's, one that failed
            // before it was logged (at parse or bind, or one `log_statement` does not log).
            if let Some(p) = pending.take_if(|p| p.sql.trim_end() != r.query.trim_end()) {
                out.push(p.into_statement(None, None, t));
            }
            match pending.take() {
                Some(p) => out.push(p.into_statement(None, Some(failure), t)),
                None => out.push(LoggedStatement {
                    start_us: t,
                    duration_us: 0,
                    sql: r.query.to_string(),
                    extended: false,
                    params: parse_params(r.context),
                    failed: Some(failure),
                    duration_missing: false,
                    style: Style::ErrorOnly,
                    application: r.application_name.to_string(),
                }),
            }
            return Ok(());
        }
        if r.severity != "LOG" {
            return Ok(());
        }
        let line = classify(r.message);
        if !matches!(line, Line::Duration(_) | Line::Other) {
            self.fetching = false;
        }
        match line {
            Line::Start(sql, extended) => {
                let t = time()?;
                if let Some(p) = pending.take() {
                    out.push(p.into_statement(None, None, t));
                }
                *pending = Some(Pending {
                    time_us: t,
                    sql: sql.to_string(),
                    extended,
                    params: parse_params(r.detail),
                    application: r.application_name.to_string(),
                });
            }
            Line::Fetch => {
                if let Some(p) = pending.take() {
                    out.push(p.into_statement(None, None, time()?));
                }
                self.fetching = true;
            }
            Line::Duration(us) => {
                if matches!(r.command_tag, "PARSE" | "BIND") {
                    return Ok(());
                }
                if let Some(p) = pending.take() {
                    let end = time()?;
                    let mut s = p.into_statement(Some(us), None, end);
                    s.start_us = end - us as i64;
                    out.push(s);
                } else if self.fetching {
                    self.fetching = false;
                } else {
                    self.unpaired_durations += 1;
                }
            }
            Line::Combined(us, sql, extended) => {
                let end = time()?;
                if let Some(p) = pending.take() {
                    // With both settings on, the start line and this line are the same statement.
                    if p.sql != sql {
                        out.push(p.into_statement(None, None, end));
                    }
                }
                out.push(LoggedStatement {
                    start_us: end - us as i64,
                    duration_us: us,
                    sql: sql.to_string(),
                    extended,
                    params: parse_params(r.detail),
                    failed: None,
                    duration_missing: false,
                    style: Style::Combined,
                    application: r.application_name.to_string(),
                });
            }
            Line::Other => {}
        }
        Ok(())
    }

    /// The end of the session: a statement still waiting is kept without a duration.
    pub fn finish(&mut self, out: &mut Vec<LoggedStatement>) {
        if let Some(p) = self.pending.take() {
            let t = p.time_us;
            out.push(p.into_statement(None, None, t));
        }
    }
}

/// True when pairing can use the line: a statement or duration line (not of a parse or bind),
/// or an ERROR that names its statement. The rest of a busy log is dropped as it is read.
pub fn matters(severity: &str, message: &str, command_tag: &str, query: &str) -> bool {
    match severity {
        "LOG" => match classify(message) {
            Line::Duration(_) => !matches!(command_tag, "PARSE" | "BIND"),
            Line::Other => false,
            Line::Start(..) | Line::Combined(..) | Line::Fetch => true,
        },
        "ERROR" => !query.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(time: &str, tag: &str, severity: &str, message: &str, detail: &str) -> LogRecord {
        LogRecord {
            log_time: format!("2026-01-01 00:00:{time} UTC"),
            command_tag: tag.into(),
            severity: severity.into(),
            message: message.into(),
            detail: detail.into(),
            ..Default::default()
        }
    }

    fn t(sec: f64) -> Micros {
        Zones::default().parse("2026-01-01 00:00:00 UTC").unwrap() + (sec * 1e6) as i64
    }

    #[test]
    fn both_styles_give_the_same_statements() {
        let combined = vec![
            rec(
                "01.000",
                "PARSE",
                "LOG",
                "duration: 0.1 ms  parse <unnamed>: SELECT $1",
                "",
            ),
            rec(
                "01.000",
                "BIND",
                "LOG",
                "duration: 0.1 ms  bind <unnamed>: SELECT $1",
                "parameters: $1 = '5'",
            ),
            rec(
                "01.500",
                "SELECT",
                "LOG",
                "duration: 500.000 ms  execute <unnamed>: SELECT $1",
                "parameters: $1 = '5'",
            ),
            rec(
                "02.250",
                "SELECT",
                "LOG",
                "duration: 250 ms  statement: SELECT 2",
                "",
            ),
        ];
        let separate = vec![
            rec("01.000", "PARSE", "LOG", "duration: 0.1 ms", ""),
            rec(
                "01.000",
                "SELECT",
                "LOG",
                "execute <unnamed>: SELECT $1",
                "parameters: $1 = '5'",
            ),
            rec("01.500", "SELECT", "LOG", "duration: 500.000 ms", ""),
            rec("02.000", "idle", "LOG", "statement: SELECT 2", ""),
            rec("02.250", "SELECT", "LOG", "duration: 250 ms", ""),
        ];
        let a = pair_session(&combined, &Zones::default()).unwrap();
        let b = pair_session(&separate, &Zones::default()).unwrap();
        let strip = |v: Vec<LoggedStatement>| {
            v.into_iter()
                .map(|s| LoggedStatement {
                    style: Style::Combined,
                    ..s
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(a.len(), 2);
        assert_eq!(b[0].style, Style::StartLine);
        let (a, b) = (strip(a), strip(b));
        assert_eq!(a, b);
        assert_eq!(a[0].start_us, t(1.0));
        assert_eq!(a[0].duration_us, 500_000);
        assert!(a[0].extended);
        assert_eq!(a[0].params.as_ref().unwrap().values[&1], "'5'");
        assert_eq!(a[1].start_us, t(2.0));
    }

    #[test]
    fn errors_are_kept_and_marked() {
        let mut err = rec("03.000", "SELECT", "ERROR", "division by zero", "");
        err.sqlstate = "22012".into();
        err.query = "select 1/0".into();
        let with_start = vec![
            rec("02.000", "idle", "LOG", "statement: select 1/0", ""),
            err.clone(),
        ];
        let a = pair_session(&with_start, &Zones::default()).unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].failed.as_ref().unwrap().sqlstate, "22012");
        assert_eq!(a[0].start_us, t(2.0));
        assert_eq!(a[0].duration_us, 1_000_000);
        let alone = pair_session(&[err], &Zones::default()).unwrap();
        assert_eq!(alone[0].sql, "select 1/0");
        assert!(alone[0].failed.is_some());
    }

    #[test]
    fn portal_names_and_further_fetches() {
        let lines = vec![
            rec(
                "01.000",
                "SELECT",
                "LOG",
                "duration: 1 ms  execute S_1/C_2: SELECT * FROM t",
                "",
            ),
            rec(
                "01.100",
                "SELECT",
                "LOG",
                "duration: 1 ms  execute fetch from S_1/C_2: SELECT * FROM t",
                "",
            ),
            rec(
                "01.200",
                "SELECT",
                "LOG",
                "duration: 1 ms  execute <unnamed>: SELECT 'a: b'",
                "",
            ),
        ];
        let a = pair_session(&lines, &Zones::default()).unwrap();
        assert_eq!(
            a.iter().map(|s| s.sql.as_str()).collect::<Vec<_>>(),
            vec!["SELECT * FROM t", "SELECT 'a: b'"]
        );
    }

    #[test]
    fn a_start_without_duration_is_flagged() {
        let lines = vec![
            rec("01.000", "idle", "LOG", "statement: SELECT 1", ""),
            rec("02.000", "idle", "LOG", "statement: SELECT 2", ""),
        ];
        let a = pair_session(&lines, &Zones::default()).unwrap();
        assert_eq!(a.len(), 2);
        assert!(a.iter().all(|s| s.duration_missing));
    }

    #[test]
    fn both_settings_on_do_not_double_count() {
        let lines = vec![
            rec("01.000", "idle", "LOG", "statement: SELECT 1", ""),
            rec(
                "01.100",
                "SELECT",
                "LOG",
                "duration: 100 ms  statement: SELECT 1",
                "",
            ),
        ];
        let a = pair_session(&lines, &Zones::default()).unwrap();
        assert_eq!(a.len(), 1);
        assert!(!a[0].duration_missing);
    }

    #[test]
    fn an_error_is_paired_only_with_its_own_statement() {
        // log_statement = 'all' without log_duration: SELECT 1 ran (no duration follows), then
        // the next statement failed before any start line of its own (a syntax error at Parse,
        // a bind error, or a statement log_statement = 'ddl'/'mod' does not log at its start).
        let mut err = rec(
            "03.000",
            "SELECT",
            "ERROR",
            "relation \"nosuch\" does not exist",
            "",
        );
        err.sqlstate = "42P01".into();
        err.query = "SELECT * FROM nosuch".into();
        let lines = vec![rec("01.000", "idle", "LOG", "statement: SELECT 1", ""), err];
        let a = pair_session(&lines, &Zones::default()).unwrap();
        let got: Vec<_> = a
            .iter()
            .map(|s| (s.sql.as_str(), s.failed.is_some()))
            .collect();
        // Fails today: [("SELECT 1", true)]: the statement that succeeded is marked failed
        // (with 2 s of duration) and the failing one is lost.
        assert_eq!(
            got,
            vec![("SELECT 1", false), ("SELECT * FROM nosuch", true)]
        );
    }

    #[test]
    fn an_error_naming_the_waiting_statement_is_paired_with_it() {
        let mut err = rec("03.000", "SELECT", "ERROR", "division by zero", "");
        err.query = "select 1/0".into();
        let lines = vec![
            rec("01.000", "idle", "LOG", "statement: select 1/0\n", ""),
            err,
        ];
        let a = pair_session(&lines, &Zones::default()).unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].duration_us, 2_000_000);
        assert!(a[0].failed.is_some());
    }

    #[test]
    fn unpaired_durations_are_counted_but_not_those_of_fetches() {
        let lines = vec![
            rec(
                "01.000",
                "SELECT",
                "LOG",
                "execute S_1/C_2: SELECT * FROM t",
                "",
            ),
            rec("01.100", "SELECT", "LOG", "duration: 100 ms", ""),
            rec(
                "01.200",
                "SELECT",
                "LOG",
                "execute fetch from S_1/C_2: SELECT * FROM t",
                "",
            ),
            rec("01.300", "SELECT", "LOG", "duration: 100 ms", ""),
            rec("01.400", "PARSE", "LOG", "duration: 0.1 ms", ""),
            rec("02.000", "SELECT", "LOG", "duration: 1 ms", ""),
            rec("03.000", "SELECT", "LOG", "duration: 1 ms", ""),
        ];
        let lines: Vec<_> = lines
            .into_iter()
            .filter(|r| matters(&r.severity, &r.message, &r.command_tag, &r.query))
            .collect();
        let zones = Zones::default();
        let mut pairer = Pairer::new(&zones);
        let mut out = vec![];
        for r in &lines {
            pairer.push(&r.as_line(), &mut out).unwrap();
        }
        pairer.finish(&mut out);
        assert_eq!(out.len(), 1);
        assert!(!out[0].duration_missing);
        assert_eq!(pairer.unpaired_durations, 2);
    }

    #[test]
    fn each_statement_carries_its_own_application_name() {
        let mut a = rec("01.000", "idle", "LOG", "statement: SELECT 1", "");
        a.application_name = "psql".into();
        let mut b = rec("01.100", "SELECT", "LOG", "duration: 1 ms", "");
        b.application_name = "psql".into();
        let mut c = rec(
            "02.000",
            "SELECT",
            "LOG",
            "duration: 1 ms  statement: SELECT 2",
            "",
        );
        c.application_name = "web".into();
        let out = pair_session(&[a, b, c], &Zones::default()).unwrap();
        let apps: Vec<_> = out.iter().map(|s| s.application.as_str()).collect();
        assert_eq!(apps, vec!["psql", "web"]);
    }
}
