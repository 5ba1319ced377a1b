//! Opening a log file: gzip or plain (by its first bytes, not its name); csvlog, jsonlog or
//! stderr (by its content: a JSON object, a CSV row, or lines with the given or a known
//! platform's `log_line_prefix`), with a byte counter for progress.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;

use super::csvlog::read_csvlog;
use super::jsonlog::read_jsonlog;
use super::prefix::LinePrefix;
use super::record::LogLine;
use super::stderr::{known_prefix_for, StderrReader};
use super::wrapper::{self, Opened, WrapperKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Csv,
    Json,
    Stderr,
}

/// The stderr readers of one capture: the prefix given (`--log-line-prefix`), and a reader per
/// prefix in use, kept across files so that a session continues into the next rotated file.
#[derive(Default)]
pub struct StderrInputs {
    given: Option<String>,
    readers: Vec<StderrReader>,
    /// What platform wrappers left out, per file.
    skipped: Vec<String>,
}

impl StderrInputs {
    pub fn new(given: Option<String>) -> Self {
        StderrInputs {
            given,
            readers: Vec::new(),
            skipped: Vec::new(),
        }
    }

    fn reader(&mut self, prefix: &str) -> Result<&mut StderrReader, String> {
        let i = match self
            .readers
            .iter()
            .position(|r| r.prefix().text() == prefix)
        {
            Some(i) => i,
            None => {
                self.readers
                    .push(StderrReader::new(LinePrefix::compile(prefix)?));
                self.readers.len() - 1
            }
        };
        Ok(&mut self.readers[i])
    }

    /// Warnings for the summary, once each.
    pub fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self.skipped.clone();
        for n in self.readers.iter().flat_map(|r| r.notes()) {
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
        notes
    }
}

/// What was read from one file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InputSummary {
    pub path: String,
    pub format: LogFormat,
    pub compressed: bool,
    pub bytes: u64,
    pub records: u64,
    /// The `log_line_prefix` a stderr log was read with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_line_prefix: Option<String>,
    /// The platform's envelope taken off the stderr lines (Cloud Logging JSON, syslog, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrapper: Option<WrapperKind>,
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
    spill_parent: &Path,
    stderr: &mut StderrInputs,
    mut f: impl FnMut(&LogLine<'_>) -> Result<(), String>,
) -> Result<InputSummary, String> {
    let file = File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut raw = BufReader::with_capacity(1 << 16, Counting { inner: file, read });
    let compressed = raw
        .fill_buf()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .starts_with(&[0x1f, 0x8b]);
    let text: Box<dyn BufRead> = if compressed {
        Box::new(BufReader::with_capacity(1 << 16, MultiGzDecoder::new(raw)))
    } else {
        Box::new(raw)
    };
    let in_file = |e: String| format!("{}: {e}", path.display());
    // A platform's envelope first (Cloud Logging, Azure, syslog, Heroku): what it holds is stderr
    // text, read with the prefix given, else the platform's own, else a known one that fits.
    let (mut text, wrapped) = match wrapper::open(text, spill_parent).map_err(in_file)? {
        Opened::Plain(text) => (text, None),
        Opened::Wrapped(u) => (u.text, Some((u.kind, u.prefix, u.skipped))),
    };
    let sample = text
        .fill_buf()
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let (format, prefix) = match &wrapped {
        None => detect(sample, stderr.given.as_deref()).map_err(in_file)?,
        Some((kind, platform, _)) => {
            let prefix = match (stderr.given.as_deref(), *platform) {
                (Some(p), _) | (None, Some(p)) => p.to_string(),
                (None, None) => known_prefix_for(sample)
                    .map_err(in_file)?
                    .ok_or_else(|| {
                        in_file(format!(
                            "the {} lines hold no known log_line_prefix; pass the server's setting (SHOW log_line_prefix) with --log-line-prefix",
                            kind.name()
                        ))
                    })?
                    .to_string(),
            };
            (LogFormat::Stderr, Some(prefix))
        }
    };
    let mut records = 0u64;
    let mut count = |r: &LogLine<'_>| {
        records += 1;
        f(r)
    };
    let result = match (format, &prefix) {
        (LogFormat::Csv, _) => read_csvlog(text, &mut count),
        (LogFormat::Json, _) => read_jsonlog(text, &mut count),
        (LogFormat::Stderr, Some(p)) => {
            // Line numbers of a wrapped log are those of the text inside the wrapper.
            let name = match &wrapped {
                Some((kind, _, _)) => format!("{} (its {} text)", path.display(), kind.name()),
                None => path.display().to_string(),
            };
            stderr
                .reader(p)
                .and_then(|r| r.read(&name, text, &mut count))
        }
        (LogFormat::Stderr, None) => unreachable!("a stderr log is read with a prefix"),
    };
    let result = match (format, result) {
        // The stderr reader's errors name the file already.
        (LogFormat::Stderr, Err(e)) if e.starts_with(&path.display().to_string()) => Err(e),
        (_, r) => r.map_err(|e| format!("{}: {e}", path.display())),
    };
    result?;
    if let Some((kind, _, skipped)) = &wrapped {
        if skipped.total() > 0 {
            stderr.skipped.push(format!(
                "{}: {} of the {} held no PostgreSQL log line and were skipped ({})",
                path.display(),
                skipped.total(),
                kind.name(),
                skipped.describe()
            ));
        }
    }
    Ok(InputSummary {
        path: path.display().to_string(),
        format,
        compressed,
        bytes,
        records,
        log_line_prefix: prefix,
        wrapper: wrapped.map(|(kind, _, _)| kind),
    })
}

/// The format of a log that starts with `sample`, and the prefix of a stderr log.
fn detect(sample: &[u8], given: Option<&str>) -> Result<(LogFormat, Option<String>), String> {
    let start = sample.iter().position(|b| !b.is_ascii_whitespace());
    let first_line = start.map_or(&sample[..0], |s| {
        let rest = &sample[s..];
        &rest[..rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len())]
    });
    if first_line.first() == Some(&b'{') {
        return Ok((LogFormat::Json, None));
    }
    if let Some(p) = given {
        let compiled = LinePrefix::compile(p)?;
        if compiled
            .read(&String::from_utf8_lossy(first_line))
            .is_some()
            || !looks_like_csv(first_line)
        {
            return Ok((LogFormat::Stderr, Some(p.to_string())));
        }
    }
    if looks_like_csv(first_line) {
        return Ok((LogFormat::Csv, None));
    }
    match known_prefix_for(sample)? {
        Some(p) => Ok((LogFormat::Stderr, Some(p.to_string()))),
        None if first_line.is_empty() => Ok((LogFormat::Csv, None)),
        None => Err(format!(
            "line 1 is neither csvlog, jsonlog nor a stderr line with a known log_line_prefix ({}); for a stderr log pass the server's setting (SHOW log_line_prefix) with --log-line-prefix",
            super::stderr::KNOWN_PREFIXES
                .iter()
                .map(|(_, p)| format!("'{p}'"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// A csvlog row starts with its time and zone, then a comma: `2026-11-22 11:15:21.828 EST,`
/// (the field may be quoted).
fn looks_like_csv(line: &[u8]) -> bool {
    const SHAPE: &[u8] = b"0000-00-00 00:00:00";
    let (line, end) = match line.strip_prefix(b"\"") {
        Some(rest) => (rest, &b"\","[..]),
        None => (line, &b","[..]),
    };
    if line.len() < SHAPE.len()
        || !line.iter().zip(SHAPE).all(|(b, w)| {
            if *w == b'0' {
                b.is_ascii_digit()
            } else {
                b == w
            }
        })
    {
        return false;
    }
    // Then `[.fff] ZONE` up to the comma: no more spaces, no brackets.
    let rest = &line[SHAPE.len()..];
    rest.windows(end.len())
        .position(|w| w == end)
        .is_some_and(|e| {
            let zone = &rest[..e];
            !zone.contains(&b'[') && zone.iter().filter(|b| **b == b' ').count() == 1
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{capture, CaptureOptions};

    /// The same real server's log, as the server wrote it and as each platform wraps it, gives
    /// the same workload.
    #[test]
    fn a_wrapped_log_gives_the_plain_logs_workload() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wrappers");
        let dir = tempfile::tempdir().unwrap();
        let run = |name: &str| {
            let output = dir.path().join(format!("{name}.wkl"));
            let s = capture(
                &CaptureOptions {
                    logs: vec![fixtures.join(name)],
                    output: output.clone(),
                    ..Default::default()
                },
                &|_| {},
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            (s, std::fs::read(output).unwrap())
        };
        let (plain, bytes) = run("real-cloudsql.stderr");
        assert_eq!(plain.inputs[0].format, LogFormat::Stderr);
        assert_eq!(plain.inputs[0].wrapper, None);
        assert!(plain.statements >= 5, "{plain:?}");
        for (name, kind) in [
            ("real-cloudsql-gcloud.json", WrapperKind::CloudLogging),
            ("real-syslog.log", WrapperKind::Syslog),
        ] {
            let (s, wrapped) = run(name);
            assert_eq!(s.inputs[0].wrapper, Some(kind), "{name}");
            assert_eq!(
                s.inputs[0].log_line_prefix.as_deref(),
                Some("%m [%p]: [%l-1] db=%d,user=%u "),
                "{name}"
            );
            assert_eq!(wrapped, bytes, "{name}: the same workload");
            assert!(
                s.warnings.iter().any(|w| w.contains("were skipped")),
                "{name}: {:?}",
                s.warnings
            );
        }
    }

    #[test]
    fn tells_formats_apart_by_content() {
        let csv = b"2026-11-22 11:15:21.828 EST,\"app\",\"shop\",3522\n";
        assert_eq!(detect(csv, None).unwrap().0, LogFormat::Csv);
        assert_eq!(
            detect(b"{\"timestamp\":1}\n", None).unwrap().0,
            LogFormat::Json
        );
        let stderr = b"2026-11-22 11:15:21.828 UTC [12] LOG:  statement: select 1, 2\n";
        assert_eq!(
            detect(stderr, None).unwrap(),
            (LogFormat::Stderr, Some("%m [%p] ".to_string()))
        );
        let custom = b"2026-11-22 11:15:21.828 UTC,12, LOG:  statement: select 1\n";
        assert_eq!(
            detect(custom, Some("%m,%p, ")).unwrap().0,
            LogFormat::Stderr
        );
        assert_eq!(detect(csv, Some("%m [%p] ")).unwrap().0, LogFormat::Csv);
        let err = detect(b"hello world\n", None).unwrap_err();
        assert!(err.contains("--log-line-prefix"), "{err}");
        assert!(!err.contains("columns"), "{err}");
    }
}
