//! stderr logs: lines with the server's `log_line_prefix` in front, read into the same
//! [`LogLine`]s as csvlog, so that pairing, parameters, filters and the rest are shared.
//!
//! A message spans several physical lines: its own (`LOG:  `, `ERROR:  `, …), then `DETAIL:`,
//! `HINT:`, `QUERY:`, `CONTEXT:`, `LOCATION:` and `STATEMENT:` lines with the same prefix, and
//! within any of them a newline of the text is written as newline + TAB. PostgreSQL writes a
//! message's lines together, so a part belongs to the message before it.
//!
//! Sessions are the prefix's `%c` when it has one. Otherwise they are the pid's, split where a
//! `connection received/authorized` or `disconnection` line shows a new backend, or where `%l`
//! starts again; user and database come from `connection authorized:` when the prefix lacks
//! them. With `%t` (seconds only), times are derived within the second so that each session's
//! statements keep their log order and their logged durations.

use std::collections::HashMap;
use std::io::BufRead;

use chrono::{DateTime, NaiveDateTime};

use super::prefix::{Field, LinePrefix, Prefixed};
use super::record::{LogLine, LogRecord};

/// Lines that do not match the prefix and are skipped with a warning (a container's log starts
/// with initdb's output); beyond this, the prefix is wrong.
const UNMATCHED_TOLERATED: u64 = 100;
/// Sessions whose state is kept; beyond it, those not seen for an hour are forgotten.
const TRACKED_SESSIONS: usize = 100_000;
const FORGET_AFTER_US: i64 = 3_600_000_000;
/// Bare duration lines held per session while it is not yet known whether they are a parse's or
/// a bind's (see [`Tracked::held`]).
const HELD_LIMIT: usize = 16;

/// The platforms whose prefix is recognised without `--log-line-prefix`, in order of preference
/// when several read a log the same way.
pub const KNOWN_PREFIXES: &[(&str, &str)] = &[
    ("PostgreSQL default / Docker", "%m [%p] "),
    ("Debian / Ubuntu", "%m [%p] %q%u@%d "),
    ("Amazon RDS / Aurora", "%t:%r:%u@%d:[%p]:"),
    (
        "Google Cloud SQL / AlloyDB",
        "%m [%p]: [%l-1] db=%d,user=%u ",
    ),
    ("Azure Database for PostgreSQL", "%t-%c-"),
];

const SEVERITIES: &[&str] = &[
    "DEBUG", "LOG", "INFO", "NOTICE", "WARNING", "ERROR", "FATAL", "PANIC",
];

/// The prefix of a known platform that reads `sample` (the start of a log), if one does.
/// `Ok(None)`: none fits; `Err`: several fit and read it differently.
pub fn known_prefix_for(sample: &[u8]) -> Result<Option<&'static str>, String> {
    let text = String::from_utf8_lossy(sample);
    // The last line may be cut where the sample ends.
    let complete = match text.rfind('\n') {
        Some(i) => &text[..i],
        None => &text[..],
    };
    let lines: Vec<&str> = complete
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('\t'))
        .take(400)
        .collect();
    let compiled: Vec<LinePrefix> = KNOWN_PREFIXES
        .iter()
        .map(|(_, p)| LinePrefix::compile(p).expect("known prefixes compile"))
        .collect();
    let scores: Vec<usize> = compiled
        .iter()
        .map(|p| lines.iter().filter(|l| p.read(l).is_some()).count())
        .collect();
    let best = scores.iter().copied().max().unwrap_or(0);
    if best == 0 {
        return Ok(None);
    }
    let fitting: Vec<usize> = (0..compiled.len()).filter(|i| scores[*i] == best).collect();
    let first = fitting[0];
    for &other in &fitting[1..] {
        // Two prefixes that read every line to the same session, user, database and time are
        // the same for capture (the Debian prefix reads the default's lines through `%q`).
        let same = lines.iter().all(
            |l| match (compiled[first].read(l), compiled[other].read(l)) {
                (Some(a), Some(b)) => reading_of(&a) == reading_of(&b),
                (None, None) => true,
                _ => false,
            },
        );
        if !same {
            return Err(format!(
                "the log's lines fit both log_line_prefix '{}' ({}) and '{}' ({}); pass the server's setting with --log-line-prefix",
                KNOWN_PREFIXES[first].1,
                KNOWN_PREFIXES[first].0,
                KNOWN_PREFIXES[other].1,
                KNOWN_PREFIXES[other].0
            ));
        }
    }
    Ok(Some(KNOWN_PREFIXES[first].1))
}

type Reading<'a> = [Option<&'a str>; 6];

fn reading_of<'a>(p: &Prefixed<'a>) -> Reading<'a> {
    let time = p
        .get(Field::TimeMs)
        .or(p.get(Field::Epoch))
        .or(p.get(Field::Time));
    [
        time,
        p.get(Field::Pid),
        p.get(Field::SessionId),
        p.get(Field::User).filter(|u| !u.is_empty()),
        p.get(Field::Database).filter(|d| !d.is_empty()),
        Some(p.text),
    ]
}

/// Which part of the message the following TAB lines continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Message,
    Detail,
    Context,
    Statement,
    /// `HINT`, `QUERY`, `LOCATION`: not used by capture.
    Ignored,
}

/// A message being put together from its lines.
#[derive(Debug, Default)]
struct Entry {
    /// Physical line number of its first line.
    line: u64,
    /// Its first line's number over all files read: orders and numbers what `%l` does not.
    global: u64,
    values: Vec<(Field, String)>,
    severity: String,
    sqlstate: String,
    message: String,
    detail: String,
    context: String,
    query: String,
    part: Option<Part>,
}

impl Entry {
    fn get(&self, f: Field) -> Option<&str> {
        self.values
            .iter()
            .find(|(g, _)| *g == f)
            .map(|(_, v)| v.as_str())
    }

    fn part_mut(&mut self) -> Option<&mut String> {
        match self.part? {
            Part::Message => Some(&mut self.message),
            Part::Detail => Some(&mut self.detail),
            Part::Context => Some(&mut self.context),
            Part::Statement => Some(&mut self.query),
            Part::Ignored => None,
        }
    }
}

/// What is known of a session beyond its own lines.
#[derive(Debug, Clone)]
struct Tracked {
    /// The session id the lines get (the `%c` value, or one made from the pid).
    id: String,
    user: String,
    database: String,
    /// Only connection lines so far: a `connection authorized` continues this session.
    fresh: bool,
    last_line: u64,
    /// With `%t`: the derived time of the session's last line (local, µs).
    clock: Option<i64>,
    /// Local time (µs) the session was last seen, for forgetting it.
    seen: i64,
    /// Without `%i`, bare `duration: X ms` lines wait here for the session's next message: when it
    /// is an `execute` line (logged at its start, with `log_statement = 'all'`), they were the
    /// extended protocol's parse and bind steps, which csvlog tells apart by the command tag;
    /// otherwise they are passed on as they are (and counted if nothing is paired with them).
    held: Vec<LogRecord>,
    /// The session's last message started a statement (`statement:`, `execute …:`): the bare
    /// duration after it is that statement's own, never held.
    started: bool,
}

/// Reads stderr logs with one prefix; keeps what a session needs across rotated files.
pub struct StderrReader {
    prefix: LinePrefix,
    sessions: HashMap<String, Tracked>,
    /// Lines read over all files, numbering sessions and lines without `%l`.
    lines: u64,
    saw_connections: bool,
    unmatched: u64,
    /// DETAIL/CONTEXT/STATEMENT lines of another process than the message before them.
    stray_parts: u64,
    first_unmatched: Option<(String, u64, String)>,
    file: String,
}

impl StderrReader {
    pub fn new(prefix: LinePrefix) -> Self {
        StderrReader {
            prefix,
            sessions: HashMap::new(),
            lines: 0,
            saw_connections: false,
            unmatched: 0,
            stray_parts: 0,
            first_unmatched: None,
            file: String::new(),
        }
    }

    pub fn prefix(&self) -> &LinePrefix {
        &self.prefix
    }

    /// Reads every message of `input` (plain stderr text, one file or a wrapper's output),
    /// handing each to `f`. `name` names the input in messages.
    pub fn read(
        &mut self,
        name: &str,
        mut input: impl BufRead,
        mut f: impl FnMut(&LogLine<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        self.file = name.to_string();
        let mut buf = Vec::new();
        let mut index = 0u64;
        let mut entry: Option<Entry> = None;
        let (mut matched, unmatched_before) = (0u64, self.unmatched);
        loop {
            buf.clear();
            let n = input
                .read_until(b'\n', &mut buf)
                .map_err(|e| format!("line {}: {e}", index + 1))?;
            if n == 0 {
                break;
            }
            index += 1;
            self.lines += 1;
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                continue;
            }
            if let Some(more) = line.strip_prefix('\t') {
                // A newline in the text; before any message, the end of one in an earlier file.
                if let Some(text) = entry.as_mut().and_then(|e| e.part_mut()) {
                    text.push('\n');
                    text.push_str(more);
                }
                continue;
            }
            let Some(p) = self.prefix.read(line) else {
                if let Some(done) = entry.take() {
                    self.emit(done, &mut f)?;
                }
                self.unmatched(index, line)?;
                continue;
            };
            let part = match p.label {
                "DETAIL" => Part::Detail,
                "CONTEXT" => Part::Context,
                "STATEMENT" => Part::Statement,
                "HINT" | "QUERY" | "LOCATION" => Part::Ignored,
                l if SEVERITIES.contains(&l) => Part::Message,
                l => return Err(not_english(index, l)),
            };
            matched += 1;
            if part != Part::Message {
                // A part of another process's message: the messages were interleaved (a long
                // one written without logging_collector), and it belongs to none read here.
                let same_process = |e: &Entry| {
                    [Field::Pid, Field::SessionId]
                        .iter()
                        .all(|f| e.get(*f) == p.get(*f))
                };
                if entry.as_ref().is_some_and(|e| !same_process(e)) {
                    self.stray_parts += 1;
                    if let Some(e) = entry.as_mut() {
                        e.part = None;
                    }
                    continue;
                }
                if let Some(e) = entry.as_mut() {
                    e.part = Some(part);
                    if let Some(text) = e.part_mut() {
                        text.push_str(p.text);
                    }
                }
                continue;
            }
            if let Some(done) = entry.take() {
                self.emit(done, &mut f)?;
            }
            if p.label == "LOG" && translated_duration(p.text) {
                return Err(not_english(index, p.text.split(':').next().unwrap_or("")));
            }
            entry = Some(self.start(index, &p));
        }
        if let Some(done) = entry.take() {
            self.emit(done, &mut f)?;
        }
        self.release_held(&mut f)?;
        if matched == 0 && self.unmatched > unmatched_before {
            return Err(self.mismatch());
        }
        Ok(())
    }

    fn mismatch(&self) -> String {
        let (file, index, text) = self.first_unmatched.clone().unwrap_or_default();
        format!(
            "{file}: line {index} does not match log_line_prefix '{}' ({text}…); pass the server's log_line_prefix (SHOW log_line_prefix) with --log-line-prefix",
            self.prefix.text(),
        )
    }

    fn start(&self, index: u64, p: &Prefixed<'_>) -> Entry {
        let mut e = Entry {
            line: index,
            global: self.lines,
            severity: p.label.to_string(),
            part: Some(Part::Message),
            ..Entry::default()
        };
        for f in ALL_FIELDS {
            if let Some(v) = p.get(f) {
                e.values.push((f, v.to_string()));
            }
        }
        let mut text = p.text;
        // `log_error_verbosity = verbose` puts the SQLSTATE before the message.
        if let Some((code, rest)) = text.split_once(": ") {
            if code.len() == 5
                && code
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
            {
                e.sqlstate = code.to_string();
                text = rest;
            }
        }
        if let Some(code) = p.get(Field::SqlState) {
            e.sqlstate = code.to_string();
        }
        e.message = text.to_string();
        e
    }

    /// A line the prefix does not fit: skipped and counted, up to a point.
    fn unmatched(&mut self, index: u64, line: &str) -> Result<(), String> {
        self.unmatched += 1;
        if self.first_unmatched.is_none() {
            self.first_unmatched = Some((self.file.clone(), index, excerpt(line)));
        }
        if self.unmatched > UNMATCHED_TOLERATED {
            return Err(self.mismatch());
        }
        Ok(())
    }

    /// Hands a complete message on as a [`LogLine`].
    fn emit(
        &mut self,
        mut e: Entry,
        f: &mut impl FnMut(&LogLine<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        if e.severity != "LOG" {
            strip_cursor_position(&mut e.message);
        }
        let line_number = e
            .get(Field::LineNumber)
            .and_then(|l| l.parse::<u64>().ok())
            .unwrap_or(e.global);
        let (time, local) = self.time_of(&e)?;
        let connection = connection_event(&e.message);
        if connection.is_some() {
            self.saw_connections = true;
        }
        let key = match e.get(Field::SessionId) {
            Some(c) => c.to_string(),
            None => e.get(Field::Pid).unwrap_or("").to_string(),
        };
        let by_pid = !self.prefix.has(Field::SessionId);
        let needs_state = by_pid
            || !self.prefix.has(Field::CommandTag)
            || self.prefix.has(Field::Time) && !self.prefix.has(Field::TimeMs)
            || !self.prefix.has(Field::User)
            || !self.prefix.has(Field::Database);
        let mut tracked = if needs_state {
            self.session(&key, by_pid, connection, (line_number, e.global), local)
        } else {
            Tracked {
                id: key.clone(),
                user: String::new(),
                database: String::new(),
                fresh: false,
                last_line: line_number,
                clock: None,
                seen: local,
                held: Vec::new(),
                started: false,
            }
        };
        if let Some(Connection::Authorized) = connection {
            tracked.user = word_after(&e.message, "user=").to_string();
            tracked.database = word_after(&e.message, "database=").to_string();
        }
        let log_time = match (&time, tracked.clock) {
            (Time::Seconds(local_us, zone), clock) => {
                let t = derive(*local_us, clock, duration_us(&e.message));
                tracked.clock = Some(t);
                format_local(t, zone)
            }
            (Time::Exact(text), _) => text.clone(),
        };
        let user = e
            .get(Field::User)
            .filter(|u| !u.is_empty() && *u != "[unknown]")
            .unwrap_or(&tracked.user)
            .to_string();
        let database = e
            .get(Field::Database)
            .filter(|d| !d.is_empty() && *d != "[unknown]")
            .unwrap_or(&tracked.database)
            .to_string();
        let session_id = tracked.id.clone();
        let application = e
            .get(Field::ApplicationName)
            .filter(|a| *a != "[unknown]")
            .unwrap_or("");
        let line = LogLine {
            log_time: &log_time,
            user: &user,
            database: &database,
            session_id: &session_id,
            session_line: line_number,
            command_tag: e.get(Field::CommandTag).unwrap_or(""),
            severity: &e.severity,
            sqlstate: &e.sqlstate,
            message: &e.message,
            detail: &e.detail,
            context: &e.context,
            query: &e.query,
            application_name: application,
            backend_type: e.get(Field::BackendType).unwrap_or(""),
            leader_pid: e.get(Field::LeaderPid).unwrap_or(""),
        };
        let bare = e.severity == "LOG" && is_bare_duration(&e.message);
        let hold = !self.prefix.has(Field::CommandTag)
            && bare
            && !tracked.started
            && tracked.held.len() < HELD_LIMIT;
        let mut released = Vec::new();
        if hold {
            tracked.held.push(line.to_record());
        } else {
            released = std::mem::take(&mut tracked.held);
            if e.severity == "LOG" && starts_execute(&e.message) {
                for r in &mut released {
                    r.command_tag = "BIND".into();
                }
            }
        }
        // A further fetch from a portal (`execute fetch from …`) starts one too.
        if e.severity == "LOG"
            && (e.message.starts_with("execute ") || e.message.starts_with("statement: "))
        {
            tracked.started = true;
        } else if bare || e.severity == "ERROR" {
            tracked.started = false;
        }
        if needs_state {
            if matches!(connection, Some(Connection::Ended)) {
                self.sessions.remove(&key);
            } else {
                self.sessions.insert(key, tracked);
            }
        }
        for r in &released {
            f(&r.as_line())?;
        }
        if hold {
            return Ok(());
        }
        f(&line)
    }

    /// Passes on the durations still held (the end of a file).
    fn release_held(
        &mut self,
        f: &mut impl FnMut(&LogLine<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut held: Vec<LogRecord> = self
            .sessions
            .values_mut()
            .flat_map(|t| std::mem::take(&mut t.held))
            .collect();
        held.sort_by(|a, b| (&a.session_id, a.session_line).cmp(&(&b.session_id, b.session_line)));
        for r in &held {
            f(&r.as_line())?;
        }
        Ok(())
    }

    /// The session a message of `key` (its `%c` or pid) belongs to, started anew where the
    /// log shows a new backend behind a reused pid.
    fn session(
        &mut self,
        key: &str,
        by_pid: bool,
        connection: Option<Connection>,
        (line_number, first_line): (u64, u64),
        local: i64,
    ) -> Tracked {
        // `first_line` (over all files) is unique, where `%l` starts at 1 in every backend.
        let new = || Tracked {
            id: if by_pid {
                format!("{key}.{first_line}")
            } else {
                key.to_string()
            },
            user: String::new(),
            database: String::new(),
            fresh: connection.is_some(),
            last_line: line_number,
            clock: None,
            seen: local,
            held: Vec::new(),
            started: false,
        };
        let Some(mut t) = self.sessions.remove(key) else {
            self.forget_old(local);
            return new();
        };
        if by_pid {
            let starts = matches!(
                connection,
                Some(Connection::Received | Connection::Authorized)
            );
            let restarted = self.prefix.has(Field::LineNumber) && line_number <= t.last_line;
            if (starts && !t.fresh) || restarted {
                return new();
            }
        }
        t.fresh = t.fresh && connection.is_some();
        t.last_line = line_number;
        t.seen = local;
        t
    }

    fn forget_old(&mut self, now: i64) {
        if self.sessions.len() >= TRACKED_SESSIONS {
            self.sessions
                .retain(|_, t| !t.held.is_empty() || t.seen >= now.saturating_sub(FORGET_AFTER_US));
        }
    }

    fn time_of(&self, e: &Entry) -> Result<(Time, i64), String> {
        let bad = |t: &str| format!("line {}: unreadable timestamp '{t}'", e.line);
        if let Some(t) = e.get(Field::TimeMs) {
            let local = local_micros(t).ok_or_else(|| bad(t))?;
            return Ok((Time::Exact(t.to_string()), local));
        }
        if let Some(t) = e.get(Field::Epoch) {
            let (s, ms) = t.split_once('.').ok_or_else(|| bad(t))?;
            let us = s.parse::<i64>().map_err(|_| bad(t))? * 1_000_000
                + ms.parse::<i64>().map_err(|_| bad(t))? * 1000;
            let utc = DateTime::from_timestamp_micros(us).ok_or_else(|| bad(t))?;
            let text = utc.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string();
            return Ok((Time::Exact(text), us));
        }
        let t = e.get(Field::Time).ok_or_else(|| {
            format!(
                "line {}: the line stops before its timestamp; is log_line_prefix right?",
                e.line
            )
        })?;
        let local = local_micros(t).ok_or_else(|| bad(t))?;
        let zone = t.rsplit_once(' ').map(|(_, z)| z).unwrap_or("");
        Ok((Time::Seconds(local, zone.to_string()), local))
    }

    /// Warnings for the capture's summary.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let p = &self.prefix;
        if p.has(Field::Time) && !p.has(Field::TimeMs) && !p.has(Field::Epoch) {
            notes.push(format!(
                "log_line_prefix '{}' gives times to the second (%t): each session keeps its order and logged durations, but start times within a second are derived and the gaps between sessions may be off by up to a second; use %m for exact times",
                p.text()
            ));
        }
        if !p.has(Field::SessionId) && !self.saw_connections {
            notes.push(format!(
                "sessions are told apart by pid only (log_line_prefix '{}' has no %c and the log no connection lines): a pid reused by a later connection is not seen{}; add %c to log_line_prefix or turn on log_connections and log_disconnections",
                p.text(),
                if p.has(Field::LineNumber) {
                    " unless %l starts again"
                } else {
                    ""
                }
            ));
        }
        if (!p.has(Field::User) || !p.has(Field::Database)) && !self.saw_connections {
            notes.push(format!(
                "log_line_prefix '{}' has no %u or %d and the log no connection lines: sessions are captured without their user or database; add %u and %d to log_line_prefix or turn on log_connections",
                p.text()
            ));
        }
        if self.stray_parts > 0 {
            notes.push(format!(
                "{} DETAIL/CONTEXT/STATEMENT line(s) did not follow their own message (messages of several processes interleaved, as a log written without logging_collector can be) and were left out; the statements they belonged to may be missing parameters or their text; log with logging_collector = on",
                self.stray_parts
            ));
        }
        if self.unmatched > 0 {
            if let Some((file, index, _)) = &self.first_unmatched {
                notes.push(format!(
                    "{} line(s) did not match log_line_prefix '{}' and were skipped (the first: {file} line {index})",
                    self.unmatched,
                    p.text()
                ));
            }
        }
        notes
    }
}

const ALL_FIELDS: [Field; 19] = [
    Field::ApplicationName,
    Field::User,
    Field::Database,
    Field::RemoteHostPort,
    Field::RemoteHost,
    Field::BackendType,
    Field::Pid,
    Field::LeaderPid,
    Field::Time,
    Field::TimeMs,
    Field::Epoch,
    Field::CommandTag,
    Field::SqlState,
    Field::SessionId,
    Field::LineNumber,
    Field::SessionStart,
    Field::VirtualXid,
    Field::Xid,
    Field::QueryId,
];

enum Time {
    /// As written, for [`super::time::Zones`] to read.
    Exact(String),
    /// `%t`: local time in µs (whole seconds) and the zone as written.
    Seconds(i64, String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Connection {
    Received,
    Authorized,
    Ended,
}

fn connection_event(message: &str) -> Option<Connection> {
    if message.starts_with("connection received: ") {
        Some(Connection::Received)
    } else if message.starts_with("connection authorized: ")
        || message.starts_with("replication connection authorized: ")
    {
        Some(Connection::Authorized)
    } else if message.starts_with("disconnection: ") {
        Some(Connection::Ended)
    } else {
        None
    }
}

/// `user=app` in `connection authorized: user=app database=shop …`.
fn word_after<'a>(message: &'a str, key: &str) -> &'a str {
    message
        .split(' ')
        .find_map(|w| w.strip_prefix(key))
        .unwrap_or("")
}

/// `duration: X ms` and nothing more (not a statement's line with its duration).
fn is_bare_duration(message: &str) -> bool {
    message.starts_with("duration: ") && message.ends_with(" ms") && !message.contains("  ")
}

/// `execute NAME: …` logged at its start (`log_statement`), not a further fetch from a portal.
fn starts_execute(message: &str) -> bool {
    message.starts_with("execute ") && !message.starts_with("execute fetch from ")
}

/// The duration a `duration: X ms` message gives, in µs.
fn duration_us(message: &str) -> Option<i64> {
    let rest = message.strip_prefix("duration: ")?;
    let (ms, _) = rest.split_once(" ms")?;
    let ms: f64 = ms.trim().parse().ok()?;
    Some((ms * 1000.0).round() as i64)
}

/// The time a `%t` line is given: never before the session's previous line (so the order
/// holds), and for a duration line late enough that the statement starts after the previous
/// one ended. Never later than the true time, which is at least the logged second.
fn derive(logged: i64, clock: Option<i64>, duration: Option<i64>) -> i64 {
    match clock {
        None => logged,
        Some(c) => logged.max(c + duration.unwrap_or(0)),
    }
}

/// `YYYY-MM-DD HH:MM:SS[.fff] ZONE` → local µs since the epoch (the zone is read later).
fn local_micros(t: &str) -> Option<i64> {
    let (local, _) = t.rsplit_once(' ')?;
    NaiveDateTime::parse_from_str(local, "%Y-%m-%d %H:%M:%S%.f")
        .ok()
        .map(|n| n.and_utc().timestamp_micros())
}

fn format_local(us: i64, zone: &str) -> String {
    let t = DateTime::from_timestamp_micros(us).unwrap_or_default();
    format!("{} {zone}", t.format("%Y-%m-%d %H:%M:%S%.6f"))
}

/// An ERROR's message ends with ` at character N` on stderr (csvlog has the position apart).
fn strip_cursor_position(message: &mut String) {
    if let Some(i) = message.rfind(" at character ") {
        let n = &message[i + " at character ".len()..];
        if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
            message.truncate(i);
        }
    }
}

/// A LOG message shaped like `duration: 1.234 ms` but in another language (`Dauer: 1.234 ms`).
fn translated_duration(text: &str) -> bool {
    if text.starts_with("duration: ") {
        return false;
    }
    let Some(colon) = text.find(':').filter(|c| *c <= 40) else {
        return false;
    };
    let rest = text[colon + 1..].trim_start();
    let digits = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
    digits > 0
        && rest[digits..].starts_with('.')
        && rest[digits + 1..]
            .split_once(" ms")
            .is_some_and(|(frac, _)| !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()))
}

fn not_english(index: u64, word: &str) -> String {
    format!(
        "line {index}: the log is not in English ('{word}'); capture reads PostgreSQL's English messages: set lc_messages = 'C' on the server and capture a new log"
    )
}

/// A short, safe piece of a line for an error message: never the rest of a line that mentions
/// a password.
fn excerpt(line: &str) -> String {
    let mut s: String = line.chars().take(60).collect();
    if let Some(i) = s.to_ascii_lowercase().find("password") {
        s.truncate(i);
    }
    s
}

/// Reads `input` with `prefix`, as one file; returns the warnings for the summary.
pub fn read_stderr(
    input: impl BufRead,
    prefix: LinePrefix,
    f: impl FnMut(&LogLine<'_>) -> Result<(), String>,
) -> Result<Vec<String>, String> {
    let mut reader = StderrReader::new(prefix);
    reader.read("log", input, f)?;
    Ok(reader.notes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::record::LogRecord;

    fn read(prefix: &str, text: &str) -> Result<(Vec<LogRecord>, Vec<String>), String> {
        let mut rows = vec![];
        let notes = read_stderr(text.as_bytes(), LinePrefix::compile(prefix).unwrap(), |r| {
            rows.push(r.to_record());
            Ok(())
        })?;
        Ok((rows, notes))
    }

    #[test]
    fn groups_a_messages_lines() {
        let text = "\
2026-11-22 16:15:33.687 UTC [12] LOG:  duration: 0.5 ms  execute <unnamed>: select $1
\t  , $2
2026-11-22 16:15:33.687 UTC [12] DETAIL:  parameters: $1 = 'a', $2 = 'b
\tc'
2026-11-22 16:15:34.000 UTC [12] ERROR:  division by zero at character 8
2026-11-22 16:15:34.000 UTC [12] STATEMENT:  select 1/0
\t;
";
        let (rows, _) = read("%m [%p] ", text).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0].message,
            "duration: 0.5 ms  execute <unnamed>: select $1\n  , $2"
        );
        assert_eq!(rows[0].detail, "parameters: $1 = 'a', $2 = 'b\nc'");
        assert_eq!(rows[1].severity, "ERROR");
        assert_eq!(rows[1].message, "division by zero");
        assert_eq!(rows[1].query, "select 1/0\n;");
        assert_eq!(rows[0].session_id, rows[1].session_id);
        assert!(rows[0].session_line < rows[1].session_line);
    }

    #[test]
    fn without_l_every_entry_has_its_own_line_number() {
        let text = "\
2026-11-22 16:15:33.000 UTC [12] LOG:  statement: select 1
2026-11-22 16:15:33.001 UTC [12] LOG:  duration: 0.1 ms
";
        let (rows, _) = read("%m [%p] ", text).unwrap();
        assert_eq!(rows[0].session_id, rows[1].session_id);
        assert!(rows[0].session_line < rows[1].session_line, "{rows:?}");
    }

    #[test]
    fn a_part_of_another_process_is_not_attached() {
        let text = "\
2026-11-22 16:15:33.000 UTC [12] LOG:  duration: 0.1 ms  execute <unnamed>: select $1
2026-11-22 16:15:33.000 UTC [13] DETAIL:  parameters: $1 = 'not mine'
	still not mine
2026-11-22 16:15:33.001 UTC [12] LOG:  duration: 0.1 ms  statement: select 2
";
        let (rows, notes) = read("%m [%p] ", text).unwrap();
        assert_eq!(rows[0].detail, "");
        assert_eq!(
            rows[0].message,
            "duration: 0.1 ms  execute <unnamed>: select $1"
        );
        assert!(notes.iter().any(|n| n.contains("interleaved")), "{notes:?}");
    }

    #[test]
    fn sessions_by_pid_split_at_connections() {
        let text = "\
2026-11-22 16:15:33.000 UTC [12] LOG:  connection received: host=[local]
2026-11-22 16:15:33.001 UTC [12] LOG:  connection authorized: user=app database=shop application_name=psql
2026-11-22 16:15:33.002 UTC [12] LOG:  duration: 0.1 ms  statement: select 1
2026-11-22 16:15:33.003 UTC [12] LOG:  disconnection: session time: 0:00:00.003 user=app database=shop host=[local]
2026-11-22 16:15:34.000 UTC [12] LOG:  connection authorized: user=web database=blog
2026-11-22 16:15:34.002 UTC [12] LOG:  duration: 0.1 ms  statement: select 2
";
        let (rows, notes) = read("%m [%p] ", text).unwrap();
        let statements: Vec<_> = rows
            .iter()
            .filter(|r| r.message.contains("select"))
            .collect();
        assert_eq!(statements[0].user, "app");
        assert_eq!(statements[0].database, "shop");
        assert_eq!(statements[1].user, "web");
        assert_ne!(statements[0].session_id, statements[1].session_id);
        assert_eq!(rows[0].session_id, rows[2].session_id);
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn without_connection_lines_pid_reuse_is_a_warning_and_l_restarting_splits() {
        let text = "\
2026-11-22 16:15:33.000 UTC [12]: [1-1] db=shop,user=app LOG:  duration: 0.1 ms  statement: select 1
2026-11-22 16:15:33.500 UTC [12]: [2-1] db=shop,user=app LOG:  duration: 0.1 ms  statement: select 2
2026-11-22 16:15:34.000 UTC [12]: [1-1] db=blog,user=web LOG:  duration: 0.1 ms  statement: select 3
";
        let (rows, notes) = read("%m [%p]: [%l-1] db=%d,user=%u ", text).unwrap();
        assert_eq!(rows[0].session_id, rows[1].session_id);
        assert_ne!(rows[1].session_id, rows[2].session_id);
        assert!(notes.iter().any(|n| n.contains("pid")), "{notes:?}");
        assert!(
            !notes.iter().any(|n| n.contains("without their user")),
            "{notes:?}"
        );
        let (_, notes) = read(
            "%m [%p] ",
            "2026-11-22 16:15:33.000 UTC [12] LOG:  statement: select 1\n",
        )
        .unwrap();
        assert!(
            notes.iter().any(|n| n.contains("without their user")),
            "{notes:?}"
        );
    }

    #[test]
    fn seconds_keep_order_and_durations() {
        let text = "\
2026-11-22 16:15:33 UTC-6b03.c-LOG:  duration: 500.000 ms  statement: select 1
2026-11-22 16:15:33 UTC-6b03.c-LOG:  duration: 800.000 ms  statement: select 2
2026-11-22 16:15:33 UTC-6b03.c-LOG:  statement: select 3
2026-11-22 16:15:34 UTC-6b03.c-LOG:  duration: 0.100 ms
";
        let (rows, notes) = read("%t-%c-", text).unwrap();
        let zones = crate::capture::time::Zones::default();
        let t: Vec<i64> = rows
            .iter()
            .map(|r| zones.parse(&r.log_time).unwrap())
            .collect();
        let base = zones.parse("2026-11-22 16:15:33 UTC").unwrap();
        assert_eq!(t[0], base);
        // The second statement starts where the first ended.
        assert_eq!(t[1] - 800_000, t[0]);
        assert_eq!(t[2], t[1]);
        assert_eq!(t[3], base + 1_000_000);
        assert!(notes.iter().any(|n| n.contains("%t")), "{notes:?}");
    }

    #[test]
    fn parse_and_bind_durations_are_told_apart_without_i() {
        let text = "\
2026-11-22 16:15:33.000 UTC [12] LOG:  duration: 0.010 ms
2026-11-22 16:15:33.001 UTC [12] LOG:  duration: 0.020 ms
2026-11-22 16:15:33.002 UTC [12] LOG:  execute <unnamed>: select $1
2026-11-22 16:15:33.002 UTC [12] DETAIL:  parameters: $1 = '1'
2026-11-22 16:15:33.003 UTC [12] LOG:  duration: 0.100 ms
2026-11-22 16:15:33.004 UTC [12] LOG:  duration: 0.030 ms
2026-11-22 16:15:33.005 UTC [12] LOG:  execute S_1: select 3
2026-11-22 16:15:33.006 UTC [12] LOG:  duration: 0.300 ms
2026-11-22 16:15:34.000 UTC [12] LOG:  duration: 0.200 ms
2026-11-22 16:15:34.100 UTC [12] LOG:  statement: select 2
";
        let (rows, _) = read("%m [%p] ", text).unwrap();
        let tags: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.message.as_str(), r.command_tag.as_str()))
            .collect();
        assert_eq!(
            tags,
            vec![
                ("duration: 0.010 ms", "BIND"),
                ("duration: 0.020 ms", "BIND"),
                ("execute <unnamed>: select $1", ""),
                // The execute's own duration.
                ("duration: 0.100 ms", ""),
                // A prepared statement's next run: its bind, its execute, its duration.
                ("duration: 0.030 ms", "BIND"),
                ("execute S_1: select 3", ""),
                ("duration: 0.300 ms", ""),
                // One no execute follows: passed on as it is.
                ("duration: 0.200 ms", ""),
                ("statement: select 2", ""),
            ]
        );
        let mut lines: Vec<u64> = rows.iter().map(|r| r.session_line).collect();
        let sorted = lines.clone();
        lines.sort();
        assert_eq!(lines, sorted, "lines keep their order");
    }

    #[test]
    fn a_wrong_prefix_names_the_line_without_its_password() {
        let mut text = String::new();
        for i in 0..150 {
            text.push_str(&format!(
                "2026-11-22 16:15:33 UTC:[local]:app@shop:[{i}]:LOG:  statement: alter role x password 'secret'\n"
            ));
        }
        let err = read("%m [%p] ", &text).unwrap_err();
        assert!(
            err.contains("line 1 does not match log_line_prefix '%m [%p] '"),
            "{err}"
        );
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn other_languages_are_refused() {
        let err = read(
            "%m [%p] ",
            "2026-11-22 16:15:33.000 UTC [1] FEHLER:  Division durch Null\n",
        )
        .unwrap_err();
        assert!(err.contains("lc_messages = 'C'"), "{err}");
        let err = read(
            "%m [%p] ",
            "2026-11-22 16:15:33.000 UTC [1] LOG:  Dauer: 0.123 ms  Anweisung: select 1\n",
        )
        .unwrap_err();
        assert!(err.contains("lc_messages = 'C'"), "{err}");
    }

    #[test]
    fn known_prefixes_are_recognised() {
        let upstream = "2026-11-22 16:15:33.687 UTC [1] LOG:  database system is ready\n2026-11-22 16:15:33.687 UTC [2] LOG:  duration: 1.0 ms  statement: select 1\n";
        assert_eq!(
            known_prefix_for(upstream.as_bytes()).unwrap(),
            Some("%m [%p] ")
        );
        let debian = "2026-11-22 16:15:33.687 UTC [1] LOG:  database system is ready\n2026-11-22 16:15:33.687 UTC [2] app@shop LOG:  statement: select 1\n";
        assert_eq!(
            known_prefix_for(debian.as_bytes()).unwrap(),
            Some("%m [%p] %q%u@%d ")
        );
        let rds = "2026-11-22 16:15:33 UTC::@:[77]:LOG:  checkpoint starting: time\n";
        assert_eq!(
            known_prefix_for(rds.as_bytes()).unwrap(),
            Some("%t:%r:%u@%d:[%p]:")
        );
        let cloud =
            "2026-11-22 16:15:33.001 UTC [9]: [3-1] db=shop,user=app LOG:  statement: select 1\n";
        assert_eq!(
            known_prefix_for(cloud.as_bytes()).unwrap(),
            Some("%m [%p]: [%l-1] db=%d,user=%u ")
        );
        let azure = "2026-11-22 16:15:33 UTC-6b031525.e8e-LOG:  statement: select 1\n";
        assert_eq!(known_prefix_for(azure.as_bytes()).unwrap(), Some("%t-%c-"));
        assert_eq!(known_prefix_for(b"hello\n").unwrap(), None);
    }
}
