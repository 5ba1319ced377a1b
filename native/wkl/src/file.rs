//! File access shared by the workload and results codecs: a size-capped read and an atomic write.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::error::{WklError, WklErrorKind};

/// Reads a whole file, refusing it when it is larger than `limit` bytes.
///
/// The size is checked from metadata before a byte is read, so a 50 GB file fails at once
/// instead of exhausting memory. Pipes and other special files report no useful size; for
/// them (and for a file that grows meanwhile) the read itself stops one byte past the limit.
pub(crate) fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>, WklError> {
    let file = File::open(path).map_err(|e| WklError::io(path, "read", e))?;
    let meta = file.metadata().map_err(|e| WklError::io(path, "read", e))?;
    let too_large = |size| WklError::from(WklErrorKind::TooLarge { size, limit }).in_file(path);
    let mut capacity = 0;
    if meta.is_file() {
        if meta.len() > limit {
            return Err(too_large(Some(meta.len())));
        }
        // Sized from the file system, not from anything inside the file, and capped above.
        capacity = usize::try_from(meta.len()).unwrap_or(0);
    }
    let mut bytes = Vec::with_capacity(capacity);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| WklError::io(path, "read", e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(None));
    }
    Ok(bytes)
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so
/// that a reader (or a crash) never sees a half-written file: a truncated .wkl is exactly the
/// kind of file the decoder has to refuse.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), WklError> {
    let temp = temp_path(path);
    let result = (|| {
        let mut file = File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    result.map_err(|e| {
        // Best effort: the temporary file may not even exist.
        let _ = fs::remove_file(&temp);
        WklError::io(path, "write", e)
    })
}

pub(crate) fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "workload".to_string());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}
