//! The PostgreSQL v3 protocol's framing, as the proxy reads it on each direction: typed
//! messages (`type`, length, body) cut out of the byte chunks the relay saw, and readers for
//! the fields of their bodies.

/// Messages larger than this are still relayed but their bodies are not kept for the recorder
/// (a COPY chunk or a huge parameter must not double the proxy's memory).
pub const KEEP_BODY_AT_MOST: usize = 64 << 20;

/// One message: its type byte and body (without the length).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub tag: u8,
    pub body: Vec<u8>,
}

/// Cuts typed messages out of a byte stream that arrives in arbitrary chunks.
#[derive(Debug, Default)]
pub struct Framer {
    buf: Vec<u8>,
    /// Bytes of an oversized message still to skip, and its tag (reported once, bodiless).
    skipping: usize,
}

impl Framer {
    /// Feeds `chunk`; complete messages are pushed to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut Vec<Message>) -> Result<(), String> {
        if self.skipping > 0 {
            let n = self.skipping.min(chunk.len());
            self.skipping -= n;
            chunk = &chunk[n..];
        }
        self.buf.extend_from_slice(chunk);
        let mut at = 0;
        loop {
            let rest = &self.buf[at..];
            if rest.len() < 5 {
                break;
            }
            let tag = rest[0];
            let len = u32::from_be_bytes(rest[1..5].try_into().expect("4 bytes")) as usize;
            if len < 4 {
                return Err(format!("message {:?} with length {len}", tag as char));
            }
            let total = 1 + len;
            if total - 5 > KEEP_BODY_AT_MOST {
                // Report it without its body, skip the body as it comes.
                out.push(Message {
                    tag,
                    body: Vec::new(),
                });
                let have = rest.len() - 5;
                let take = have.min(total - 5);
                self.skipping = total - 5 - take;
                at += 5 + take;
                continue;
            }
            if rest.len() < total {
                break;
            }
            out.push(Message {
                tag,
                body: rest[5..total].to_vec(),
            });
            at += total;
        }
        self.buf.drain(..at);
        Ok(())
    }
}

/// Reads the fields of a message body in order.
pub struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Reader { b }
    }

    pub fn u8(&mut self) -> Option<u8> {
        let (v, rest) = self.b.split_first()?;
        self.b = rest;
        Some(*v)
    }

    pub fn i16(&mut self) -> Option<i16> {
        let v = i16::from_be_bytes(self.b.get(..2)?.try_into().ok()?);
        self.b = &self.b[2..];
        Some(v)
    }

    pub fn i32(&mut self) -> Option<i32> {
        let v = i32::from_be_bytes(self.b.get(..4)?.try_into().ok()?);
        self.b = &self.b[4..];
        Some(v)
    }

    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let v = self.b.get(..n)?;
        self.b = &self.b[n..];
        Some(v)
    }

    /// A NUL-terminated string (lossy: names and SQL are UTF-8 in practice).
    pub fn cstr(&mut self) -> Option<String> {
        let end = memchr::memchr(0, self.b)?;
        let s = String::from_utf8_lossy(&self.b[..end]).into_owned();
        self.b = &self.b[end + 1..];
        Some(s)
    }

    /// A length-prefixed value: `None` inside for SQL NULL (length -1).
    pub fn value(&mut self) -> Option<Option<&'a [u8]>> {
        let len = self.i32()?;
        if len < 0 {
            return Some(None);
        }
        Some(Some(self.bytes(len as usize)?))
    }
}

/// Fields of an ErrorResponse or NoticeResponse: (SQLSTATE, message).
pub fn error_fields(body: &[u8]) -> (String, String) {
    let mut r = Reader::new(body);
    let (mut code, mut message) = (String::new(), String::new());
    while let Some(kind) = r.u8() {
        if kind == 0 {
            break;
        }
        let Some(v) = r.cstr() else { break };
        match kind {
            b'C' => code = v,
            b'M' => message = v,
            _ => {}
        }
    }
    (code, message)
}

/// A whole message as bytes on the wire.
pub fn encode(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + body.len());
    out.push(tag);
    out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_messages_split_anywhere() {
        let mut wire = encode(b'Q', b"select 1\0");
        wire.extend(encode(b'S', b""));
        for cut in 0..wire.len() {
            let mut f = Framer::default();
            let mut out = Vec::new();
            f.feed(&wire[..cut], &mut out).unwrap();
            f.feed(&wire[cut..], &mut out).unwrap();
            assert_eq!(out.len(), 2, "cut at {cut}");
            assert_eq!(out[0].body, b"select 1\0");
            assert_eq!(out[1].tag, b'S');
        }
    }

    #[test]
    fn error_fields_are_read() {
        let body = b"SERROR\0C23505\0Mduplicate key\0\0";
        assert_eq!(
            error_fields(body),
            ("23505".to_string(), "duplicate key".to_string())
        );
    }
}
