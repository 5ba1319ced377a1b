//! Map keys in a `.wkl` that name no field of the format, found in one pass over its bytes.
//!
//! serde skips map keys it does not know, with their values, and says nothing; a key from a
//! newer or different writer must still reach the user as a warning. The scan reads headers
//! only and takes its bytes in pieces of any size, so the same walk serves a file held in memory
//! (one piece) and a file decoded from a reader (each buffer as the decoder pulls it), without a
//! second read of the file. Nothing recurses and nothing is allocated from a length the file
//! claims, as in [`super::peek`].

use super::peek::{self, Kind, ScanError};

/// Field names of every struct in the format besides `WorkloadProfile` (whose names are
/// `peek::PROFILE_FIELDS`). A key is reported when it is in none of them; a known name in the
/// wrong struct slips through, which is the price of not tracking which struct each map is.
const OTHER_FIELDS: &[&str] = &[
    // Session
    "id",
    "user",
    "database",
    "queries",
    // Query
    "sql",
    "start_offset_us",
    "duration_us",
    "kind",
    "transaction_id",
    "response_values",
    // ResponseRow, TablePk
    "columns",
    // Metadata
    "total_queries",
    "total_sessions",
    "capture_duration_us",
    "sequence_snapshot",
    "pk_map",
    // SequenceState
    "schema",
    "name",
    "last_value",
    "increment_by",
    "start_value",
    "min_value",
    "max_value",
    "cycle",
    "is_called",
    // TablePk
    "table",
    // QueryKind's variants: serde also reads an enum from a one-entry map, `{"Select": nil}`.
    "Select",
    "Insert",
    "Update",
    "Delete",
    "Ddl",
    "Begin",
    "Commit",
    "Rollback",
    "Other",
];

/// The most fields of any struct in the format (`SequenceState`). serde also takes an integer
/// map key as a field's index and skips one past the struct's fields: a key at or above this is
/// no field anywhere. Like a known name in the wrong struct, an index in range for some other
/// struct slips through.
const MOST_FIELDS: u64 = 9;

/// Longer than any field name: a key this long is unknown by its length alone, and its name is
/// reported cut to this many bytes.
const LONGEST_NAME: usize = 64;

/// The largest MessagePack header (marker and an 8-byte scalar).
const MAX_HEAD: usize = 9;

/// An array or map of the known structure, still being walked.
struct Frame {
    /// Values still to come: elements, or for a map keys and values alike.
    left: u64,
    map: bool,
}

/// A map key whose bytes are still arriving.
struct PendingKey {
    kept: Vec<u8>,
    left: u64,
    len: u64,
}

/// The walk, fed piece by piece with [`KeyScan::feed`].
pub struct KeyScan {
    stack: Vec<Frame>,
    /// Payload bytes of the current value still to pass over.
    skip_bytes: u64,
    /// Whole values still to pass over (an unknown key's value and what nests in it).
    skip_values: u64,
    /// A header cut by the end of a piece.
    head: Vec<u8>,
    key: Option<PendingKey>,
    names: Vec<String>,
    /// The value is complete, or holds a byte no header starts with: nothing more to read.
    done: bool,
}

impl Default for KeyScan {
    fn default() -> Self {
        KeyScan::new()
    }
}

impl KeyScan {
    pub fn new() -> KeyScan {
        KeyScan {
            stack: vec![Frame {
                left: 1,
                map: false,
            }],
            skip_bytes: 0,
            skip_values: 0,
            head: Vec::with_capacity(MAX_HEAD),
            key: None,
            names: Vec::new(),
            done: false,
        }
    }

    /// Walks the next `piece` of the file's bytes.
    pub fn feed(&mut self, mut piece: &[u8]) {
        while !piece.is_empty() && !self.done {
            if self.skip_bytes > 0 {
                let n = self.skip_bytes.min(piece.len() as u64);
                self.skip_bytes -= n;
                piece = &piece[n as usize..];
                continue;
            }
            if let Some(key) = &mut self.key {
                let n = key.left.min(piece.len() as u64) as usize;
                let room = (LONGEST_NAME + 1).saturating_sub(key.kept.len()).min(n);
                key.kept.extend_from_slice(&piece[..room]);
                key.left -= n as u64;
                piece = &piece[n..];
                if key.left == 0 {
                    self.end_key();
                }
                continue;
            }
            if self.skip_values == 0 {
                while self.stack.last().is_some_and(|f| f.left == 0) {
                    self.stack.pop();
                }
                if self.stack.is_empty() {
                    self.done = true;
                    break;
                }
            }
            let header = if self.head.is_empty() {
                match peek::read_header(piece, 0) {
                    Ok(h) => {
                        piece = &piece[h.head_len..];
                        h
                    }
                    Err(ScanError::Truncated) => {
                        self.head.extend_from_slice(piece);
                        break;
                    }
                    Err(ScanError::Reserved { .. }) => {
                        self.done = true;
                        break;
                    }
                }
            } else {
                // Completed a byte at a time: the first length at which it reads is its own.
                let mut read = None;
                while read.is_none() && !piece.is_empty() && !self.done {
                    self.head.push(piece[0]);
                    piece = &piece[1..];
                    match peek::read_header(&self.head, 0) {
                        Ok(h) => read = Some(h),
                        // Every header reads from MAX_HEAD bytes; more would be a walk gone wrong.
                        Err(ScanError::Truncated) => self.done = self.head.len() >= MAX_HEAD,
                        Err(ScanError::Reserved { .. }) => self.done = true,
                    }
                }
                match read {
                    Some(h) => {
                        self.head.clear();
                        h
                    }
                    None => continue,
                }
            };
            self.value(header);
        }
    }

    /// The keys found, each once, in the order first seen.
    pub fn finish(self) -> Vec<String> {
        self.names
    }

    fn value(&mut self, h: peek::Header) {
        if self.skip_values > 0 {
            self.skip_values = self.skip_values - 1 + h.children();
            self.skip_bytes = h.payload_len() as u64;
            return;
        }
        let top = self
            .stack
            .last_mut()
            .expect("walk stops when the stack empties");
        // In a map of n entries, 2n values alternate key, value; keys sit at even counts left.
        let is_key = top.map && top.left.is_multiple_of(2);
        top.left -= 1;
        // serde matches a binary key by its bytes, as it does a string's.
        if is_key && matches!(h.kind, Kind::Str | Kind::Bin) {
            self.key = Some(PendingKey {
                kept: Vec::new(),
                left: u64::from(h.len),
                len: u64::from(h.len),
            });
            if h.len == 0 {
                self.end_key();
            }
            return;
        }
        if let (true, Kind::Int(Some(index))) = (is_key, h.kind) {
            if index >= MOST_FIELDS {
                self.unknown(format!("#{index}"));
            }
            return;
        }
        match h.kind {
            Kind::Array | Kind::Map if h.len > 0 => self.stack.push(Frame {
                left: h.children(),
                map: h.kind == Kind::Map,
            }),
            _ => self.skip_bytes = h.payload_len() as u64,
        }
    }

    fn end_key(&mut self) {
        let key = self.key.take().expect("a key was pending");
        let known = key.len as usize <= LONGEST_NAME
            && peek::PROFILE_FIELDS
                .iter()
                .chain(OTHER_FIELDS)
                .any(|f| f.as_bytes() == key.kept);
        if known {
            return;
        }
        let mut name =
            String::from_utf8_lossy(&key.kept[..key.kept.len().min(LONGEST_NAME)]).into_owned();
        if key.len as usize > LONGEST_NAME {
            name.push('…');
        }
        self.unknown(name);
    }

    /// Records the unknown key just read and skips its value whole (the map's next entry).
    fn unknown(&mut self, name: String) {
        if !self.names.contains(&name) {
            self.names.push(name);
        }
        if let Some(top) = self.stack.last_mut() {
            top.left -= 1;
        }
        self.skip_values = 1;
    }
}

/// Unknown map keys anywhere in `value`, each listed once.
pub fn unknown_keys(value: &[u8]) -> Vec<String> {
    let mut scan = KeyScan::new();
    scan.feed(value);
    scan.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_skip_their_values() {
        // {"sql": "x", "extra": {"deep": 1}, "kind": "Select"}
        let bytes = b"\x83\xa3sql\xa1x\xa5extra\x81\xa4deep\x01\xa4kind\xa6Select";
        assert_eq!(unknown_keys(bytes), vec!["extra".to_string()]);
    }

    #[test]
    fn array_form_has_no_keys() {
        assert!(unknown_keys(&[0x93, 0x01, 0x81, 0xa3, b's', b'q', b'l', 0x02, 0xc0]).is_empty());
    }

    #[test]
    fn a_value_split_anywhere_scans_as_a_whole() {
        // {"sql": "x", "note": 70000 (a uint32 whose header spans pieces), "z": [1, {"k": 2}],
        //  "kind": "Select", "": nil}, then bytes after the value that must not be read.
        let mut bytes =
            b"\x85\xa3sql\xa1x\xa4note\xce\x00\x01\x11\x70\xa1z\x92\x01\x81\xa1k\x02".to_vec();
        bytes.extend_from_slice(b"\xa4kind\xa6Select\xa0\xc0\x81\xa5after\x01");
        let whole = unknown_keys(&bytes);
        assert_eq!(whole, vec!["note", "z", ""]);
        for size in 1..bytes.len() {
            let mut scan = KeyScan::new();
            for piece in bytes.chunks(size) {
                scan.feed(piece);
            }
            assert_eq!(scan.finish(), whole, "pieces of {size}");
        }
    }

    #[test]
    fn a_byte_no_header_starts_with_ends_the_walk_in_any_piece() {
        // {"x": 1, then 0xc1 (never used by MessagePack) where the next key should be.
        let bytes = [0x82, 0xa1, b'x', 0x01, 0xc1, 0xa1, b'y', 0x02];
        for size in 1..=bytes.len() {
            let mut scan = KeyScan::new();
            for piece in bytes.chunks(size) {
                scan.feed(piece);
            }
            assert!(scan.done, "pieces of {size}");
            assert_eq!(scan.finish(), vec!["x"], "pieces of {size}");
        }
    }

    #[test]
    fn long_keys_are_cut_in_the_report() {
        let key = "k".repeat(300);
        // A map of one entry whose key is a 300-byte string (str16), its value nil.
        let mut bytes = vec![0x81, 0xda, 0x01, 0x2c];
        bytes.extend_from_slice(key.as_bytes());
        bytes.push(0xc0);
        let names = unknown_keys(&bytes);
        assert_eq!(names, vec![format!("{}…", "k".repeat(LONGEST_NAME))]);
    }
}
