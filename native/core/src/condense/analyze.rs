//! The two reading passes of condense.
//!
//! 1. [`first_pass`]: every fingerprint's calls and server time, each session's span, and the
//!    key scan (literal occurrences), while the workload is read once.
//! 2. [`second_pass`]: knowing the hot fingerprints and the bucket width, the statements and
//!    tracked calls per bucket (by the start of the unit each statement belongs to), and the
//!    key links between units, while the workload is read again.

use std::io;

use super::select::Buckets;
use super::stats::{StatsCollector, OVERFLOW};
use super::units::Units;
use crate::keys::stream::{Inferrer, KeyPlan, KeyScan, Link, SessionOrder, Tag};
use crate::spill::{Decoder, Encoder, Sorted, Sorter, Spill, SpillDir};
use crate::wkl::{stream_workload, QueryRef, StreamError, StreamVisitor, StreamedHeader};

/// Memory for the links between units while they are collected.
const LINKS_BUDGET: usize = 8 << 20;

/// One session of the input, as the passes saw it.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub id: u64,
    pub user: String,
    pub database: String,
    pub statements: u32,
    /// First start and last end of its statements (offsets, µs).
    pub start: u64,
    pub end: u64,
}

/// What the first pass found.
pub struct FirstPass {
    pub header: StreamedHeader,
    pub sessions: Vec<SessionInfo>,
    pub stats: StatsCollector,
    /// The earliest statement start (offset, µs).
    pub t0: u64,
}

/// Where a session's statements are within their units, as each pass follows them.
#[derive(Default)]
struct Cursor {
    session: Option<u32>,
    pos: u32,
    at: i64,
    units: Units,
    unit: Tag,
}

impl Cursor {
    /// Follows `q` of `session`; returns true when a new session starts with it.
    fn next(&mut self, session: u32, q: &QueryRef<'_>) -> bool {
        let new = self.session != Some(session);
        if new {
            self.session = Some(session);
            self.pos = 0;
            self.at = i64::MIN;
            self.units.reset();
        } else {
            self.pos += 1;
        }
        self.at = self.at.max(q.start_offset_us as i64);
        if self.units.starts(q.sql) {
            self.unit = Tag {
                at: q.start_offset_us,
                pos: self.pos,
            };
        }
        new
    }

    fn order(&self) -> SessionOrder {
        SessionOrder {
            first_start: 0,
            index: self.session.unwrap_or(0),
        }
    }
}

/// Calls `progress` with the statements seen, every so often.
struct Ticker<'a> {
    progress: &'a dyn Fn(u64),
    seen: u64,
}

impl Ticker<'_> {
    fn tick(&mut self) {
        self.seen += 1;
        if self.seen.is_multiple_of(100_000) {
            (self.progress)(self.seen);
        }
    }
}

struct First<'a> {
    dir: &'a SpillDir,
    cursor: Cursor,
    stats: StatsCollector,
    scan: KeyScan,
    sessions: Vec<SessionInfo>,
    span: (u64, u64),
    t0: u64,
    ticker: Ticker<'a>,
}

impl StreamVisitor for First<'_> {
    fn query(&mut self, session: u32, q: QueryRef<'_>) -> Result<(), String> {
        if self.cursor.next(session, &q) {
            self.stats.end_session();
            self.scan.begin_session(self.cursor.order());
            self.span = (u64::MAX, 0);
        }
        let end = q.start_offset_us.saturating_add(q.duration_us);
        self.span = (self.span.0.min(q.start_offset_us), self.span.1.max(end));
        self.t0 = self.t0.min(q.start_offset_us);
        self.stats
            .statement(q.sql, q.start_offset_us, q.duration_us);
        self.scan
            .statement(
                self.cursor.pos,
                self.cursor.at,
                q.sql,
                q.response_values.as_deref(),
                self.cursor.unit,
            )
            .map_err(|e| spill_message(self.dir, e))?;
        self.ticker.tick();
        Ok(())
    }

    fn session(
        &mut self,
        index: u32,
        id: u64,
        user: String,
        database: String,
        queries: u32,
    ) -> Result<(), String> {
        let (start, end) = if queries == 0 { (0, 0) } else { self.span };
        debug_assert_eq!(self.sessions.len(), index as usize);
        self.sessions.push(SessionInfo {
            id,
            user,
            database,
            statements: queries,
            start,
            end,
        });
        Ok(())
    }
}

pub(super) fn spill_message(dir: &SpillDir, e: io::Error) -> String {
    format!(
        "cannot use temporary files in {}: {e}",
        dir.path().parent().unwrap_or(dir.path()).display()
    )
}

/// Reads the workload once: fingerprints, sessions, literal occurrences (the key plan).
pub fn first_pass(
    path: &std::path::Path,
    dir: &SpillDir,
    progress: &dyn Fn(u64),
) -> Result<(FirstPass, KeyPlan), StreamError> {
    let mut v = First {
        dir,
        cursor: Cursor::default(),
        stats: StatsCollector::default(),
        scan: KeyScan::new(dir),
        sessions: Vec::new(),
        span: (u64::MAX, 0),
        t0: u64::MAX,
        ticker: Ticker { progress, seen: 0 },
    };
    let header = stream_workload(path, &mut v)?;
    v.stats.end_session();
    let keys = v
        .scan
        .finish()
        .map_err(|e| StreamError::Visitor(spill_message(dir, e)))?;
    let first = FirstPass {
        header,
        sessions: v.sessions,
        stats: v.stats,
        t0: if v.t0 == u64::MAX { 0 } else { v.t0 },
    };
    Ok((first, keys))
}

/// A key link between two different units.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct UnitLink {
    pub producer_session: u32,
    pub producer_unit: Tag,
    pub user_session: u32,
    pub user_unit: Tag,
}

impl Spill for UnitLink {
    fn encode(&self, out: &mut Encoder) {
        for (s, t) in [
            (self.producer_session, self.producer_unit),
            (self.user_session, self.user_unit),
        ] {
            out.u32(s);
            out.u64(t.at);
            out.u32(t.pos);
        }
    }
    fn decode(d: &mut Decoder<'_>) -> io::Result<Self> {
        let mut side = || -> io::Result<(u32, Tag)> {
            Ok((
                d.u32()?,
                Tag {
                    at: d.u64()?,
                    pos: d.u32()?,
                },
            ))
        };
        let (producer_session, producer_unit) = side()?;
        let (user_session, user_unit) = side()?;
        Ok(UnitLink {
            producer_session,
            producer_unit,
            user_session,
            user_unit,
        })
    }
    fn memory(&self) -> usize {
        0
    }
}

/// What the second pass found.
pub struct SecondPass {
    pub buckets: Buckets,
    pub links: Sorted<UnitLink>,
    pub key_stats: crate::keys::KeyStats,
}

struct Second<'a> {
    dir: &'a SpillDir,
    cursor: Cursor,
    stats: &'a mut StatsCollector,
    keys: Inferrer,
    buckets: Buckets,
    /// Fingerprint index → tracked index.
    tracked: &'a [Option<u16>],
    t0: u64,
    /// The current unit's bucket and latest end.
    unit: Option<(usize, u64)>,
    ticker: Ticker<'a>,
}

impl Second<'_> {
    fn bucket(&self, at: u64) -> usize {
        (((at - self.t0) / self.buckets.width_us) as usize).min(self.buckets.len() - 1)
    }

    fn close_unit(&mut self) {
        if let Some((b, end)) = self.unit.take() {
            let start = self.t0 + b as u64 * self.buckets.width_us;
            let over = &mut self.buckets.overrun_us[b];
            *over = (*over).max(end.saturating_sub(start));
        }
    }
}

impl StreamVisitor for Second<'_> {
    fn query(&mut self, session: u32, q: QueryRef<'_>) -> Result<(), String> {
        let unit_before = self.cursor.unit;
        if self.cursor.next(session, &q) {
            self.keys.begin_session(self.cursor.order());
        }
        if self.cursor.unit != unit_before || self.cursor.pos == 0 {
            self.close_unit();
            self.unit = Some((self.bucket(self.cursor.unit.at), 0));
        }
        let (b, end) = self.unit.as_mut().expect("a unit is open");
        *end = (*end).max(q.start_offset_us.saturating_add(q.duration_us));
        let b = *b;
        self.buckets.statements[b] += 1;
        let fp = self.stats.fingerprints.index(q.sql);
        if fp != OVERFLOW {
            if let Some(Some(t)) = self.tracked.get(fp as usize) {
                self.buckets.calls[*t as usize][b] += 1;
            }
        }
        self.keys
            .statement(
                self.cursor.pos,
                self.cursor.at,
                q.sql,
                q.response_values.as_deref(),
                self.cursor.unit,
            )
            .map_err(|e| spill_message(self.dir, e))?;
        self.ticker.tick();
        Ok(())
    }

    fn session(&mut self, _: u32, _: u64, _: String, _: String, _: u32) -> Result<(), String> {
        self.close_unit();
        Ok(())
    }
}

/// Reads the workload again: buckets of width `width_us` from `t0`, calls of the `tracked`
/// fingerprints, links between units.
#[allow(clippy::too_many_arguments)]
pub fn second_pass(
    path: &std::path::Path,
    dir: &SpillDir,
    first: &mut FirstPass,
    keys: KeyPlan,
    tracked: &[Option<u16>],
    tracked_count: usize,
    width_us: u64,
    span_us: u64,
    progress: &dyn Fn(u64),
) -> Result<SecondPass, StreamError> {
    let n = (span_us.div_ceil(width_us.max(1)) as usize).max(1);
    let mut buckets = Buckets {
        width_us,
        statements: vec![0; n],
        overrun_us: vec![0; n],
        concurrency: vec![0.0; n],
        calls: vec![vec![0; n]; tracked_count],
    };
    // Sessions open on average in each bucket: each session's span spread over its buckets.
    for s in first.sessions.iter().filter(|s| s.statements > 0) {
        let (a, z) = (s.start - first.t0, s.end - first.t0);
        let (fa, fz) = ((a / width_us) as usize, (z / width_us) as usize);
        for b in fa..=fz.min(n - 1) {
            let lo = a.max(b as u64 * width_us);
            let hi = z.min((b as u64 + 1) * width_us);
            buckets.concurrency[b] += hi.saturating_sub(lo) as f64 / width_us as f64;
        }
    }
    let mut v = Second {
        dir,
        cursor: Cursor::default(),
        stats: &mut first.stats,
        keys: keys
            .inferrer()
            .map_err(|e| StreamError::Visitor(spill_message(dir, e)))?,
        buckets,
        tracked,
        t0: first.t0,
        unit: None,
        ticker: Ticker { progress, seen: 0 },
    };
    stream_workload(path, &mut v)?;
    v.close_unit();
    let Second { keys, buckets, .. } = v;
    let mut links = Sorter::new(dir, "unit-links", LINKS_BUDGET);
    let mut failed = None;
    let key_stats = keys
        .finish(|l: Link| {
            let (p, u) = (l.producer.session.index, l.user.session.index);
            if (p, l.producer_tag.pos) == (u, l.user_tag.pos) || failed.is_some() {
                return; // within one unit: kept or dropped together
            }
            if let Err(e) = links.push(UnitLink {
                producer_session: p,
                producer_unit: l.producer_tag,
                user_session: u,
                user_unit: l.user_tag,
            }) {
                failed = Some(e);
            }
        })
        .map_err(|e| StreamError::Visitor(spill_message(dir, e)))?;
    if let Some(e) = failed {
        return Err(StreamError::Visitor(spill_message(dir, e)));
    }
    Ok(SecondPass {
        buckets,
        links: links
            .finish()
            .map_err(|e| StreamError::Visitor(spill_message(dir, e)))?,
        key_stats,
    })
}
