//! PostgreSQL's syslog pieces put back together.
//!
//! Logging to syslog, the server numbers its messages per process and cuts a message that holds
//! a newline or is longer than 900 bytes into chunks: `[seq-1] …`, `[seq-2] …` (`[seq] …` for
//! a message sent whole). A chunk ends at each newline of the message (the newline itself is
//! dropped, so the next chunk starts with the TAB of a continuation line, or with the prefix of a
//! `DETAIL:`/`STATEMENT:` line), or, on a line longer than 900 bytes, at the last space before
//! the 900th byte (the next chunk then starts with that space), or at the 900th byte when the
//! line has no space there. The chunks of one message are sent one after the other by one
//! process, but other processes' lines may come between them.
//!
//! Joining two chunks: the next chunk follows a cut of a long line when the previous chunk and
//! the next chunk's first word (with the space or TAB the cut left at its start) reach 900 bytes:
//! the cut fell where no space was left before the limit. Otherwise it follows a newline. The
//! chunks alone cannot always tell: a line that ends within a word's length of 900 bytes, or a
//! line whose first word alone reaches the 900th byte, gives the same chunks as one long line
//! cut there. Such a pair is read as one line (every long line gives that shape; a newline gives
//! it rarely); the whitespace between the two is kept, so the SQL reads the same unless the
//! newline ended a `--` comment or was inside a string literal.
//!
//! rsyslog writes a TAB as `#011` and a newline as `#012` (its escaping of control characters):
//! restored here. A `#011` or `#012` that was in the SQL itself (a colour code such as
//! `'#011f4b'`, say) cannot be told apart and is restored too.

use std::collections::{HashMap, VecDeque};
use std::io::{self, BufRead};

use super::lines::{invalid, read_line, Source, Text};
use super::Skipped;

/// The server's chunk size (`PG_SYSLOG_LIMIT`).
const CHUNK_LIMIT: usize = 900;
/// Lines after which a message whose process sent nothing more is taken as complete (its chunks
/// come from one loop in one process: never this far apart).
const WINDOW: u64 = 4096;

/// A `[seq-chunk]`, `[seq]` marker at the start of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Marker {
    pub seq: u64,
    pub chunk: Option<u32>,
}

/// The marker at the start of `message` and the text after it (without the one space the
/// server puts after the marker).
pub(super) fn marker(message: &str) -> Option<(Marker, &str)> {
    let rest = message.strip_prefix('[')?;
    let close = rest.find(']')?;
    let inside = &rest[..close];
    let (seq, chunk) = match inside.split_once('-') {
        Some((s, c)) => (s, Some(c)),
        None => (inside, None),
    };
    if seq.is_empty() || !seq.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let chunk = match chunk {
        Some(c) if !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()) => Some(c.parse().ok()?),
        Some(_) => return None,
        None => None,
    };
    let after = &rest[close + 1..];
    let text = after.strip_prefix(' ').unwrap_or(after);
    Some((
        Marker {
            seq: seq.parse().ok()?,
            chunk,
        },
        text,
    ))
}

/// `#011` and `#012` (rsyslog's escaped TAB and newline) back to themselves; a message sent
/// whole (`syslog_split_messages = off`) keeps its newlines that way, the last one dropped.
pub(super) fn unescape(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains("#011") || text.contains("#012") {
        let restored = text.replace("#011", "\t").replace("#012", "\n");
        std::borrow::Cow::Owned(restored.strip_suffix('\n').unwrap_or(&restored).to_string())
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Whether `next` continues `prev` on the same line (a cut of a long line) rather than after a
/// newline.
fn continues_line(prev: &str, next: &str) -> bool {
    let mut word = 0;
    for (i, b) in next.bytes().enumerate() {
        if i > 0 && b.is_ascii_whitespace() {
            break;
        }
        word += 1;
    }
    prev.len() + word >= CHUNK_LIMIT
}

struct Message {
    /// The process the message came from (host and pid, or Heroku's dyno).
    key: String,
    seq: Option<u64>,
    /// Put before each line of the message that is not a TAB continuation, in place of the
    /// line's first space (Heroku's time and pid); empty for syslog.
    head: String,
    /// The message's text so far (lines joined by `\n`).
    text: String,
    /// Length of the last chunk, for the joining rule.
    last_chunk: usize,
    complete: bool,
    last_line: u64,
}

/// Messages in the order their first chunk came, each written out once complete.
#[derive(Default)]
pub(super) struct Assembler {
    queue: VecDeque<Message>,
    /// Id of `queue[0]`; ids grow by one per message.
    first_id: u64,
    /// The message each process is still sending, by id.
    open: HashMap<String, u64>,
    lines: u64,
    /// Chunks 2+ whose first chunk was not seen (the log starts inside a message).
    pub orphans: u64,
}

impl Assembler {
    /// One line's message (the text after the syslog header) from the process `key`.
    pub fn push(&mut self, key: &str, head: String, message: &str, pid: Option<&str>) {
        self.lines += 1;
        let parsed = marker(message).filter(|(m, _)| {
            // `[1234] LOG: …` from a log_line_prefix `[%p] ` is not a sequence number.
            m.chunk.is_some() || pid.is_none_or(|p| p.parse::<u64>().ok() != Some(m.seq))
        });
        let (seq, chunk, text) = match parsed {
            Some((m, text)) => (Some(m.seq), m.chunk, text),
            None => (None, None, message),
        };
        let text = unescape(text);
        let line_number = self.lines;
        if let (Some(seq), Some(chunk)) = (seq, chunk) {
            if chunk > 1 {
                if let Some(m) = self.open_message(key).filter(|m| m.seq == Some(seq)) {
                    if continues_line(&m.text[m.text.len() - m.last_chunk..], &text) {
                        m.text.push_str(&text);
                    } else {
                        m.text.push('\n');
                        m.text.push_str(&text);
                    }
                    m.last_chunk = text.len();
                    m.last_line = line_number;
                    return;
                }
                self.orphans += 1;
            }
        }
        self.close(key);
        let complete = chunk.is_none_or(|c| c > 1);
        let id = self.first_id + self.queue.len() as u64;
        if !complete {
            self.open.insert(key.to_string(), id);
        }
        self.queue.push_back(Message {
            key: key.to_string(),
            seq,
            head,
            last_chunk: text.len(),
            text: text.into_owned(),
            complete,
            last_line: self.lines,
        });
    }

    fn open_message(&mut self, key: &str) -> Option<&mut Message> {
        let id = *self.open.get(key)?;
        let index = usize::try_from(id.checked_sub(self.first_id)?).ok()?;
        self.queue.get_mut(index)
    }

    fn close(&mut self, key: &str) {
        if let Some(m) = self.open_message(key) {
            m.complete = true;
        }
        self.open.remove(key);
    }

    /// Writes out the complete messages at the front of the queue; at the end of the input
    /// (`all`), every message.
    pub fn drain(&mut self, out: &mut Vec<u8>, all: bool) {
        while let Some(front) = self.queue.front() {
            let ready =
                all || front.complete || self.lines.saturating_sub(front.last_line) > WINDOW;
            if !ready {
                break;
            }
            let m = self.queue.pop_front().expect("a front message");
            self.first_id += 1;
            if self.open.get(&m.key) == Some(&(self.first_id - 1)) {
                self.open.remove(&m.key);
            }
            for line in m.text.split('\n') {
                let line = if m.head.is_empty() || line.starts_with('\t') {
                    line
                } else {
                    // The head ends with the space the line started with.
                    out.extend_from_slice(m.head.as_bytes());
                    line.strip_prefix(' ').unwrap_or(line)
                };
                out.extend_from_slice(line.as_bytes());
                out.push(b'\n');
            }
        }
    }
}

/// What a line-oriented wrapper (syslog, Heroku) does with each line of its input.
pub(super) trait Unwrap {
    /// The wrapper's name, for messages.
    const NAME: &'static str;
    /// Where to find the server's lines, when none was found.
    const HINT: &'static str;
    /// Takes one line (numbered from 1): its PostgreSQL message into `assembler`, or a count in
    /// `skipped`.
    fn take(
        &mut self,
        line: &str,
        number: u64,
        assembler: &mut Assembler,
        skipped: &Skipped,
    ) -> io::Result<()>;
}

struct Lines<U> {
    input: Box<dyn BufRead>,
    raw: Vec<u8>,
    line: String,
    number: u64,
    assembler: Assembler,
    skipped: Skipped,
    produced: bool,
    unwrap: U,
}

impl<U: Unwrap> Source for Lines<U> {
    fn fill(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        loop {
            if !read_line(&mut self.input, &mut self.raw, &mut self.line)? {
                self.assembler.drain(out, true);
                self.produced |= !out.is_empty();
                if !self.produced {
                    let counts = self.skipped.describe();
                    return Err(invalid(format!(
                        "{}: no PostgreSQL log line in {} lines ({}); {}",
                        U::NAME,
                        self.number,
                        if counts.is_empty() {
                            "none readable"
                        } else {
                            &counts
                        },
                        U::HINT
                    )));
                }
                if self.assembler.orphans > 0 {
                    self.skipped.add("chunks_without_their_start");
                }
                return Ok(false);
            }
            self.number += 1;
            self.unwrap
                .take(&self.line, self.number, &mut self.assembler, &self.skipped)?;
            self.assembler.drain(out, false);
            if !out.is_empty() {
                self.produced = true;
                return Ok(true);
            }
        }
    }
}

/// The text `unwrap` makes of `input`'s lines, read as it is read.
pub(super) fn unwrapped<U: Unwrap + 'static>(
    input: Box<dyn BufRead>,
    skipped: Skipped,
    unwrap: U,
) -> Box<dyn BufRead> {
    Box::new(Text::new(Lines {
        input,
        raw: Vec::new(),
        line: String::new(),
        number: 0,
        assembler: Assembler::default(),
        skipped,
        produced: false,
        unwrap,
    }))
}
