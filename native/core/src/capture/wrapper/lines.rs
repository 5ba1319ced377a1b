//! A reader over text produced piece by piece (unwrapped messages), so that a wrapper is
//! unwrapped as the caller reads and never all at once.

use std::io::{self, BufRead, Read};

/// Produces the unwrapped text.
pub(super) trait Source {
    /// Appends the next piece of text to `out` (possibly nothing); `Ok(false)` once the input is
    /// exhausted (what was appended in that call still counts).
    fn fill(&mut self, out: &mut Vec<u8>) -> io::Result<bool>;
}

pub(super) struct Text<S> {
    source: S,
    buf: Vec<u8>,
    pos: usize,
    done: bool,
}

impl<S: Source> Text<S> {
    pub fn new(source: S) -> Self {
        Text {
            source,
            buf: Vec::new(),
            pos: 0,
            done: false,
        }
    }
}

impl<S: Source> BufRead for Text<S> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos >= self.buf.len() && !self.done {
            self.buf.clear();
            self.pos = 0;
            if !self.source.fill(&mut self.buf)? {
                self.done = true;
            }
        }
        Ok(&self.buf[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.buf.len());
    }
}

impl<S: Source> Read for Text<S> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

/// An input error of the unwrapped text (an `io::Error` carrying one line for the user).
pub(super) fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Reads one line (without its `\n` or `\r\n`) into `line`; `Ok(false)` at the end of input.
/// Bytes that are not UTF-8 are replaced, as PostgreSQL's own readers of a log would see them.
pub(super) fn read_line(
    input: &mut dyn BufRead,
    raw: &mut Vec<u8>,
    line: &mut String,
) -> io::Result<bool> {
    raw.clear();
    line.clear();
    if input.read_until(b'\n', raw)? == 0 {
        return Ok(false);
    }
    while matches!(raw.last(), Some(b'\n') | Some(b'\r')) {
        raw.pop();
    }
    line.push_str(&String::from_utf8_lossy(raw));
    Ok(true)
}
