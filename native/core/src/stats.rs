//! Latency statistics.
//!
//! Latencies are kept exactly, as `u32` microseconds (4 bytes per execution, saturating at ~71
//! minutes), because the comparison needs the samples themselves (bootstrap confidence intervals),
//! and exact percentiles remove a source of error from a gate that decides merges.
//!
//! Percentiles use the nearest-rank definition: the p-th percentile of n sorted values is the
//! value at rank ⌈p/100 · n⌉ (1-based). It is always an observed latency, never an interpolation.

use serde::Serialize;

/// Summary of a set of latencies, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub min_us: u64,
    pub p50_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

/// Nearest-rank percentile of an ascending slice; 0 for an empty one.
pub fn percentile_sorted(sorted: &[u32], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    u64::from(sorted[rank.clamp(1, n) - 1])
}

/// Sorts in place and summarises.
pub fn summarize(samples: &mut [u32]) -> LatencySummary {
    if samples.is_empty() {
        return LatencySummary::default();
    }
    samples.sort_unstable();
    let sum: u64 = samples.iter().map(|&v| u64::from(v)).sum();
    LatencySummary {
        count: samples.len() as u64,
        mean_us: sum as f64 / samples.len() as f64,
        min_us: u64::from(samples[0]),
        p50_us: percentile_sorted(samples, 50.0),
        p95_us: percentile_sorted(samples, 95.0),
        p99_us: percentile_sorted(samples, 99.0),
        max_us: u64::from(samples[samples.len() - 1]),
    }
}

/// The summary of several ascending runs taken together, as `summarize` of their concatenation
/// would give it, without copying them: a percentile is the smallest value whose count of values
/// at or below it, summed over the runs, reaches its rank.
pub fn summarize_sorted_runs(runs: &[&[u32]]) -> LatencySummary {
    let n: usize = runs.iter().map(|r| r.len()).sum();
    if n == 0 {
        return LatencySummary::default();
    }
    let at_or_below =
        |v: u32| -> usize { runs.iter().map(|r| r.partition_point(|&x| x <= v)).sum() };
    let percentile = |p: f64| -> u64 {
        let rank = (((p / 100.0) * n as f64).ceil() as usize).clamp(1, n);
        // Smallest v with at_or_below(v) >= rank, by bisection over the value range.
        let (mut lo, mut hi) = (0u32, u32::MAX);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if at_or_below(mid) >= rank {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        u64::from(lo)
    };
    let sum: u64 = runs
        .iter()
        .flat_map(|r| r.iter())
        .map(|&v| u64::from(v))
        .sum();
    let ends = runs.iter().filter(|r| !r.is_empty());
    LatencySummary {
        count: n as u64,
        mean_us: sum as f64 / n as f64,
        min_us: u64::from(ends.clone().map(|r| r[0]).min().unwrap_or(0)),
        p50_us: percentile(50.0),
        p95_us: percentile(95.0),
        p99_us: percentile(99.0),
        max_us: u64::from(ends.map(|r| r[r.len() - 1]).max().unwrap_or(0)),
    }
}

/// Clamp a duration to the sample type.
pub fn micros(d: std::time::Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<u32> = (1..=100).rev().collect();
        let s = summarize(&mut v);
        assert_eq!(
            (s.p50_us, s.p95_us, s.p99_us, s.max_us, s.min_us),
            (50, 95, 99, 100, 1)
        );
        assert_eq!(s.mean_us, 50.5);
        let mut one = vec![7u32];
        let s = summarize(&mut one);
        assert_eq!((s.p50_us, s.p95_us, s.p99_us), (7, 7, 7));
        assert_eq!(percentile_sorted(&[1, 2, 3, 4], 50.0), 2);
        assert_eq!(percentile_sorted(&[1, 2, 3, 4], 51.0), 3);
        assert_eq!(summarize(&mut []), LatencySummary::default());
    }

    #[test]
    fn sorted_runs_summarise_as_their_concatenation() {
        let runs: Vec<Vec<u32>> = vec![
            vec![3, 3, 9, 40],
            vec![],
            vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
            vec![u32::MAX],
            (100..180).collect(),
        ];
        let slices: Vec<&[u32]> = runs.iter().map(Vec::as_slice).collect();
        let mut all: Vec<u32> = runs.concat();
        assert_eq!(summarize_sorted_runs(&slices), summarize(&mut all));
        assert_eq!(summarize_sorted_runs(&[]), LatencySummary::default());
    }
}
