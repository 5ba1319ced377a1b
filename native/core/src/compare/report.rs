//! The comparison's result. Serialized (snake_case) it is the `Comparison` of
//! `src/gate/report-types.ts`, which documents every field; keep the two in step.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub noise_floor: NoiseFloor,
    /// Every sample of every compared fingerprint, pooled.
    pub overall: LatencyComparison,
    /// Regressions first, then by ratio, worst first.
    pub fingerprints: Vec<FingerprintComparison>,
    pub new_errors: Vec<ErrorDiff>,
    pub shared_errors: Vec<ErrorDiff>,
    pub fixed_errors: Vec<ErrorDiff>,
    pub only_base: Vec<FingerprintRef>,
    pub only_head: Vec<FingerprintRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoiseFloor {
    /// A fraction: 0.05 means the schema-identical replays differed by 5 %.
    pub value: f64,
    /// One line describing how `value` was obtained.
    pub method: String,
    /// Fingerprints that contributed.
    pub fingerprints: u64,
}

/// Nearest-rank percentiles, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Percentiles {
    pub p50_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
}

/// The latency rule's conditions; a regression needs all of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LatencyChecks {
    pub over_threshold: bool,
    pub ci_above_noise: bool,
    pub over_min_delta: bool,
    pub enough_calls: bool,
    /// Every head replay's median above every base-schema replay's by more than the threshold:
    /// the slowdown shows in every replay, not only pooled (see `replays`).
    pub slower_in_every_replay: bool,
}

impl LatencyChecks {
    pub fn all(&self) -> bool {
        self.over_threshold
            && self.ci_above_noise
            && self.over_min_delta
            && self.enough_calls
            && self.slower_in_every_replay
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyComparison {
    pub calls_base: u64,
    pub calls_head: u64,
    pub base: Percentiles,
    pub head: Percentiles,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub delta_us: i64,
    /// The floor `ci_low` had to clear (a fraction): the run's.
    pub noise_floor: f64,
    pub checks: LatencyChecks,
    pub regressed: bool,
}

impl LatencyComparison {
    /// Adds the replay check's outcome (decided from the replays, not the pooled samples).
    pub(crate) fn with_replay_check(mut self, slower_in_every_replay: bool) -> Self {
        self.checks.slower_in_every_replay = slower_in_every_replay;
        self.regressed = self.checks.all();
        self
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FingerprintComparison {
    pub fingerprint: String,
    pub normalized: String,
    pub kind: String,
    #[serde(flatten)]
    pub latency: LatencyComparison,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorDiff {
    pub fingerprint: String,
    pub normalized: String,
    pub sqlstate: String,
    pub message: String,
    pub base_count: u64,
    pub head_count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FingerprintRef {
    pub fingerprint: String,
    pub normalized: String,
    pub kind: String,
    pub calls: u64,
}
