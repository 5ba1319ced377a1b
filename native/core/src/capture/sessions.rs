//! The second step: each session's lines, in order, into the statements the workload keeps.
//!
//! Sessions come one after another from the sorted lines. Each is paired, its SQL completed
//! and filtered; what is kept is appended to a temporary [`StatementStore`] (a session's
//! statements together), the session's place is noted in an index sorted by the order sessions
//! are numbered in, and its literals go to the key scan. Only one session's state is in memory
//! at a time.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use super::filter::Filters;
use super::pairing::{Failure, LoggedStatement, Pairer, Style};
use super::read::{spill_failed, SessionLine};
use super::substitute::{has_placeholders, substitute};
use super::time::{Micros, Zones};
use super::{CaptureError, CaptureErrorKind};
use crate::keys::stream::{KeyPlan, KeyScan, SessionOrder, Tag};
use crate::spill::{Decoder, Encoder, Sorted, Sorter, Spill, SpillDir};
use crate::sql::lex::non_code_at;

/// Memory for the session index while it is built.
const INDEX_BUDGET: usize = 8 << 20;
/// Sessions between progress snapshots.
const PROGRESS_EVERY: u64 = 2_000;

/// A statement the workload keeps, before numbering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Kept {
    pub start_us: Micros,
    pub duration_us: u64,
    pub sql: String,
    pub failed: Option<Failure>,
}

impl Kept {
    fn encode(&self, out: &mut Encoder) {
        out.i64(self.start_us);
        out.u64(self.duration_us);
        out.str(&self.sql);
        match &self.failed {
            None => out.bool(false),
            Some(f) => {
                out.bool(true);
                out.str(&f.sqlstate);
                out.str(&f.message);
            }
        }
    }

    fn decode(d: &mut Decoder<'_>) -> io::Result<Kept> {
        Ok(Kept {
            start_us: d.i64()?,
            duration_us: d.u64()?,
            sql: d.string()?,
            failed: if d.bool()? {
                Some(Failure {
                    sqlstate: d.string()?,
                    message: d.string()?,
                })
            } else {
                None
            },
        })
    }
}

/// Every kept statement, each session's together, in a temporary file.
pub(super) struct StatementStore {
    path: PathBuf,
    out: BufWriter<File>,
    written: u64,
    enc: Encoder,
}

impl StatementStore {
    fn create(dir: &SpillDir) -> io::Result<Self> {
        let path = dir.file("statements");
        Ok(StatementStore {
            out: BufWriter::with_capacity(1 << 20, File::create(&path)?),
            path,
            written: 0,
            enc: Encoder::default(),
        })
    }

    fn append(&mut self, k: &Kept) -> io::Result<()> {
        self.enc.clear();
        k.encode(&mut self.enc);
        let len = self.enc.len() as u32;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(self.enc.as_bytes())?;
        self.written += 4 + u64::from(len);
        Ok(())
    }

    /// Stops writing; the statements can now be read back.
    pub fn reader(&mut self) -> io::Result<StoreReader> {
        self.out.flush()?;
        Ok(StoreReader {
            input: BufReader::with_capacity(256 * 1024, File::open(&self.path)?),
            buf: Vec::new(),
        })
    }
}

/// Reads a session's statements back from a [`StatementStore`].
pub(super) struct StoreReader {
    input: BufReader<File>,
    buf: Vec<u8>,
}

impl StoreReader {
    pub fn seek(&mut self, offset: u64) -> io::Result<()> {
        self.input.seek(SeekFrom::Start(offset)).map(|_| ())
    }

    pub fn next(&mut self) -> io::Result<Kept> {
        let mut len = [0u8; 4];
        self.input.read_exact(&mut len)?;
        self.buf.resize(u32::from_le_bytes(len) as usize, 0);
        self.input.read_exact(&mut self.buf)?;
        Kept::decode(&mut Decoder::new(&self.buf))
    }
}

/// A session of the workload: its place in the numbering order and in the store.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct SessionEntry {
    /// The order sessions are numbered in: by the start of their first statement, then by
    /// the server's session id (of which `order.index` is the rank).
    pub order: SessionOrder,
    pub key: String,
    pub user: String,
    pub database: String,
    pub offset: u64,
    pub count: u32,
}

impl Spill for SessionEntry {
    fn encode(&self, out: &mut Encoder) {
        self.order.encode(out);
        out.str(&self.key);
        out.str(&self.user);
        out.str(&self.database);
        out.u64(self.offset);
        out.u32(self.count);
    }
    fn decode(d: &mut Decoder<'_>) -> io::Result<Self> {
        Ok(SessionEntry {
            order: SessionOrder::decode(d)?,
            key: d.string()?,
            user: d.string()?,
            database: d.string()?,
            offset: d.u64()?,
            count: d.u32()?,
        })
    }
    fn memory(&self) -> usize {
        self.key.len() + self.user.len() + self.database.len() + 48
    }
}

/// Counts over the kept statements, for the summary and its warnings.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub combined: u64,
    pub start_lines: u64,
    pub excluded: BTreeMap<String, u64>,
    pub missing_durations: u64,
    pub shortest_duration: Option<u64>,
    pub timed: usize,
    /// Bare durations with no statement logged before them (see [`Pairer::unpaired_durations`]).
    pub unpaired_durations: u64,
    /// Entries read more than once (same session and line number: csvlog and jsonlog of one
    /// server, or a file given twice); the first was kept.
    pub duplicate_entries: u64,
}

/// The sessions, ready to be numbered and written.
pub(super) struct Sessions {
    pub index: Sorted<SessionEntry>,
    pub store: StatementStore,
    pub keys: KeyPlan,
    pub counts: Counts,
    /// Start of the earliest statement and end of the latest.
    pub t0: Option<Micros>,
    pub end: Option<Micros>,
    pub statements: u64,
}

/// One session while its lines come in.
struct Open {
    key: String,
    user: String,
    database: String,
    order: SessionOrder,
    offset: u64,
    count: u32,
    /// The timeline instant of its last statement (never earlier than the one before).
    at: Micros,
}

struct Builder<'a> {
    filters: &'a Filters,
    dir: SpillDir,
    store: StatementStore,
    index: Sorter<SessionEntry>,
    scan: KeyScan,
    counts: Counts,
    t0: Option<Micros>,
    end: Option<Micros>,
    statements: u64,
    sessions_seen: u32,
}

/// Pairs, completes and filters every session of the sorted `lines`.
pub(super) fn build_sessions(
    lines: Sorted<SessionLine>,
    zones: &Zones,
    filters: &Filters,
    dir: &SpillDir,
    progress: &dyn Fn(u64),
) -> Result<Sessions, CaptureError> {
    let spill = |e| spill_failed(dir, e);
    let mut b = Builder {
        filters,
        dir: dir.clone(),
        store: StatementStore::create(dir).map_err(spill)?,
        index: Sorter::new(dir, "sessions", INDEX_BUDGET),
        scan: KeyScan::new(dir),
        counts: Counts::default(),
        t0: None,
        end: None,
        statements: 0,
        sessions_seen: 0,
    };
    let mut open: Option<Open> = None;
    let mut pairer = Pairer::new(zones);
    let mut logged = Vec::new();
    let mut last_line = None;
    for line in lines.drain_ahead().map_err(spill)? {
        let line = line.map_err(spill)?;
        let same_session = open.as_ref().is_some_and(|o| *o.key == *line.session);
        // Sorted by (session, line number, arrival): a repeated entry follows its first copy.
        if same_session && last_line == Some(line.line) {
            b.counts.duplicate_entries += 1;
            continue;
        }
        last_line = Some(line.line);
        let view = line.view().map_err(spill)?;
        if !same_session {
            if let Some(done) = open.take() {
                pairer.finish(&mut logged);
                b.counts.unpaired_durations += pairer.unpaired_durations;
                b.finish_session(done, &mut logged)?;
            }
            pairer = Pairer::new(zones);
            b.sessions_seen += 1;
            if u64::from(b.sessions_seen).is_multiple_of(PROGRESS_EVERY) {
                progress(b.statements);
            }
            open = Some(Open {
                key: line.session.to_string(),
                user: view.user.to_string(),
                database: view.database.to_string(),
                order: SessionOrder {
                    first_start: 0,
                    index: b.sessions_seen,
                },
                offset: 0,
                count: 0,
                at: Micros::MIN,
            });
        }
        pairer
            .push(&view, &mut logged)
            .map_err(|e| input_error(format!("session {}: {e}", line.session)))?;
        if !logged.is_empty() {
            b.statements(open.as_mut().expect("a session is open"), &mut logged)?;
        }
    }
    if let Some(done) = open.take() {
        pairer.finish(&mut logged);
        b.counts.unpaired_durations += pairer.unpaired_durations;
        b.finish_session(done, &mut logged)?;
    }
    let Builder {
        store,
        index,
        scan,
        counts,
        t0,
        end,
        statements,
        dir,
        ..
    } = b;
    let spill = |e| spill_failed(&dir, e);
    Ok(Sessions {
        index: index.finish().map_err(spill)?,
        store,
        keys: scan.finish().map_err(spill)?,
        counts,
        t0,
        end,
        statements,
    })
}

fn input_error(message: String) -> CaptureError {
    CaptureError {
        kind: CaptureErrorKind::Input,
        message,
    }
}

impl Builder<'_> {
    /// The last statements of a finished session, then its index entry.
    fn finish_session(
        &mut self,
        mut done: Open,
        logged: &mut Vec<LoggedStatement>,
    ) -> Result<(), CaptureError> {
        self.statements(&mut done, logged)?;
        if done.count > 0 {
            self.index
                .push(SessionEntry {
                    order: done.order,
                    key: done.key,
                    user: done.user,
                    database: done.database,
                    offset: done.offset,
                    count: done.count,
                })
                .map_err(|e| spill_failed(&self.dir, e))?;
        }
        Ok(())
    }

    /// Completes, filters and stores the statements pairing produced for session `o`.
    fn statements(
        &mut self,
        o: &mut Open,
        logged: &mut Vec<LoggedStatement>,
    ) -> Result<(), CaptureError> {
        for s in logged.drain(..) {
            let Some(kept) = self.keep(o, s) else {
                continue;
            };
            if o.count == 0 {
                // The session's number follows its first kept statement's start.
                o.order.first_start = kept.start_us;
                o.offset = self.store.written;
                self.scan.begin_session(o.order);
            }
            o.at = o.at.max(kept.start_us);
            let end = kept.start_us + kept.duration_us as i64;
            self.t0 = Some(self.t0.map_or(kept.start_us, |t| t.min(kept.start_us)));
            self.end = Some(self.end.map_or(end, |e| e.max(end)));
            self.store
                .append(&kept)
                .map_err(|e| spill_failed(&self.dir, e))?;
            self.scan
                .statement(o.count, o.at, &kept.sql, None, Tag::default())
                .map_err(|e| spill_failed(&self.dir, e))?;
            o.count += 1;
            self.statements += 1;
        }
        Ok(())
    }

    /// The statement as the workload keeps it, or `None` (counted) when it is left out.
    fn keep(&mut self, o: &Open, s: LoggedStatement) -> Option<Kept> {
        let sql = match complete_sql(&s) {
            Ok(sql) => sql,
            Err(reason) => {
                *self.counts.excluded.entry(reason.into()).or_default() += 1;
                return None;
            }
        };
        if let Some(reason) =
            self.filters
                .exclude(&o.database, &o.user, &s.application, s.start_us, &sql)
        {
            *self
                .counts
                .excluded
                .entry(reason.as_str().into())
                .or_default() += 1;
            return None;
        }
        let c = &mut self.counts;
        match s.style {
            Style::Combined => c.combined += 1,
            Style::StartLine => c.start_lines += 1,
            Style::ErrorOnly => {}
        }
        if s.duration_missing {
            c.missing_durations += 1;
        } else if s.failed.is_none() {
            c.timed += 1;
            c.shortest_duration = Some(
                c.shortest_duration
                    .map_or(s.duration_us, |d| d.min(s.duration_us)),
            );
        }
        Some(Kept {
            start_us: s.start_us,
            duration_us: s.duration_us,
            sql,
            failed: s.failed,
        })
    }
}

/// The SQL to replay, or why there is none that would be faithful.
pub(super) fn complete_sql(s: &LoggedStatement) -> Result<String, &'static str> {
    if let Some(p) = &s.params {
        if !p.truncated.is_empty() && (s.extended || has_placeholders(&s.sql)) {
            return Err("truncated_parameters");
        }
    }
    if !has_placeholders(&s.sql) {
        return Ok(s.sql.clone());
    }
    // `statement:` text is what the client sent; `$n` there belongs to the SQL itself (PREPARE).
    // An ERROR's statement may be either: an extended-protocol statement that failed before its
    // values were logged (`log_parameter_max_length_on_error = 0`, the default) has `$n` in
    // code that only a PREPARE or CREATE (a function body in code, a rule) can stand for itself.
    if !s.extended && s.params.is_none() {
        if s.style == Style::ErrorOnly && !defines_parameters(&s.sql) {
            return Err("missing_parameters");
        }
        return Ok(s.sql.clone());
    }
    let empty = BTreeMap::new();
    let values = s.params.as_ref().map_or(&empty, |p| &p.values);
    substitute(&s.sql, values).map_err(|_| "missing_parameters")
}

/// True when `sql` starts (after whitespace and comments) with `PREPARE` or `CREATE`, whose
/// `$n` are the statement's own.
fn defines_parameters(sql: &str) -> bool {
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"--") || b[i..].starts_with(b"/*") {
            match non_code_at(b, i) {
                Some((_, end)) => i = end,
                None => break,
            }
        } else {
            break;
        }
    }
    let word: String = sql[i..]
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect();
    word.eq_ignore_ascii_case("prepare") || word.eq_ignore_ascii_case("create")
}
