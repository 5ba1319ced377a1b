//! Decoding a `.wkl` straight into the compact [`Workload`], without building the profile.
//!
//! A decoded [`crate::wkl::WorkloadProfile`] costs ~150 bytes per statement; for a million
//! statements that is more than the engine's whole budget. Here each query is deserialized and
//! pushed into a [`WorkloadBuilder`] at once, so the peak is the compact form plus the file (up to
//! 8 MiB) or a 1 MiB read buffer (larger files).
//!
//! serde's derive drives the field order (array or map form, short v1 arrays, unknown map keys),
//! exactly as for the full profile; only the two collections and each statement's text are
//! replaced by sinks. The sinks reach the builder through a thread-local because `Deserialize`
//! impls cannot carry state; decoding is synchronous, so the builder never leaves this thread.

use std::cell::RefCell;
use std::fmt;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::wkl::check;
use crate::wkl::key_scan::{self, KeyScan};
use crate::wkl::{
    QueryKind, ResponseRow, SequenceState, TablePk, WklError, WklWarning, MAX_WORKLOAD_BYTES,
};
use crate::workload::{Workload, WorkloadBuilder, WorkloadInfo};

/// Files above this size are decoded from a buffered reader instead of from memory.
const STREAM_ABOVE_BYTES: u64 = 8 * 1024 * 1024;

thread_local! {
    static BUILDER: RefCell<Option<WorkloadBuilder>> = const { RefCell::new(None) };
}

fn with_builder<R>(f: impl FnOnce(&mut WorkloadBuilder) -> R) -> R {
    BUILDER.with(|b| f(b.borrow_mut().as_mut().expect("compact decode in progress")))
}

#[derive(Deserialize)]
struct ProfileShell {
    version: u8,
    captured_at: DateTime<Utc>,
    source_host: String,
    pg_version: String,
    capture_method: String,
    #[allow(dead_code)]
    sessions: SessionsSink,
    metadata: MetadataShell,
}

#[derive(Deserialize)]
struct MetadataShell {
    total_queries: u64,
    total_sessions: u64,
    capture_duration_us: u64,
    #[serde(default)]
    sequence_snapshot: Option<Vec<SequenceState>>,
    /// Not used by the replay, but decoded to its type: the full decoder refuses a malformed
    /// one, and both loaders must refuse the same files.
    #[serde(default)]
    #[allow(dead_code)]
    pk_map: Option<Vec<TablePk>>,
}

#[derive(Deserialize)]
struct SessionShell {
    id: u64,
    user: String,
    database: String,
    queries: QueriesSink,
}

/// Stands for the sessions array; every element is handed to the builder as it is read.
struct SessionsSink;

impl<'de> Deserialize<'de> for SessionsSink {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SessionsSink;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of sessions")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SessionsSink, A::Error> {
                while let Some(s) = seq.next_element::<SessionShell>()? {
                    with_builder(|b| b.end_session(s.id, s.user, s.database, s.queries.0));
                }
                Ok(SessionsSink)
            }
        }
        d.deserialize_seq(V)
    }
}

/// Stands for one session's queries; holds how many were pushed.
struct QueriesSink(u32);

impl<'de> Deserialize<'de> for QueriesSink {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = QueriesSink;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of queries")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<QueriesSink, A::Error> {
                let mut n = 0u32;
                while seq.next_element_seed(QuerySeed)?.is_some() {
                    n = n
                        .checked_add(1)
                        .ok_or_else(|| de::Error::custom("too many queries in one session"))?;
                }
                Ok(QueriesSink(n))
            }
        }
        d.deserialize_seq(V)
    }
}

struct QuerySeed;

impl<'de> DeserializeSeed<'de> for QuerySeed {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let q = QueryShell::deserialize(d)?;
        with_builder(|b| {
            b.push_text(
                q.sql.0,
                q.start_offset_us,
                q.duration_us,
                q.kind,
                q.transaction_id,
            );
            if let Some(rows) = q.response_values {
                b.set_response_values(rows);
            }
        });
        Ok(())
    }
}

/// A [`Query`] whose text goes straight into the builder's arena as the decoder reads it. The
/// fields, their order and their defaults are `Query`'s, so both forms (array, map) decode alike.
#[derive(Deserialize)]
struct QueryShell {
    sql: TextSink,
    start_offset_us: u64,
    duration_us: u64,
    kind: QueryKind,
    #[serde(default)]
    transaction_id: Option<u64>,
    #[serde(default)]
    response_values: Option<Vec<ResponseRow>>,
}

/// A statement's text, interned where it is read: the decoder lends the text out of its own
/// buffer, so no `String` is made (and dropped) per statement.
struct TextSink(u32);

impl<'de> Deserialize<'de> for TextSink {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TextSink;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("the statement's text")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<TextSink, E> {
                Ok(TextSink(with_builder(|b| b.intern(text))))
            }
            fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<TextSink, E> {
                // What a `String` field accepts: text, and bytes only when they are UTF-8.
                match std::str::from_utf8(bytes) {
                    Ok(text) => self.visit_str(text),
                    Err(_) => Err(de::Error::invalid_value(
                        de::Unexpected::Bytes(bytes),
                        &self,
                    )),
                }
            }
        }
        d.deserialize_str(V)
    }
}

/// A workload decoded into the compact form, with what the decoder noticed on the way (the
/// same warnings, in the same order, as [`crate::wkl::inspect_workload`] gives).
#[derive(Debug)]
pub struct LoadedWorkload {
    pub workload: Workload,
    pub warnings: Vec<WklWarning>,
}

/// Decodes one already-validated workload value (see `wkl`) into the compact form.
pub fn decode_compact(value: &[u8]) -> Result<Workload, rmp_serde::decode::Error> {
    decode_with(|| rmp_serde::from_slice(value)).map(|(w, _)| w)
}

/// What the profile claims about itself, kept to check against what it holds.
struct Claims {
    version: u8,
    total_sessions: u64,
    total_queries: u64,
}

fn decode_with(
    decode: impl FnOnce() -> Result<ProfileShell, rmp_serde::decode::Error>,
) -> Result<(Workload, Claims), rmp_serde::decode::Error> {
    // The header fields arrive with the shell; the builder gets them after the sessions.
    let placeholder = WorkloadInfo::default();
    BUILDER.with(|b| *b.borrow_mut() = Some(WorkloadBuilder::new(placeholder)));
    let shell = decode();
    let builder = BUILDER
        .with(|b| b.borrow_mut().take())
        .expect("builder present");
    let shell = shell?;
    let claims = Claims {
        version: shell.version,
        total_sessions: shell.metadata.total_sessions,
        total_queries: shell.metadata.total_queries,
    };
    let info = WorkloadInfo::from_header(
        shell.version,
        shell.captured_at,
        shell.source_host,
        shell.pg_version,
        shell.capture_method,
        shell.metadata.capture_duration_us,
        shell.metadata.sequence_snapshot,
    );
    Ok((builder.with_info(info).finish(), claims))
}

fn checked(workload: Workload, claims: Claims, unknown_keys: Vec<String>) -> LoadedWorkload {
    let warnings = check::warnings_from(check::Facts {
        version: claims.version,
        recorded_sessions: claims.total_sessions,
        recorded_queries: claims.total_queries,
        session_ids: workload.sessions().iter().map(|s| s.id),
        statements: workload.statement_count(),
        unknown_keys,
    });
    LoadedWorkload { workload, warnings }
}

/// Passes every buffer the decoder reads through the key scan on its way, so a streamed file
/// is checked for unknown keys without being read twice.
struct Scanned<R> {
    inner: R,
    scan: KeyScan,
}

impl<R: std::io::Read> std::io::Read for Scanned<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.scan.feed(&buf[..n]);
        Ok(n)
    }
}

impl Workload {
    /// Reads, validates and analyses a `.wkl` file of at most [`MAX_WORKLOAD_BYTES`] bytes.
    pub fn load(path: &Path) -> Result<Workload, WklError> {
        Self::load_checked(path, MAX_WORKLOAD_BYTES).map(|l| l.workload)
    }

    /// Reads, validates and analyses a `.wkl` file of at most `max_bytes` bytes, with the
    /// decoder's warnings (unknown fields, stale totals, …).
    ///
    /// The file is checked by the codec's header walk (results file, truncation, trailing bytes,
    /// size limit), then decoded straight into the compact form: a large file from a buffered
    /// reader, never held whole. Should that decode fail, the full decoder runs to produce its
    /// precise, located error.
    pub fn load_checked(path: &Path, max_bytes: u64) -> Result<LoadedWorkload, WklError> {
        if let Some(loaded) = Self::load_streaming(path, max_bytes) {
            return Ok(loaded);
        }
        let bytes = crate::wkl::read_workload_bytes(path, max_bytes)?;
        match decode_with(|| rmp_serde::from_slice(&bytes)) {
            Ok((w, claims)) => Ok(checked(w, claims, key_scan::unknown_keys(&bytes))),
            Err(_) => match crate::wkl::inspect_workload(&bytes) {
                Err(e) => Err(e.in_file(path)),
                // Both decoders follow the same serde layout; if only ours fails, use the profile.
                Ok(decoded) => Ok(LoadedWorkload {
                    workload: Workload::from_profile(decoded.profile),
                    warnings: decoded.warnings,
                }),
            },
        }
    }

    /// Decodes a large file without holding its bytes. `None` on any doubt (small, over the
    /// limit, not clearly a profile, a decode error, bytes after the value): the caller then
    /// takes the validating path, which produces the precise error.
    fn load_streaming(path: &Path, max_bytes: u64) -> Option<LoadedWorkload> {
        use std::io::{BufRead, Read, Seek};
        let file = std::fs::File::open(path).ok()?;
        // The size of the file opened, not of the path, which may be replaced in between. One
        // byte is read past the limit, so a file that grows past it while it is read fails the
        // checks below and the validating path refuses it.
        let size = file.metadata().ok()?.len();
        if size <= STREAM_ABOVE_BYTES || size > max_bytes {
            return None;
        }
        let mut file = file.take(max_bytes.saturating_add(1));
        let mut prefix = vec![0u8; 64 * 1024];
        let n = file.read(&mut prefix).ok()?;
        if crate::wkl::sniff(&prefix[..n]) != crate::wkl::FileShape::Profile {
            return None;
        }
        file.get_mut().rewind().ok()?;
        file.set_limit(max_bytes.saturating_add(1));
        let scanned = Scanned {
            inner: file,
            scan: KeyScan::new(),
        };
        let mut reader = std::io::BufReader::with_capacity(1 << 20, scanned);
        let (w, claims) = decode_with(|| rmp_serde::from_read(&mut reader)).ok()?;
        // A .wkl holds exactly one value.
        if !reader.fill_buf().ok()?.is_empty() {
            return None;
        }
        let unknown = reader.into_inner().scan.finish();
        Some(checked(w, claims, unknown))
    }
}
