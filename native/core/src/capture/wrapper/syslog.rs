//! syslog and journald lines: the header taken off, PostgreSQL's chunks put back together.
//!
//! Headers read: RFC 3164 (`Nov 28 10:00:00 host postgres[1234]: …`, with or without `<PRI>`),
//! ISO timestamps (rsyslog's file format, `journalctl -o short-iso`, `short-iso-precise`),
//! `journalctl -o short-precise` (`Nov 28 10:00:00.123456 host …`) and RFC 5424
//! (`<134>1 2026-11-28T10:00:00Z host postgres 1234 - - …`). journalctl's own notes (`-- Boot …
//! --`) are skipped and counted.
//!
//! The header's time, host and pid are dropped: the text after it is what the server wrote,
//! which `log_line_prefix` then describes (it should carry `%m` or `%t` and `%p`, as
//! docs/capture.md says). Lines of other programs are skipped and counted: PostgreSQL's are those
//! of the program that writes `[seq-chunk]` markers (its `syslog_ident`, `postgres` by default),
//! or, without markers (stderr captured by journald), a program named `postgres…`.

use std::io::{self, BufRead};

use super::chunks::{marker, unwrapped, Assembler, Unwrap};
use super::lines::invalid;
use super::Skipped;

/// A syslog line, split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Line<'a> {
    pub host: &'a str,
    pub tag: &'a str,
    pub pid: Option<&'a str>,
    pub message: &'a str,
}

/// journalctl's notes between entries (`-- Boot 3f… --`, `-- No entries --`, `-- Logs begin
/// at … --`).
pub(super) fn is_journal_note(line: &str) -> bool {
    line.starts_with("-- ")
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn digits(s: &str, n: usize) -> bool {
    s.len() >= n && s.as_bytes()[..n].iter().all(u8::is_ascii_digit)
}

/// `HH:MM:SS` and an optional fraction; the rest.
fn time_of_day(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    if !(digits(s, 2) && b.get(2) == Some(&b':') && digits(&s[3..], 2))
        || b.get(5) != Some(&b':')
        || !digits(&s[6..], 2)
    {
        return None;
    }
    let mut rest = &s[8..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        rest = &frac[n..];
    }
    Some(rest)
}

/// `Nov 28 10:00:00[.ffffff] ` → the rest.
fn bsd_timestamp(s: &str) -> Option<&str> {
    let month = s.get(..3)?;
    if !MONTHS.contains(&month) || s.as_bytes().get(3) != Some(&b' ') {
        return None;
    }
    let day = s.get(4..6)?;
    let day_ok = day.trim_start().bytes().all(|b| b.is_ascii_digit()) && !day.trim().is_empty();
    if !day_ok || s.as_bytes().get(6) != Some(&b' ') {
        return None;
    }
    time_of_day(&s[7..])?.strip_prefix(' ')
}

/// `2026-11-28T10:00:00[.ffffff](Z|±HH:MM|±HHMM) ` → the rest.
pub(super) fn iso_timestamp(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    if !(digits(s, 4)
        && b.get(4) == Some(&b'-')
        && digits(&s[5..], 2)
        && b.get(7) == Some(&b'-')
        && digits(&s[8..], 2)
        && b.get(10) == Some(&b'T'))
    {
        return None;
    }
    let rest = time_of_day(&s[11..])?;
    let rest = if let Some(r) = rest.strip_prefix('Z') {
        r
    } else if let Some(r) = rest.strip_prefix(['+', '-']) {
        if digits(r, 2) && r.as_bytes().get(2) == Some(&b':') && digits(&r[3..], 2) {
            &r[5..]
        } else if digits(r, 4) {
            &r[4..]
        } else {
            return None;
        }
    } else {
        return None;
    };
    rest.strip_prefix(' ')
}

/// A TCP framing's octet count (`123 <134>…`), as some receivers save it.
pub(super) fn strip_octet_count(s: &str) -> &str {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    match s[n..].strip_prefix(' ') {
        Some(rest) if n > 0 && rest.starts_with('<') => rest,
        _ => s,
    }
}

/// `<PRI>` → the rest.
pub(super) fn strip_priority(s: &str) -> &str {
    if let Some(rest) = s.strip_prefix('<') {
        if let Some(end) = rest.find('>') {
            if (1..=3).contains(&end) && rest.as_bytes()[..end].iter().all(u8::is_ascii_digit) {
                return &rest[end + 1..];
            }
        }
    }
    s
}

/// `TAG[PID]: MSG` or `TAG: MSG`.
fn tagged<'a>(host: &'a str, rest: &'a str) -> Option<Line<'a>> {
    let end = rest.find(['[', ':', ' '])?;
    let tag = &rest[..end];
    if tag.is_empty() {
        return None;
    }
    let mut after = &rest[end..];
    let mut pid = None;
    if let Some(inside) = after.strip_prefix('[') {
        let close = inside.find(']')?;
        if close == 0 || !inside.as_bytes()[..close].iter().all(u8::is_ascii_digit) {
            return None;
        }
        pid = Some(&inside[..close]);
        after = &inside[close + 1..];
    }
    let message = after.strip_prefix(':')?;
    Some(Line {
        host,
        tag,
        pid,
        message: message.strip_prefix(' ').unwrap_or(message),
    })
}

/// Skips RFC 5424 structured data: `-` or `[id k="v"]…` (an element holds a parameter, which
/// tells it from PostgreSQL's `[5-1]` marker when a sender leaves the field out).
fn skip_structured_data(s: &str) -> &str {
    if let Some(rest) = s.strip_prefix("- ") {
        return rest;
    }
    if s == "-" {
        return "";
    }
    let mut rest = s;
    while rest.starts_with('[') {
        let bytes = rest.as_bytes();
        let mut i = 1;
        let mut quoted = false;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' if quoted => i += 1,
                b'"' => quoted = !quoted,
                b']' if !quoted => break,
                _ => {}
            }
            i += 1;
        }
        if i >= bytes.len() || !rest[..i].contains("=\"") {
            return rest;
        }
        rest = &rest[i + 1..];
    }
    rest.strip_prefix(' ').unwrap_or(rest)
}

/// RFC 5424 after `<PRI>1 `: `TIMESTAMP HOST APP PROCID MSGID SD MSG`.
fn rfc5424(s: &str) -> Option<Line<'_>> {
    let mut fields = s.splitn(5, ' ');
    let _time = fields.next()?;
    let host = fields.next()?;
    let app = fields.next()?;
    let procid = fields.next()?;
    let rest = fields.next()?;
    let (_msgid, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let message = skip_structured_data(rest);
    let message = message.strip_prefix('\u{feff}').unwrap_or(message);
    let pid = (procid != "-" && procid.bytes().all(|b| b.is_ascii_digit())).then_some(procid);
    Some(Line {
        host,
        tag: app,
        pid,
        message,
    })
}

impl<'a> Line<'a> {
    pub fn parse(line: &'a str) -> Option<Line<'a>> {
        let framed = strip_octet_count(line);
        let s = strip_priority(framed);
        // RFC 5424 always has its priority (`<134>1 …`): a stderr line that starts with `1 `
        // (a prefix starting with `%l`) is not one.
        if let Some(rest) = s.strip_prefix("1 ").filter(|_| s.len() < framed.len()) {
            return rfc5424(rest);
        }
        let rest = bsd_timestamp(s).or_else(|| iso_timestamp(s))?;
        let (host, rest) = rest.split_once(' ')?;
        tagged(host, rest)
    }
}

/// PostgreSQL's lines among a syslog's.
#[derive(Default)]
struct Syslog {
    /// PostgreSQL's program name, once seen.
    ident: Option<String>,
    host: Option<String>,
}

impl Syslog {
    fn is_postgres(&mut self, l: &Line<'_>) -> bool {
        if let Some(ident) = &self.ident {
            return ident == l.tag;
        }
        let marked = marker(l.message).is_some_and(|(m, _)| {
            m.chunk.is_some() || l.pid.is_none_or(|p| p.parse::<u64>().ok() != Some(m.seq))
        });
        if marked || l.tag.starts_with("postgres") {
            self.ident = Some(l.tag.to_string());
            return true;
        }
        false
    }
}

impl Unwrap for Syslog {
    const NAME: &'static str = "syslog";
    const HINT: &'static str = "fetch the database server's own lines (journalctl -u postgresql…, or the file its syslog facility goes to)";

    fn take(
        &mut self,
        text: &str,
        number: u64,
        assembler: &mut Assembler,
        skipped: &Skipped,
    ) -> io::Result<()> {
        if is_journal_note(text) {
            skipped.add("journal_notes");
            return Ok(());
        }
        let Some(l) = Line::parse(text) else {
            if !text.trim().is_empty() {
                skipped.add("lines_without_a_syslog_header");
            }
            return Ok(());
        };
        if !self.is_postgres(&l) {
            skipped.add("other_programs");
            return Ok(());
        }
        match &self.host {
            None => self.host = Some(l.host.to_string()),
            Some(h) if h != l.host => {
                return Err(invalid(format!(
                    "syslog, line {number}: PostgreSQL lines from two hosts ({h} and {}); capture one server's log at a time (keep one host's lines: grep ' {h} ')",
                    l.host
                )));
            }
            Some(_) => {}
        }
        assembler.push(l.pid.unwrap_or(""), String::new(), l.message, l.pid);
        Ok(())
    }
}

/// The unwrapped text of a syslog or journald log.
pub(super) fn unwrap(input: Box<dyn BufRead>, skipped: Skipped) -> Box<dyn BufRead> {
    unwrapped(input, skipped, Syslog::default())
}
