//! Working on more data than memory holds: records spilled to temporary files and read back in
//! order.
//!
//! Capture and condense see every statement of a log or a workload, which can be far larger than
//! the memory a CI runner has. What must be seen in a global order (a session's lines, the
//! capture's timeline, every occurrence of a literal value) goes through a [`Sorter`]: records
//! are kept in memory up to a budget, sorted, and written as a sorted *run* to a temporary file
//! when the budget is reached; reading merges the runs. Memory is then the budget plus a small
//! buffer per run, whatever the input's size. A sorter that never reached its budget never
//! touches the disk.
//!
//! Records encode themselves ([`Spill`]) in a compact binary form ([`codec`]); the files live in
//! a [`SpillDir`] that is removed when dropped, also on error.

pub mod codec;
mod sorter;

pub use codec::{Decoder, Encoder};
pub use sorter::{Ahead, Sorted, SortedIter, Sorter};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A record that can be written to and read back from a spill file.
pub trait Spill: Sized {
    fn encode(&self, out: &mut Encoder);
    fn decode(input: &mut Decoder<'_>) -> std::io::Result<Self>;
    /// What the record costs in memory while it waits in a sorter (heap and inline), roughly.
    fn memory(&self) -> usize;
}

/// A temporary directory for spill files, removed with everything in it when dropped.
#[derive(Clone)]
pub struct SpillDir {
    inner: Arc<SpillDirInner>,
}

struct SpillDirInner {
    dir: tempfile::TempDir,
    next: AtomicU64,
    /// Bytes written to spill files so far (for the report of what a run cost).
    written: AtomicU64,
}

impl SpillDir {
    /// A fresh directory inside `parent` (which must exist).
    pub fn new_in(parent: &Path) -> std::io::Result<SpillDir> {
        let dir = tempfile::Builder::new()
            .prefix(".pg-retest-spill-")
            .tempdir_in(parent)?;
        Ok(SpillDir {
            inner: Arc::new(SpillDirInner {
                dir,
                next: AtomicU64::new(0),
                written: AtomicU64::new(0),
            }),
        })
    }

    /// A new file name in the directory, never handed out before.
    pub fn file(&self, what: &str) -> PathBuf {
        let n = self.inner.next.fetch_add(1, Ordering::Relaxed);
        self.inner.dir.path().join(format!("{what}-{n}"))
    }

    pub fn path(&self) -> &Path {
        self.inner.dir.path()
    }

    pub(crate) fn count_written(&self, bytes: u64) {
        self.inner.written.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Bytes written to spill files so far.
    pub fn written(&self) -> u64 {
        self.inner.written.load(Ordering::Relaxed)
    }
}
