//! The statistic the gate judges (the ratio of p95 latencies) and its bootstrap confidence
//! interval.
//!
//! The interval is a percentile bootstrap: resample each side with replacement, take the ratio
//! of the resamples' p95s, repeat, and read the interval off the replicates' quantiles.
//! Resampling n values and finding one order statistic costs O(n) per replicate, which for
//! 10^5–10^6 latencies and thousands of replicates is seconds to minutes. We draw the same
//! replicate in O(1) instead:
//!
//! A resample is n indices `⌈n·V_i⌉ − 1` of the ascending samples `x`, with `V_i` uniform on
//! (0, 1]. The map `v ↦ x[⌈n·v⌉ − 1]` never decreases, so the resample's r-th smallest value is
//! the map applied to the r-th smallest of the `V_i`, and the r-th order statistic of n
//! uniforms is Beta(r, n − r + 1) distributed. So the resample's nearest-rank p95 is
//! `x[⌈n·U⌉ − 1]` with one `U ~ Beta(r, n − r + 1)`, r = ⌈0.95·n⌉: exactly the same
//! distribution as resampling, at the cost of one Beta draw. The tests check it against
//! literal resampling.

use super::rng::Rng;

/// The percentile the gate compares.
pub(crate) const GATE_PERCENTILE: f64 = 95.0;

/// The 1-based rank of the nearest-rank `p`-th percentile of `n` values; the same arithmetic as
/// [`crate::stats::percentile_sorted`], so both pick the same value.
pub(crate) fn nearest_rank(n: usize, p: f64) -> usize {
    (((p / 100.0) * n as f64).ceil() as usize).clamp(1, n)
}

/// head / base, each at least 1 µs: a 0 µs p95 (a timer's resolution) must not divide by zero
/// or make a 1 µs difference look infinite.
pub(crate) fn p95_ratio(base_p95: u64, head_p95: u64) -> f64 {
    head_p95.max(1) as f64 / base_p95.max(1) as f64
}

/// One side's ascending samples, ready to be resampled for one percentile.
struct Side<'a> {
    sorted: &'a [u32],
    /// Beta parameters of the percentile's order statistic.
    a: f64,
    b: f64,
}

impl<'a> Side<'a> {
    fn new(sorted: &'a [u32], percentile: f64) -> Self {
        let n = sorted.len();
        let r = nearest_rank(n, percentile);
        Side {
            sorted,
            a: r as f64,
            b: (n - r + 1) as f64,
        }
    }

    /// The percentile of one resample.
    fn resampled(&self, rng: &mut Rng) -> u64 {
        let n = self.sorted.len();
        let u = rng.beta(self.a, self.b);
        let index = ((n as f64 * u).ceil() as usize).clamp(1, n) - 1;
        u64::from(self.sorted[index])
    }
}

/// A confidence interval of the p95 ratio.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Interval {
    pub low: f64,
    pub high: f64,
}

/// The percentile-bootstrap interval of `p95(head) / p95(base)` at level `confidence`, from
/// `iterations` replicates drawn from `seed`. Both slices ascending and non-empty.
pub(crate) fn ratio_interval(
    base: &[u32],
    head: &[u32],
    confidence: f64,
    iterations: u32,
    seed: u64,
) -> Interval {
    bootstrap(
        base,
        head,
        GATE_PERCENTILE,
        confidence,
        iterations,
        seed,
        p95_ratio,
    )
}

/// The percentile-bootstrap interval of `median(head) − median(base)` in µs (the server-time
/// rule's location shift), drawn like [`ratio_interval`]: each side's resampled median is one
/// Beta draw. Both slices ascending and non-empty.
pub(crate) fn shift_interval(
    base: &[u32],
    head: &[u32],
    confidence: f64,
    iterations: u32,
    seed: u64,
) -> Interval {
    let shift = |b: u64, h: u64| h as f64 - b as f64;
    bootstrap(base, head, 50.0, confidence, iterations, seed, shift)
}

/// The interval of `statistic(base's percentile, head's percentile)` over resamples of both
/// sides. Base is drawn before head in every replicate: the order fixes which random numbers
/// each side gets, so a given seed gives the same interval in every release.
fn bootstrap(
    base: &[u32],
    head: &[u32],
    percentile: f64,
    confidence: f64,
    iterations: u32,
    seed: u64,
    statistic: impl Fn(u64, u64) -> f64,
) -> Interval {
    debug_assert!(!base.is_empty() && !head.is_empty());
    let (base, head) = (Side::new(base, percentile), Side::new(head, percentile));
    let mut rng = Rng::new(seed);
    let replicates: Vec<f64> = (0..iterations)
        .map(|_| {
            let b = base.resampled(&mut rng);
            let h = head.resampled(&mut rng);
            statistic(b, h)
        })
        .collect();
    interval_of(replicates, confidence)
}

/// The central `confidence` interval of bootstrap replicates.
fn interval_of(mut replicates: Vec<f64>, confidence: f64) -> Interval {
    replicates.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    Interval {
        low: replicates[quantile_index(tail, replicates.len())],
        high: replicates[quantile_index(1.0 - tail, replicates.len())],
    }
}

/// 0-based index of the nearest-rank `q`-quantile of `n` replicates. The tolerance keeps
/// rounding in `q` (0.025 is not exact in binary) from moving the rank by one: 0.025 · 2000
/// must be rank 50, not 51.
fn quantile_index(q: f64, n: usize) -> usize {
    ((q * n as f64 - 1e-9).ceil() as usize).clamp(1, n) - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::percentile_sorted;

    /// The textbook replicate: draw n values with replacement and take their p95.
    fn naive_resampled_p95(sorted: &[u32], rng: &mut Rng) -> u64 {
        let mut resample: Vec<u32> = (0..sorted.len())
            .map(|_| sorted[rng.below(sorted.len())])
            .collect();
        resample.sort_unstable();
        percentile_sorted(&resample, GATE_PERCENTILE)
    }

    /// Latencies with a long right tail, like real ones: many fast, a few slow.
    fn skewed(n: usize, seed: u64) -> Vec<u32> {
        let mut rng = Rng::new(seed);
        let mut v: Vec<u32> = (0..n)
            .map(|_| (200.0 * (-rng.open_unit().ln()).powf(1.5)) as u32 + 50)
            .collect();
        v.sort_unstable();
        v
    }

    /// Largest distance between the empirical distribution functions of two samples.
    fn ks_distance(mut a: Vec<u64>, mut b: Vec<u64>) -> f64 {
        a.sort_unstable();
        b.sort_unstable();
        let (mut i, mut j, mut d) = (0, 0, 0f64);
        while i < a.len() && j < b.len() {
            let x = a[i].min(b[j]);
            while i < a.len() && a[i] == x {
                i += 1;
            }
            while j < b.len() && b[j] == x {
                j += 1;
            }
            d = d.max((i as f64 / a.len() as f64 - j as f64 / b.len() as f64).abs());
        }
        d
    }

    #[test]
    fn rank_matches_the_summary_percentiles() {
        for n in 1..500 {
            let v: Vec<u32> = (0..n as u32).collect();
            for p in [50.0, 95.0, 99.0] {
                assert_eq!(
                    u64::from(v[nearest_rank(n, p) - 1]),
                    percentile_sorted(&v, p)
                );
            }
        }
    }

    #[test]
    fn one_beta_draw_has_the_distribution_of_a_resampled_p95() {
        let reps = 4000;
        for (n, seed) in [(20, 1), (150, 2), (1000, 3)] {
            let x = skewed(n, seed);
            let side = Side::new(&x, GATE_PERCENTILE);
            let mut rng = Rng::new(seed + 100);
            let fast: Vec<u64> = (0..reps).map(|_| side.resampled(&mut rng)).collect();
            let naive: Vec<u64> = (0..reps)
                .map(|_| naive_resampled_p95(&x, &mut rng))
                .collect();
            // The two-sample Kolmogorov–Smirnov critical value at α = 0.001 is 1.95·√(2/reps)
            // ≈ 0.044; the seeds are fixed, so this is not flaky.
            let d = ks_distance(fast, naive);
            assert!(d < 0.044, "n = {n}: KS distance {d}");
        }
    }

    #[test]
    fn shift_interval_agrees_with_naive_resampling_of_medians() {
        let base = skewed(400, 11);
        // Every head value 40 µs slower: ascending still.
        let head: Vec<u32> = skewed(300, 12).iter().map(|v| v + 40).collect();
        let fast = shift_interval(&base, &head, 0.95, 4000, 13);
        let mut rng = Rng::new(14);
        let naive_median = |x: &[u32], rng: &mut Rng| {
            let mut r: Vec<u32> = (0..x.len()).map(|_| x[rng.below(x.len())]).collect();
            r.sort_unstable();
            percentile_sorted(&r, 50.0) as f64
        };
        let mut shifts: Vec<f64> = (0..4000)
            .map(|_| naive_median(&head, &mut rng) - naive_median(&base, &mut rng))
            .collect();
        shifts.sort_unstable_by(f64::total_cmp);
        let (low, high) = (
            shifts[quantile_index(0.025, 4000)],
            shifts[quantile_index(0.975, 4000)],
        );
        // Medians move in steps of observed values; the intervals agree to a few of them.
        assert!((fast.low - low).abs() < 12.0, "low {} vs {low}", fast.low);
        assert!(
            (fast.high - high).abs() < 12.0,
            "high {} vs {high}",
            fast.high
        );
        let point = percentile_sorted(&head, 50.0) as f64 - percentile_sorted(&base, 50.0) as f64;
        assert!(fast.low <= point && point <= fast.high, "{fast:?} {point}");
    }

    #[test]
    fn interval_agrees_with_naive_resampling() {
        let base = skewed(400, 7);
        let head: Vec<u32> = skewed(300, 8).iter().map(|v| v * 13 / 10).collect();
        let fast = ratio_interval(&base, &head, 0.95, 4000, 9);
        let mut rng = Rng::new(10);
        let mut ratios: Vec<f64> = (0..4000)
            .map(|_| {
                let b = naive_resampled_p95(&base, &mut rng);
                p95_ratio(b, naive_resampled_p95(&head, &mut rng))
            })
            .collect();
        ratios.sort_unstable_by(f64::total_cmp);
        let (low, high) = (
            ratios[quantile_index(0.025, 4000)],
            ratios[quantile_index(0.975, 4000)],
        );
        assert!(
            (fast.low / low - 1.0).abs() < 0.05,
            "low {} vs {low}",
            fast.low
        );
        assert!(
            (fast.high / high - 1.0).abs() < 0.05,
            "high {} vs {high}",
            fast.high
        );
        let point = p95_ratio(
            percentile_sorted(&base, GATE_PERCENTILE),
            percentile_sorted(&head, GATE_PERCENTILE),
        );
        assert!(
            fast.low < point && point < fast.high,
            "{fast:?} around {point}"
        );
    }

    #[test]
    fn deterministic_for_a_seed() {
        let (base, head) = (skewed(500, 1), skewed(500, 2));
        let a = ratio_interval(&base, &head, 0.95, 2000, 5);
        assert_eq!(a, ratio_interval(&base, &head, 0.95, 2000, 5));
        assert_ne!(a, ratio_interval(&base, &head, 0.95, 2000, 6));
    }

    #[test]
    fn single_samples_and_constant_data_give_a_point() {
        let i = ratio_interval(&[100], &[300], 0.95, 500, 1);
        assert_eq!((i.low, i.high), (3.0, 3.0));
        let i = ratio_interval(&[0; 50], &[0; 50], 0.95, 500, 1);
        assert_eq!((i.low, i.high), (1.0, 1.0));
    }

    #[test]
    fn quantile_ranks_are_not_moved_by_rounding() {
        assert_eq!(quantile_index((1.0 - 0.95) / 2.0, 2000), 49);
        assert_eq!(quantile_index(1.0 - (1.0 - 0.95) / 2.0, 2000), 1949);
        assert_eq!(quantile_index(0.5, 1), 0);
    }

    /// Prints how long one interval takes for 10^6 samples per side (no assertion: machines
    /// differ). `cargo test --release -p pg-retest-core bootstrap_speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn bootstrap_speed() {
        let (base, head) = (skewed(1_000_000, 1), skewed(1_000_000, 2));
        let start = std::time::Instant::now();
        let i = ratio_interval(&base, &head, 0.95, 2000, 3);
        eprintln!(
            "1M samples per side, 2000 replicates: {:?} ({i:?})",
            start.elapsed()
        );
    }
}
