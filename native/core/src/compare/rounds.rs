//! The round check: a slowdown must show, beyond the threshold, in every round, not only in the
//! pooled samples.
//!
//! The gate replays base and head once per round, alternating which goes first, so round i's
//! base and head replays ran minutes apart under the same conditions: a paired comparison. A
//! real regression (a lost index, a slow trigger) makes head slower in each pair. A burst of
//! load on a shared runner hits one replay, and its samples can still push the pooled p95 and
//! the bootstrap interval (which treats executions as independent, docs/gate-statistics.md)
//! past every other check; on a 2-vCPU VM, bursts of a few seconds made every statement of one
//! or two replays 2–4× slower. Requiring head's p95 to exceed base's by more than the threshold
//! in every round in which both ran the fingerprint removes those alarms: a burst would have to
//! hit head, and not base, in each of the rounds. A regression of the size the gate exists for
//! (a lost index, a slow trigger: several times slower) clears the threshold in every round; one
//! barely above the threshold on a noisy runner may not, which is the side to err on before
//! blocking a merge.
//!
//! The check applies when both sides have the same number of replays, taken as pairs in order
//! (`base[i]` with `head[i]`); otherwise, and when no round ran the fingerprint on both sides,
//! it does not veto.

use std::collections::BTreeMap;

use super::bootstrap::{p95_ratio, GATE_PERCENTILE};
use super::input::{pool, Pooled, Run};
use crate::stats::percentile_sorted;

/// One replay's samples, per fingerprint.
type Replay<'a> = BTreeMap<&'a str, Pooled<'a>>;

/// Each round's replays, pooled per fingerprint: (base, head).
pub(crate) struct Rounds<'a> {
    pairs: Vec<(Replay<'a>, Replay<'a>)>,
}

impl<'a> Rounds<'a> {
    /// The rounds of `base` and `head`; no rounds (the check never vetoes) when their counts differ.
    pub fn new(base: &'a [Run], head: &'a [Run]) -> Self {
        let pairs = if base.len() == head.len() {
            base.iter()
                .zip(head)
                .map(|(b, h)| (pool([b]), pool([h])))
                .collect()
        } else {
            Vec::new()
        };
        Rounds { pairs }
    }

    /// Head's p95 over base's by more than `threshold` (a fraction) in every round that ran
    /// `fingerprint` successfully on both sides.
    pub fn slower_in_every_round(&self, fingerprint: &str, threshold: f64) -> bool {
        self.pairs
            .iter()
            .all(|(b, h)| match (b.get(fingerprint), h.get(fingerprint)) {
                (Some(b), Some(h)) if !b.sorted.is_empty() && !h.sorted.is_empty() => {
                    over(&b.sorted, &h.sorted, threshold)
                }
                _ => true,
            })
    }

    /// The same for the samples of `fingerprints` pooled (the whole-workload comparison).
    pub fn all_slower_in_every_round(&self, fingerprints: &[&str], threshold: f64) -> bool {
        self.pairs.iter().all(|(b, h)| {
            let (b, h) = (gather(b, fingerprints), gather(h, fingerprints));
            b.is_empty() || h.is_empty() || over(&b, &h, threshold)
        })
    }
}

/// head p95 / base p95 − 1 > threshold, both ascending.
fn over(base: &[u32], head: &[u32], threshold: f64) -> bool {
    p95_ratio(p95(base), p95(head)) - 1.0 > threshold
}

fn gather(round: &Replay, fingerprints: &[&str]) -> Vec<u32> {
    let mut all: Vec<u32> = fingerprints
        .iter()
        .filter_map(|fp| round.get(fp))
        .flat_map(|p| p.sorted.iter().copied())
        .collect();
    all.sort_unstable();
    all
}

fn p95(sorted: &[u32]) -> u64 {
    percentile_sorted(sorted, GATE_PERCENTILE)
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
                    errors: vec![],
                })
                .collect(),
        }
    }

    #[test]
    fn slower_only_when_every_round_says_so() {
        let base = [
            run(&[("a", 100), ("b", 100), ("c", 100)]),
            run(&[("a", 100), ("b", 100), ("c", 100)]),
            run(&[("a", 100), ("b", 100), ("c", 100)]),
        ];
        // `a` over 20 % slower in all three rounds; `b` hugely slower in one round, faster in
        // another; `c` slower in every round, but by 10 % in one.
        let head = [
            run(&[("a", 150), ("b", 900), ("c", 150)]),
            run(&[("a", 125), ("b", 90), ("c", 110)]),
            run(&[("a", 130), ("b", 100), ("c", 150)]),
        ];
        let rounds = Rounds::new(&base, &head);
        assert!(rounds.slower_in_every_round("a", 0.2));
        assert!(!rounds.slower_in_every_round("b", 0.2));
        assert!(!rounds.slower_in_every_round("c", 0.2));
        assert!(rounds.slower_in_every_round("c", 0.05));
        assert!(!rounds.all_slower_in_every_round(&["b"], 0.2));
        // Pooled, `a`'s slowdown sets the p95 in every round.
        assert!(rounds.all_slower_in_every_round(&["a", "b"], 0.2));
        // Unknown fingerprints and unpaired runs do not veto.
        assert!(rounds.slower_in_every_round("unknown", 0.2));
        assert!(Rounds::new(&base[..2], &head).slower_in_every_round("b", 0.2));
    }
}
