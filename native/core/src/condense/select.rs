//! Choosing the time windows a condensed workload keeps.
//!
//! The capture's timeline is cut into equal buckets; for each bucket the analysis counts the
//! statements of the units (transactions) that start in it, their calls of every tracked
//! fingerprint, the latest end of those units and the sessions open on average. A *segment*
//! is a run of buckets: replaying it replays real traffic of that period, with its concurrency
//! and its mix. The selection is:
//!
//! 1. a **primary** segment, as long as the budget allows, chosen for (in this order) the hot
//!    fingerprints it gives enough calls to be gated, how close its fingerprint mix and its
//!    concurrency are to the whole capture's, then a pseudo-random draw from the seed;
//! 2. when some hot fingerprint still lacks calls (a nightly report, a rare admin action), the
//!    primary is shortened by an eighth of the budget at a time, and the room made is filled
//!    with the shortest segments that bring the missing calls (most missing calls per second
//!    first), until every hot fingerprint is covered or the primary cannot shrink further.
//!
//! Everything here is a pure function of the buckets, the needs, the budget and the seed.

use crate::seeded::SplitMix64;

/// What the analysis saw, bucket by bucket.
#[derive(Debug, Clone, Default)]
pub struct Buckets {
    /// Bucket width, µs.
    pub width_us: u64,
    /// Statements of the units starting in each bucket.
    pub statements: Vec<u64>,
    /// The latest end of those units, as µs after the bucket's start (0 when none).
    pub overrun_us: Vec<u64>,
    /// Sessions open on average during each bucket.
    pub concurrency: Vec<f64>,
    /// Calls of each tracked fingerprint (outer index) per bucket (inner).
    pub calls: Vec<Vec<u32>>,
}

impl Buckets {
    pub fn len(&self) -> usize {
        self.statements.len()
    }

    pub fn is_empty(&self) -> bool {
        self.statements.is_empty()
    }
}

/// A hot fingerprint (by its index in [`Buckets::calls`]) and the calls it needs.
#[derive(Debug, Clone, Copy)]
pub struct Need {
    pub tracked: usize,
    pub calls: u64,
}

/// At most this much; `None` for no limit.
#[derive(Debug, Clone, Copy, Default)]
pub struct Budget {
    pub duration_us: Option<u64>,
    pub statements: Option<u64>,
}

/// A run of buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub first: usize,
    pub len: usize,
}

impl Segment {
    pub fn end(&self) -> usize {
        self.first + self.len
    }
}

/// The chosen segments (in time order) and how well they cover the needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub segments: Vec<Segment>,
    /// Calls each need gets (same order as the needs); estimated when clipped.
    pub calls: Vec<u64>,
    /// When even one bucket is more than the budget: the only segment is one bucket, of which
    /// only the first `clip_us` are kept.
    pub clip_us: Option<u64>,
}

impl Selection {
    pub fn covered(&self, needs: &[Need]) -> usize {
        needs
            .iter()
            .zip(&self.calls)
            .filter(|(n, c)| **c >= n.calls)
            .count()
    }
}

/// Prefix sums and a range-maximum table, so that any run of buckets is measured in constant
/// time.
struct Sums {
    width_us: u64,
    statements: Vec<u64>,
    calls: Vec<Vec<u64>>,
    concurrency: Vec<f64>,
    /// `ends[k][i]`: the latest end (µs from bucket 0) of units starting in buckets
    /// `i .. i + 2^k`.
    ends: Vec<Vec<u64>>,
}

impl Sums {
    fn new(b: &Buckets) -> Sums {
        let prefix = |v: &mut dyn Iterator<Item = u64>| {
            let mut out = vec![0u64];
            for x in v {
                out.push(out.last().copied().unwrap_or(0) + x);
            }
            out
        };
        let mut concurrency = vec![0.0];
        for c in &b.concurrency {
            concurrency.push(concurrency.last().copied().unwrap_or(0.0) + c);
        }
        let mut ends = vec![(0..b.len())
            .map(|i| i as u64 * b.width_us + b.overrun_us[i])
            .collect::<Vec<u64>>()];
        let mut k = 1;
        while (1usize << k) <= b.len() {
            let half = 1usize << (k - 1);
            let level = {
                let prev = &ends[k - 1];
                (0..=b.len() - (1 << k))
                    .map(|i| prev[i].max(prev[i + half]))
                    .collect()
            };
            ends.push(level);
            k += 1;
        }
        Sums {
            width_us: b.width_us,
            statements: prefix(&mut b.statements.iter().copied()),
            calls: b
                .calls
                .iter()
                .map(|c| prefix(&mut c.iter().map(|&x| u64::from(x))))
                .collect(),
            concurrency,
            ends,
        }
    }

    fn statements(&self, s: Segment) -> u64 {
        self.statements[s.end()] - self.statements[s.first]
    }

    fn calls(&self, t: usize, s: Segment) -> u64 {
        self.calls[t][s.end()] - self.calls[t][s.first]
    }

    /// What replaying a segment takes: its buckets, or longer when its last units run over.
    fn duration(&self, s: Segment) -> u64 {
        if s.len == 0 {
            return 0;
        }
        let k = (usize::BITS - 1 - s.len.leading_zeros()) as usize;
        let latest = self.ends[k][s.first].max(self.ends[k][s.end() - (1 << k)]);
        latest
            .saturating_sub(s.first as u64 * self.width_us)
            .max(s.len as u64 * self.width_us)
    }
}

struct Fit {
    duration_us: u64,
    statements: u64,
}

impl Fit {
    fn allows(&self, sums: &Sums, s: Segment) -> bool {
        sums.statements(s) <= self.statements && sums.duration(s) <= self.duration_us
    }
}

/// How the whole capture looks, to measure a segment against.
struct Target {
    mix: Vec<f64>,
    concurrency: f64,
}

impl Target {
    fn of(b: &Buckets, sums: &Sums) -> Target {
        let all = Segment {
            first: 0,
            len: b.len(),
        };
        Target {
            mix: mix(sums, all, b.calls.len()),
            concurrency: sums.concurrency[b.len()] / b.len().max(1) as f64,
        }
    }

    /// 0 for a segment that looks like the whole capture; larger the less it does.
    fn distance(&self, b: &Buckets, sums: &Sums, s: Segment) -> f64 {
        let m = mix(sums, s, b.calls.len());
        let tv: f64 = m
            .iter()
            .zip(&self.mix)
            .map(|(p, q)| (p - q).abs())
            .sum::<f64>()
            / 2.0;
        let c = (sums.concurrency[s.end()] - sums.concurrency[s.first]) / s.len.max(1) as f64;
        let dc = (c - self.concurrency).abs() / self.concurrency.max(1.0);
        // Coarse, so that near-equal segments tie and the seed chooses among them.
        ((tv + dc) * 100.0).round() / 100.0
    }
}

fn mix(sums: &Sums, s: Segment, tracked: usize) -> Vec<f64> {
    let calls: Vec<u64> = (0..tracked).map(|t| sums.calls(t, s)).collect();
    let total = calls.iter().sum::<u64>().max(1) as f64;
    calls.iter().map(|&c| c as f64 / total).collect()
}

/// Chooses the segments for `budget` (less what is already `reserved` for other statements).
pub fn select(
    b: &Buckets,
    needs: &[Need],
    budget: Budget,
    reserved: Budget,
    seed: u64,
) -> Selection {
    let sums = Sums::new(b);
    let fit = Fit {
        duration_us: budget.duration_us.map_or(u64::MAX, |d| {
            d.saturating_sub(reserved.duration_us.unwrap_or(0))
        }),
        statements: budget.statements.map_or(u64::MAX, |n| {
            n.saturating_sub(reserved.statements.unwrap_or(0))
        }),
    };
    if b.is_empty() {
        return Selection {
            segments: Vec::new(),
            calls: vec![0; needs.len()],
            clip_us: None,
        };
    }
    let target = Target::of(b, &sums);
    let ctx = Scoring {
        b,
        sums: &sums,
        target: &target,
        needs,
        seed,
    };
    let mut best: Option<Selection> = None;
    for eighths in 0..8u64 {
        let shrunk = Fit {
            duration_us: scale(fit.duration_us, 8 - eighths),
            statements: scale(fit.statements, 8 - eighths),
        };
        let Some(primary) = ctx.primary(&shrunk) else {
            continue;
        };
        let mut chosen = vec![primary];
        let left = Fit {
            duration_us: fit.duration_us.saturating_sub(sums.duration(primary)),
            statements: fit.statements.saturating_sub(sums.statements(primary)),
        };
        cover(b, &sums, needs, &mut chosen, left, seed);
        chosen.sort_by_key(|s| s.first);
        let calls = needs
            .iter()
            .map(|n| chosen.iter().map(|&s| sums.calls(n.tracked, s)).sum())
            .collect();
        let candidate = Selection {
            segments: merge_adjacent(chosen),
            calls,
            clip_us: None,
        };
        let better = best.as_ref().is_none_or(|b| {
            candidate.covered(needs) > b.covered(needs)
                || (candidate.covered(needs) == b.covered(needs)
                    && deficit(needs, &candidate.calls) < deficit(needs, &b.calls))
        });
        if better {
            best = Some(candidate);
        }
        if best
            .as_ref()
            .is_some_and(|s| s.covered(needs) == needs.len())
        {
            break;
        }
    }
    best.unwrap_or_else(|| ctx.clipped(&fit))
}

/// `v × eighths / 8`, for a budget that may be unlimited.
fn scale(v: u64, eighths: u64) -> u64 {
    if v == u64::MAX {
        v
    } else {
        (v as u128 * eighths as u128 / 8) as u64
    }
}

/// The missing calls, as a sum of fractions of each need.
fn deficit(needs: &[Need], calls: &[u64]) -> f64 {
    needs
        .iter()
        .zip(calls)
        .map(|(n, &c)| n.calls.saturating_sub(c) as f64 / n.calls.max(1) as f64)
        .sum()
}

/// The seed's draw for a segment starting at `first`: breaks ties the same way every run.
fn draw(seed: u64, first: usize) -> u64 {
    SplitMix64::new(seed ^ (first as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).next_u64()
}

/// What a primary window is measured against, in one place.
struct Scoring<'a> {
    b: &'a Buckets,
    sums: &'a Sums,
    target: &'a Target,
    needs: &'a [Need],
    seed: u64,
}

/// (covered, -deficit, -distance, statements, draw): a longer window wins over a shorter one
/// that is as good (the end of the capture leaves only short ones).
type Score = (usize, i64, i64, u64, u64);

impl Scoring<'_> {
    /// How good a segment is as the primary window.
    fn score(&self, s: Segment) -> Score {
        let calls: Vec<u64> = self
            .needs
            .iter()
            .map(|n| self.sums.calls(n.tracked, s))
            .collect();
        let covered = self
            .needs
            .iter()
            .zip(&calls)
            .filter(|(n, c)| **c >= n.calls)
            .count();
        (
            covered,
            -((deficit(self.needs, &calls) * 100.0).round() as i64),
            -((self.target.distance(self.b, self.sums, s) * 100.0).round() as i64),
            self.sums.statements(s),
            draw(self.seed, s.first),
        )
    }

    /// For each start, the longest segment that fits; the best of those.
    fn primary(&self, fit: &Fit) -> Option<Segment> {
        let mut best: Option<(Segment, Score)> = None;
        let mut end = 0usize;
        for first in 0..self.b.len() {
            end = end.max(first);
            while end < self.b.len()
                && fit.allows(
                    self.sums,
                    Segment {
                        first,
                        len: end + 1 - first,
                    },
                )
            {
                end += 1;
            }
            if end == first {
                continue; // not even one bucket fits from here
            }
            let s = Segment {
                first,
                len: end - first,
            };
            let score = self.score(s);
            if best.as_ref().is_none_or(|(_, b)| score > *b) {
                best = Some((s, score));
            }
        }
        best.map(|(s, _)| s)
    }

    /// When not one bucket fits: the best bucket, cut to the part of it the budget holds
    /// (assuming its statements spread evenly; measuring the cut says what it really holds).
    fn clipped(&self, fit: &Fit) -> Selection {
        let bucket = (0..self.b.len())
            .map(|first| Segment { first, len: 1 })
            .max_by_key(|&s| self.score(s))
            .unwrap_or(Segment { first: 0, len: 1 });
        let by_time = fit.duration_us as f64 / self.sums.duration(bucket).max(1) as f64;
        let by_count = fit.statements as f64 / self.sums.statements(bucket).max(1) as f64;
        let share = by_time.min(by_count).clamp(0.0, 1.0);
        Selection {
            segments: vec![bucket],
            calls: self
                .needs
                .iter()
                .map(|n| (self.sums.calls(n.tracked, bucket) as f64 * share) as u64)
                .collect(),
            clip_us: Some(((self.b.width_us as f64 * share) as u64).max(1_000)),
        }
    }
}

/// Adds the segments that bring the most missing calls per second of replay, while they fit.
fn cover(
    b: &Buckets,
    sums: &Sums,
    needs: &[Need],
    chosen: &mut Vec<Segment>,
    mut left: Fit,
    seed: u64,
) {
    loop {
        let got: Vec<u64> = needs
            .iter()
            .map(|n| chosen.iter().map(|&s| sums.calls(n.tracked, s)).sum())
            .collect();
        let missing: Vec<(usize, u64)> = needs
            .iter()
            .enumerate()
            .filter(|(i, n)| got[*i] < n.calls)
            .map(|(i, n)| (i, n.calls - got[i]))
            .collect();
        if missing.is_empty() {
            return;
        }
        let mut best: Option<(Segment, f64, u64)> = None;
        for &(i, want) in &missing {
            let Some(s) = shortest_with(b, sums, chosen, needs[i].tracked, want, &left, seed)
            else {
                continue;
            };
            let gain: f64 = missing
                .iter()
                .map(|&(j, w)| sums.calls(needs[j].tracked, s).min(w) as f64 / w as f64)
                .sum();
            let per_second = gain / (sums.duration(s).max(1) as f64);
            let tie = draw(seed, s.first);
            if best
                .as_ref()
                .is_none_or(|&(_, g, t)| per_second > g || (per_second == g && tie > t))
            {
                best = Some((s, per_second, tie));
            }
        }
        let Some((s, gain, _)) = best else {
            return;
        };
        if gain <= 0.0 {
            return;
        }
        left.duration_us -= sums.duration(s);
        left.statements -= sums.statements(s);
        chosen.push(s);
    }
}

/// The shortest free segment that fits and gives `want` calls of `tracked` (or, when none can,
/// the one that gives the most); `None` when no free bucket has a call of it.
fn shortest_with(
    b: &Buckets,
    sums: &Sums,
    chosen: &[Segment],
    tracked: usize,
    want: u64,
    fit: &Fit,
    seed: u64,
) -> Option<Segment> {
    // (calls reached, -duration, draw)
    let mut best: Option<(Segment, (u64, i64, u64))> = None;
    for first in 0..b.len() {
        let taken = chosen.iter().any(|s| s.first <= first && first < s.end());
        if taken || b.calls[tracked][first] == 0 {
            continue; // a segment starts where a call is, in free time
        }
        // Free up to the next chosen segment.
        let room = chosen
            .iter()
            .filter(|s| s.first > first)
            .map(|s| s.first)
            .min()
            .unwrap_or(b.len())
            - first;
        let seg = |len| Segment { first, len };
        // The longest that fits (a longer one never fits if a shorter one does not)...
        let (mut lo, mut hi) = (0usize, room);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if fit.allows(sums, seg(mid)) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        if lo == 0 {
            continue;
        }
        // ...then the shortest within it that has `want` calls (or all of it).
        let (mut short, mut long) = (1usize, lo);
        while short < long {
            let mid = (short + long) / 2;
            if sums.calls(tracked, seg(mid)) >= want {
                long = mid;
            } else {
                short = mid + 1;
            }
        }
        let s = seg(short);
        let score = (
            sums.calls(tracked, s).min(want),
            -(sums.duration(s) as i64),
            draw(seed, first),
        );
        if best.as_ref().is_none_or(|(_, b)| score > *b) {
            best = Some((s, score));
        }
    }
    best.map(|(s, _)| s)
}

fn merge_adjacent(segments: Vec<Segment>) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    for s in segments {
        match out.last_mut() {
            Some(last) if last.end() == s.first => last.len += s.len,
            _ => out.push(s),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` buckets of 1 s, `per` statements each, all of fingerprint 0, one session open.
    fn steady(n: usize, per: u32) -> Buckets {
        Buckets {
            width_us: 1_000_000,
            statements: vec![u64::from(per); n],
            overrun_us: vec![10_000; n],
            concurrency: vec![1.0; n],
            calls: vec![vec![per; n], vec![0; n]],
        }
    }

    fn seconds(s: u64) -> Budget {
        Budget {
            duration_us: Some(s * 1_000_000),
            statements: None,
        }
    }

    impl Budget {
        fn with_ms(self, ms: u64) -> Budget {
            Budget {
                duration_us: self.duration_us.map(|d| d + ms * 1_000),
                ..self
            }
        }
    }

    #[test]
    fn steady_traffic_gives_one_window_of_the_budget() {
        let b = steady(600, 10);
        let s = select(
            &b,
            &[Need {
                tracked: 0,
                calls: 20,
            }],
            seconds(60),
            Budget::default(),
            1,
        );
        assert_eq!(s.segments.len(), 1);
        assert_eq!(s.segments[0].len, 60);
        assert_eq!(s.calls, vec![600]);
    }

    #[test]
    fn a_capture_shorter_than_the_budget_is_kept_whole() {
        let b = steady(30, 10);
        let s = select(&b, &[], seconds(60), Budget::default(), 1);
        assert_eq!(s.segments, vec![Segment { first: 0, len: 30 }]);
    }

    #[test]
    fn a_rare_hot_fingerprint_gets_a_segment_of_its_own() {
        // A report runs 25 times in bucket 500 only.
        let mut b = steady(600, 10);
        b.calls[1][500] = 25;
        b.statements[500] += 25;
        let needs = [
            Need {
                tracked: 0,
                calls: 20,
            },
            Need {
                tracked: 1,
                calls: 20,
            },
        ];
        let s = select(&b, &needs, seconds(60), Budget::default(), 1);
        assert_eq!(s.covered(&needs), 2, "{s:?}");
        assert!(s.segments.iter().any(|g| g.first <= 500 && 500 < g.end()));
        let sums = Sums::new(&b);
        let total: u64 = s.segments.iter().map(|g| sums.duration(*g)).sum();
        assert!(total <= 60_000_000, "{total}");
    }

    #[test]
    fn the_statement_budget_holds_too() {
        let b = steady(600, 10);
        let budget = Budget {
            duration_us: Some(60_000_000),
            statements: Some(95),
        };
        let s = select(&b, &[], budget, Budget::default(), 1);
        let n: u64 = s.segments.iter().map(|g| 10 * g.len as u64).sum();
        assert_eq!(n, 90);
        // What is reserved (statements pulled in for keys) comes off the budget.
        let s = select(
            &b,
            &[],
            budget,
            Budget {
                duration_us: None,
                statements: Some(40),
            },
            1,
        );
        assert_eq!(s.segments[0].len, 5);
    }

    #[test]
    fn the_seed_chooses_among_equals_and_only_then() {
        let b = steady(600, 10);
        let pick = |seed| select(&b, &[], seconds(60), Budget::default(), seed).segments;
        assert_eq!(pick(7), pick(7), "deterministic");
        let firsts: std::collections::BTreeSet<usize> = (0..20).map(|s| pick(s)[0].first).collect();
        assert!(firsts.len() > 5, "{firsts:?}");
        // Of the windows that give a fingerprint of a busier stretch its calls, the ones whose
        // mix is closest to the capture's (a window reaching 50 s into the stretch, from either
        // side) are taken, whatever the seed.
        let mut b = steady(600, 10);
        for i in 100..160 {
            b.calls[1][i] = 10;
            b.statements[i] += 10;
        }
        let needs = [Need {
            tracked: 1,
            calls: 500,
        }];
        for seed in 0..5 {
            let s = select(&b, &needs, seconds(60), Budget::default(), seed);
            assert_eq!(s.segments.len(), 1);
            assert!([90, 110].contains(&s.segments[0].first), "{s:?}");
        }
    }

    #[test]
    fn a_budget_shorter_than_a_bucket_keeps_part_of_one() {
        let b = steady(100, 10);
        let s = select(&b, &[], seconds(0).with_ms(250), Budget::default(), 1);
        assert_eq!(s.segments.len(), 1);
        assert_eq!(s.segments[0].len, 1);
        assert_eq!(s.clip_us, Some(250_000));
    }

    #[test]
    fn units_that_run_over_count_against_the_budget() {
        let mut b = steady(600, 10);
        // A unit starting in bucket 30 runs for 50 s.
        b.overrun_us[30] = 50_000_000;
        let s = select(&b, &[], seconds(60), Budget::default(), 3);
        let sums = Sums::new(&b);
        for g in &s.segments {
            assert!(sums.duration(*g) <= 60_000_000);
        }
        // A segment holding bucket 30 lasts at least until its unit ends.
        assert_eq!(sums.duration(Segment { first: 25, len: 10 }), 55_000_000);
    }
}
