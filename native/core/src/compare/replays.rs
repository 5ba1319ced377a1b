//! The replay check: a slowdown must show in every replay, not only in the pooled samples. Every
//! head replay's median latency of the fingerprint must exceed every base-schema replay's median
//! (the base rounds and the noise replay) by more than the threshold.
//!
//! Why replays and not executions: executions of one replay share that replay's conditions. On a
//! shared 2-vCPU runner a few seconds of contention make the statements of one replay 2–5×
//! slower in the tail, so one fingerprint's per-replay p95 moves by a factor of 3 between
//! identical replays (measured with `scripts/noise-study.mjs`), and the bootstrap, which treats
//! executions as independent, can carry such a replay's samples past every pooled check. The
//! replay is the unit that is independent.
//!
//! Why separation: when the schemas are identical the replays are exchangeable, so the chance
//! that the head replays are the slowest n_h of the n_b + n_h replays is 1 / C(n_b + n_h, n_h)
//! whatever the noise looks like (1/35 with 3 rounds and one noise replay, 1/462 with 5 rounds),
//! and the gap of the threshold required on top makes it rarer still.
//!
//! Why the median: per replay it is the steady statistic (a fingerprint's per-replay median moved
//! by ±15 % between identical replays where its p95 moved 3×), and the regressions a schema
//! change causes (a lost index, a slow trigger, a rewritten plan) move the whole distribution, the
//! median by far. Measured over synthetic runs drawn from real replays, median separation both
//! cried wolf less and found more than p95 separation (docs/gate-statistics.md). The price: a
//! slowdown confined to the tail (a new lock wait hitting one statement in ten) is shown in the
//! report but not gated on latency.
//!
//! Replays in which the fingerprint had no successful execution are left out; when one side has
//! none left, the check does not veto (the fingerprint is then not latency-compared anyway).

use std::collections::BTreeMap;

use super::bootstrap::{p95_ratio, GATE_PERCENTILE};
use super::input::{pool, Pooled, Run, Times};
use crate::stats::percentile_sorted;

/// One replay's samples, per fingerprint.
type Replay<'a> = BTreeMap<&'a str, Pooled<'a>>;

/// The replays of each side, pooled per fingerprint.
pub(crate) struct Replays<'a> {
    base: Vec<Replay<'a>>,
    head: Vec<Replay<'a>>,
}

impl<'a> Replays<'a> {
    /// `base`: every replay on the base schema (rounds and noise); `head`: every head replay.
    pub fn new(base: &[&'a Run], head: &'a [Run]) -> Self {
        Replays {
            base: base.iter().map(|r| pool([*r])).collect(),
            head: head.iter().map(|r| pool([r])).collect(),
        }
    }

    /// The fastest head replay's median of `fingerprint` over the slowest base replay's, minus 1,
    /// exceeds `threshold` (a fraction), on the times `which` (the client's, or the server's own).
    pub fn separated(&self, fingerprint: &str, threshold: f64, which: Times) -> bool {
        let medians = |side: &[Replay<'a>]| -> Vec<u64> {
            side.iter()
                .filter_map(|r| r.get(fingerprint))
                .map(|p| p.times(which))
                .filter(|t| !t.is_empty())
                .map(median)
                .collect()
        };
        separated(&medians(&self.base), &medians(&self.head), threshold)
    }

    /// The whole-workload version: the samples of `fingerprints` pooled within each replay, and
    /// their p95, not their median. Pooled over thousands of statements a replay's p95 is steady,
    /// and the pooled median would hide a few fingerprints' slowdown behind the many unchanged.
    pub fn all_separated(&self, fingerprints: &[&str], threshold: f64) -> bool {
        let p95s = |side: &[Replay<'a>]| -> Vec<u64> {
            side.iter()
                .map(|r| gather(r, fingerprints))
                .filter(|s| !s.is_empty())
                .map(|s| percentile_sorted(&s, GATE_PERCENTILE))
                .collect()
        };
        separated(&p95s(&self.base), &p95s(&self.head), threshold)
    }
}

fn separated(base: &[u64], head: &[u64], threshold: f64) -> bool {
    match (base.iter().max(), head.iter().min()) {
        // The same ratio as the p95's: a value of 0 µs counts as 1 µs.
        (Some(&slowest_base), Some(&fastest_head)) => {
            p95_ratio(slowest_base, fastest_head) - 1.0 > threshold
        }
        _ => true,
    }
}

fn gather(replay: &Replay, fingerprints: &[&str]) -> Vec<u32> {
    let mut all: Vec<u32> = fingerprints
        .iter()
        .filter_map(|fp| replay.get(fp))
        .flat_map(|p| p.sorted.iter().copied())
        .collect();
    all.sort_unstable();
    all
}

fn median(sorted: &[u32]) -> u64 {
    percentile_sorted(sorted, 50.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::input::FingerprintRun;

    fn run(fps: &[(&str, u32)]) -> Run {
        Run {
            fingerprints: fps
                .iter()
                .map(|&(fp, latency)| FingerprintRun {
                    fingerprint: fp.into(),
                    normalized: format!("SELECT {fp}"),
                    kind: "select".into(),
                    executed: 30,
                    samples: vec![latency; 30],
                    server_samples: None,
                    errors: vec![],
                })
                .collect(),
        }
    }

    #[test]
    fn separated_only_when_every_head_replay_is_slower_than_every_base_replay() {
        let base = [
            run(&[("a", 100), ("b", 100), ("c", 100), ("d", 100)]),
            run(&[("a", 100), ("b", 100), ("c", 100), ("d", 100)]),
            run(&[("a", 110), ("b", 100), ("c", 100), ("d", 100)]),
        ];
        // The noise replay: `d` was slow in it.
        let noise = run(&[("a", 100), ("b", 100), ("c", 100), ("d", 300)]);
        // `a` over 20 % above the slowest base replay (110) in all three; `b` hugely slower in
        // one replay, faster in another; `c` slower in every replay, but by 10 % in one; `d`
        // slower than every base round, but not than the noise replay.
        let head = [
            run(&[("a", 150), ("b", 900), ("c", 150), ("d", 200)]),
            run(&[("a", 140), ("b", 90), ("c", 110), ("d", 200)]),
            run(&[("a", 135), ("b", 100), ("c", 150), ("d", 200)]),
        ];
        let all: Vec<&Run> = base.iter().chain([&noise]).collect();
        let replays = Replays::new(&all, &head);
        assert!(replays.separated("a", 0.2, Times::Client));
        assert!(!replays.separated("b", 0.2, Times::Client));
        assert!(!replays.separated("c", 0.2, Times::Client));
        assert!(replays.separated("c", 0.05, Times::Client));
        assert!(!replays.separated("d", 0.2, Times::Client));
        assert!(!replays.all_separated(&["b"], 0.2));
        // Pooled, the whole workload's p95 is `b`'s 900 in one head replay only.
        assert!(!replays.all_separated(&["a", "b", "c", "d"], 0.2));
        // `a` and `d` together: their p95 is 200 in every head replay, but 300 in the noise one.
        assert!(!replays.all_separated(&["a", "d"], 0.2));
        assert!(replays.all_separated(&["a", "c"], 0.05));
        // Fingerprints nobody ran do not veto.
        assert!(replays.separated("unknown", 0.2, Times::Client));
        // Unequal numbers of replays are fine: two head replays against four base ones.
        assert!(Replays::new(&all, &head[..2]).separated("a", 0.2, Times::Client));
    }

    #[test]
    fn a_replay_without_successes_is_left_out() {
        let mut failing = run(&[("a", 100)]);
        failing.fingerprints[0].samples.clear();
        let base = [run(&[("a", 100)]), failing];
        let head = [run(&[("a", 200)])];
        let all: Vec<&Run> = base.iter().collect();
        assert!(Replays::new(&all, &head).separated("a", 0.2, Times::Client));
    }
}
