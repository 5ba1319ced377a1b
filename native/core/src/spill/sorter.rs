//! An external merge sort: sorted runs on disk, merged on reading.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

use super::{Decoder, Encoder, Spill, SpillDir};

/// Runs merged at once; more are first merged in groups (one more pass over the data).
const MAX_FAN_IN: usize = 64;
/// Read buffer per run while merging: the merge's memory is this times the runs.
const READ_BUFFER: usize = 128 * 1024;
const WRITE_BUFFER: usize = 256 * 1024;
/// Records per hand-over from a merge thread.
const AHEAD_BATCH: usize = 4096;

/// Collects records, then hands them back in order ([`Ord`]; equal records in push order).
///
/// A full buffer is sorted and written by a background thread while the next one fills, so
/// the sorter holds up to twice its budget.
pub struct Sorter<T> {
    dir: SpillDir,
    what: &'static str,
    budget: usize,
    buf: Vec<T>,
    used: usize,
    runs: Vec<PathBuf>,
    /// The run being written in the background.
    writing: Option<std::thread::JoinHandle<io::Result<()>>>,
    len: u64,
}

impl<T: Spill + Ord + Send + 'static> Sorter<T> {
    /// A sorter that keeps up to about `budget` bytes of records in memory, twice that while a
    /// run is written.
    pub fn new(dir: &SpillDir, what: &'static str, budget: usize) -> Self {
        Sorter {
            dir: dir.clone(),
            what,
            budget,
            buf: Vec::new(),
            used: 0,
            runs: Vec::new(),
            writing: None,
            len: 0,
        }
    }

    pub fn push(&mut self, item: T) -> io::Result<()> {
        // The records' own memory, plus the buffer's (whose capacity runs ahead of its length).
        self.used += item.memory();
        self.buf.push(item);
        self.len += 1;
        if self.used + self.buf.capacity() * std::mem::size_of::<T>() >= self.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Records pushed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn spill(&mut self) -> io::Result<()> {
        self.wait()?;
        let mut full = std::mem::take(&mut self.buf);
        let path = self.dir.file(self.what);
        let dir = self.dir.clone();
        self.runs.push(path.clone());
        self.writing = Some(std::thread::spawn(move || {
            full.sort();
            write_run(&dir, &path, full.into_iter())
        }));
        self.used = 0;
        Ok(())
    }

    /// Waits for the run being written, if any.
    fn wait(&mut self) -> io::Result<()> {
        match self.writing.take() {
            None => Ok(()),
            Some(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a spill thread panicked"))),
        }
    }

    /// Everything pushed, ready to be read in order.
    pub fn finish(mut self) -> io::Result<Sorted<T>> {
        if self.runs.is_empty() {
            self.buf.sort();
            return Ok(Sorted {
                memory: self.buf,
                runs: Vec::new(),
                len: self.len,
            });
        }
        if !self.buf.is_empty() {
            self.spill()?;
        }
        self.wait()?;
        self.buf = Vec::new();
        let mut runs = std::mem::take(&mut self.runs);
        while runs.len() > MAX_FAN_IN {
            let mut merged = Vec::new();
            for group in runs.chunks(MAX_FAN_IN) {
                let path = self.dir.file(self.what);
                // A read error ends the merged run early; it is then returned, never lost.
                let mut failed = None;
                let items =
                    Merge::<T>::open(group)?.map_while(|r| r.map_err(|e| failed = Some(e)).ok());
                write_run(&self.dir, &path, items)?;
                if let Some(e) = failed {
                    return Err(e);
                }
                for old in group {
                    let _ = std::fs::remove_file(old);
                }
                merged.push(path);
            }
            runs = merged;
        }
        Ok(Sorted {
            memory: Vec::new(),
            runs,
            len: self.len,
        })
    }
}

fn write_run<T: Spill>(
    dir: &SpillDir,
    path: &PathBuf,
    items: impl Iterator<Item = T>,
) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, File::create(path)?);
    let mut enc = Encoder::default();
    let mut written = 0u64;
    for item in items {
        enc.clear();
        item.encode(&mut enc);
        let len = u32::try_from(enc.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a record over 4 GiB"))?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(enc.as_bytes())?;
        written += 4 + u64::from(len);
    }
    out.flush()?;
    dir.count_written(written);
    Ok(())
}

/// The records of a finished [`Sorter`], in order; may be read more than once.
pub struct Sorted<T> {
    memory: Vec<T>,
    runs: Vec<PathBuf>,
    len: u64,
}

impl<T: Spill + Ord + Send + 'static> Sorted<T> {
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads everything once, consuming the records, with the merge running on a thread of
    /// its own ahead of the reader (a few batches of records, never more).
    pub fn drain_ahead(self) -> io::Result<Ahead<T>> {
        let mut it = self.drain()?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<io::Result<T>>>(2);
        std::thread::spawn(move || loop {
            let batch: Vec<io::Result<T>> = it.by_ref().take(AHEAD_BATCH).collect();
            let last = batch.len() < AHEAD_BATCH;
            // A receiver gone means the reader stopped early: nothing more to do.
            if tx.send(batch).is_err() || last {
                return;
            }
        });
        Ok(Ahead {
            rx,
            batch: Vec::new().into_iter(),
        })
    }

    /// Reads everything once, consuming the records.
    pub fn drain(self) -> io::Result<SortedIter<T>> {
        Ok(if self.runs.is_empty() {
            SortedIter::Memory(self.memory.into_iter())
        } else {
            SortedIter::Merge(Merge::open(&self.runs)?)
        })
    }
}

impl<T: Spill + Ord + Clone + Send + 'static> Sorted<T> {
    /// Reads everything, leaving the records for another pass.
    pub fn iter(&self) -> io::Result<SortedIter<T>> {
        Ok(if self.runs.is_empty() {
            SortedIter::Memory(self.memory.clone().into_iter())
        } else {
            SortedIter::Merge(Merge::open(&self.runs)?)
        })
    }
}

/// Records handed over from a merge running on another thread.
pub struct Ahead<T> {
    rx: std::sync::mpsc::Receiver<Vec<io::Result<T>>>,
    batch: std::vec::IntoIter<io::Result<T>>,
}

impl<T> Iterator for Ahead<T> {
    type Item = io::Result<T>;
    fn next(&mut self) -> Option<io::Result<T>> {
        loop {
            if let Some(item) = self.batch.next() {
                return Some(item);
            }
            self.batch = self.rx.recv().ok()?.into_iter();
        }
    }
}

/// Records in order; a read error ends the iteration with `Err`.
pub enum SortedIter<T> {
    Memory(std::vec::IntoIter<T>),
    Merge(Merge<T>),
}

impl<T: Spill + Ord> Iterator for SortedIter<T> {
    type Item = io::Result<T>;
    fn next(&mut self) -> Option<io::Result<T>> {
        match self {
            SortedIter::Memory(it) => it.next().map(Ok),
            SortedIter::Merge(m) => m.next(),
        }
    }
}

struct RunReader {
    input: BufReader<File>,
    buf: Vec<u8>,
}

impl RunReader {
    fn next<T: Spill>(&mut self) -> io::Result<Option<T>> {
        let mut len = [0u8; 4];
        match self.input.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        self.buf.resize(u32::from_le_bytes(len) as usize, 0);
        self.input.read_exact(&mut self.buf)?;
        T::decode(&mut Decoder::new(&self.buf)).map(Some)
    }
}

/// The head of one run, ordered by record then run (so equal records keep push order).
struct Head<T>(T, usize);

impl<T: Ord> PartialEq for Head<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl<T: Ord> Eq for Head<T> {}
impl<T: Ord> PartialOrd for Head<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T: Ord> Ord for Head<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// A k-way merge of sorted runs.
pub struct Merge<T> {
    readers: Vec<RunReader>,
    heap: BinaryHeap<Reverse<Head<T>>>,
    failed: bool,
}

impl<T: Spill + Ord> Merge<T> {
    fn open(runs: &[PathBuf]) -> io::Result<Self> {
        let mut readers = Vec::with_capacity(runs.len());
        let mut heap = BinaryHeap::with_capacity(runs.len());
        for (i, path) in runs.iter().enumerate() {
            let mut r = RunReader {
                input: BufReader::with_capacity(READ_BUFFER, File::open(path)?),
                buf: Vec::new(),
            };
            if let Some(first) = r.next::<T>()? {
                heap.push(Reverse(Head(first, i)));
            }
            readers.push(r);
        }
        Ok(Merge {
            readers,
            heap,
            failed: false,
        })
    }
}

impl<T: Spill + Ord> Iterator for Merge<T> {
    type Item = io::Result<T>;
    fn next(&mut self) -> Option<io::Result<T>> {
        if self.failed {
            return None;
        }
        let Reverse(Head(item, run)) = self.heap.pop()?;
        match self.readers[run].next::<T>() {
            Ok(Some(next)) => self.heap.push(Reverse(Head(next, run))),
            Ok(None) => {}
            Err(e) => {
                self.failed = true;
                return Some(Err(e));
            }
        }
        Some(Ok(item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
    struct Rec(u64, String);

    impl Spill for Rec {
        fn encode(&self, out: &mut Encoder) {
            out.u64(self.0);
            out.str(&self.1);
        }
        fn decode(input: &mut Decoder<'_>) -> io::Result<Self> {
            Ok(Rec(input.u64()?, input.string()?))
        }
        fn memory(&self) -> usize {
            self.1.capacity()
        }
    }

    fn sorted(budget: usize, n: u64) -> (Vec<Rec>, u64) {
        let parent = tempfile::tempdir().unwrap();
        let dir = SpillDir::new_in(parent.path()).unwrap();
        let mut s = Sorter::new(&dir, "t", budget);
        let mut x = 7u64;
        for i in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s.push(Rec(x % 1000, format!("#{i}"))).unwrap();
        }
        let done = s.finish().unwrap();
        let twice: Vec<Rec> = done.iter().unwrap().map(Result::unwrap).collect();
        let once: Vec<Rec> = done.drain_ahead().unwrap().map(Result::unwrap).collect();
        assert_eq!(twice, once, "a second pass reads the same");
        (once, dir.written())
    }

    #[test]
    fn sorts_in_memory_and_through_runs_alike() {
        let (memory, spilled) = sorted(usize::MAX, 5_000);
        assert_eq!(spilled, 0, "within budget: no file");
        // ~100 records a run: 50 runs, then 5,000 records in 200 runs (merged in groups).
        for budget in [100 * 60, 25 * 60] {
            let (disk, spilled) = sorted(budget, 5_000);
            assert!(spilled > 0);
            assert_eq!(disk, memory);
        }
        assert!(memory.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(memory.len(), 5_000);
    }
}
