//! The latency rule applied to one pair of sample sets (a fingerprint's, or all of them).

use super::bootstrap::{p95_ratio, ratio_interval, GATE_PERCENTILE};
use super::report::{LatencyChecks, LatencyComparison, Percentiles};
use super::CompareOptions;
use crate::stats::percentile_sorted;

fn percentiles(sorted: &[u32]) -> Percentiles {
    Percentiles {
        p50_us: percentile_sorted(sorted, 50.0),
        p95_us: percentile_sorted(sorted, GATE_PERCENTILE),
        p99_us: percentile_sorted(sorted, 99.0),
    }
}

/// How many body floors a median must move by to clear a tail floor raised by bursts: "well
/// past" the body's own noise, not just past it (docs/gate-statistics.md, "The body path").
const BODY_MARGIN: f64 = 3.0;

/// How far a run's replays disagree, as fractions: on p95 (`tail`, the noise floor the interval
/// must clear) and on medians (`body`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Floors {
    pub tail: f64,
    pub body: f64,
}

/// Compares ascending `base` and `head` latencies against the run's noise `floors`; `seed`
/// selects this comparison's bootstrap stream. An empty side (nothing compared at all) gives
/// ratio 1, an interval of exactly 1 and no regression.
///
/// The interval clears the noise (`ci_above_noise`) when its low end is above 1 + the p95
/// floor, or, when bursts of load have pushed that floor up, when its low end is still above
/// 1 + the threshold and the median moved by more than the threshold and three body floors: a
/// burst moves tails several times more than bodies, so a body that moved that far did not
/// move by noise (docs/gate-statistics.md, "The body path").
pub(crate) fn compare_latency(
    base: &[u32],
    head: &[u32],
    floors: Floors,
    options: &CompareOptions,
    seed: u64,
) -> LatencyComparison {
    let noise_floor = floors.tail;
    let (b, h) = (percentiles(base), percentiles(head));
    let ratio = p95_ratio(b.p95_us, h.p95_us);
    let (ci_low, ci_high) = if base.is_empty() || head.is_empty() {
        (ratio, ratio)
    } else {
        let i = ratio_interval(base, head, options.confidence, options.iterations, seed);
        (i.low, i.high)
    };
    let delta_us = h.p95_us as i64 - b.p95_us as i64;
    let (calls_base, calls_head) = (base.len() as u64, head.len() as u64);
    let checks = LatencyChecks {
        over_threshold: ratio - 1.0 > options.p95_threshold,
        ci_above_noise: ci_low > 1.0 + noise_floor
            || (ci_low > 1.0 + options.p95_threshold
                && p95_ratio(b.p50_us, h.p50_us) - 1.0
                    > options.p95_threshold.max(BODY_MARGIN * floors.body)),
        over_min_delta: delta_us as f64 > options.min_delta_us,
        enough_calls: calls_base >= options.min_calls && calls_head >= options.min_calls,
        // Decided by the caller from the replays (`with_replay_check`); neutral here.
        slower_in_every_replay: true,
    };
    LatencyComparison {
        calls_base,
        calls_head,
        base: b,
        head: h,
        ratio,
        ci_low,
        ci_high,
        delta_us,
        noise_floor,
        regressed: checks.all(),
        rules: if checks.all() {
            vec![super::report::RULE_CLIENT_P95]
        } else {
            Vec::new()
        },
        checks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> CompareOptions {
        CompareOptions::default()
    }

    fn floors(tail: f64, body: f64) -> Floors {
        Floors { tail, body }
    }

    const NONE: Floors = Floors {
        tail: 0.0,
        body: 0.0,
    };

    /// n values spread evenly over [lo, hi], ascending.
    fn spread(n: u32, lo: u32, hi: u32) -> Vec<u32> {
        (0..n).map(|i| lo + (hi - lo) * i / (n - 1)).collect()
    }

    #[test]
    fn a_clear_slowdown_passes_every_check() {
        let c = compare_latency(
            &spread(200, 900, 1100),
            &spread(200, 2900, 3100),
            NONE,
            &opts(),
            1,
        );
        assert_eq!((c.calls_base, c.calls_head), (200, 200));
        assert_eq!(c.delta_us, c.head.p95_us as i64 - c.base.p95_us as i64);
        assert!(c.ratio > 2.5 && c.ci_low > 2.5 && c.ci_high < 3.5, "{c:?}");
        assert_eq!(
            c.checks,
            LatencyChecks {
                over_threshold: true,
                ci_above_noise: true,
                over_min_delta: true,
                enough_calls: true,
                slower_in_every_replay: true,
            }
        );
        assert!(c.regressed);
    }

    #[test]
    fn each_check_can_veto() {
        let base = spread(200, 900, 1100);
        // +30 % but only ~330 µs: under the minimum delta.
        let small = compare_latency(&base, &spread(200, 1170, 1430), NONE, &opts(), 1);
        assert!(small.checks.over_threshold && !small.checks.over_min_delta && !small.regressed);
        // Large, but only 10 calls on head.
        let few = compare_latency(&base, &spread(10, 2900, 3100), NONE, &opts(), 1);
        assert!(!few.checks.enough_calls && !few.regressed);
        // Noise floors, on tails and on bodies, larger than the slowdown.
        let noisy = compare_latency(
            &base,
            &spread(200, 2900, 3100),
            floors(3.0, 3.0),
            &opts(),
            1,
        );
        assert!(!noisy.checks.ci_above_noise && !noisy.regressed);
        // Faster is never a regression.
        let faster = compare_latency(&spread(200, 2900, 3100), &base, NONE, &opts(), 1);
        assert!(faster.delta_us < 0 && faster.ratio < 1.0 && !faster.regressed);
    }

    #[test]
    fn a_body_that_moved_past_the_body_floor_clears_a_tail_floor_raised_by_bursts() {
        // Base: body ~1 ms, a tail to 10 ms (bursts). Head: body ~12 ms (a lost index), tail 40 ms.
        let mut base = spread(190, 900, 1100);
        base.extend(spread(10, 5000, 10_000));
        let mut head = spread(190, 11_000, 13_000);
        head.extend(spread(10, 13_000, 16_000));
        base.sort_unstable();
        head.sort_unstable();
        // The tail floor, capped at 100 %, is above the interval's low end...
        let bursts = compare_latency(&base, &head, floors(1.0, 0.15), &opts(), 1);
        assert!(bursts.ci_low < 2.0 && bursts.ci_low > 1.2, "{bursts:?}");
        // ...but the median moved 12×, far past the body floor: a regression.
        assert!(
            bursts.checks.ci_above_noise && bursts.regressed,
            "{bursts:?}"
        );
        // Bodies as unstable as that (a body floor over 12×) veto it.
        let unstable = compare_latency(&base, &head, floors(1.0, 20.0), &opts(), 1);
        assert!(
            !unstable.checks.ci_above_noise && !unstable.regressed,
            "{unstable:?}"
        );

        // Only the tail moved (body unchanged): the body path does not apply.
        let mut tail_only = spread(190, 900, 1100);
        tail_only.extend(spread(10, 30_000, 40_000));
        tail_only.sort_unstable();
        let c = compare_latency(&base, &tail_only, floors(1.0, 0.15), &opts(), 1);
        assert!(c.ci_low <= 2.0, "{c:?}");
        assert!(!c.checks.ci_above_noise && !c.regressed, "{c:?}");
    }

    #[test]
    fn zero_latencies_count_as_one_microsecond() {
        let c = compare_latency(&[0; 30], &[2; 30], NONE, &opts(), 1);
        assert_eq!((c.ratio, c.delta_us), (2.0, 2));
    }

    #[test]
    fn nothing_to_compare_is_neutral() {
        let c = compare_latency(&[], &[], NONE, &opts(), 1);
        assert_eq!(
            (c.ratio, c.ci_low, c.ci_high, c.delta_us, c.regressed),
            (1.0, 1.0, 1.0, 0, false)
        );
    }
}
