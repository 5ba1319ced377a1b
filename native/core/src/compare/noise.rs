//! The noise floor: how much two replays on the identical base schema disagree, right now, on
//! this machine. A head slowdown must clear it before it counts (`ci_above_noise`).
//!
//! Per fingerprint with enough executions in both replays, r = p95(b) / p95(a); the floor is the
//! larger of the median |r − 1| over those fingerprints and |r − 1| of their samples pooled,
//! capped at 1. The median reflects a typical fingerprint's shift, the pooled ratio a shift of
//! the whole run (a busier runner). Both come from single replays, which have fewer samples
//! than the pooled rounds being compared, so the floor is, if anything, too high: it errs
//! towards not blocking a merge on noise. docs/gate-statistics.md explains the choice.
//!
//! Every fingerprint clears the run's floor. A fingerprint's own base-vs-base shift used to
//! raise its floor; the replay check (`replays`) now answers the question it stood for (did
//! one replay's burst make this fingerprint look slower?) from every replay instead of one
//! pair, and measured over 300 synthetic runs the own-shift floor only cost detections (a
//! dropped index's 100× server time passed as "within noise" when the fingerprint's p95 had
//! moved 2× between two base replays) without saving a false alarm.

use super::bootstrap::{p95_ratio, GATE_PERCENTILE};
use super::input::{pool, Run};
use super::report::NoiseFloor;
use crate::stats::percentile_sorted;

/// A floor above 100 % would mean the replays are too unstable to say anything; capping keeps
/// the number readable, and a doubling still has to clear it.
const MAX_FLOOR: f64 = 1.0;

/// The run's noise floor.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NoiseEstimate {
    pub floor: NoiseFloor,
    /// The same measure on medians (p50 instead of p95): how far the body of a fingerprint's
    /// latencies moves between identical replays. Under bursts of load the tail moves several
    /// times more than the body (docs/gate-statistics.md, "Measured"), so a body shift well past
    /// this floor is a slowdown the p95 floor alone would hide.
    pub body: f64,
}

impl NoiseEstimate {
    fn not_measured(why: &str) -> Self {
        NoiseEstimate {
            floor: NoiseFloor::not_measured(why),
            body: 0.0,
        }
    }
}

impl NoiseFloor {
    fn not_measured(why: &str) -> Self {
        NoiseFloor {
            value: 0.0,
            method: format!("not measured: {why}"),
            fingerprints: 0,
        }
    }
}

fn p95(sorted: &[u32]) -> u64 {
    percentile_sorted(sorted, GATE_PERCENTILE)
}

fn p50(sorted: &[u32]) -> u64 {
    percentile_sorted(sorted, 50.0)
}

/// The noise floor from two replays on the base schema, `None` when there are none.
pub(crate) fn noise_floor(pair: Option<(&Run, &Run)>, min_calls: u64) -> NoiseEstimate {
    let Some((a, b)) = pair else {
        return NoiseEstimate::not_measured("no second replay on the base schema");
    };
    // A fingerprint without successes has no p95, whatever `min_calls` says.
    let min = min_calls.max(1) as usize;
    let (a, b) = (pool([a]), pool([b]));
    let mut shifts = Vec::new();
    let mut body_shifts = Vec::new();
    let (mut all_a, mut all_b) = (Vec::new(), Vec::new());
    for (fingerprint, pa) in &a {
        let Some(pb) = b.get(fingerprint) else {
            continue;
        };
        if pa.sorted.len() < min || pb.sorted.len() < min {
            continue;
        }
        let shift = (p95_ratio(p95(&pa.sorted), p95(&pb.sorted)) - 1.0).abs();
        shifts.push(shift);
        body_shifts.push((p95_ratio(p50(&pa.sorted), p50(&pb.sorted)) - 1.0).abs());
        all_a.extend_from_slice(&pa.sorted);
        all_b.extend_from_slice(&pb.sorted);
    }
    if shifts.is_empty() {
        return NoiseEstimate::not_measured(&format!(
            "no fingerprint had {min} or more successful executions in both base replays"
        ));
    }
    all_a.sort_unstable();
    all_b.sort_unstable();
    let pooled = (p95_ratio(p95(&all_a), p95(&all_b)) - 1.0).abs();
    let typical = median(&mut shifts);
    let pooled_body = (p95_ratio(p50(&all_a), p50(&all_b)) - 1.0).abs();
    let body = median(&mut body_shifts).max(pooled_body).min(MAX_FLOOR);
    let floor = NoiseFloor {
        value: typical.max(pooled).min(MAX_FLOOR),
        method: format!(
            "max(median per-fingerprint |p95 ratio − 1|, pooled |p95 ratio − 1|) of two replays \
             on the base schema, over fingerprints with ≥ {min} successful executions in both, \
             capped at {:.0} %; the same on medians (body floor): {:.0} %",
            MAX_FLOOR * 100.0,
            body * 100.0
        ),
        fingerprints: shifts.len() as u64,
    };
    NoiseEstimate { floor, body }
}

/// The median (the mean of the middle two for an even count) of a non-empty list.
fn median(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::input::FingerprintRun;

    fn run(fps: &[(&str, u32, usize)]) -> Run {
        Run {
            fingerprints: fps
                .iter()
                .map(|&(fp, latency, n)| FingerprintRun {
                    fingerprint: fp.into(),
                    normalized: format!("SELECT {fp}"),
                    kind: "select".into(),
                    executed: n as u64,
                    samples: vec![latency; n],
                    server_samples: None,
                    errors: vec![],
                })
                .collect(),
        }
    }

    #[test]
    fn median_and_pooled_shift_whichever_is_larger() {
        // Per-fingerprint shifts 10 %, 20 %, 0 %: median 10 %. Pooled p95: 1000 → 1100 is 10 %.
        let a = run(&[
            ("a", 1000, 30),
            ("b", 500, 30),
            ("c", 200, 30),
            ("rare", 100, 5),
        ]);
        let b = run(&[
            ("a", 1100, 30),
            ("b", 600, 30),
            ("c", 200, 30),
            ("rare", 900, 5),
        ]);
        let f = noise_floor(Some((&a, &b)), 20).floor;
        assert_eq!(f.fingerprints, 3, "`rare` has too few calls");
        assert!((f.value - 0.10).abs() < 1e-9, "{f:?}");
        assert!(f.method.contains("≥ 20"), "{}", f.method);
        // Everything 30 % slower in b except one fingerprint: median 30 %, and order doesn't matter.
        let a = run(&[("a", 1000, 30), ("b", 1000, 30), ("c", 1000, 30)]);
        let b = run(&[("a", 1300, 30), ("b", 1300, 30), ("c", 1000, 30)]);
        assert!((noise_floor(Some((&a, &b)), 20).floor.value - 0.3).abs() < 1e-9);
        // A faster second replay counts as much as a slower one.
        assert!((noise_floor(Some((&b, &a)), 20).floor.value - 0.3 / 1.3).abs() < 1e-9);
    }

    #[test]
    fn the_body_floor_measures_medians() {
        // Tails move 3× between the replays, bodies 10 %: a burst in the second replay.
        let body_and_tail = |body: u32, tail: u32| -> Vec<u32> {
            let mut v = vec![body; 90];
            v.extend(vec![tail; 10]);
            v
        };
        let run_of = |body: u32, tail: u32| Run {
            fingerprints: ["a", "b", "c"]
                .iter()
                .map(|fp| FingerprintRun {
                    fingerprint: (*fp).into(),
                    normalized: format!("SELECT {fp}"),
                    kind: "select".into(),
                    executed: 100,
                    samples: body_and_tail(body, tail),
                    server_samples: None,
                    errors: vec![],
                })
                .collect(),
        };
        let (a, b) = (run_of(1000, 2000), run_of(1100, 6000));
        let estimate = noise_floor(Some((&a, &b)), 20);
        assert!(
            (estimate.floor.value - 1.0).abs() < 1e-9,
            "{:?}",
            estimate.floor
        );
        assert!((estimate.body - 0.10).abs() < 1e-9, "{}", estimate.body);
        assert!(
            estimate.floor.method.ends_with("body floor): 10 %"),
            "{}",
            estimate.floor.method
        );
    }

    #[test]
    fn pooled_shift_wins_when_the_median_hides_it() {
        // Medians: shifts 0, 0, 0.5 → 0; pooled p95 is the slow fingerprint's, 2000 → 3000.
        let a = run(&[("a", 100, 100), ("b", 100, 100), ("slow", 2000, 100)]);
        let b = run(&[("a", 100, 100), ("b", 100, 100), ("slow", 3000, 100)]);
        assert!((noise_floor(Some((&a, &b)), 20).floor.value - 0.5).abs() < 1e-9);
    }

    #[test]
    fn capped_and_not_measured() {
        let a = run(&[("a", 100, 30)]);
        let b = run(&[("a", 1000, 30)]);
        assert_eq!(noise_floor(Some((&a, &b)), 20).floor.value, 1.0);
        let none = noise_floor(None, 20).floor;
        assert_eq!((none.value, none.fingerprints), (0.0, 0));
        assert!(none.method.starts_with("not measured"));
        let few = noise_floor(Some((&a, &b)), 50).floor;
        assert_eq!(few.value, 0.0);
        assert!(
            few.method
                .starts_with("not measured: no fingerprint had 50"),
            "{}",
            few.method
        );
    }

    #[test]
    fn median_of_even_and_odd_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
