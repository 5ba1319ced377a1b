//! Opening a log file: gzip or plain (by its first bytes, not its name), csvlog or jsonlog (by
//! its first character), with a byte counter for progress.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;

use super::csvlog::read_csvlog;
use super::jsonlog::read_jsonlog;
use super::record::LogLine;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Csv,
    Json,
}

/// What was read from one file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InputSummary {
    pub path: String,
    pub format: LogFormat,
    pub compressed: bool,
    pub bytes: u64,
    pub records: u64,
}

/// Counts bytes as they are read from the file (compressed bytes for a .gz).
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Reads every record of the file at `path`; `read` grows with the bytes consumed.
pub fn read_log_file(
    path: &Path,
    read: Arc<AtomicU64>,
    mut f: impl FnMut(&LogLine<'_>) -> Result<(), String>,
) -> Result<InputSummary, String> {
    let file = File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut raw = BufReader::new(Counting { inner: file, read });
    let compressed = raw
        .fill_buf()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .starts_with(&[0x1f, 0x8b]);
    let mut text: Box<dyn BufRead> = if compressed {
        Box::new(BufReader::with_capacity(1 << 16, MultiGzDecoder::new(raw)))
    } else {
        Box::new(raw)
    };
    let first = text
        .fill_buf()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .copied();
    let format = if first == Some(b'{') {
        LogFormat::Json
    } else {
        LogFormat::Csv
    };
    let mut records = 0u64;
    let mut count = |r: &LogLine<'_>| {
        records += 1;
        f(r)
    };
    let result = match format {
        LogFormat::Csv => read_csvlog(text, &mut count),
        LogFormat::Json => read_jsonlog(text, &mut count),
    };
    result.map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(InputSummary {
        path: path.display().to_string(),
        format,
        compressed,
        bytes,
        records,
    })
}
