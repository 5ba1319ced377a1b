//! The binary form of spilled records: LEB128 integers (zigzag for signed ones) and
//! length-prefixed bytes. Only this process reads what it wrote, so there is no version and no
//! schema; a short or malformed record is an I/O error all the same (a truncated temporary file).

use std::io;

/// Appends fields to a record's bytes.
#[derive(Default)]
pub struct Encoder {
    pub(crate) buf: Vec<u8>,
}

impl Encoder {
    pub fn u64(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    pub fn u32(&mut self, v: u32) {
        self.u64(u64::from(v));
    }

    pub fn i64(&mut self, v: i64) {
        self.u64(((v << 1) ^ (v >> 63)) as u64);
    }

    pub fn bool(&mut self, v: bool) {
        self.buf.push(u8::from(v));
    }

    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    pub fn bytes(&mut self, v: &[u8]) {
        self.u64(v.len() as u64);
        self.buf.extend_from_slice(v);
    }

    pub fn str(&mut self, v: &str) {
        self.bytes(v.as_bytes());
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn clear(&mut self) {
        self.buf.clear();
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// Reads fields back in the order they were written.
pub struct Decoder<'a> {
    input: &'a [u8],
}

fn short() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "a spilled record is cut short",
    )
}

impl<'a> Decoder<'a> {
    pub fn new(input: &'a [u8]) -> Self {
        Decoder { input }
    }

    pub fn u64(&mut self) -> io::Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.input.split_first().ok_or_else(short)?;
            self.input = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a spilled integer is too long",
        ))
    }

    pub fn u32(&mut self) -> io::Result<u32> {
        u32::try_from(self.u64()?)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a spilled u32 overflows"))
    }

    pub fn i64(&mut self) -> io::Result<i64> {
        let v = self.u64()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    pub fn u8(&mut self) -> io::Result<u8> {
        let (&b, rest) = self.input.split_first().ok_or_else(short)?;
        self.input = rest;
        Ok(b)
    }

    pub fn bool(&mut self) -> io::Result<bool> {
        Ok(self.u8()? != 0)
    }

    pub fn bytes(&mut self) -> io::Result<&'a [u8]> {
        let len = usize::try_from(self.u64()?).map_err(|_| short())?;
        if len > self.input.len() {
            return Err(short());
        }
        let (head, rest) = self.input.split_at(len);
        self.input = rest;
        Ok(head)
    }

    pub fn str(&mut self) -> io::Result<&'a str> {
        std::str::from_utf8(self.bytes()?)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a spilled text is not UTF-8"))
    }

    pub fn string(&mut self) -> io::Result<String> {
        self.str().map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let mut e = Encoder::default();
        for v in [0u64, 1, 127, 128, 300, u64::MAX] {
            e.u64(v);
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX, -1_795_000_000_000_000] {
            e.i64(v);
        }
        e.str("it's");
        e.bool(true);
        e.u8(7);
        let mut d = Decoder::new(e.as_bytes());
        for v in [0u64, 1, 127, 128, 300, u64::MAX] {
            assert_eq!(d.u64().unwrap(), v);
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX, -1_795_000_000_000_000] {
            assert_eq!(d.i64().unwrap(), v);
        }
        assert_eq!(d.str().unwrap(), "it's");
        assert!(d.bool().unwrap());
        assert_eq!(d.u8().unwrap(), 7);
        assert!(d.u8().is_err(), "the end is an error, not a zero");
    }
}
