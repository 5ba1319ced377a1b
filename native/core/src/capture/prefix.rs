//! `log_line_prefix`: the server's setting, compiled into a matcher that reads back the fields
//! PostgreSQL put in front of each stderr line.
//!
//! Every escape of current PostgreSQL is understood (`%a %u %d %r %h %b %p %P %t %m %n %i %e %c
//! %l %s %v %x %q %Q %%`), with padding (`%-10u`, `%10p`). Unknown escapes print nothing on the
//! server, so they match nothing here. `%q` ends the prefix of lines from processes without a
//! client (the postmaster, the checkpointer, …): a line may stop there.
//!
//! Fields of free text (user, database, application, host, …) can hold the very characters that
//! separate them, so matching backtracks: the shortest reading is tried first, and a reading
//! counts only when the rest of the line starts like a message (`LOG:  `, `ERROR:  `, …).

/// A value the prefix can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    ApplicationName,
    User,
    Database,
    /// `%r`: host and port, `10.0.0.1(5432)` or `[local]`.
    RemoteHostPort,
    RemoteHost,
    BackendType,
    Pid,
    /// `%P`: the leader's pid, for a parallel worker.
    LeaderPid,
    /// `%t`: to the second.
    Time,
    /// `%m`: to the millisecond.
    TimeMs,
    /// `%n`: seconds since the epoch, with milliseconds.
    Epoch,
    /// `%i`: the ps display (`SELECT`, `idle`, `PARSE`, …).
    CommandTag,
    SqlState,
    SessionId,
    LineNumber,
    SessionStart,
    VirtualXid,
    Xid,
    QueryId,
}

const FIELD_COUNT: usize = 19;

impl Field {
    fn from_escape(c: char) -> Option<Field> {
        Some(match c {
            'a' => Field::ApplicationName,
            'u' => Field::User,
            'd' => Field::Database,
            'r' => Field::RemoteHostPort,
            'h' => Field::RemoteHost,
            'b' => Field::BackendType,
            'p' => Field::Pid,
            'P' => Field::LeaderPid,
            't' => Field::Time,
            'm' => Field::TimeMs,
            'n' => Field::Epoch,
            'i' => Field::CommandTag,
            'e' => Field::SqlState,
            'c' => Field::SessionId,
            'l' => Field::LineNumber,
            's' => Field::SessionStart,
            'v' => Field::VirtualXid,
            'x' => Field::Xid,
            'Q' => Field::QueryId,
            _ => return None,
        })
    }

    /// The length of this field's value at the start of `s`, for fields of a fixed shape;
    /// `None` when `s` does not start with one, and for free text (see [`Field::is_text`]).
    fn scan(self, s: &[u8]) -> Option<usize> {
        match self {
            Field::Pid | Field::LineNumber | Field::Xid => digits(s, 0).filter(|n| *n > 0),
            Field::QueryId => {
                let sign = usize::from(s.first() == Some(&b'-'));
                digits(s, sign).filter(|n| *n > sign)
            }
            // Empty for any process but a parallel worker.
            Field::LeaderPid => digits(s, 0),
            Field::TimeMs => timestamp(s, true),
            Field::Time | Field::SessionStart => timestamp(s, false),
            Field::Epoch => {
                let n = digits(s, 0).filter(|n| *n > 0)?;
                (s.get(n) == Some(&b'.')).then_some(())?;
                digits(s, n + 1).filter(|m| *m == n + 4)
            }
            Field::SessionId => {
                let n = hex(s, 0).filter(|n| *n > 0)?;
                (s.get(n) == Some(&b'.')).then_some(())?;
                hex(s, n + 1).filter(|m| *m > n + 1)
            }
            Field::SqlState => (s.len() >= 5
                && s[..5]
                    .iter()
                    .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()))
            .then_some(5),
            // `3/6`, or empty outside a transaction-capable process.
            Field::VirtualXid => {
                let sign = usize::from(s.first() == Some(&b'-'));
                match digits(s, sign) {
                    Some(n) if n > sign && s.get(n) == Some(&b'/') => {
                        digits(s, n + 1).filter(|m| *m > n + 1)
                    }
                    _ => Some(0),
                }
            }
            _ => None,
        }
    }

    fn is_text(self) -> bool {
        matches!(
            self,
            Field::ApplicationName
                | Field::User
                | Field::Database
                | Field::RemoteHostPort
                | Field::RemoteHost
                | Field::BackendType
                | Field::CommandTag
        )
    }
}

/// The end of the run of ASCII digits starting at `from`.
fn digits(s: &[u8], from: usize) -> Option<usize> {
    run(s, from, u8::is_ascii_digit)
}

fn hex(s: &[u8], from: usize) -> Option<usize> {
    run(s, from, u8::is_ascii_hexdigit)
}

fn run(s: &[u8], from: usize, byte: fn(&u8) -> bool) -> Option<usize> {
    Some(from + s.get(from..)?.iter().take_while(|b| byte(b)).count())
}

/// `YYYY-MM-DD HH:MM:SS[.mmm] ZONE`; the zone is an abbreviation (`UTC`, `CEST`) or an offset
/// (`+03`, `-0330`), never followed by more of itself.
fn timestamp(s: &[u8], millis: bool) -> Option<usize> {
    const SHAPE: &[u8] = b"0000-00-00 00:00:00";
    if s.len() < SHAPE.len() {
        return None;
    }
    for (b, want) in s.iter().zip(SHAPE) {
        let ok = if *want == b'0' {
            b.is_ascii_digit()
        } else {
            b == want
        };
        if !ok {
            return None;
        }
    }
    let mut i = SHAPE.len();
    if millis {
        if s.get(i) != Some(&b'.') {
            return None;
        }
        let end = digits(s, i + 1)?;
        if end != i + 4 {
            return None;
        }
        i = end;
    }
    if s.get(i) != Some(&b' ') {
        return None;
    }
    i += 1;
    let zone = match s.get(i) {
        Some(b'+' | b'-') => digits(s, i + 1)? - i,
        _ => s[i..]
            .iter()
            .take_while(|b| b.is_ascii_alphabetic())
            .count(),
    };
    (zone > 0).then_some(i + zone)
}

#[derive(Debug, Clone)]
enum Token {
    Literal(String),
    Field {
        field: Field,
        padding: i32,
    },
    /// `%q`: lines of processes without a client stop here.
    StopUnlessClient,
}

/// Free-text fields are not read past this many bytes (PostgreSQL's names are at most 63, a
/// host name 1025, a ps display a few dozen): bounds the matcher on long lines.
const TEXT_LIMIT: usize = 1100;
/// A message label (`LOG`, `STATEMENT`, or its translation) is at most this long.
const LABEL_LIMIT: usize = 40;

/// A compiled `log_line_prefix`.
#[derive(Debug, Clone)]
pub struct LinePrefix {
    text: String,
    tokens: Vec<Token>,
    has: [bool; FIELD_COUNT],
}

/// A line read with a prefix: the fields' values and the message after them.
#[derive(Debug, Clone, Copy)]
pub struct Prefixed<'a> {
    values: [Option<&'a str>; FIELD_COUNT],
    /// `LOG`, `ERROR`, `DETAIL`, `STATEMENT`, … (or a translation of one).
    pub label: &'a str,
    /// What follows `LABEL:  `.
    pub text: &'a str,
}

impl<'a> Prefixed<'a> {
    /// The field's value, without padding; `None` when the prefix does not have it or the line
    /// stopped before it (`%q`).
    pub fn get(&self, f: Field) -> Option<&'a str> {
        self.values[f as usize]
    }
}

impl LinePrefix {
    /// Compiles the setting as the server reads it (`log_line_prefix`, verbatim).
    pub fn compile(text: &str) -> Result<LinePrefix, String> {
        let mut tokens = Vec::new();
        let mut literal = String::new();
        let mut has = [false; FIELD_COUNT];
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                literal.push(c);
                continue;
            }
            let Some(&next) = chars.peek() else { break };
            if next == '%' {
                chars.next();
                literal.push('%');
                continue;
            }
            // Padding: `%-10u` left-aligns in 10 columns, `%10u` right-aligns.
            let mut sign = 1;
            if next == '-' {
                chars.next();
                sign = -1;
            }
            let mut padding: i32 = 0;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                chars.next();
                padding = padding.saturating_mul(10).saturating_add(d as i32);
            }
            let Some(escape) = chars.next() else { break };
            if escape == 'q' {
                flush(&mut literal, &mut tokens);
                tokens.push(Token::StopUnlessClient);
            } else if let Some(field) = Field::from_escape(escape) {
                flush(&mut literal, &mut tokens);
                has[field as usize] = true;
                tokens.push(Token::Field {
                    field,
                    padding: sign * padding,
                });
            }
        }
        flush(&mut literal, &mut tokens);
        let prefix = LinePrefix {
            text: text.to_string(),
            tokens,
            has,
        };
        if !prefix.has(Field::TimeMs) && !prefix.has(Field::Time) && !prefix.has(Field::Epoch) {
            return Err(format!(
                "log_line_prefix '{text}' has no timestamp (%m, %n or %t): statements cannot be timed; add %m to log_line_prefix"
            ));
        }
        if !prefix.has(Field::SessionId) && !prefix.has(Field::Pid) {
            return Err(format!(
                "log_line_prefix '{text}' has neither %c nor %p: sessions cannot be told apart; add %c (or %p) to log_line_prefix"
            ));
        }
        Ok(prefix)
    }

    /// The setting as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn has(&self, f: Field) -> bool {
        self.has[f as usize]
    }

    /// Reads `line` (without its newline), or `None` when the prefix does not fit it.
    pub fn read<'a>(&self, line: &'a str) -> Option<Prefixed<'a>> {
        let mut values = [None; FIELD_COUNT];
        let rest = self.walk(0, line, 0, &mut values)?;
        let (label, text) = message_start(&line[rest..])?;
        Some(Prefixed {
            values,
            label,
            text,
        })
    }

    /// Matches tokens `ti..` from `pos`; on success returns where the message starts and sets
    /// the values of the fields read (only on the path that succeeded).
    fn walk<'a>(
        &self,
        ti: usize,
        line: &'a str,
        pos: usize,
        values: &mut [Option<&'a str>; FIELD_COUNT],
    ) -> Option<usize> {
        let Some(token) = self.tokens.get(ti) else {
            return message_start(&line[pos..]).map(|_| pos);
        };
        match token {
            Token::Literal(l) => line[pos..]
                .starts_with(l.as_str())
                .then(|| self.walk(ti + 1, line, pos + l.len(), values))
                .flatten(),
            Token::StopUnlessClient => self
                .walk(ti + 1, line, pos, values)
                .or_else(|| message_start(&line[pos..]).map(|_| pos)),
            Token::Field { field, padding } if field.is_text() => {
                let width = padding.unsigned_abs() as usize;
                let limit = line.len().min(pos + TEXT_LIMIT);
                for end in (pos + width)..=limit {
                    if !line.is_char_boundary(end) {
                        continue;
                    }
                    if let Some(rest) = self.walk(ti + 1, line, end, values) {
                        let raw = &line[pos..end];
                        let value = match padding {
                            p if *p > 0 => raw.trim_start_matches(' '),
                            p if *p < 0 => raw.trim_end_matches(' '),
                            _ => raw,
                        };
                        values[*field as usize] = Some(value);
                        return Some(rest);
                    }
                }
                None
            }
            Token::Field { field, padding } => {
                let s = &line.as_bytes()[pos..];
                let width = padding.unsigned_abs() as usize;
                let (start, len) = if *padding > 0 {
                    let lead = s.iter().take_while(|b| **b == b' ').count();
                    let len = field.scan(&s[lead..])?;
                    // Right-aligned: exactly the spaces that fill the width.
                    (width.saturating_sub(len) == lead).then_some(())?;
                    (lead, len)
                } else {
                    (0, field.scan(s)?)
                };
                let mut end = start + len;
                if *padding < 0 {
                    let fill = width.saturating_sub(len);
                    if s.len() < end + fill || s[end..end + fill].iter().any(|b| *b != b' ') {
                        return None;
                    }
                    end += fill;
                }
                let rest = self.walk(ti + 1, line, pos + end, values)?;
                values[*field as usize] = Some(&line[pos + start..pos + start + len]);
                Some(rest)
            }
        }
    }
}

fn flush(literal: &mut String, tokens: &mut Vec<Token>) {
    if !literal.is_empty() {
        tokens.push(Token::Literal(std::mem::take(literal)));
    }
}

/// `LABEL:  text` → (label, text): how every line of a message starts after the prefix, in any
/// language (the label is translated, the two spaces are not).
pub fn message_start(s: &str) -> Option<(&str, &str)> {
    // Only the first bytes: the matcher asks this at many places of a long line.
    let colon = s.bytes().take(LABEL_LIMIT + 1).position(|b| b == b':')?;
    let label = &s[..colon];
    if label.is_empty()
        || label.chars().any(|c| c.is_whitespace())
        || !s[colon..].starts_with(":  ")
    {
        return None;
    }
    Some((label, &s[colon + 3..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read<'a>(prefix: &str, line: &'a str) -> Option<Prefixed<'a>> {
        LinePrefix::compile(prefix).unwrap().read(line)
    }

    #[test]
    fn upstream_and_docker() {
        let p = read(
            "%m [%p] ",
            "2026-11-22 16:15:33.687 UTC [4711] LOG:  duration: 0.1 ms  statement: select 1",
        )
        .unwrap();
        assert_eq!(p.get(Field::TimeMs), Some("2026-11-22 16:15:33.687 UTC"));
        assert_eq!(p.get(Field::Pid), Some("4711"));
        assert_eq!(p.label, "LOG");
        assert_eq!(p.text, "duration: 0.1 ms  statement: select 1");
    }

    #[test]
    fn debian_stops_at_q_for_background_processes() {
        let prefix = "%m [%p] %q%u@%d ";
        let p = read(
            prefix,
            "2026-11-22 16:15:33.687 CET [12] app@shop LOG:  statement: select 'a@b c'",
        )
        .unwrap();
        assert_eq!(
            (p.get(Field::User), p.get(Field::Database)),
            (Some("app"), Some("shop"))
        );
        assert_eq!(p.text, "statement: select 'a@b c'");
        let p = read(
            prefix,
            "2026-11-22 16:15:33.687 CET [12] LOG:  checkpoint starting: time",
        )
        .unwrap();
        assert_eq!(p.get(Field::User), None);
        assert_eq!(p.text, "checkpoint starting: time");
        // A user and database with the separators in them.
        let p = read(
            prefix,
            "2026-11-22 16:15:33.687 +03 [12] a b@my db ERROR:  boom",
        )
        .unwrap();
        assert_eq!(
            (p.get(Field::User), p.get(Field::Database)),
            (Some("a b"), Some("my db"))
        );
        assert_eq!(p.get(Field::TimeMs), Some("2026-11-22 16:15:33.687 +03"));
    }

    #[test]
    fn rds_cloud_sql_azure() {
        let p = read(
            "%t:%r:%u@%d:[%p]:",
            "2026-11-22 16:15:33 UTC:10.0.0.7(51234):app@shop:[808]:LOG:  statement: select 1",
        )
        .unwrap();
        assert_eq!(p.get(Field::Time), Some("2026-11-22 16:15:33 UTC"));
        assert_eq!(p.get(Field::RemoteHostPort), Some("10.0.0.7(51234)"));
        assert_eq!(p.get(Field::Pid), Some("808"));
        let p = read(
            "%t:%r:%u@%d:[%p]:",
            "2026-11-22 16:15:33 UTC::@:[77]:LOG:  checkpoint starting: time",
        )
        .unwrap();
        assert_eq!(p.get(Field::User), Some(""));
        let p = read(
            "%m [%p]: [%l-1] db=%d,user=%u ",
            "2026-11-22 16:15:33.001 UTC [9]: [3-1] db=shop,user=app STATEMENT:  select 1/0",
        )
        .unwrap();
        assert_eq!(p.get(Field::LineNumber), Some("3"));
        assert_eq!(p.label, "STATEMENT");
        let p = read(
            "%t-%c-",
            "2026-11-22 16:15:33 UTC-6b031525.e8e-LOG:  connection authorized: user=app",
        )
        .unwrap();
        assert_eq!(p.get(Field::SessionId), Some("6b031525.e8e"));
        assert_eq!(p.get(Field::Time), Some("2026-11-22 16:15:33 UTC"));
    }

    #[test]
    fn every_escape_and_padding() {
        let prefix = "%a|%u|%d|%r|%h|%b|%p|%P|%t|%m|%n|%i|%e|%c|%l|%s|%v|%x|%Q|%%|%-6u|%6p|%z ";
        let line = "psql|app|shop|[local]|[local]|client backend|42||2026-11-22 16:15:33 UTC|2026-11-22 16:15:33.123 UTC|1795450533.123|SELECT|22012|6b031525.2a|7|2026-11-22 16:15:30 UTC|3/6|0|-4417|%|app   |    42| ERROR:  division by zero";
        let p = read(prefix, line).unwrap();
        let want = [
            (Field::ApplicationName, "psql"),
            (Field::BackendType, "client backend"),
            (Field::LeaderPid, ""),
            (Field::Epoch, "1795450533.123"),
            (Field::CommandTag, "SELECT"),
            (Field::SqlState, "22012"),
            (Field::SessionId, "6b031525.2a"),
            (Field::LineNumber, "7"),
            (Field::SessionStart, "2026-11-22 16:15:30 UTC"),
            (Field::VirtualXid, "3/6"),
            (Field::Xid, "0"),
            (Field::QueryId, "-4417"),
            (Field::Pid, "42"),
        ];
        for (f, v) in want {
            assert_eq!(p.get(f), Some(v), "{f:?}");
        }
        // `%-6u` comes after `%u`: the later value wins, without its padding.
        assert_eq!(p.get(Field::User), Some("app"));
        assert_eq!(p.label, "ERROR");
    }

    #[test]
    fn mismatches_and_bad_settings() {
        assert!(read("%m [%p] ", "2026-11-22 16:15:33 UTC [1] LOG:  x").is_none());
        assert!(read("%m [%p] ", "hello world").is_none());
        assert!(read("%m [%p] ", "2026-11-22 16:15:33.687 UTC [1] app@db LOG:  x").is_none());
        let e = LinePrefix::compile("[%p] ").unwrap_err();
        assert!(e.contains("no timestamp"), "{e}");
        let e = LinePrefix::compile("%m ").unwrap_err();
        assert!(e.contains("%c"), "{e}");
    }

    #[test]
    fn labels_in_other_languages_still_match() {
        let p = read(
            "%m [%p] ",
            "2026-11-22 16:15:33.687 UTC [1] FEHLER:  Division durch Null",
        )
        .unwrap();
        assert_eq!(p.label, "FEHLER");
    }
}
