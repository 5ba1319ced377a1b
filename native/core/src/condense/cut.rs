//! Cutting each session to what the plan keeps, and laying the kept parts on the condensed
//! timeline.
//!
//! The same cut runs twice: [`measure`] counts what each session keeps and how long the
//! pulled-in units and the windows last (a `.wkl` states its sizes up front, and the timeline
//! needs the lengths), then [`write`] writes it.
//!
//! The timeline: pulled-in units first, one after another in their original order (they
//! created ids that what follows uses), then each window in time order, its statements at
//! their offsets within the window. A session cut after its start first replays the settings
//! it made before the cut (`SET`, `PREPARE`, temporary tables: up to [`MAX_CARRIED`], the
//! latest), at the time of its first kept statement.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

use super::analyze::SessionInfo;
use super::closure::UnitId;
use super::stats::StatsCollector;
use super::units::{is_setting, Units};
use crate::wkl::{
    stream_workload, Metadata, ProfileHeader, ProfileWriter, Query, QueryRef, StreamError,
    StreamVisitor, StreamedHeader,
};

/// Settings carried into a cut session, at most (the latest ones).
pub const MAX_CARRIED: usize = 64;

/// What to keep and where it goes.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Windows `[from, to)` of unit start offsets, in time order.
    pub windows: Vec<(u64, u64)>,
    /// Units kept for the ids they created, with their original start.
    pub pulled: BTreeMap<UnitId, u64>,
    /// Set by [`Plan::lay_out`]: the new start of each window and of each pulled unit.
    bases: Vec<u64>,
    pulled_at: HashMap<UnitId, u64>,
    /// How long the pulled-in units take on the condensed timeline, before the windows.
    pub pulled_span_us: u64,
}

/// Where a unit goes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Place {
    Drop,
    Window(usize),
    Pulled(UnitId),
}

impl Plan {
    pub fn new(windows: Vec<(u64, u64)>, pulled: BTreeMap<UnitId, u64>) -> Plan {
        Plan {
            windows,
            pulled,
            ..Default::default()
        }
    }

    fn place(&self, session: u32, pos: u32, at: u64) -> Place {
        let i = self.windows.partition_point(|w| w.1 <= at);
        if self.windows.get(i).is_some_and(|w| w.0 <= at) {
            Place::Window(i)
        } else if self.pulled.contains_key(&(session, pos)) {
            Place::Pulled((session, pos))
        } else {
            Place::Drop
        }
    }

    /// Lays the timeline out from what [`measure`] found; returns its length.
    ///
    /// Pulled-in units run on `lanes` connections' worth of time (the capture's concurrency):
    /// each, in original order, starts as soon as a lane is free and its own session's previous
    /// pulled unit has ended.
    pub fn lay_out(&mut self, m: &Measured, lanes: usize) -> u64 {
        let mut order: Vec<(u64, UnitId)> = self.pulled.iter().map(|(id, at)| (*at, *id)).collect();
        order.sort_unstable();
        let mut free = vec![0u64; lanes.max(1)];
        let mut session_end: HashMap<u32, u64> = HashMap::new();
        let mut t = 0u64;
        for (_, id) in order {
            let lane = (0..free.len()).min_by_key(|&i| (free[i], i)).unwrap_or(0);
            let start = free[lane].max(session_end.get(&id.0).copied().unwrap_or(0));
            let end = start + m.pulled_span.get(&id).copied().unwrap_or(0);
            self.pulled_at.insert(id, start);
            free[lane] = end;
            session_end.insert(id.0, end);
            t = t.max(end);
        }
        self.pulled_span_us = t;
        self.bases.clear();
        for (i, w) in self.windows.iter().enumerate() {
            self.bases.push(t);
            t += m.window_span(i, w);
        }
        t
    }

    /// Where window `i` starts on the condensed timeline, and how long it lasts there.
    pub fn window_place(&self, i: usize, m: &Measured) -> (u64, u64) {
        (self.bases[i], m.window_span(i, &self.windows[i]))
    }

    /// The offset of a statement that started at `at` in a unit placed by `place` that
    /// started at `unit_at`.
    fn new_offset(&self, place: Place, unit_at: u64, at: u64) -> u64 {
        match place {
            Place::Window(i) => at.saturating_sub(self.windows[i].0) + self.bases[i],
            Place::Pulled(id) => at.saturating_sub(unit_at) + self.pulled_at[&id],
            Place::Drop => 0,
        }
    }
}

/// What the cut keeps, before it is written.
#[derive(Debug, Default)]
pub struct Measured {
    /// Statements kept per session (file order).
    pub per_session: Vec<u32>,
    pub statements: u64,
    pub carried_settings: u64,
    pub pulled_statements: u64,
    /// Each pulled unit's span (µs).
    pub pulled_span: HashMap<UnitId, u64>,
    /// The latest end of each window's kept statements (original offsets).
    pub window_end: Vec<u64>,
}

impl Measured {
    /// A window lasts its length, or longer when its last units run over.
    fn window_span(&self, i: usize, w: &(u64, u64)) -> u64 {
        let end = self.window_end.get(i).copied().unwrap_or(0);
        let nominal = if w.1 == u64::MAX { 0 } else { w.1 - w.0 };
        end.saturating_sub(w.0).max(nominal)
    }
}

/// One session being cut.
struct Cut {
    units: Units,
    place: Place,
    unit_at: u64,
    pos: u32,
    /// Settings made in dropped units since the last kept one.
    carried: VecDeque<Query>,
}

/// A kept statement: the query, where its unit went and when the unit started; `carried` for a
/// setting replayed ahead of its unit.
struct Kept {
    query: Query,
    place: Place,
    unit_at: u64,
    carried: bool,
}

impl Cut {
    fn new() -> Cut {
        Cut {
            units: Units::default(),
            place: Place::Drop,
            unit_at: 0,
            pos: 0,
            carried: VecDeque::new(),
        }
    }

    /// The session's next query; what it keeps goes to `out`.
    fn next(&mut self, plan: &Plan, session: u32, q: QueryRef<'_>, out: &mut Vec<Kept>) {
        if self.units.starts(q.sql) {
            self.place = plan.place(session, self.pos, q.start_offset_us);
            self.unit_at = q.start_offset_us;
            if self.place != Place::Drop {
                for s in self.carried.drain(..) {
                    out.push(Kept {
                        query: s,
                        place: self.place,
                        unit_at: self.unit_at,
                        carried: true,
                    });
                }
            } else if is_setting(q.sql) {
                // A setting outside a transaction is a unit of its own, dropped here: the
                // session's next kept unit replays it first.
                if self.carried.len() == MAX_CARRIED {
                    self.carried.pop_front();
                }
                self.carried.push_back(q.to_query());
            }
        }
        self.pos += 1;
        if self.place != Place::Drop {
            out.push(Kept {
                query: q.to_query(),
                place: self.place,
                unit_at: self.unit_at,
                carried: false,
            });
        }
    }
}

/// Feeds every session's queries through a [`Cut`]; `each` gets what is kept.
struct Cutting<'a, F: FnMut(u32, Kept) -> Result<(), String>> {
    plan: &'a Plan,
    session: Option<u32>,
    cut: Cut,
    kept: Vec<Kept>,
    each: F,
}

impl<F: FnMut(u32, Kept) -> Result<(), String>> StreamVisitor for Cutting<'_, F> {
    fn query(&mut self, session: u32, q: QueryRef<'_>) -> Result<(), String> {
        if self.session != Some(session) {
            self.session = Some(session);
            self.cut = Cut::new();
        }
        self.cut.next(self.plan, session, q, &mut self.kept);
        for k in self.kept.drain(..) {
            (self.each)(session, k)?;
        }
        Ok(())
    }
    fn session(&mut self, _: u32, _: u64, _: String, _: String, _: u32) -> Result<(), String> {
        Ok(())
    }
}

fn cut_all(
    path: &Path,
    plan: &Plan,
    each: impl FnMut(u32, Kept) -> Result<(), String>,
) -> Result<StreamedHeader, StreamError> {
    let mut c = Cutting {
        plan,
        session: None,
        cut: Cut::new(),
        kept: Vec::new(),
        each,
    };
    stream_workload(path, &mut c)
}

/// Counts what the plan keeps.
pub fn measure(path: &Path, plan: &Plan, sessions: usize) -> Result<Measured, StreamError> {
    let mut m = Measured {
        per_session: vec![0; sessions],
        window_end: vec![0; plan.windows.len()],
        ..Default::default()
    };
    cut_all(path, plan, |session, k| {
        m.per_session[session as usize] += 1;
        m.statements += 1;
        m.carried_settings += u64::from(k.carried);
        let end = k.query.start_offset_us.saturating_add(k.query.duration_us);
        match k.place {
            Place::Window(i) if !k.carried => m.window_end[i] = m.window_end[i].max(end),
            Place::Pulled(id) => {
                m.pulled_statements += 1;
                if !k.carried {
                    let span = m.pulled_span.entry(id).or_default();
                    *span = (*span).max(end.saturating_sub(k.unit_at));
                }
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(m)
}

/// Writes what the plan keeps to `output`; returns the condensed workload's stats.
pub fn write(
    path: &Path,
    output: &Path,
    plan: &Plan,
    measured: &Measured,
    input: &StreamedHeader,
    sessions: &[SessionInfo],
    progress: &dyn Fn(u64),
) -> Result<StatsCollector, StreamError> {
    let wkl = |e: crate::wkl::WklError| StreamError::Workload(e);
    let header = ProfileHeader {
        version: input.version,
        captured_at: input.captured_at,
        source_host: input.source_host.clone(),
        pg_version: input.pg_version.clone(),
        capture_method: input.capture_method.clone(),
    };
    let kept_sessions = measured.per_session.iter().filter(|&&n| n > 0).count() as u64;
    let mut out = ProfileWriter::create(output, &header, kept_sessions).map_err(wkl)?;
    let mut stats = StatsCollector::default();
    let (mut current, mut next_id, mut written, mut end) = (None, 0u64, 0u64, 0u64);
    let mut write_error = None;
    let result = cut_all(path, plan, |session, mut k| {
        if current != Some(session) {
            current = Some(session);
            next_id += 1;
            let s = &sessions[session as usize];
            stats.end_session();
            out.begin_session(
                next_id,
                &s.user,
                &s.database,
                u64::from(measured.per_session[session as usize]),
            )
            .map_err(|e| {
                let m = e.to_string();
                write_error = Some(e);
                m
            })?;
        }
        // A carried setting runs at its unit's start; the others keep their place in it.
        let at = if k.carried {
            k.unit_at
        } else {
            k.query.start_offset_us
        };
        k.query.start_offset_us = plan.new_offset(k.place, k.unit_at, at);
        end = end.max(k.query.start_offset_us + k.query.duration_us);
        stats.statement(&k.query.sql, k.query.start_offset_us, k.query.duration_us);
        out.query(&k.query).map_err(|e| {
            let m = e.to_string();
            write_error = Some(e);
            m
        })?;
        written += 1;
        if written.is_multiple_of(100_000) {
            progress(written);
        }
        Ok(())
    });
    if let Some(e) = write_error {
        return Err(wkl(e));
    }
    result?;
    out.finish(&Metadata {
        total_queries: written,
        total_sessions: kept_sessions,
        capture_duration_us: end,
        sequence_snapshot: input.metadata.sequence_snapshot.clone(),
        pk_map: input.metadata.pk_map.clone(),
    })
    .map_err(wkl)?;
    progress(written);
    Ok(stats)
}
