//! The one error type of the `.wkl` codec.
//!
//! Every message is a single line of the form `<file>: <problem>; <what to do>`, because it ends
//! up verbatim in a CI log where the reader has nothing else to go on. Causes (I/O errors, serde
//! messages) are folded into that line rather than exposed through `source()`: a caller printing
//! the cause chain would otherwise show them twice.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A `.wkl` file (or byte buffer) that could not be read, written or understood.
#[derive(Debug, thiserror::Error)]
#[error("{origin}: {kind}")]
pub struct WklError {
    origin: Origin,
    kind: WklErrorKind,
}

/// Where the bytes came from, for the start of the message.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    File(PathBuf),
    /// Bytes handed to a `decode_*` function directly.
    Memory,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(path) => write!(f, "{}", path.display()),
            Origin::Memory => f.write_str("<in-memory data>"),
        }
    }
}

/// What went wrong. `#[non_exhaustive]` so new checks do not break callers that match on it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WklErrorKind {
    #[error("cannot {op} the file: {cause}{}", io_hint(.cause))]
    Io {
        /// "read" or "write".
        op: &'static str,
        cause: io::Error,
    },

    #[error(
        "file is {}, over the {limit}-byte limit for a workload; capture a shorter window or \
         split the workload into several files",
        size_phrase(*.size)
    )]
    TooLarge {
        /// The size from the file's metadata, or `None` when the file grew past the limit while
        /// being read.
        size: Option<u64>,
        limit: u64,
    },

    #[error(
        "empty: there is not a single byte, so the capture or copy that produced it did not \
         finish; run it again"
    )]
    Empty,

    #[error(
        "truncated: the data ends at byte {len} in the middle of a MessagePack value; the file \
         was cut short (interrupted write or partial copy), copy or capture it again"
    )]
    Truncated { len: usize },

    #[error(
        "not a pg-retest workload: {what}; pass a .wkl workload profile written by pg-retest \
         (capture, proxy or transform)"
    )]
    NotWorkload { what: String },

    #[error(
        "this is a pg-retest replay results file ({}, written by `pg-retest replay \
         --output`), not a workload; pass the captured workload profile (the .wkl written by \
         capture or proxy) instead",
        count(u64::from(*.sessions), "session")
    )]
    ReplayResults { sessions: u32 },

    #[error(
        "this is a pg-retest workload profile, not a replay results file; pass the file \
         written by `pg-retest replay --output` instead"
    )]
    WorkloadNotResults,

    #[error("not a pg-retest replay results file: {what}")]
    NotResults { what: String },

    #[error(
        "{} after the MessagePack value that ends at byte {value_len}; a .wkl holds exactly \
         one value, so the file is corrupt or several files were joined",
        count(*.extra as u64, "stray byte")
    )]
    TrailingBytes { value_len: usize, extra: usize },

    #[error(
        "does not match the pg-retest {schema} layout{}: {detail}; the file comes from an \
         incompatible tool or version, or is corrupt",
        at_phrase(.location)
    )]
    Shape {
        /// "workload" or "replay results".
        schema: &'static str,
        /// A path such as `sessions[3].queries[12]` when the failure could be narrowed down.
        location: Option<String>,
        /// serde's own message.
        detail: String,
    },

    #[error("cannot encode the {schema}: {detail}")]
    Encode {
        schema: &'static str,
        detail: String,
    },
}

fn io_hint(cause: &io::Error) -> &'static str {
    match cause.kind() {
        io::ErrorKind::NotFound => {
            "; check the path (a relative one starts at the working directory)"
        }
        io::ErrorKind::PermissionDenied => "; check the file's permissions",
        io::ErrorKind::IsADirectory => "; pass the .wkl file, not its directory",
        _ => "",
    }
}

fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn size_phrase(size: Option<u64>) -> String {
    match size {
        Some(size) => format!("{size} bytes"),
        None => "growing while being read and already".to_string(),
    }
}

fn at_phrase(location: &Option<String>) -> String {
    location
        .as_ref()
        .map(|l| format!(" at {l}"))
        .unwrap_or_default()
}

impl WklError {
    pub(crate) fn new(kind: WklErrorKind) -> Self {
        WklError {
            origin: Origin::Memory,
            kind,
        }
    }

    /// Attaches the file name; decoding happens on bytes and learns the name only afterwards.
    pub fn in_file(mut self, path: &Path) -> Self {
        self.origin = Origin::File(path.to_path_buf());
        self
    }

    pub(crate) fn io(path: &Path, op: &'static str, cause: io::Error) -> Self {
        WklError::new(WklErrorKind::Io { op, cause }).in_file(path)
    }

    /// What went wrong, for callers that react differently to, say, a results file.
    pub fn kind(&self) -> &WklErrorKind {
        &self.kind
    }

    /// The file concerned, or `None` for bytes decoded from memory.
    pub fn path(&self) -> Option<&Path> {
        match &self.origin {
            Origin::File(path) => Some(path),
            Origin::Memory => None,
        }
    }
}

impl From<WklErrorKind> for WklError {
    fn from(kind: WklErrorKind) -> Self {
        WklError::new(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_line_and_starts_with_the_file() {
        let err = WklError::new(WklErrorKind::Truncated { len: 12 }).in_file(Path::new("a.wkl"));
        let text = err.to_string();
        assert!(text.starts_with("a.wkl: truncated"), "{text}");
        assert!(!text.contains('\n'));
        assert_eq!(err.path(), Some(Path::new("a.wkl")));
    }

    #[test]
    fn memory_origin_is_named() {
        let err = WklError::new(WklErrorKind::Empty);
        assert!(err.to_string().starts_with("<in-memory data>: empty"));
        assert_eq!(err.path(), None);
    }

    #[test]
    fn not_found_gets_a_hint() {
        let cause = io::Error::from(io::ErrorKind::NotFound);
        let err = WklError::io(Path::new("x.wkl"), "read", cause);
        assert!(err.to_string().contains("check the path"), "{err}");
    }
}
