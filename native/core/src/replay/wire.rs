//! The direct protocol path: one session's simple-query loop on a socket it owns.
//!
//! Each statement is one `Query` message built in a reused buffer and one read loop over a reused
//! receive buffer, in the session's own task: no channel to a connection task, no per-statement
//! allocation once the buffers have grown to the workload's sizes. Only what the replay records
//! is parsed: command tags (row counts), error fields (severity, SQLSTATE, message), and, for a
//! statement whose generated keys later statements use, its rows as text. Rows of every other
//! statement, notices and parameter reports are skipped as they arrive, without being buffered
//! whole, so a large result costs reads, not memory. The one notice read is the server's own
//! `duration: … ms` LOG line, which a session sees when its database has `log_duration` on and
//! `client_min_messages` at `log` (the gate's servers, docs/gate-statistics.md "Server time"):
//! the time the server spent on the statement, from reading the message to finishing it.
//!
//! Answers match the tokio-postgres path (`exec::client_query`): rows are the sum of the command
//! tags' counts, the first ERROR is the statement's error, FATAL or PANIC (or a closed socket)
//! means the connection is lost. Unlike that path, `COPY … FROM STDIN` fails cleanly (the workload
//! has no data for it: the server gets CopyFail and reports 57014) and `COPY … TO STDOUT` is
//! counted, where tokio-postgres's simple query gives up on the connection.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};

use super::answer::{nul_in_text, Answer};
use super::cancel::CancelTarget;
use super::connect::ConnectFailure;
use super::returned::Returned;
use super::stream::Stream;

/// Receive buffer: enough for a point query's whole answer in one read.
const RECEIVE_INITIAL: usize = 8 * 1024;
/// Buffers grown past this for one large message or statement are shrunk back afterwards.
const KEEP_AT_MOST: usize = 64 * 1024;
const MESSAGE_HEADER: usize = 5;

/// Notices longer than this are skipped unread: the server's duration line is under 100 bytes,
/// and a workload's own long notices must not be buffered whole.
const NOTICE_READ_AT_MOST: usize = 512;

/// What the server is told when it asks for COPY data the workload does not have.
const COPY_FAIL_MESSAGE: &str = "COPY FROM STDIN is not replayed: the workload has no data for it";

pub struct WireConn {
    io: WireIo,
    cancel: CancelTarget,
}

impl WireConn {
    pub fn new(stream: Stream, cancel: CancelTarget) -> WireConn {
        WireConn {
            io: WireIo {
                stream,
                out: Vec::with_capacity(256),
                buf: vec![0; RECEIVE_INITIAL],
                start: 0,
                end: 0,
                skip: 0,
            },
            cancel,
        }
    }

    /// The query loop and the cancel target, borrowed apart: a statement in flight holds the
    /// first while a stop sends the cancel request with the second.
    pub fn parts(&mut self) -> (&mut WireIo, &CancelTarget) {
        (&mut self.io, &self.cancel)
    }

    /// The first column of the first row `sql` returns (for checks made while connecting).
    pub async fn query_value(&mut self, sql: &str) -> Result<Option<String>, ConnectFailure> {
        let mut rows = Returned::default();
        match self.io.query(sql, Some(&mut rows)).await {
            Answer::Done { .. } => Ok(rows.cell(0, 0).map(str::to_string)),
            Answer::Failed {
                sqlstate, message, ..
            }
            | Answer::Lost {
                message,
                sqlstate: Some(sqlstate),
            } => Err(ConnectFailure {
                message,
                sqlstate: Some(sqlstate),
                transient: false,
                server_gone: false,
            }),
            Answer::Lost { message, .. } => Err(ConnectFailure::without_sqlstate(message)),
        }
    }

    /// Ends the session with a Terminate, if the socket takes it right away (best effort; the
    /// server ends the session on end-of-file as well).
    pub fn terminate(mut self) {
        use futures_util::FutureExt;
        const TERMINATE: [u8; 5] = [b'X', 0, 0, 0, 4];
        let stream = &mut self.io.stream;
        let _ = async {
            stream.write_all(&TERMINATE).await?;
            stream.flush().await
        }
        .now_or_never();
    }
}

pub struct WireIo {
    stream: Stream,
    /// The message being sent, built in place.
    out: Vec<u8>,
    /// Received and not yet parsed: `buf[start..end]`.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Bytes still to come of a message that is being skipped.
    skip: usize,
}

impl WireIo {
    /// Runs `sql` with the simple-query protocol; `returned`, when given, receives the rows.
    ///
    /// The query is sent at once where the socket takes it whole (a plain socket always does:
    /// its send buffer is empty while the session waits for each answer); the future then only
    /// reads and parses the answer. It is written out by hand rather than as nested `async fn`s,
    /// whose state machines were moved and re-entered level by level on every statement.
    pub fn query<'a>(&'a mut self, sql: &str, returned: Option<&'a mut Returned>) -> Query<'a> {
        let mut unsent = None;
        let state = match self.start_query(sql) {
            Err(answer) => State::Ended(Some(answer)),
            Ok(()) => match self.stream.try_write_now(&self.out) {
                Ok(n) if n == self.out.len() => State::Receiving,
                Ok(n) => State::Sending { sent: n },
                Err(e) => after_send_error(e, &mut unsent),
            },
        };
        Query {
            io: self,
            returned,
            rows: 0,
            server_us: None,
            failed: None,
            unsent,
            state,
        }
    }

    /// The `Query` message for `sql`, in `out`.
    fn start_query(&mut self, sql: &str) -> Result<(), Answer> {
        if memchr::memchr(0, sql.as_bytes()).is_some() {
            return Err(nul_in_text());
        }
        let Ok(len) = i32::try_from(sql.len() + 5) else {
            return Err(lost(
                "the statement's text is too long for one query message",
            ));
        };
        if self.out.capacity() > KEEP_AT_MOST {
            self.out = Vec::with_capacity(256);
        }
        self.out.clear();
        self.out.push(b'Q');
        self.out.extend_from_slice(&len.to_be_bytes());
        self.out.extend_from_slice(sql.as_bytes());
        self.out.push(0);
        Ok(())
    }

    /// The CopyFail that answers a CopyInResponse, in `out`.
    fn start_copy_fail(&mut self) {
        self.out.clear();
        self.out.push(b'f');
        self.out
            .extend_from_slice(&((COPY_FAIL_MESSAGE.len() + 5) as i32).to_be_bytes());
        self.out.extend_from_slice(COPY_FAIL_MESSAGE.as_bytes());
        self.out.push(0);
    }

    /// Writes `out[*sent..]`, then flushes (TLS may hold the record until flushed).
    fn poll_send(&mut self, cx: &mut Context<'_>, sent: &mut usize) -> Poll<io::Result<()>> {
        while *sent < self.out.len() {
            let n = ready!(Pin::new(&mut self.stream).poll_write(cx, &self.out[*sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *sent += n;
        }
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    /// The next buffered message this loop parses, as (tag, body range); skips the others.
    /// `None` when more bytes are needed.
    fn next_message(&mut self, keep_rows: bool) -> io::Result<Option<(u8, usize, usize)>> {
        loop {
            let available = self.end - self.start;
            if available < MESSAGE_HEADER {
                return Ok(None);
            }
            let tag = self.buf[self.start];
            let total = 1 + message_length(&self.buf[self.start + 1..self.start + 5])?;
            let skipped = match tag {
                b'D' | b'T' => !keep_rows,
                // A notice is read when it may be the server's duration line.
                b'N' => total > NOTICE_READ_AT_MOST,
                // Parameter status, notification, COPY data.
                b'S' | b'A' | b'd' => true,
                _ => false,
            };
            if skipped {
                if available >= total {
                    self.start += total;
                    continue;
                }
                self.skip = total - available;
                self.start = 0;
                self.end = 0;
                return Ok(None);
            }
            if available < total {
                return Ok(None);
            }
            let from = self.start + MESSAGE_HEADER;
            self.start += total;
            return Ok(Some((tag, from, self.start)));
        }
    }

    /// Reads more; false at end of file. Makes room for the whole of the message that is
    /// buffered in part, and drops the bytes of a message being skipped.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        let needed = if self.end - self.start >= MESSAGE_HEADER {
            1 + message_length(&self.buf[self.start + 1..self.start + 5])?
        } else {
            MESSAGE_HEADER
        };
        if self.start + needed > self.buf.len() || self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if needed > self.buf.len() {
                self.buf.resize(needed.next_power_of_two(), 0);
            }
        }
        loop {
            let mut free = ReadBuf::new(&mut self.buf[self.end..]);
            ready!(Pin::new(&mut self.stream).poll_read(cx, &mut free))?;
            let n = free.filled().len();
            if n == 0 {
                return Poll::Ready(Ok(false));
            }
            let dropped = self.skip.min(n);
            self.skip -= dropped;
            if dropped == n {
                continue;
            }
            if dropped > 0 {
                self.buf
                    .copy_within(self.end + dropped..self.end + n, self.end);
            }
            self.end += n - dropped;
            return Poll::Ready(Ok(true));
        }
    }

    /// After an answer: buffers grown for one large message or result go back to their usual
    /// size.
    fn shrink(&mut self) {
        if self.buf.len() > KEEP_AT_MOST && self.end - self.start <= RECEIVE_INITIAL {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            self.buf.truncate(RECEIVE_INITIAL);
            self.buf.shrink_to_fit();
        }
    }
}

/// One statement's exchange: what is left to send, and the answer so far.
pub struct Query<'a> {
    io: &'a mut WireIo,
    returned: Option<&'a mut Returned>,
    rows: u64,
    /// The server's own time for the statement, from its last duration notice.
    server_us: Option<u32>,
    /// The first ERROR of the answer (a multi-statement text stops at it).
    failed: Option<(String, String)>,
    /// Why the message could not be sent, while what the server sent before it closed is read.
    unsent: Option<io::Error>,
    state: State,
}

enum State {
    /// `out[sent..]` (the query, or a CopyFail) is still to go; then the answer is read.
    Sending {
        sent: usize,
    },
    Receiving,
    /// The answer, until it is taken.
    Ended(Option<Answer>),
}

impl Future for Query<'_> {
    type Output = Answer;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer> {
        let q = self.get_mut();
        loop {
            match &mut q.state {
                State::Ended(answer) => {
                    return Poll::Ready(answer.take().expect("a query's answer is taken once"))
                }
                State::Sending { sent } => {
                    q.state = match ready!(q.io.poll_send(cx, sent)) {
                        Ok(()) => State::Receiving,
                        Err(e) => after_send_error(e, &mut q.unsent),
                    };
                }
                State::Receiving => {
                    let answer = match q.receive_buffered() {
                        // Nothing was sent: only the server's FATAL can be an answer.
                        Ok(Some(_)) if q.unsent.is_some() => lost_io(&q.unsent.take().unwrap()),
                        Ok(Some(answer)) => answer,
                        Ok(None) => match (ready!(q.io.poll_fill(cx)), q.unsent.take()) {
                            (Ok(true), unsent) => {
                                q.unsent = unsent;
                                continue;
                            }
                            (_, Some(unsent)) => lost_io(&unsent),
                            (Ok(false), None) => lost("connection closed"),
                            (Err(e), None) => lost_io(&e),
                        },
                        Err(Interrupt::CopyIn) => {
                            q.io.start_copy_fail();
                            q.state = State::Sending { sent: 0 };
                            continue;
                        }
                        Err(Interrupt::Lost(answer)) => answer,
                    };
                    q.io.shrink();
                    q.state = State::Ended(Some(answer));
                }
            }
        }
    }
}

/// Why reading an answer stopped before its end.
enum Interrupt {
    /// The server asks for COPY data (CopyInResponse): it gets a CopyFail.
    CopyIn,
    Lost(Answer),
}

impl Query<'_> {
    /// Parses the buffered messages: the answer once ReadyForQuery ends it, `None` when more
    /// bytes are needed.
    fn receive_buffered(&mut self) -> Result<Option<Answer>, Interrupt> {
        let keep_rows = self.returned.is_some();
        loop {
            let (tag, from, to) = match self.io.next_message(keep_rows) {
                Ok(Some(m)) => m,
                Ok(None) => return Ok(None),
                Err(e) => return Err(Interrupt::Lost(lost_io(&e))),
            };
            let body = &self.io.buf[from..to];
            match tag {
                b'C' => self.rows += rows_of(body),
                b'N' => {
                    if let Some(us) = duration_notice(body) {
                        self.server_us = Some(us);
                    }
                }
                b'Z' => {
                    return Ok(Some(match self.failed.take() {
                        Some((sqlstate, message)) => Answer::Failed {
                            sqlstate,
                            message,
                            // The transaction status: idle, in a block, or in a failed block.
                            failed_block: Some(body.first() == Some(&b'E')),
                        },
                        None => Answer::Done {
                            rows: self.rows,
                            server_us: self.server_us,
                        },
                    }));
                }
                b'E' => {
                    let e = ServerError::parse(body);
                    if e.fatal {
                        return Err(Interrupt::Lost(Answer::Lost {
                            message: e.message,
                            sqlstate: Some(e.sqlstate),
                        }));
                    }
                    self.failed.get_or_insert((e.sqlstate, e.message));
                }
                b'T' => {
                    if let Some(r) = self.returned.as_deref_mut() {
                        if !r.has_columns() && read_columns(body, r).is_none() {
                            return Err(Interrupt::Lost(lost(
                                "invalid row description from the server",
                            )));
                        }
                    }
                }
                b'D' => {
                    if let Some(r) = self.returned.as_deref_mut() {
                        if read_row(body, r).is_none() {
                            return Err(Interrupt::Lost(lost("invalid data row from the server")));
                        }
                    }
                }
                // Empty query; COPY TO STDOUT's start and end (its data is skipped, its
                // command tag counts the rows).
                b'I' | b'H' | b'c' => {}
                b'G' => return Err(Interrupt::CopyIn),
                other => {
                    return Err(Interrupt::Lost(lost(&format!(
                        "unexpected message from the server (type {:?})",
                        char::from(other)
                    ))))
                }
            }
        }
    }
}

/// Where a failed send leaves a statement. A server that ended the session while it was idle
/// (terminated, shut down, an idle timeout) sent its FATAL first and closed; over a Unix-domain
/// socket the send then fails at once, so the FATAL, still unread, is read for its reason, as
/// libpq does. The peer has closed, so that read ends. Other send errors end the statement.
fn after_send_error(e: io::Error, unsent: &mut Option<io::Error>) -> State {
    if matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
    ) {
        *unsent = Some(e);
        State::Receiving
    } else {
        State::Ended(Some(lost_io(&e)))
    }
}

fn lost(message: &str) -> Answer {
    Answer::Lost {
        message: message.to_string(),
        sqlstate: None,
    }
}

/// Worded as tokio-postgres words it, so both paths report a broken connection alike.
fn lost_io(e: &io::Error) -> Answer {
    lost(&format!("error communicating with the server: {e}"))
}

fn message_length(bytes: &[u8]) -> io::Result<usize> {
    let len = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
    if len < 4 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "invalid message length from the server",
        ));
    }
    Ok(len)
}

/// Rows a command tag reports: its last word when that is a number (`INSERT 0 5`, `SELECT 3`,
/// `COPY 10`), else 0 — as tokio-postgres counts them.
fn rows_of(body: &[u8]) -> u64 {
    let tag = cstr(body).map(|(t, _)| t).unwrap_or(body);
    let last = tag.rsplit(|&b| b == b' ').next().unwrap_or(tag);
    if last.is_empty() || !last.iter().all(u8::is_ascii_digit) {
        return 0;
    }
    last.iter()
        .try_fold(0u64, |n, &d| {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
        .unwrap_or(0)
}

/// A NUL-terminated string and what follows it.
fn cstr(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let nul = bytes.iter().position(|&b| b == 0)?;
    Some((&bytes[..nul], &bytes[nul + 1..]))
}

/// The µs of the server's `duration: 12.345 ms` LOG notice (`log_duration`, printed with three
/// decimals), or `None` for any other notice. The line is matched on its non-localised severity
/// and its English words: the gate sets `lc_messages` to `C` where it turns the line on.
fn duration_notice(mut body: &[u8]) -> Option<u32> {
    let (mut severity, mut localized, mut message) = (None, None, None);
    while let Some((&field, rest)) = body.split_first() {
        if field == 0 {
            break;
        }
        let (value, rest) = cstr(rest)?;
        match field {
            b'V' => severity = Some(value),
            b'S' => localized = Some(value),
            b'M' => message = Some(value),
            _ => {}
        }
        body = rest;
    }
    if severity.or(localized)? != b"LOG" {
        return None;
    }
    let number = message?.strip_prefix(b"duration: ")?;
    let end = number.iter().position(|&b| b == b' ')?;
    // What follows the number: " ms", alone or before "  statement: …" (log_min_duration_statement).
    let unit = &number[end..];
    if !(unit == b" ms" || unit.starts_with(b" ms  ")) {
        return None;
    }
    parse_millis(&number[..end])
}

/// `12.345` (ms) as 12345 µs; digits after the third decimal are dropped. Saturates at u32::MAX.
fn parse_millis(text: &[u8]) -> Option<u32> {
    let (whole, fraction) = match text.iter().position(|&b| b == b'.') {
        Some(dot) => (&text[..dot], &text[dot + 1..]),
        None => (text, &b""[..]),
    };
    if whole.is_empty() || !whole.iter().chain(fraction).all(u8::is_ascii_digit) {
        return None;
    }
    let mut us: u64 = 0;
    for &d in whole {
        us = us.saturating_mul(10).saturating_add(u64::from(d - b'0'));
    }
    for i in 0..3 {
        let d = fraction.get(i).map_or(0, |&d| u64::from(d - b'0'));
        us = us.saturating_mul(10).saturating_add(d);
    }
    Some(u32::try_from(us).unwrap_or(u32::MAX))
}

struct ServerError {
    fatal: bool,
    sqlstate: String,
    message: String,
}

impl ServerError {
    fn parse(mut body: &[u8]) -> ServerError {
        let (mut severity, mut localized, mut code, mut message) = (None, None, None, None);
        while let Some((&field, rest)) = body.split_first() {
            if field == 0 {
                break;
            }
            let Some((value, rest)) = cstr(rest) else {
                break;
            };
            match field {
                b'V' => severity = Some(value),
                b'S' => localized = Some(value),
                b'C' => code = Some(value),
                b'M' => message = Some(value),
                _ => {}
            }
            body = rest;
        }
        // The non-localised severity (9.6+); the localised one reads the same in English.
        let fatal = matches!(severity.or(localized), Some(b"FATAL") | Some(b"PANIC"));
        let text = |v: Option<&[u8]>, default: &str| {
            v.map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_else(|| default.to_string())
        };
        ServerError {
            fatal,
            sqlstate: text(code, "XX000"),
            message: text(message, "(the server sent no message)"),
        }
    }
}

fn read_i16(bytes: &mut &[u8]) -> Option<i16> {
    let (head, rest) = bytes.split_first_chunk::<2>()?;
    *bytes = rest;
    Some(i16::from_be_bytes(*head))
}

fn read_i32(bytes: &mut &[u8]) -> Option<i32> {
    let (head, rest) = bytes.split_first_chunk::<4>()?;
    *bytes = rest;
    Some(i32::from_be_bytes(*head))
}

/// RowDescription: the column names (the rest of each field's description is not needed).
fn read_columns(mut body: &[u8], into: &mut Returned) -> Option<()> {
    let count = read_i16(&mut body)?;
    for _ in 0..count {
        let (name, rest) = cstr(body)?;
        into.push_column(std::str::from_utf8(name).ok()?);
        // table oid, column number, type oid, type size, type modifier, format
        body = rest.get(18..)?;
    }
    Some(())
}

/// DataRow: the values as text (the simple-query protocol sends text); invalid UTF-8 reads as
/// NULL, since no key correlation can use it.
fn read_row(mut body: &[u8], into: &mut Returned) -> Option<()> {
    let count = read_i16(&mut body)?;
    let mut cells = body;
    // Validate the framing first, so a malformed row is refused rather than half kept.
    for _ in 0..count {
        let len = read_i32(&mut cells)?;
        if len > 0 {
            cells = cells.get(len as usize..)?;
        }
    }
    into.push_row((0..count).map(|_| {
        let len = read_i32(&mut body).expect("validated above");
        if len < 0 {
            return None;
        }
        let (value, rest) = body.split_at(len as usize);
        body = rest;
        std::str::from_utf8(value).ok()
    }));
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_tags_count_rows_as_tokio_postgres_does() {
        assert_eq!(rows_of(b"SELECT 3\0"), 3);
        assert_eq!(rows_of(b"INSERT 0 5\0"), 5);
        assert_eq!(rows_of(b"CREATE TABLE\0"), 0);
        assert_eq!(rows_of(b"BEGIN\0"), 0);
    }

    #[test]
    fn error_fields_are_read_and_fatal_is_told_from_error() {
        let e = ServerError::parse(b"SERROR\0VERROR\0C42P01\0Mrelation \"x\" does not exist\0\0");
        assert_eq!(
            (e.fatal, e.sqlstate.as_str(), e.message.as_str()),
            (false, "42P01", "relation \"x\" does not exist")
        );
        let e = ServerError::parse(b"SFATAL\0VFATAL\0C57P01\0Mterminating connection\0\0");
        assert!(e.fatal);
        // A localised severity does not fool it when the non-localised one is there.
        let e = ServerError::parse(b"SFATAL\0VERROR\0C22012\0Mdivision by zero\0\0");
        assert!(!e.fatal);
    }

    #[test]
    fn the_servers_duration_line_is_read_and_other_notices_are_not() {
        let notice = |severity: &str, message: &str| {
            format!("SLOG\0V{severity}\0C00000\0M{message}\0Fpostgres.c\0\0").into_bytes()
        };
        assert_eq!(
            duration_notice(&notice("LOG", "duration: 0.123 ms")),
            Some(123)
        );
        assert_eq!(
            duration_notice(&notice("LOG", "duration: 12.5 ms")),
            Some(12_500)
        );
        assert_eq!(
            duration_notice(&notice("LOG", "duration: 1.000 ms  statement: SELECT 1")),
            Some(1_000)
        );
        // A RAISE NOTICE or LOG of the workload's own, or a notice with the words but another
        // unit, is not a duration.
        assert_eq!(
            duration_notice(&notice("NOTICE", "duration: 1.000 ms")),
            None
        );
        assert_eq!(duration_notice(&notice("LOG", "duration: 1.000 s")), None);
        assert_eq!(duration_notice(&notice("LOG", "checkpoint starting")), None);
        assert_eq!(duration_notice(&notice("LOG", "duration: x.1 ms")), None);
        // Without the non-localised severity (before 9.6) the localised one decides.
        assert_eq!(duration_notice(b"SLOG\0Mduration: 0.007 ms\0\0"), Some(7));
        assert_eq!(parse_millis(b"99999999.999"), Some(u32::MAX));
    }

    #[test]
    fn rows_are_read_as_text_with_nulls() {
        let mut r = Returned::default();
        let mut desc = vec![0, 2];
        for name in [&b"id"[..], b"v"] {
            desc.extend_from_slice(name);
            desc.push(0);
            desc.extend_from_slice(&[0; 18]);
        }
        read_columns(&desc, &mut r).unwrap();
        let mut row = vec![0, 2];
        row.extend_from_slice(&2i32.to_be_bytes());
        row.extend_from_slice(b"42");
        row.extend_from_slice(&(-1i32).to_be_bytes());
        read_row(&row, &mut r).unwrap();
        assert_eq!((r.cell(0, 0), r.cell(0, 1)), (Some("42"), None));
        assert!(
            read_row(&row[..5], &mut r).is_none(),
            "truncated row refused"
        );
        assert_eq!(r.row_count(), 1);
    }
}
