//! The comparison of base and head replays: per-fingerprint latency with bootstrap confidence
//! intervals, the noise floor, and error and coverage differences.
//!
//! [`compare`] is the whole API; it is deterministic (same runs, options and seed, same
//! result) and does no I/O. The method is described precisely in docs/gate-statistics.md.
//!
//! - [`input`]: what one replay contributes ([`Run`]).
//! - [`options`]: thresholds and bootstrap parameters ([`CompareOptions`]).
//! - `bootstrap`: the p95 ratio and its confidence interval; `rng`: its random draws.
//! - `latency`: the client p95 rule; `server_time`: the server-time rule; `noise`: the noise
//!   floor; `errors`: failures judged by class and rate.
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
mod server_time;

use std::collections::BTreeMap;

pub use errors::RATE_ALPHA;
pub use input::{CaptureFailure, ErrorCount, FingerprintRun, Run};
pub use options::{CompareError, CompareOptions};
pub use report::{
    Comparison, ErrorDiff, FingerprintComparison, FingerprintRef, LatencyChecks, LatencyComparison,
    NoiseFloor, Percentiles, ServerTimeChecks, ServerTimeComparison, ServerTimeSummary,
};

use input::{pool, Pooled, Times};

/// The name of the overall comparison's bootstrap stream; fingerprints (16 hex digits) cannot
/// take it.
const OVERALL_STREAM: &str = "overall";
/// What the server-time interval's stream adds to the fingerprint, so that it is not the
/// client interval's.
const SERVER_STREAM: &str = "server";

/// Compares the `head` replays with the `base` replays (all replays of a side pooled).
/// `noise` is an optional pair of replays on the base schema that estimates the noise floors;
/// `capture`, the statements the capture saw fail (evidence that a failure is expected).
pub fn compare(
    base: &[Run],
    head: &[Run],
    noise: Option<(&Run, &Run)>,
    capture: Option<&[CaptureFailure]>,
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
    let server_reason = server_time::unmeasured_reason(&base_schema, head);
    let server_floor = server_time::server_floor(noise, options.min_calls);
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
        let server = match server_reason {
            Some(_) => None,
            None => server_time::compare_server_time(
                b.times(Times::Server),
                h.times(Times::Server),
                server_floor.value,
                replays.separated(fingerprint, options.server_threshold, Times::Server),
                options,
                rng::stream_seed(options.seed, &format!("{fingerprint}/{SERVER_STREAM}")),
            ),
        };
        let mut latency = latency::compare_latency(&b.sorted, &h.sorted, floors, options, seed)
            .with_replay_check(replays.separated(
                fingerprint,
                options.p95_threshold,
                Times::Client,
            ));
        if let Some(s) = &server {
            latency = latency.with_server_time(s);
        }
        fingerprints.push(FingerprintComparison {
            fingerprint: fingerprint.to_string(),
            normalized: h.normalized.to_string(),
            kind: h.kind.to_string(),
            latency,
            server_time: server,
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

    // Noise replays that repeat a round (the gate's pair does) would count its failures twice.
    let mut error_base: Vec<&Run> = base.iter().collect();
    for n in &base_schema[base.len()..] {
        if !base.iter().any(|b| b == *n) {
            error_base.push(n);
        }
    }
    let errors = errors::judge_errors(&errors::ErrorInputs {
        base: &error_base,
        base_rounds: base.len(),
        head,
        capture,
    });
    Ok(Comparison {
        noise_floor: noise.floor,
        server_time: ServerTimeSummary {
            measured: server_reason.is_none(),
            reason: server_reason,
            noise_floor: server_floor,
        },
        overall,
        fingerprints,
        new_errors: errors.new,
        varying_errors: errors.varying,
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
