//! Decoding a `.wkl` straight into the compact [`Workload`], without building the profile.
//!
//! A decoded [`crate::wkl::WorkloadProfile`] costs ~150 bytes per statement; for a million
//! statements that is more than the engine's whole budget. Here the streaming decoder
//! ([`crate::wkl::decode_with`]) hands each query over as soon as it is decoded, its SQL
//! borrowed from the file's bytes when they are in memory, and it goes into a
//! [`WorkloadBuilder`] at once, so the peak is the file plus the compact form.

use serde::Deserializer;

use crate::wkl::{decode_with, QueryRef, StreamVisitor, StreamedHeader};
use crate::workload::{Workload, WorkloadBuilder, WorkloadInfo};

/// Files above this size are decoded from a buffered reader instead of from memory.
const STREAM_ABOVE_BYTES: u64 = 8 * 1024 * 1024;

/// Pushes every decoded query into the builder.
struct Build(WorkloadBuilder);

impl StreamVisitor for Build {
    fn query(&mut self, _: u32, q: QueryRef<'_>) -> Result<(), String> {
        self.0.push_query(
            q.sql,
            q.start_offset_us,
            q.duration_us,
            q.kind,
            q.transaction_id,
            q.response_values,
        );
        Ok(())
    }

    fn session(
        &mut self,
        _: u32,
        id: u64,
        user: String,
        database: String,
        queries: u32,
    ) -> Result<(), String> {
        self.0.end_session(id, user, database, queries);
        Ok(())
    }
}

/// Decodes one already-validated workload value (see `wkl`) into the compact form.
pub fn decode_compact(value: &[u8]) -> Result<Workload, rmp_serde::decode::Error> {
    build(&mut rmp_serde::Deserializer::from_read_ref(value))
}

/// Decodes a workload from a reader, copying each SQL text only into the arena (for files too
/// big to hold in memory next to the compact form). The caller checks for trailing bytes.
pub fn decode_compact_read<R: std::io::Read>(
    reader: R,
) -> Result<Workload, rmp_serde::decode::Error> {
    build(&mut rmp_serde::Deserializer::new(reader))
}

fn build<'de, D>(d: D) -> Result<Workload, rmp_serde::decode::Error>
where
    D: Deserializer<'de, Error = rmp_serde::decode::Error>,
{
    // The header fields arrive after the sessions (in array form); the builder gets them last.
    let mut b = Build(WorkloadBuilder::new(WorkloadInfo::default()));
    let header: StreamedHeader = match decode_with(d, &mut b) {
        Ok(decoded) => decoded?,
        // `Build` never stops the decoder; should it, say so rather than panic.
        Err(e) => return Err(serde::de::Error::custom(e.to_string())),
    };
    let info = WorkloadInfo::from_header(
        header.version,
        header.captured_at,
        header.source_host,
        header.pg_version,
        header.capture_method,
        header.metadata.capture_duration_us,
        header.metadata.sequence_snapshot,
    );
    Ok(b.0.with_info(info).finish())
}

impl Workload {
    /// Reads, validates and analyses a `.wkl` file.
    ///
    /// The file is checked by the codec's header walk (results file, truncation, trailing bytes,
    /// size limit), then decoded straight into the compact form. Should that decode fail, the
    /// full decoder runs to produce its precise, located error.
    pub fn load(path: &std::path::Path) -> Result<Workload, crate::wkl::WklError> {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if size > STREAM_ABOVE_BYTES && size <= crate::wkl::MAX_WORKLOAD_BYTES {
            if let Some(w) = Self::load_streaming(path) {
                return Ok(w);
            }
        }
        let bytes = crate::wkl::read_workload_bytes(path, crate::wkl::MAX_WORKLOAD_BYTES)?;
        match decode_compact(&bytes) {
            Ok(w) => Ok(w),
            Err(_) => match crate::wkl::decode_workload(&bytes) {
                Err(e) => Err(e.in_file(path)),
                // Both decoders follow the same serde layout; if only ours fails, use the profile.
                Ok(profile) => Ok(Workload::from_profile(profile)),
            },
        }
    }

    /// Decodes a large file without holding its bytes. `None` on any doubt (not clearly a
    /// profile, a decode error, bytes after the value): the caller then takes the validating
    /// path, which produces the precise error.
    fn load_streaming(path: &std::path::Path) -> Option<Workload> {
        use std::io::{BufRead, Read, Seek};
        let mut file = std::fs::File::open(path).ok()?;
        let mut prefix = vec![0u8; 64 * 1024];
        let n = file.read(&mut prefix).ok()?;
        if crate::wkl::sniff(&prefix[..n]) != crate::wkl::FileShape::Profile {
            return None;
        }
        file.rewind().ok()?;
        let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
        let w = decode_compact_read(&mut reader).ok()?;
        // A .wkl holds exactly one value.
        reader.fill_buf().ok()?.is_empty().then_some(w)
    }
}
