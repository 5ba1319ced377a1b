//! The comparison of base and head replays: per-fingerprint latency with bootstrap confidence
//! intervals, the noise floor, and error and coverage differences.
//!
//! [`compare`] is the whole API; it is deterministic (same runs, options and seed, same
//! result) and does no I/O. The method is described precisely in docs/gate-statistics.md.
//!
//! - [`input`]: what one replay contributes ([`Run`]).
//! - [`options`]: thresholds and bootstrap parameters ([`CompareOptions`]).
//! - `bootstrap`: the p95 ratio and its confidence interval; `rng`: its random draws.
//! - `latency`: the latency rule; `noise`: the noise floor; `errors`: error differences.
//! - [`report`]: the result ([`Comparison`]).

mod bootstrap;
mod errors;
pub mod input;
mod latency;
mod noise;
pub mod options;
mod replays;
pub mod report;
mod rng;

use std::collections::BTreeMap;

pub use input::{ErrorCount, FingerprintRun, Run};
pub use options::{CompareError, CompareOptions};
pub use report::{
    Comparison, ErrorDiff, FingerprintComparison, FingerprintRef, LatencyChecks, LatencyComparison,
    NoiseFloor, Percentiles,
};

use input::{pool, Pooled};

/// The name of the overall comparison's bootstrap stream; fingerprints (16 hex digits) cannot
/// take it.
const OVERALL_STREAM: &str = "overall";

/// Compares the `head` replays with the `base` replays (all replays of a side pooled).
/// `noise` is an optional pair of replays on the base schema that estimates the noise floor.
pub fn compare(
    base: &[Run],
    head: &[Run],
    noise: Option<(&Run, &Run)>,
    options: &CompareOptions,
) -> Result<Comparison, CompareError> {
    options.validate()?;
    if base.is_empty() {
        return Err(CompareError::NoRuns { side: "base" });
    }
    if head.is_empty() {
        return Err(CompareError::NoRuns { side: "head" });
    }
    // Every replay on the base schema: the rounds and the noise pair. The gate's pair repeats its
    // first base round; a repeated replay cannot change the slowest base replay the check uses.
    let mut base_schema: Vec<&Run> = base.iter().collect();
    if let Some((a, b)) = noise {
        base_schema.extend([a, b]);
    }
    let replays = replays::Replays::new(&base_schema, head);
    let noise = noise::noise_floor(noise, options.min_calls);
    let floors = latency::Floors {
        tail: noise.floor.value,
        body: noise.body,
    };
    let (base_pool, head_pool) = (pool(base), pool(head));
    let mut compared = Vec::new();

    let mut fingerprints = Vec::new();
    let (mut all_base, mut all_head) = (Vec::new(), Vec::new());
    for (&fingerprint, b) in &base_pool {
        let Some(h) = head_pool.get(fingerprint) else {
            continue;
        };
        if b.sorted.is_empty() || h.sorted.is_empty() {
            continue;
        }
        let seed = rng::stream_seed(options.seed, fingerprint);
        fingerprints.push(FingerprintComparison {
            fingerprint: fingerprint.to_string(),
            normalized: h.normalized.to_string(),
            kind: h.kind.to_string(),
            latency: latency::compare_latency(&b.sorted, &h.sorted, floors, options, seed)
                .with_replay_check(replays.separated(fingerprint, options.p95_threshold)),
        });
        compared.push(fingerprint);
        all_base.extend_from_slice(&b.sorted);
        all_head.extend_from_slice(&h.sorted);
    }
    sort_worst_first(&mut fingerprints);
    all_base.sort_unstable();
    all_head.sort_unstable();
    let seed = rng::stream_seed(options.seed, OVERALL_STREAM);
    let overall = latency::compare_latency(&all_base, &all_head, floors, options, seed)
        .with_replay_check(replays.all_separated(&compared, options.p95_threshold));

    let errors = errors::diff_errors(base, head);
    Ok(Comparison {
        noise_floor: noise.floor,
        overall,
        fingerprints,
        new_errors: errors.new,
        shared_errors: errors.shared,
        fixed_errors: errors.fixed,
        only_base: executed_only_in(&base_pool, &head_pool),
        only_head: executed_only_in(&head_pool, &base_pool),
    })
}

/// Regressions first, then the largest ratio; the fingerprint breaks ties.
fn sort_worst_first(list: &mut [FingerprintComparison]) {
    list.sort_by(|a, b| {
        b.latency
            .regressed
            .cmp(&a.latency.regressed)
            .then(b.latency.ratio.total_cmp(&a.latency.ratio))
            .then_with(|| a.fingerprint.cmp(&b.fingerprint))
    });
}

/// Fingerprints executed in `side` and never in `other`, most executions first.
fn executed_only_in(
    side: &BTreeMap<&str, Pooled>,
    other: &BTreeMap<&str, Pooled>,
) -> Vec<FingerprintRef> {
    let mut refs: Vec<FingerprintRef> = side
        .iter()
        .filter(|(fp, p)| p.executed > 0 && other.get(*fp).is_none_or(|o| o.executed == 0))
        .map(|(fp, p)| FingerprintRef {
            fingerprint: fp.to_string(),
            normalized: p.normalized.to_string(),
            kind: p.kind.to_string(),
            calls: p.executed,
        })
        .collect();
    // Stable: equal counts stay in fingerprint order.
    refs.sort_by_key(|r| std::cmp::Reverse(r.calls));
    refs
}

#[cfg(test)]
mod tests;
