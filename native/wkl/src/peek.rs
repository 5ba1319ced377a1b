//! A small MessagePack header reader, used before serde sees a file.
//!
//! serde only says "this did not decode"; to refuse a file with a useful message we need to know
//! what it *is* (a replay results file, a JSON file, a profile cut short) and where the one value
//! in it ends. Everything here reads headers only: no value is materialised, nothing is allocated
//! from a length the file claims, and nothing recurses, so hostile input costs at most one pass.

use std::fmt;

/// What a file looks like from its first few MessagePack headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileShape {
    /// A workload profile: a 7-element array starting with the version number, or a map with
    /// string keys of which one is a profile's field name. Also returned for a plausible start that
    /// is cut short, so that a truncated profile is reported as truncated.
    Profile,
    /// A pg-retest replay results file: an array whose elements are `[session_id, [results…]]`.
    /// An empty top-level array is counted here too: it is what pg-retest writes when every
    /// session failed, and it can never be a profile.
    ReplayResults,
    /// Anything else.
    Unknown,
}

/// The parts of a MessagePack header that the shape checks need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Nil,
    Bool,
    /// An integer; `Some` when it is non-negative (session ids and versions are).
    Int(Option<u64>),
    Float,
    Str,
    Bin,
    Ext,
    Array,
    Map,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Nil => "nil",
            Kind::Bool => "boolean",
            Kind::Int(_) => "integer",
            Kind::Float => "float",
            Kind::Str => "string",
            Kind::Bin => "binary blob",
            Kind::Ext => "extension value",
            Kind::Array => "array",
            Kind::Map => "map",
        }
    }
}

/// One decoded header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header {
    pub kind: Kind,
    /// Bytes taken by the marker, its length field, and for scalars the scalar itself.
    pub head_len: usize,
    /// For strings, blobs and extensions the payload bytes after the head; for arrays the
    /// element count; for maps the entry count; 0 otherwise.
    pub len: u32,
}

impl Header {
    /// Bytes following the head that belong to this value itself (not to its children).
    pub(crate) fn payload_len(&self) -> usize {
        match self.kind {
            Kind::Str | Kind::Bin | Kind::Ext => self.len as usize,
            _ => 0,
        }
    }

    /// How many values are nested directly inside this one.
    pub(crate) fn children(&self) -> u64 {
        match self.kind {
            Kind::Array => u64::from(self.len),
            Kind::Map => 2 * u64::from(self.len),
            _ => 0,
        }
    }
}

/// Why a value could not be walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScanError {
    /// The bytes end (or are too few for what the headers claim) while a value is still open.
    Truncated,
    /// Byte 0xc1, which MessagePack never uses, at this offset.
    Reserved { offset: usize },
}

fn be(bytes: &[u8], at: usize, width: usize) -> Result<u64, ScanError> {
    let field = bytes.get(at..at + width).ok_or(ScanError::Truncated)?;
    Ok(field.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
}

/// Reads the header at `pos`. Fails only on truncation or the reserved marker.
// Inlined: the key scan reads a header per value of every file it loads.
#[inline(always)]
pub(crate) fn read_header(bytes: &[u8], pos: usize) -> Result<Header, ScanError> {
    let marker = *bytes.get(pos).ok_or(ScanError::Truncated)?;
    let h = |kind, head_len, len| Header {
        kind,
        head_len,
        len,
    };
    // A length field of `w` bytes right after the marker; it fits in u32 because w <= 4.
    let len_at = |w: usize| be(bytes, pos + 1, w).map(|v| v as u32);
    let header = match marker {
        0x00..=0x7f => h(Kind::Int(Some(u64::from(marker))), 1, 0),
        0x80..=0x8f => h(Kind::Map, 1, u32::from(marker & 0x0f)),
        0x90..=0x9f => h(Kind::Array, 1, u32::from(marker & 0x0f)),
        0xa0..=0xbf => h(Kind::Str, 1, u32::from(marker & 0x1f)),
        0xc0 => h(Kind::Nil, 1, 0),
        0xc1 => return Err(ScanError::Reserved { offset: pos }),
        0xc2 | 0xc3 => h(Kind::Bool, 1, 0),
        0xc4 => h(Kind::Bin, 2, len_at(1)?),
        0xc5 => h(Kind::Bin, 3, len_at(2)?),
        0xc6 => h(Kind::Bin, 5, len_at(4)?),
        // ext8/16/32: length, then one type byte, then the payload.
        0xc7 => h(Kind::Ext, 3, len_at(1)?),
        0xc8 => h(Kind::Ext, 4, len_at(2)?),
        0xc9 => h(Kind::Ext, 6, len_at(4)?),
        0xca => h(Kind::Float, 5, 0),
        0xcb => h(Kind::Float, 9, 0),
        0xcc..=0xcf => {
            let width = 1usize << (marker - 0xcc);
            h(Kind::Int(Some(be(bytes, pos + 1, width)?)), 1 + width, 0)
        }
        0xd0..=0xd3 => {
            let width = 1usize << (marker - 0xd0);
            let raw = be(bytes, pos + 1, width)?;
            // Sign bit of a `width`-byte two's complement number.
            let negative = raw >> (width * 8 - 1) & 1 == 1;
            h(Kind::Int((!negative).then_some(raw)), 1 + width, 0)
        }
        // fixext 1/2/4/8/16: one type byte, then a fixed payload.
        0xd4..=0xd8 => h(Kind::Ext, 2, 1u32 << (marker - 0xd4)),
        0xd9 => h(Kind::Str, 2, len_at(1)?),
        0xda => h(Kind::Str, 3, len_at(2)?),
        0xdb => h(Kind::Str, 5, len_at(4)?),
        0xdc => h(Kind::Array, 3, len_at(2)?),
        0xdd => h(Kind::Array, 5, len_at(4)?),
        0xde => h(Kind::Map, 3, len_at(2)?),
        0xdf => h(Kind::Map, 5, len_at(4)?),
        0xe0..=0xff => h(Kind::Int(None), 1, 0),
    };
    if pos + header.head_len > bytes.len() {
        return Err(ScanError::Truncated);
    }
    Ok(header)
}

/// Length in bytes of the one complete value that starts at `bytes[0]`.
///
/// Walks with a single counter of values still to read instead of a stack, so nesting depth
/// costs nothing. Every value takes at least one byte, so as soon as more values are owed than
/// bytes remain the value cannot be complete: that is how a header claiming four billion
/// elements is rejected at once.
pub(crate) fn value_len(bytes: &[u8]) -> Result<usize, ScanError> {
    let mut pos = 0usize;
    let mut owed: u64 = 1;
    while owed > 0 {
        if owed > (bytes.len() - pos) as u64 {
            return Err(ScanError::Truncated);
        }
        let header = read_header(bytes, pos)?;
        owed = owed - 1 + header.children();
        pos = (pos + header.head_len)
            .checked_add(header.payload_len())
            .filter(|end| *end <= bytes.len())
            .ok_or(ScanError::Truncated)?;
    }
    Ok(pos)
}

/// Byte ranges of the children of a complete array or map value (for a map: key, value, key, …).
///
/// Only for values already checked by [`value_len`]; returns `None` for anything else.
pub(crate) fn children(value: &[u8]) -> Option<Vec<&[u8]>> {
    let header = read_header(value, 0).ok()?;
    if !matches!(header.kind, Kind::Array | Kind::Map) {
        return None;
    }
    let mut pos = header.head_len;
    let mut out = Vec::new();
    for _ in 0..header.children() {
        let len = value_len(value.get(pos..)?).ok()?;
        out.push(&value[pos..pos + len]);
        pos += len;
    }
    Some(out)
}

/// The bytes of a string value, if `value` starts with a complete one.
pub(crate) fn str_bytes(value: &[u8]) -> Option<&[u8]> {
    let header = read_header(value, 0).ok()?;
    if header.kind != Kind::Str {
        return None;
    }
    value.get(header.head_len..header.head_len + header.len as usize)
}

/// Field names of `WorkloadProfile`; a map-form profile starts with one of them.
pub(crate) const PROFILE_FIELDS: [&str; 7] = [
    "version",
    "captured_at",
    "source_host",
    "pg_version",
    "capture_method",
    "sessions",
    "metadata",
];

/// What the start of a file looks like, with a phrase for error messages.
#[derive(Debug, Clone)]
pub(crate) struct Look {
    pub shape: FileShape,
    /// Top-level element count (sessions, for a results file).
    pub top_len: u32,
    /// e.g. "it starts with a MessagePack string" or "it looks like JSON text".
    pub what: Description,
}

/// Tells a profile from a replay results file from anything else, looking only at headers.
pub fn sniff(bytes: &[u8]) -> FileShape {
    look(bytes).shape
}

pub(crate) fn look(bytes: &[u8]) -> Look {
    let what = Description(bytes.get(..64).unwrap_or(bytes).to_vec());
    let unknown = |top_len| Look {
        shape: FileShape::Unknown,
        top_len,
        what: what.clone(),
    };
    let Ok(top) = read_header(bytes, 0) else {
        return unknown(0);
    };
    let shape = match top.kind {
        Kind::Array => array_shape(bytes, top),
        Kind::Map => map_shape(bytes, top),
        _ => FileShape::Unknown,
    };
    Look {
        shape,
        top_len: top.len,
        what,
    }
}

fn array_shape(bytes: &[u8], top: Header) -> FileShape {
    if top.len == 0 {
        return FileShape::ReplayResults;
    }
    let first_at = top.head_len;
    let Ok(first) = read_header(bytes, first_at) else {
        // Cut right after the array header: only the length can vouch for a profile.
        return if top.len == 7 {
            FileShape::Profile
        } else {
            FileShape::Unknown
        };
    };
    match first.kind {
        Kind::Int(Some(_)) => FileShape::Profile,
        Kind::Array if first.len == 2 => {
            let id = read_header(bytes, first_at + first.head_len);
            let Ok(id) = id else {
                return FileShape::Unknown;
            };
            let Kind::Int(Some(_)) = id.kind else {
                return FileShape::Unknown;
            };
            let results_at = first_at + first.head_len + id.head_len;
            match read_header(bytes, results_at) {
                Ok(h) if h.kind == Kind::Array => FileShape::ReplayResults,
                _ => FileShape::Unknown,
            }
        }
        _ => FileShape::Unknown,
    }
}

fn map_shape(bytes: &[u8], top: Header) -> FileShape {
    if top.len == 0 {
        return FileShape::Unknown;
    }
    let mut at = top.head_len;
    if at >= bytes.len() {
        // Cut right after the map header; a profile map has 7 keys (more only from another writer).
        return if top.len <= 7 {
            FileShape::Profile
        } else {
            FileShape::Unknown
        };
    }
    // The entries in order until a key names a profile field: serde skips keys it does not
    // know, so one from another writer may come first.
    for _ in 0..top.len {
        let Some(rest) = bytes.get(at..).filter(|r| !r.is_empty()) else {
            // Only unknown string keys so far, and the bytes end: as plausible as the start of
            // a profile cut short, which the decoder then reports as such.
            return FileShape::Profile;
        };
        let key = match read_header(rest, 0) {
            Ok(h) if h.kind == Kind::Str => h,
            Err(ScanError::Truncated) => return FileShape::Profile,
            _ => return FileShape::Unknown,
        };
        let name = &rest[key.head_len..];
        match name.get(..key.len as usize) {
            Some(name) if PROFILE_FIELDS.iter().any(|f| f.as_bytes() == name) => {
                return FileShape::Profile
            }
            Some(_) => {}
            // The key itself is cut short; its start decides.
            None => {
                return if PROFILE_FIELDS
                    .iter()
                    .any(|f| f.as_bytes().starts_with(name))
                {
                    FileShape::Profile
                } else {
                    FileShape::Unknown
                }
            }
        }
        at += key.head_len + key.len as usize;
        match bytes.get(at..).map(value_len) {
            Some(Ok(n)) => at += n,
            Some(Err(ScanError::Truncated)) | None => return FileShape::Profile,
            Some(Err(ScanError::Reserved { .. })) => return FileShape::Unknown,
        }
    }
    // A map of keys that name nothing of a profile.
    FileShape::Unknown
}

/// The first bytes of a file, displayed as a guess at what the file is.
#[derive(Debug, Clone)]
pub(crate) struct Description(Vec<u8>);

impl fmt::Display for Description {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let head = &self.0;
        if head.starts_with(&[0x1f, 0x8b]) {
            return f.write_str("it is gzip-compressed (decompress it first)");
        }
        if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            return f.write_str("it is zstd-compressed (decompress it first)");
        }
        if head.starts_with(b"PK\x03\x04") {
            return f.write_str("it is a zip archive (extract the .wkl from it first)");
        }
        if let Some(text) = printable_text(head) {
            let trimmed = text.trim_start();
            if trimmed.starts_with('{') || trimmed.starts_with('[') {
                return f.write_str("it looks like JSON text");
            }
            let snippet: String = trimmed.chars().take(24).collect();
            return write!(f, "it looks like a text file (starts with {snippet:?})");
        }
        match read_header(head, 0) {
            Ok(h) if h.kind == Kind::Array || h.kind == Kind::Map => {
                let first = read_header(head, h.head_len).map(|c| c.kind.noun());
                let unit = if h.kind == Kind::Array {
                    "element"
                } else {
                    "entry"
                };
                write!(f, "it is a {}-{unit} MessagePack {}", h.len, h.kind.noun())?;
                match first {
                    Ok(noun) if h.len > 0 && h.kind == Kind::Array => {
                        write!(f, " whose first element is a {noun}")
                    }
                    Ok(noun) if h.len > 0 => write!(f, " whose first key is a {noun}"),
                    _ => Ok(()),
                }
            }
            Ok(h) => write!(
                f,
                "it starts with a MessagePack {}, not an array or a map",
                h.kind.noun()
            ),
            Err(_) => f.write_str("it does not start with a MessagePack value"),
        }
    }
}

/// `Some` when the bytes read as mostly printable UTF-8 text (a cut multi-byte char at the end
/// is allowed).
fn printable_text(head: &[u8]) -> Option<&str> {
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    let printable = text
        .chars()
        .all(|c| !c.is_control() || c.is_ascii_whitespace());
    (printable && text.trim().len() >= 2).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_len_of_scalars_and_containers() {
        assert_eq!(value_len(&[0x05]), Ok(1));
        assert_eq!(value_len(&[0xcd, 0x01, 0x00]), Ok(3));
        assert_eq!(value_len(&[0x92, 0xa1, b'a', 0xc0, 0xff]), Ok(4));
        assert_eq!(value_len(&[0x81, 0xa1, b'k', 0x90]), Ok(4));
        assert_eq!(value_len(&[0xd6, 0x01, 1, 2, 3, 4]), Ok(6));
        assert_eq!(value_len(&[0xc7, 0x02, 0x01, 9, 9]), Ok(5));
    }

    #[test]
    fn value_len_refuses_claims_the_bytes_cannot_hold() {
        assert_eq!(
            value_len(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0x01]),
            Err(ScanError::Truncated)
        );
        assert_eq!(
            value_len(&[0xdb, 0xff, 0xff, 0xff, 0xff, b'a']),
            Err(ScanError::Truncated)
        );
        assert_eq!(
            value_len(&[0xdf, 0xff, 0xff, 0xff, 0xff]),
            Err(ScanError::Truncated)
        );
        assert_eq!(value_len(&[0xcf, 0x00]), Err(ScanError::Truncated));
        assert_eq!(value_len(&[]), Err(ScanError::Truncated));
    }

    #[test]
    fn value_len_reports_the_reserved_marker() {
        assert_eq!(
            value_len(&[0x92, 0x01, 0xc1]),
            Err(ScanError::Reserved { offset: 2 })
        );
    }

    #[test]
    fn deep_nesting_does_not_recurse() {
        let mut bytes = vec![0x91; 1_000_000];
        bytes.push(0xc0);
        assert_eq!(value_len(&bytes), Ok(bytes.len()));
    }

    #[test]
    fn signed_ints_keep_their_sign() {
        assert_eq!(read_header(&[0xd0, 0xff], 0).unwrap().kind, Kind::Int(None));
        assert_eq!(
            read_header(&[0xd1, 0x00, 0x07], 0).unwrap().kind,
            Kind::Int(Some(7))
        );
        assert_eq!(read_header(&[0xe5], 0).unwrap().kind, Kind::Int(None));
    }

    #[test]
    fn sniff_tells_profiles_from_results() {
        // [2, …] with 7 elements.
        assert_eq!(sniff(&[0x97, 0x02, 0xa0]), FileShape::Profile);
        assert_eq!(sniff(&[0x97]), FileShape::Profile);
        assert_eq!(sniff(&[0x81, 0xa7, b'v', b'e', b'r']), FileShape::Profile);
        assert_eq!(sniff(b"\x81\xa7version\x02"), FileShape::Profile);
        // [[7, []]]
        assert_eq!(sniff(&[0x91, 0x92, 0x07, 0x90]), FileShape::ReplayResults);
        assert_eq!(sniff(&[0x90]), FileShape::ReplayResults);
        assert_eq!(sniff(&[0x91, 0x92, 0xa1, b'x', 0x90]), FileShape::Unknown);
        assert_eq!(sniff(b"\x81\xa3foo\x02"), FileShape::Unknown);
        // A key of another writer before the profile's own, whole or cut short.
        assert_eq!(
            sniff(b"\x88\xa3foo\x91\x02\xa7version\x02"),
            FileShape::Profile
        );
        assert_eq!(sniff(b"\x88\xa3foo\x92\x02"), FileShape::Profile);
        assert_eq!(sniff(b"\x82\xa3foo\x02\x07\x02"), FileShape::Unknown);
        assert_eq!(sniff(b"{\"version\": 2}"), FileShape::Unknown);
        assert_eq!(sniff(&[]), FileShape::Unknown);
    }

    #[test]
    fn descriptions_name_what_the_file_looks_like() {
        let d = |b: &[u8]| Description(b.to_vec()).to_string();
        assert_eq!(d(b"{\"a\": 1}"), "it looks like JSON text");
        assert!(d(b"hello world").contains("text file"));
        assert!(d(&[0x1f, 0x8b, 0x08, 0x00]).contains("gzip"));
        assert_eq!(
            d(&[0x93, 0xa1, b'x', 0x01, 0x02]),
            "it is a 3-element MessagePack array whose first element is a string"
        );
        assert_eq!(
            d(&[0xc3]),
            "it starts with a MessagePack boolean, not an array or a map"
        );
        assert_eq!(d(&[0xc1]), "it does not start with a MessagePack value");
    }

    #[test]
    fn children_splits_arrays_and_maps() {
        let bytes = [0x82, 0xa1, b'a', 0x01, 0xa1, b'b', 0x92, 0x01, 0x02];
        let parts = children(&bytes).unwrap();
        assert_eq!(parts.len(), 4);
        assert_eq!(parts[3], &[0x92, 0x01, 0x02]);
        assert_eq!(str_bytes(parts[2]), Some(&b"b"[..]));
        assert!(children(&[0x01]).is_none());
    }
}
