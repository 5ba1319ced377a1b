//! The round check: a slowdown must show in every round, not only in the pooled samples.
//!
//! The gate replays base and head once per round, alternating which goes first, so round i's
//! base and head replays ran minutes apart under the same conditions: a paired comparison. A
//! real regression (a lost index, a slow trigger) makes head slower in each pair. A burst of
//! load on a shared runner hits one replay, and its samples can still push the pooled p95 and
//! the bootstrap interval (which treats executions as independent, docs/gate-statistics.md)
//! past every other check. Requiring head's p95 above base's in every round in which both ran
//! the fingerprint removes most of those alarms: under no difference at all, three rounds agree
//! by chance one time in eight, and that on top of the other four checks.
//!
//! The check applies when both sides have the same number of replays, taken as pairs in order
//! (`base[i]` with `head[i]`); otherwise, and when no round ran the fingerprint on both sides,
//! it does not veto.

use std::collections::BTreeMap;

use super::bootstrap::GATE_PERCENTILE;
use super::input::{pool, Pooled, Run};
use crate::stats::percentile_sorted;

/// Each round's replays, pooled per fingerprint.
pub(crate) struct Rounds<'a> {
    pairs: Vec<(BTreeMap<&'a str, Pooled<'a>>, BTreeMap<&'a str, Pooled<'a>>)>,
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

    /// Head's p95 above base's in every round that ran `fingerprint` successfully on both sides.
    pub fn slower_in_every_round(&self, fingerprint: &str) -> bool {
        self.pairs
            .iter()
            .all(|(b, h)| match (b.get(fingerprint), h.get(fingerprint)) {
                (Some(b), Some(h)) if !b.sorted.is_empty() && !h.sorted.is_empty() => {
                    p95(&h.sorted) > p95(&b.sorted)
                }
                _ => true,
            })
    }

    /// The same for the samples of `fingerprints` pooled (the whole-workload comparison).
    pub fn all_slower_in_every_round(&self, fingerprints: &[&str]) -> bool {
        self.pairs.iter().all(|(b, h)| {
            let (b, h) = (gather(b, fingerprints), gather(h, fingerprints));
            b.is_empty() || h.is_empty() || p95(&h) > p95(&b)
        })
    }
}

fn gather(round: &BTreeMap<&str, Pooled>, fingerprints: &[&str]) -> Vec<u32> {
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
            run(&[("a", 100), ("b", 100)]),
            run(&[("a", 100), ("b", 100)]),
            run(&[("a", 100), ("b", 100)]),
        ];
        // `a` slower in all three rounds; `b` hugely slower in one round, faster in another.
        let head = [
            run(&[("a", 150), ("b", 900)]),
            run(&[("a", 120), ("b", 90)]),
            run(&[("a", 101), ("b", 100)]),
        ];
        let rounds = Rounds::new(&base, &head);
        assert!(rounds.slower_in_every_round("a"));
        assert!(!rounds.slower_in_every_round("b"));
        assert!(!rounds.all_slower_in_every_round(&["b"]));
        // Pooled, `a`'s slowdown sets the p95 in every round.
        assert!(rounds.all_slower_in_every_round(&["a", "b"]));
        // Unknown fingerprints and unpaired runs do not veto.
        assert!(rounds.slower_in_every_round("unknown"));
        assert!(Rounds::new(&base[..2], &head).slower_in_every_round("b"));
    }
}
