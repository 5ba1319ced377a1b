//! What a workload is made of, gathered in one streamed pass: statements per fingerprint and
//! their captured server time, sessions open at once over time, the span. Computed for the
//! original and the condensed workload alike, and compared ([`compare`]).

use std::collections::HashMap;

use serde::Serialize;

use crate::fnv::FnvBuild;
use crate::sql;

/// Distinct fingerprints tracked before the rest are counted together (generated SQL can
/// produce a new one per statement; memory stays bounded).
const MAX_FINGERPRINTS: usize = 200_000;
/// Shapes remembered before the cache starts over.
const MAX_SHAPES: usize = 100_000;

/// One fingerprint's totals.
#[derive(Debug, Clone, Serialize)]
pub struct FingerprintStat {
    /// pg_query's fingerprint, as hex (the gate's key).
    pub fingerprint: String,
    /// Literals replaced by `$n`.
    pub normalized: String,
    pub calls: u64,
    /// Captured server time, µs.
    pub time_us: u64,
    #[serde(skip)]
    pub(crate) key: u64,
}

/// Fingerprints of statement texts, each text's fingerprint found once per shape (as
/// `Workload` does), each fingerprint normalised once.
#[derive(Default)]
pub struct Fingerprints {
    by_shape: HashMap<u64, u32, FnvBuild>,
    by_fp: HashMap<u64, u32, FnvBuild>,
    pub(crate) stats: Vec<FingerprintStat>,
    /// Statements whose fingerprint came after [`MAX_FINGERPRINTS`] others (counted together).
    pub overflow: (u64, u64),
}

/// The index used for statements past [`MAX_FINGERPRINTS`] distinct fingerprints.
pub const OVERFLOW: u32 = u32::MAX;

impl Fingerprints {
    /// The fingerprint index of `text` (or [`OVERFLOW`]).
    pub fn index(&mut self, text: &str) -> u32 {
        let shape = sql::shape_key(text);
        if let Some(i) = shape.and_then(|k| self.by_shape.get(&k)) {
            return *i;
        }
        let fp = sql::fingerprint(text);
        let i = match self.by_fp.get(&fp) {
            Some(&i) => i,
            None if self.stats.len() >= MAX_FINGERPRINTS => OVERFLOW,
            None => {
                let i = self.stats.len() as u32;
                self.stats.push(FingerprintStat {
                    fingerprint: format!("{fp:016x}"),
                    normalized: pg_query::normalize(text).unwrap_or_else(|_| text.to_string()),
                    calls: 0,
                    time_us: 0,
                    key: fp,
                });
                self.by_fp.insert(fp, i);
                i
            }
        };
        if let Some(k) = shape {
            if self.by_shape.len() >= MAX_SHAPES {
                self.by_shape.clear();
            }
            self.by_shape.insert(k, i);
        }
        i
    }

    /// Counts one statement of fingerprint `i`.
    pub fn count(&mut self, i: u32, duration_us: u64) {
        match self.stats.get_mut(i as usize) {
            Some(s) => {
                s.calls += 1;
                s.time_us = s.time_us.saturating_add(duration_us);
            }
            None => {
                self.overflow.0 += 1;
                self.overflow.1 = self.overflow.1.saturating_add(duration_us);
            }
        }
    }

    pub fn stats(&self) -> &[FingerprintStat] {
        &self.stats
    }
}

/// Sessions open at once, over the workload's span (time-weighted).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Concurrency {
    pub mean: f64,
    pub p50: u64,
    pub p95: u64,
    pub max: u64,
}

impl Concurrency {
    /// From each session's `(first start, last end)` on one timeline.
    pub fn of(intervals: &[(u64, u64)]) -> Concurrency {
        let mut events: Vec<(u64, i64)> = Vec::with_capacity(intervals.len() * 2);
        for &(s, e) in intervals {
            events.push((s, 1));
            events.push((e.max(s), -1));
        }
        events.sort_unstable();
        // Time spent at each level of concurrency.
        let mut at_level: HashMap<u64, u64> = HashMap::new();
        let (mut level, mut max, mut last) = (0i64, 0u64, None::<u64>);
        for (t, delta) in events {
            if let Some(prev) = last {
                if t > prev && level > 0 {
                    *at_level.entry(level as u64).or_default() += t - prev;
                }
            }
            level += delta;
            max = max.max(level.max(0) as u64);
            last = Some(t);
        }
        let start = intervals.iter().map(|i| i.0).min().unwrap_or(0);
        let end = intervals.iter().map(|i| i.1).max().unwrap_or(0);
        let span = end.saturating_sub(start);
        if span == 0 {
            return Concurrency {
                mean: max as f64,
                p50: max,
                p95: max,
                max,
            };
        }
        let busy: u64 = at_level.values().sum();
        let mut levels: Vec<(u64, u64)> = at_level.into_iter().collect();
        levels.push((0, span.saturating_sub(busy)));
        levels.sort_unstable();
        let mean = levels
            .iter()
            .map(|(l, t)| *l as f64 * *t as f64)
            .sum::<f64>()
            / span as f64;
        let quantile = |q: f64| {
            let target = (q * span as f64).ceil() as u64;
            let mut seen = 0u64;
            for &(l, t) in &levels {
                seen += t;
                if seen >= target {
                    return l;
                }
            }
            max
        };
        Concurrency {
            mean: (mean * 100.0).round() / 100.0,
            p50: quantile(0.5),
            p95: quantile(0.95),
            max,
        }
    }
}

/// A workload's make-up.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadStats {
    pub sessions: u64,
    pub statements: u64,
    /// From the first statement's start to the last one's end, µs.
    pub duration_us: u64,
    pub server_time_us: u64,
    pub concurrency: Concurrency,
    /// Every fingerprint, most calls first.
    pub fingerprints: Vec<FingerprintStat>,
}

/// Gathers [`WorkloadStats`] statement by statement.
#[derive(Default)]
pub struct StatsCollector {
    pub fingerprints: Fingerprints,
    sessions: Vec<(u64, u64)>,
    current: Option<(u64, u64)>,
    statements: u64,
    server_time_us: u64,
}

impl StatsCollector {
    /// Counts a statement of the current session; returns its fingerprint index.
    pub fn statement(&mut self, sql: &str, start_us: u64, duration_us: u64) -> u32 {
        let i = self.fingerprints.index(sql);
        self.fingerprints.count(i, duration_us);
        self.count_known(start_us, duration_us);
        i
    }

    /// Counts a statement whose fingerprint was already counted elsewhere.
    fn count_known(&mut self, start_us: u64, duration_us: u64) {
        let end = start_us.saturating_add(duration_us);
        self.current = Some(match self.current {
            None => (start_us, end),
            Some((s, e)) => (s.min(start_us), e.max(end)),
        });
        self.statements += 1;
        self.server_time_us = self.server_time_us.saturating_add(duration_us);
    }

    /// The current session is over.
    pub fn end_session(&mut self) {
        if let Some(i) = self.current.take() {
            self.sessions.push(i);
        }
    }

    pub fn session_intervals(&self) -> &[(u64, u64)] {
        &self.sessions
    }

    pub fn finish(mut self) -> WorkloadStats {
        self.end_session();
        self.snapshot()
    }

    /// The stats of the sessions ended so far.
    pub fn snapshot(&self) -> WorkloadStats {
        let start = self.sessions.iter().map(|s| s.0).min().unwrap_or(0);
        let end = self.sessions.iter().map(|s| s.1).max().unwrap_or(0);
        let mut fingerprints = self.fingerprints.stats.clone();
        if self.fingerprints.overflow.0 > 0 {
            fingerprints.push(FingerprintStat {
                fingerprint: "other".into(),
                normalized: format!(
                    "(statements of more than {MAX_FINGERPRINTS} other fingerprints)"
                ),
                calls: self.fingerprints.overflow.0,
                time_us: self.fingerprints.overflow.1,
                key: 0,
            });
        }
        fingerprints.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.key.cmp(&b.key)));
        WorkloadStats {
            sessions: self.sessions.len() as u64,
            statements: self.statements,
            duration_us: end.saturating_sub(start),
            server_time_us: self.server_time_us,
            concurrency: Concurrency::of(&self.sessions),
            fingerprints,
        }
    }
}

/// The workload's stats, read from a `.wkl` in one streamed pass.
pub fn workload_stats(path: &std::path::Path) -> Result<WorkloadStats, crate::wkl::StreamError> {
    struct V(StatsCollector, Option<u32>);
    impl crate::wkl::StreamVisitor for V {
        fn query(&mut self, session: u32, q: crate::wkl::QueryRef<'_>) -> Result<(), String> {
            if self.1 != Some(session) {
                self.0.end_session();
                self.1 = Some(session);
            }
            self.0.statement(q.sql, q.start_offset_us, q.duration_us);
            Ok(())
        }
        fn session(&mut self, _: u32, _: u64, _: String, _: String, _: u32) -> Result<(), String> {
            Ok(())
        }
    }
    let mut v = V(StatsCollector::default(), None);
    crate::wkl::stream_workload(path, &mut v)?;
    Ok(v.0.finish())
}

/// One fingerprint in both workloads.
#[derive(Debug, Clone, Serialize)]
pub struct FingerprintComparison {
    pub fingerprint: String,
    pub normalized: String,
    /// Carries at least the hot share of the original's calls or server time.
    pub hot: bool,
    pub original_calls: u64,
    pub original_time_us: u64,
    pub condensed_calls: u64,
    pub condensed_time_us: u64,
    /// Share of all calls, in each (0–1).
    pub original_share: f64,
    pub condensed_share: f64,
    /// Enough calls in the condensed workload for the gate to compare it (`min_calls`, or
    /// every call the original has when it has fewer).
    pub gated: bool,
}

/// A condensed workload against its original.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub min_share: f64,
    pub min_calls: u64,
    pub original: WorkloadSummaryLine,
    pub condensed: WorkloadSummaryLine,
    /// Total variation distance between the two fingerprint mixes (share of calls): 0 the
    /// same mix, 1 nothing in common.
    pub mix_distance: f64,
    /// Hot fingerprints and the most frequent others, original order (most calls first).
    pub fingerprints: Vec<FingerprintComparison>,
    pub dropped: Dropped,
}

/// The totals of one side.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadSummaryLine {
    pub sessions: u64,
    pub statements: u64,
    pub duration_us: u64,
    pub server_time_us: u64,
    pub fingerprints: u64,
    pub concurrency: Concurrency,
}

/// What the condensed workload does not have.
#[derive(Debug, Clone, Serialize)]
pub struct Dropped {
    pub statements: u64,
    pub sessions: u64,
    /// Fingerprints with no call left, and their share of the original's calls and time.
    pub fingerprints: u64,
    pub fingerprints_calls_share: f64,
    pub fingerprints_time_share: f64,
    /// The most frequent of those (up to 10).
    pub fingerprints_top: Vec<FingerprintStat>,
    /// Hot fingerprints with fewer calls than the gate needs (listed in `fingerprints` too).
    pub hot_not_gated: u64,
}

impl WorkloadStats {
    fn line(&self) -> WorkloadSummaryLine {
        WorkloadSummaryLine {
            sessions: self.sessions,
            statements: self.statements,
            duration_us: self.duration_us,
            server_time_us: self.server_time_us,
            fingerprints: self.fingerprints.len() as u64,
            concurrency: self.concurrency.clone(),
        }
    }

    /// The fingerprints that carry at least `min_share` of calls or of server time.
    pub fn hot(&self, min_share: f64) -> impl Iterator<Item = &FingerprintStat> {
        let (calls, time) = (
            self.statements.max(1) as f64,
            self.server_time_us.max(1) as f64,
        );
        self.fingerprints.iter().filter(move |f| {
            f.key != 0
                && (f.calls as f64 / calls >= min_share || f.time_us as f64 / time >= min_share)
        })
    }
}

/// How many fingerprints the comparison lists beyond the hot ones.
const LISTED_BEYOND_HOT: usize = 10;

/// Compares a condensed workload with its original.
pub fn compare(
    original: &WorkloadStats,
    condensed: &WorkloadStats,
    min_share: f64,
    min_calls: u64,
) -> Comparison {
    let by_key: HashMap<u64, &FingerprintStat> =
        condensed.fingerprints.iter().map(|f| (f.key, f)).collect();
    let hot: std::collections::HashSet<u64> = original.hot(min_share).map(|f| f.key).collect();
    let share = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };
    let mut distance = 0.0;
    let mut seen = 0.0;
    let mut dropped_top = Vec::new();
    let (mut dropped_n, mut dropped_calls, mut dropped_time) = (0u64, 0u64, 0u64);
    let mut rows = Vec::new();
    let mut others = 0;
    for f in &original.fingerprints {
        let c = by_key.get(&f.key);
        let (cc, ct) = c.map_or((0, 0), |c| (c.calls, c.time_us));
        let (p, q) = (
            share(f.calls, original.statements),
            share(cc, condensed.statements),
        );
        distance += (p - q).abs();
        seen += q;
        if c.is_none() {
            dropped_n += 1;
            dropped_calls += f.calls;
            dropped_time += f.time_us;
            if dropped_top.len() < LISTED_BEYOND_HOT {
                dropped_top.push(f.clone());
            }
        }
        let is_hot = hot.contains(&f.key);
        if is_hot || others < LISTED_BEYOND_HOT {
            others += usize::from(!is_hot);
            rows.push(FingerprintComparison {
                fingerprint: f.fingerprint.clone(),
                normalized: f.normalized.clone(),
                hot: is_hot,
                original_calls: f.calls,
                original_time_us: f.time_us,
                condensed_calls: cc,
                condensed_time_us: ct,
                original_share: p,
                condensed_share: q,
                gated: cc >= min_calls.min(f.calls),
            });
        }
    }
    // Fingerprints only the condensed workload has (none, when it was condensed from this one).
    distance += (1.0 - seen).max(0.0);
    Comparison {
        min_share,
        min_calls,
        original: original.line(),
        condensed: condensed.line(),
        mix_distance: (distance / 2.0 * 1000.0).round() / 1000.0,
        dropped: Dropped {
            statements: original.statements.saturating_sub(condensed.statements),
            sessions: original.sessions.saturating_sub(condensed.sessions),
            fingerprints: dropped_n,
            fingerprints_calls_share: share(dropped_calls, original.statements),
            fingerprints_time_share: share(dropped_time, original.server_time_us),
            fingerprints_top: dropped_top,
            hot_not_gated: rows.iter().filter(|r| r.hot && !r.gated).count() as u64,
        },
        fingerprints: rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrency_is_time_weighted() {
        // One session for 10 s, a second for the last 2 s of it.
        let c = Concurrency::of(&[(0, 10_000_000), (8_000_000, 10_000_000)]);
        assert_eq!(c.max, 2);
        assert_eq!(c.p50, 1);
        assert_eq!(c.p95, 2);
        assert_eq!(c.mean, 1.2);
        assert_eq!(Concurrency::of(&[]).max, 0);
    }

    #[test]
    fn the_comparison_names_what_is_missing() {
        let mut a = StatsCollector::default();
        for i in 0..100u64 {
            a.statement(&format!("SELECT * FROM t WHERE id = {i}"), i * 10, 5);
        }
        a.statement("SELECT rare_report()", 2_000, 900);
        a.statement("SELECT 1", 2_100, 1);
        let mut b = StatsCollector::default();
        for i in 0..30u64 {
            b.statement(&format!("SELECT * FROM t WHERE id = {i}"), i * 10, 5);
        }
        let (a, b) = (a.finish(), b.finish());
        let c = compare(&a, &b, 0.05, 20);
        assert_eq!(c.dropped.fingerprints, 2);
        assert_eq!(c.dropped.statements, 72);
        // rare_report() carries 900 of 1,401 µs: hot by time, and not gated (0 calls left).
        let rare = c
            .fingerprints
            .iter()
            .find(|f| f.normalized.contains("rare_report"))
            .unwrap();
        assert!(rare.hot && !rare.gated);
        let t = &c.fingerprints[0];
        assert!(t.hot && t.gated, "{t:?}");
        assert_eq!(c.dropped.hot_not_gated, 1);
        assert!(
            c.mix_distance > 0.0 && c.mix_distance < 0.05,
            "{}",
            c.mix_distance
        );
    }
}
