//! The server-time rule: a location shift of the time the server itself spent per execution.
//!
//! Why beside the client's p95: on a loaded 2-core runner the client's round trip of a fast
//! statement is mostly scheduling (the client's wake-up, the backend's wake-up), so a hot read's
//! client p95 is many times its median and a slowdown of 0.1–0.5 ms per call, the size most
//! schema changes bring (an index more on a hot write, a lost index-only scan, a cheap trigger),
//! disappears in it. The server's own time runs from the backend reading the statement to
//! finishing it: the waits for a CPU before and after are not in it. The replay reads it from the
//! `duration` line the server sends each statement (docs/gate-statistics.md, "Server time").
//!
//! Why the median and a shift: such regressions add a roughly constant cost to every call, which
//! moves the whole distribution; the median is the steady statistic of a replay, and the shift in
//! µs is what a reader can weigh. The interval is a percentile bootstrap of
//! `median(head) − median(base)`, one Beta draw per side and replicate (`bootstrap`).
//!
//! The checks mirror the client rule's: a relative threshold, a minimum shift, the interval's low
//! end above the run's server noise floor (two base-schema replays' medians), enough calls, and
//! the replay check (every head replay's server median above every base-schema replay's), which
//! bounds the false-alarm chance under identical schemas whatever the noise looks like.

use super::bootstrap::{p95_ratio, shift_interval};
use super::input::{pool, Run};
use super::report::{NoiseFloor, Percentiles, ServerTimeChecks, ServerTimeComparison};
use super::CompareOptions;
use crate::stats::percentile_sorted;

/// A floor above 100 % says the server's own times are too unstable to judge; capped as the
/// client floor is.
const MAX_FLOOR: f64 = 1.0;

fn percentiles(sorted: &[u32]) -> Percentiles {
    Percentiles {
        p50_us: percentile_sorted(sorted, 50.0),
        p95_us: percentile_sorted(sorted, 95.0),
        p99_us: percentile_sorted(sorted, 99.0),
    }
}

/// Why the server's times cannot be compared, or `None` when every replay has them.
pub(crate) fn unmeasured_reason(base: &[&Run], head: &[Run]) -> Option<String> {
    let missing =
        |runs: &mut dyn Iterator<Item = &Run>| runs.filter(|r| !r.has_server_time()).count();
    let (b, h) = (
        missing(&mut base.iter().copied()),
        missing(&mut head.iter()),
    );
    match (b, h) {
        (0, 0) => None,
        _ => Some(format!(
            "{b} base-schema and {h} head replay(s) have no server time per statement \
             (the server did not send its duration lines)"
        )),
    }
}

/// The server floor from two base-schema replays: per fingerprint with `min_calls` server times
/// in both, |median(b) / median(a) − 1|; the median of those and the same ratio of all their
/// times pooled, the larger of the two, capped at 100 %.
pub(crate) fn server_floor(pair: Option<(&Run, &Run)>, min_calls: u64) -> NoiseFloor {
    let not_measured = |why: String| NoiseFloor {
        value: 0.0,
        method: format!("not measured: {why}"),
        fingerprints: 0,
    };
    let Some((a, b)) = pair else {
        return not_measured("no second replay on the base schema".into());
    };
    let min = min_calls.max(1) as usize;
    let (a, b) = (pool([a]), pool([b]));
    let mut shifts = Vec::new();
    let (mut all_a, mut all_b) = (Vec::new(), Vec::new());
    for (fingerprint, pa) in &a {
        let Some(pb) = b.get(fingerprint) else {
            continue;
        };
        let (ta, tb) = (&pa.server_sorted, &pb.server_sorted);
        if ta.len() < min || tb.len() < min {
            continue;
        }
        let ratio = p95_ratio(percentile_sorted(ta, 50.0), percentile_sorted(tb, 50.0));
        shifts.push((ratio - 1.0).abs());
        all_a.extend_from_slice(ta);
        all_b.extend_from_slice(tb);
    }
    if shifts.is_empty() {
        return not_measured(format!(
            "no fingerprint had {min} or more server times in both base replays"
        ));
    }
    all_a.sort_unstable();
    all_b.sort_unstable();
    let pooled = (p95_ratio(
        percentile_sorted(&all_a, 50.0),
        percentile_sorted(&all_b, 50.0),
    ) - 1.0)
        .abs();
    shifts.sort_unstable_by(f64::total_cmp);
    let n = shifts.len();
    let typical = if n % 2 == 1 {
        shifts[n / 2]
    } else {
        (shifts[n / 2 - 1] + shifts[n / 2]) / 2.0
    };
    NoiseFloor {
        value: typical.max(pooled).min(MAX_FLOOR),
        method: format!(
            "max(median per-fingerprint |server-time median ratio − 1|, pooled |ratio − 1|) of \
             two replays on the base schema, over fingerprints with ≥ {min} server times in both, \
             capped at {:.0} %",
            MAX_FLOOR * 100.0
        ),
        fingerprints: n as u64,
    }
}

/// The rule on one fingerprint's ascending server times; `slower_in_every_replay` comes from the
/// replays (`replays::Replays::separated` on server times). `None` when a side has none.
pub(crate) fn compare_server_time(
    base: &[u32],
    head: &[u32],
    floor: f64,
    slower_in_every_replay: bool,
    options: &CompareOptions,
    seed: u64,
) -> Option<ServerTimeComparison> {
    if base.is_empty() || head.is_empty() {
        return None;
    }
    let (b, h) = (percentiles(base), percentiles(head));
    let interval = shift_interval(base, head, options.confidence, options.iterations, seed);
    let shift_us = h.p50_us as i64 - b.p50_us as i64;
    let ratio = p95_ratio(b.p50_us, h.p50_us);
    let (calls_base, calls_head) = (base.len() as u64, head.len() as u64);
    let checks = ServerTimeChecks {
        over_threshold: ratio - 1.0 > options.server_threshold,
        // The interval's low end is a shift in µs; as a share of base's median it must clear
        // the run's floor (and be a slowdown at all).
        ci_above_noise: interval.low > 0.0 && interval.low / b.p50_us.max(1) as f64 > floor,
        over_min_delta: shift_us as f64 > options.server_min_delta_us,
        enough_calls: calls_base >= options.min_calls && calls_head >= options.min_calls,
        slower_in_every_replay,
    };
    Some(ServerTimeComparison {
        calls_base,
        calls_head,
        base: b,
        head: h,
        ratio,
        shift_us,
        ci_low_us: interval.low.round() as i64,
        ci_high_us: interval.high.round() as i64,
        noise_floor: floor,
        regressed: checks.all(),
        checks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::input::FingerprintRun;

    /// n values spread evenly over [lo, hi], ascending.
    fn spread(n: u32, lo: u32, hi: u32) -> Vec<u32> {
        (0..n).map(|i| lo + (hi - lo) * i / (n - 1)).collect()
    }

    #[test]
    fn a_shift_of_every_call_is_a_regression_and_each_check_can_veto_it() {
        let opts = CompareOptions::default();
        let base = spread(300, 40, 80);
        // 0.3 ms more per call: 60 µs → 360 µs median.
        let head: Vec<u32> = base.iter().map(|v| v + 300).collect();
        let c = compare_server_time(&base, &head, 0.05, true, &opts, 1).unwrap();
        assert_eq!(c.shift_us, 300);
        assert!(c.ci_low_us > 250 && c.ci_high_us < 350, "{c:?}");
        assert!(c.regressed, "{c:?}");

        // Not in every replay.
        assert!(
            !compare_server_time(&base, &head, 0.05, false, &opts, 1)
                .unwrap()
                .regressed
        );
        // A floor the shift does not clear (a shift of 500 % against a floor of 600 %).
        assert!(
            !compare_server_time(&base, &head, 6.0, true, &opts, 1)
                .unwrap()
                .checks
                .ci_above_noise
        );
        // 30 µs more: over the threshold, under the minimum shift.
        let small: Vec<u32> = base.iter().map(|v| v + 30).collect();
        let c = compare_server_time(&base, &small, 0.0, true, &opts, 1).unwrap();
        assert!(c.checks.over_threshold && !c.checks.over_min_delta && !c.regressed);
        // Too few calls.
        let c = compare_server_time(&base, &head[..10], 0.0, true, &opts, 1).unwrap();
        assert!(!c.checks.enough_calls && !c.regressed);
        // Faster is never a regression; nothing on a side, nothing compared.
        assert!(
            !compare_server_time(&head, &base, 0.0, true, &opts, 1)
                .unwrap()
                .regressed
        );
        assert!(compare_server_time(&[], &head, 0.0, true, &opts, 1).is_none());
    }

    fn run(fps: &[(&str, u32, usize)]) -> Run {
        Run {
            fingerprints: fps
                .iter()
                .map(|&(fp, server, n)| FingerprintRun {
                    fingerprint: fp.into(),
                    executed: n as u64,
                    samples: vec![1000; n],
                    server_samples: Some(vec![server; n]),
                    ..FingerprintRun::default()
                })
                .collect(),
        }
    }

    #[test]
    fn the_floor_is_the_typical_or_pooled_shift_of_two_base_replays() {
        let a = run(&[
            ("a", 100, 30),
            ("b", 100, 30),
            ("c", 100, 30),
            ("d", 100, 5),
        ]);
        let b = run(&[
            ("a", 110, 30),
            ("b", 100, 30),
            ("c", 130, 30),
            ("d", 900, 5),
        ]);
        let f = server_floor(Some((&a, &b)), 20);
        // Shifts 10 %, 0 %, 30 % (d has too few calls): median 10 %; pooled medians 100 → 110.
        assert_eq!(f.fingerprints, 3);
        assert!((f.value - 0.1).abs() < 1e-9, "{f:?}");
        assert!(server_floor(None, 20).method.starts_with("not measured"));
    }

    #[test]
    fn replays_without_server_times_are_named() {
        let mut without = run(&[("a", 100, 30)]);
        without.fingerprints[0].server_samples = None;
        let with = run(&[("a", 100, 30)]);
        assert!(unmeasured_reason(&[&with], std::slice::from_ref(&with)).is_none());
        let why = unmeasured_reason(&[&with, &without], std::slice::from_ref(&with)).unwrap();
        assert!(why.starts_with("1 base-schema and 0 head"), "{why}");
    }
}
