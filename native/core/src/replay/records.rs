//! The per-statement results file (JSON Lines; format in docs/results-format.md).
//!
//! Sessions send records over a bounded channel to one writer thread, so a slow disk slows the
//! replay down (back-pressure) instead of growing memory.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

pub const FORMAT: &str = "pg-retest-action/results";
pub const FORMAT_VERSION: u32 = 1;

/// One line per captured statement of every planned session.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatementRecord {
    /// Session id in this replay.
    pub session: u64,
    /// Index of the captured session in the workload, and index of the statement in it.
    pub source_session: u32,
    pub index: u32,
    /// Fingerprint, 16 hex digits.
    pub fingerprint: String,
    /// `ok`, `error`, `skipped` or `not_executed`.
    pub outcome: String,
    /// Skip / not-executed reason.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// µs after replay start when it was sent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub start_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub latency_us: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rows: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sqlstate: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub message: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Header {
    pub format: String,
    pub version: u32,
    pub started_at: String,
    pub server_version: String,
}

pub struct RecordWriter {
    pub sender: mpsc::Sender<Option<StatementRecord>>,
    handle: std::thread::JoinHandle<std::io::Result<()>>,
    path: PathBuf,
}

impl RecordWriter {
    pub fn create(path: &Path, header: &Header) -> std::io::Result<RecordWriter> {
        let mut out = BufWriter::with_capacity(1 << 16, File::create(path)?);
        serde_json::to_writer(&mut out, header)?;
        out.write_all(b"\n")?;
        let (sender, mut rx) = mpsc::channel::<Option<StatementRecord>>(8192);
        let handle = std::thread::spawn(move || {
            // `None` marks the end: the run may still hold clones of the sender.
            while let Some(Some(rec)) = rx.blocking_recv() {
                serde_json::to_writer(&mut out, &rec)?;
                out.write_all(b"\n")?;
            }
            out.flush()
        });
        Ok(RecordWriter {
            sender,
            handle,
            path: path.to_path_buf(),
        })
    }

    /// Ends the stream and appends the summary line (the run's report as JSON).
    pub async fn finish(self, summary: &impl Serialize) -> std::io::Result<()> {
        // Every session has ended, so all its records are in the channel ahead of the marker.
        // (A send error means the writer already stopped; its own error is returned below.)
        let _ = self.sender.send(None).await;
        drop(self.sender);
        let handle = self.handle;
        tokio::task::spawn_blocking(move || handle.join())
            .await
            .map_err(std::io::Error::other)?
            .map_err(|_| std::io::Error::other("results writer panicked"))??;
        let mut f = std::fs::OpenOptions::new().append(true).open(&self.path)?;
        let mut line = serde_json::to_vec(&serde_json::json!({ "summary": summary }))?;
        line.push(b'\n');
        f.write_all(&line)
    }
}
