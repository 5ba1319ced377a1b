//! Heroku Postgres: logplex lines, from `heroku logs -p postgres` or a log drain.
//!
//! `heroku logs` prints `2026-11-28T10:00:00+00:00 app[postgres.1234]: [DATABASE] [5-1]
//! sql_error_code = 00000 LOG:  statement: …`; a syslog drain delivers the same as RFC 5424
//! (`<134>1 2026-11-28T10:00:00+00:00 host app postgres.1234 - [5-1] …`, with no structured
//! data field, sometimes preceded by the frame's octet count). The number after `postgres.` is
//! the server process; `[DATABASE]` (or a colour such as `[PINK]`) names the add-on; `[5-1]` is
//! PostgreSQL's syslog chunk marker (see [`super::chunks`]).
//!
//! Heroku fixes `log_line_prefix`. Current servers use a long one that carries everything
//! ([`LONG_PREFIX`]: `%m`, `%p`, `%c`, `%d`, `%u`…): the text is handed on as it is. Older ones use
//! `' sql_error_code = %e '`, with no time and no pid: the logplex time (to the second) and the
//! process are then written before each line, so that the text reads with [`SHORT_PREFIX`]
//! (`%t [%p] sql_error_code = %e `).

use std::io::{self, BufRead};

use super::chunks::{marker, unwrapped, Assembler, Unwrap};
use super::lines::invalid;
use super::syslog::{iso_timestamp, strip_octet_count, strip_priority};
use super::Skipped;

/// The prefix of current Heroku Postgres servers (text begins with its space).
pub(super) const LONG_PREFIX: &str = " sql_error_code = %e time_ms = \"%m\" pid=\"%p\" proc_start_time=\"%s\" session_id=\"%c\" vtid=\"%v\" tid=\"%x\" log_line=\"%l\" %qdatabase=\"%d\" connection_source=\"%r\" user=\"%u\" application_name=\"%a\" ";
/// Older servers' `' sql_error_code = %e '`, behind the time and process written here.
pub(super) const SHORT_PREFIX: &str = "%t [%p] sql_error_code = %e ";

/// A logplex line, split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Line<'a> {
    /// RFC 3339.
    pub time: &'a str,
    /// `app` or `heroku`.
    pub source: &'a str,
    /// `postgres.1234`, `web.1`, `router`…
    pub dyno: &'a str,
    pub message: &'a str,
}

impl<'a> Line<'a> {
    pub fn parse(line: &'a str) -> Option<Line<'a>> {
        let s = strip_octet_count(line);
        let drained = strip_priority(s);
        if drained.len() != s.len() {
            // RFC 5424 as drains send it: `1 TIME host SOURCE DYNO - MESSAGE`.
            let mut fields = drained.strip_prefix("1 ")?.splitn(6, ' ');
            let time = fields.next()?;
            let _host = fields.next()?;
            let source = fields.next()?;
            let dyno = fields.next()?;
            let _msgid = fields.next()?;
            let message = fields.next().unwrap_or("");
            iso_timestamp(&format!("{time} "))?;
            return (source == "app" || source == "heroku").then_some(Line {
                time,
                source,
                dyno,
                message,
            });
        }
        let rest = iso_timestamp(s)?;
        let time = &s[..s.len() - rest.len() - 1];
        let open = rest.find('[')?;
        let source = &rest[..open];
        if source != "app" && source != "heroku" {
            return None;
        }
        let (dyno, message) = rest[open + 1..].split_once("]: ").or_else(|| {
            let d = rest[open + 1..].strip_suffix("]:")?;
            Some((d, ""))
        })?;
        Some(Line {
            time,
            source,
            dyno,
            message,
        })
    }

    /// A line of a PostgreSQL server (not the app's dynos, the router, or Heroku's metrics
    /// lines, `app[heroku-postgres]`).
    pub fn is_postgres(&self) -> bool {
        self.source == "app" && (self.dyno == "postgres" || self.dyno.starts_with("postgres."))
    }
}

/// `[DATABASE] ` / `[PINK] `: the add-on's name; the rest.
fn attachment(message: &str) -> (Option<&str>, &str) {
    if let Some(inside) = message.strip_prefix('[') {
        if let Some(close) = inside.find("] ") {
            let name = &inside[..close];
            let is_name = name.starts_with(|c: char| c.is_ascii_uppercase())
                && name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
            if is_name {
                return (Some(name), &inside[close + 2..]);
            }
        }
    }
    (None, message)
}

/// The prefix a PostgreSQL line's text shows, if it is Heroku's.
pub(super) fn prefix_of(message: &str) -> Option<&'static str> {
    let (_, rest) = attachment(message);
    let text = marker(rest).map_or(rest, |(_, t)| t);
    if !text.trim_start().starts_with("sql_error_code = ") {
        return None;
    }
    Some(if text.contains(" time_ms = \"") {
        LONG_PREFIX
    } else {
        SHORT_PREFIX
    })
}

/// Heroku Postgres's lines among an app's.
struct Heroku {
    /// Whether lines need the time and process written before them.
    short: bool,
    attachment: Option<String>,
}

impl Unwrap for Heroku {
    const NAME: &'static str = "Heroku logplex";
    const HINT: &'static str =
        "fetch the database's lines (heroku logs -p postgres, or a log drain of the app)";

    fn take(
        &mut self,
        text: &str,
        number: u64,
        assembler: &mut Assembler,
        skipped: &Skipped,
    ) -> io::Result<()> {
        let Some(l) = Line::parse(text) else {
            if !text.trim().is_empty() {
                skipped.add("lines_without_a_logplex_header");
            }
            return Ok(());
        };
        if !l.is_postgres() {
            skipped.add("other_processes");
            return Ok(());
        }
        let (name, message) = attachment(l.message);
        if let Some(name) = name {
            match &self.attachment {
                None => self.attachment = Some(name.to_string()),
                Some(a) if a != name => {
                    return Err(invalid(format!(
                        "Heroku logplex, line {number}: lines of two databases ([{a}] and [{name}]); capture one at a time (keep one: grep '\\[{a}\\]')"
                    )));
                }
                Some(_) => {}
            }
        }
        let head = if self.short {
            // `%t` in UTC: the fraction is dropped, the server's own time is to the second there.
            let time = super::utc_text(l.time, "%Y-%m-%d %H:%M:%S UTC").ok_or_else(|| {
                invalid(format!(
                    "Heroku logplex, line {number}: the time {:?} is not RFC 3339",
                    l.time
                ))
            })?;
            let pid = l.dyno.strip_prefix("postgres.").unwrap_or("");
            format!("{time} [{pid}] ")
        } else {
            String::new()
        };
        assembler.push(l.dyno, head, message, None);
        Ok(())
    }
}

/// The unwrapped text of a Heroku log, for lines carrying `prefix` ([`LONG_PREFIX`] or
/// [`SHORT_PREFIX`], as [`prefix_of`] found).
pub(super) fn unwrap(
    input: Box<dyn BufRead>,
    prefix: &'static str,
    skipped: Skipped,
) -> Box<dyn BufRead> {
    let heroku = Heroku {
        short: prefix == SHORT_PREFIX,
        attachment: None,
    };
    unwrapped(input, skipped, heroku)
}
