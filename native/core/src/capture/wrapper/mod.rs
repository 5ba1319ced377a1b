//! The envelopes managed platforms put around PostgreSQL's stderr log lines, taken off.
//!
//! Cloud SQL and AlloyDB hand out Cloud Logging entries, Azure diagnostic settings write JSON
//! records, a server logging to syslog (or run under journald) has syslog headers and splits long
//! messages into `[seq-chunk]` pieces, Heroku streams logplex lines. [`unwrap`] recognises each by
//! content (never by the file's name) and gives back the log text as the server wrote it to
//! stderr: lines separated by `\n`, a multi-line entry with its TAB continuation lines, oldest
//! first. That text is then read like any stderr log, with the platform's `log_line_prefix` when
//! the platform fixes it.
//!
//! - [`json`]: the JSON forms (one array, one value per line, or `{"records":[…]}`), ordered by
//!   time through a spill sorter (a day of logs is never held in memory);
//! - [`cloud_logging`]: Cloud SQL / AlloyDB entries (`textPayload`);
//! - [`azure`]: Azure Flexible Server records (`properties.message`);
//! - [`syslog`]: RFC 3164, RFC 5424 and journalctl headers;
//! - [`heroku`]: logplex lines (`app[postgres.PID]: …`);
//! - [`chunks`]: putting PostgreSQL's `[seq-chunk]` pieces back together (syslog and Heroku).
//!
//! A plain stderr log, csvlog or jsonlog is not wrapped: [`unwrap`] returns `None` and the
//! reader's content is left to the caller, unread (see [`open`]).

mod azure;
mod chunks;
mod cloud_logging;
mod heroku;
mod json;
mod lines;
mod syslog;

use std::collections::BTreeMap;
use std::io::{BufRead, Cursor, Read};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The platform envelope found around the log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WrapperKind {
    /// Cloud SQL or AlloyDB: Cloud Logging entries, as `gcloud logging read --format=json` prints
    /// them or as a sink writes them.
    CloudLogging,
    /// Azure Database for PostgreSQL: diagnostic-settings records (`properties.message`).
    Azure,
    /// syslog or journald lines (RFC 3164, RFC 5424, `journalctl -o short*`).
    Syslog,
    /// Heroku Postgres: logplex lines, from `heroku logs` or a log drain.
    Heroku,
}

impl WrapperKind {
    /// A short name for messages and summaries.
    pub fn name(self) -> &'static str {
        match self {
            WrapperKind::CloudLogging => "Cloud Logging JSON",
            WrapperKind::Azure => "Azure diagnostic records",
            WrapperKind::Syslog => "syslog",
            WrapperKind::Heroku => "Heroku logplex",
        }
    }

    /// What the wrapper's units are called, for counts (`3 entries`, `5 lines`).
    pub fn units(self) -> &'static str {
        match self {
            WrapperKind::CloudLogging => "entries",
            WrapperKind::Azure => "records",
            WrapperKind::Syslog | WrapperKind::Heroku => "lines",
        }
    }
}

/// Entries or lines of the wrapper that held no PostgreSQL log text, by reason (other payloads,
/// other logs, other programs…). Complete once the text has been read to its end.
#[derive(Debug, Clone, Default)]
pub struct Skipped(Arc<Mutex<BTreeMap<&'static str, u64>>>);

impl Skipped {
    pub(crate) fn add(&self, reason: &'static str) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *map.entry(reason).or_insert(0) += 1;
    }

    /// The counts so far, by reason.
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn total(&self) -> u64 {
        self.counts().values().sum()
    }

    /// `2 other programs, 1 journal notes`; empty when nothing was skipped.
    pub fn describe(&self) -> String {
        self.counts()
            .iter()
            .map(|(reason, n)| format!("{n} {}", reason.replace('_', " ")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What [`unwrap`] gives back: the wrapper, the log text, the platform's prefix.
pub type UnwrappedText = (WrapperKind, Box<dyn BufRead>, Option<&'static str>);

/// A wrapped log, unwrapped.
pub struct Unwrapped {
    pub kind: WrapperKind,
    /// The PostgreSQL log text, oldest first, as the server wrote it to stderr.
    pub text: Box<dyn BufRead>,
    /// The platform's fixed `log_line_prefix` for `text`, when it has one.
    pub prefix: Option<&'static str>,
    /// What was left out of `text`, and why.
    pub skipped: Skipped,
}

/// An RFC 3339 time in UTC, written with `format` (a prefix's `%m` or `%t`).
fn utc_text(rfc3339: &str, format: &str) -> Option<String> {
    let t = chrono::DateTime::parse_from_rfc3339(rfc3339).ok()?;
    Some(t.with_timezone(&chrono::Utc).format(format).to_string())
}

/// What [`open`] found: a wrapper, or a log that is not wrapped, handed back whole.
pub enum Opened {
    Wrapped(Unwrapped),
    /// Not wrapped: the same content as the reader given to [`open`], from its first byte.
    Plain(Box<dyn BufRead>),
}

/// Takes the platform's wrapper off a log, if it has one. `reader` is the log's text (a gzip
/// file already decompressed).
///
/// Returns `None` for a log that is not wrapped (plain stderr, csvlog, jsonlog); else the kind
/// of wrapper, the log text as the server wrote it to stderr (oldest first; multi-line entries
/// with their TAB continuation lines) and the platform's fixed `log_line_prefix` where it fixes
/// one (Cloud SQL / AlloyDB, Azure, Heroku; `None` for syslog, whose prefix is the server's own).
///
/// The JSON wrappers are read and put in time order before this returns (temporary files in the
/// system's temporary directory hold what does not fit in memory); syslog and Heroku lines are
/// unwrapped as the returned reader is read. Errors name the wrapper and the position in the
/// input; an error found while reading the returned text comes as an `io::Error` of that text.
/// What was skipped is not counted here: use [`open`] for that.
pub fn unwrap(reader: Box<dyn BufRead>) -> Result<Option<UnwrappedText>, String> {
    match open(reader, &std::env::temp_dir())? {
        Opened::Wrapped(u) => Ok(Some((u.kind, u.text, u.prefix))),
        Opened::Plain(_) => Ok(None),
    }
}

/// [`unwrap`], keeping the input when it is not wrapped and counting what was skipped;
/// temporary files go to a directory made inside `spill_parent`.
pub fn open(reader: Box<dyn BufRead>, spill_parent: &Path) -> Result<Opened, String> {
    let (head, reader) = peek(reader).map_err(|e| format!("cannot read the log: {e}"))?;
    let kind = detect(&head);
    let whole: Box<dyn BufRead> = Box::new(Cursor::new(head).chain(reader));
    let Some(kind) = kind else {
        return Ok(Opened::Plain(whole));
    };
    let skipped = Skipped::default();
    let (text, prefix) = match kind {
        Detected::Json => {
            let (kind, text, prefix) = json::unwrap(whole, spill_parent, &skipped)?;
            return Ok(Opened::Wrapped(Unwrapped {
                kind,
                text,
                prefix,
                skipped,
            }));
        }
        Detected::Syslog => (syslog::unwrap(whole, skipped.clone()), None),
        Detected::Heroku(prefix) => {
            let (prefix, whole) = match prefix {
                Some(p) => (p, whole),
                None => {
                    heroku_prefix_further(whole).map_err(|e| format!("cannot read the log: {e}"))?
                }
            };
            (heroku::unwrap(whole, prefix, skipped.clone()), Some(prefix))
        }
    };
    Ok(Opened::Wrapped(Unwrapped {
        kind: if prefix.is_some() {
            WrapperKind::Heroku
        } else {
            WrapperKind::Syslog
        },
        text,
        prefix,
        skipped,
    }))
}

/// What the first bytes show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detected {
    /// Cloud Logging or Azure JSON (which one is decided by the entries themselves).
    Json,
    Syslog,
    /// Heroku, with the prefix its lines carry when a PostgreSQL line was among the first.
    Heroku(Option<&'static str>),
}

/// Bytes looked at to recognise a wrapper: enough for a few dozen lines.
const PEEK: usize = 64 * 1024;
/// Non-empty lines looked at for the line-oriented wrappers.
const PEEK_LINES: usize = 32;

/// The first bytes of the input (up to [`PEEK`], then to the end of that line if it is short),
/// and the rest of the input.
fn peek(mut reader: Box<dyn BufRead>) -> std::io::Result<(Vec<u8>, Box<dyn BufRead>)> {
    let mut head = Vec::new();
    while head.len() < PEEK {
        let n = (&mut reader)
            .take((PEEK - head.len()) as u64)
            .read_until(b'\n', &mut head)?;
        if n == 0 {
            break;
        }
    }
    Ok((head, reader))
}

/// How far to look for Heroku Postgres's first line when the app's own lines come first.
const HEROKU_LOOKAHEAD: usize = 16 << 20;

/// Reads on (up to [`HEROKU_LOOKAHEAD`]) to the first PostgreSQL line, whose text shows the
/// prefix; without one, the older short prefix (the unwrapped text then reports that no
/// PostgreSQL line was found).
fn heroku_prefix_further(
    mut reader: Box<dyn BufRead>,
) -> std::io::Result<(&'static str, Box<dyn BufRead>)> {
    let mut head = Vec::new();
    let mut found = None;
    while head.len() < HEROKU_LOOKAHEAD && found.is_none() {
        let start = head.len();
        if reader.read_until(b'\n', &mut head)? == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&head[start..]);
        found = heroku::Line::parse(line.trim_end())
            .filter(|l| l.is_postgres())
            .and_then(|l| heroku::prefix_of(l.message));
    }
    let prefix = found.unwrap_or(heroku::SHORT_PREFIX);
    Ok((prefix, Box::new(Cursor::new(head).chain(reader))))
}

fn detect(head: &[u8]) -> Option<Detected> {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let start = head.iter().position(|b| !b.is_ascii_whitespace())?;
    match head[start] {
        b'[' => {
            // A JSON array of entries (`[{` or `[]`), not a stderr line such as `[1234] LOG:`.
            let next = head[start + 1..]
                .iter()
                .find(|b| !b.is_ascii_whitespace())
                .copied();
            matches!(next, Some(b'{') | Some(b']') | None).then_some(Detected::Json)
        }
        b'{' => json::is_wrapper(&head[start..]).then_some(Detected::Json),
        _ => detect_lines(head),
    }
}

/// syslog or Heroku when every PostgreSQL-looking line among the first ones has their header.
fn detect_lines(head: &[u8]) -> Option<Detected> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !syslog::is_journal_note(l))
        .take(PEEK_LINES)
        .peekable();
    lines.peek()?;
    let mut heroku = 0;
    let mut syslog = 0;
    let mut total = 0;
    let mut heroku_prefix = None;
    for line in lines {
        total += 1;
        if let Some(h) = heroku::Line::parse(line) {
            heroku += 1;
            if heroku_prefix.is_none() && h.is_postgres() {
                heroku_prefix = heroku::prefix_of(h.message);
            }
        } else if syslog::Line::parse(line).is_some() {
            syslog += 1;
        }
    }
    if heroku == total {
        return Some(Detected::Heroku(heroku_prefix));
    }
    // A few odd lines among many (one cut by the peek's size, another daemon's oddity) do not
    // count against the others; among a few lines, every one must be a syslog line.
    (syslog + heroku >= total - total / 8 && syslog > 0).then_some(Detected::Syslog)
}

#[cfg(test)]
mod tests;
