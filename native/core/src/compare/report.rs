//! The comparison's result. Serialized (snake_case) it is the `Comparison` of
//! `src/gate/report-types.ts`, which documents every field; keep the two in step.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub noise_floor: NoiseFloor,
    /// Whether the server's own times were compared, and their noise floor.
    pub server_time: ServerTimeSummary,
    /// Every sample of every compared fingerprint, pooled.
    pub overall: LatencyComparison,
    /// Regressions first, then by ratio, worst first.
    pub fingerprints: Vec<FingerprintComparison>,
    /// Errors that count against the change: new ones, and ones head has far more often
    /// (`rule` says which test decided).
    pub new_errors: Vec<ErrorDiff>,
    /// Failures that depend on how sessions interleave (unique violations between concurrent
    /// sessions, deadlocks, serialization failures, lock and statement timeouts) and whose
    /// counts are within what the base-schema replays and the capture show: listed, not gated.
    pub varying_errors: Vec<ErrorDiff>,
    /// Failures on both sides about as often (a fidelity warning, not gated).
    pub shared_errors: Vec<ErrorDiff>,
    pub fixed_errors: Vec<ErrorDiff>,
    pub only_base: Vec<FingerprintRef>,
    pub only_head: Vec<FingerprintRef>,
}

/// The server-time rule's run-wide facts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerTimeSummary {
    /// Every replay of both sides carried the server's own times.
    pub measured: bool,
    /// Why not, when not measured.
    pub reason: Option<String>,
    /// How far two base-schema replays' server-time medians disagree (a fraction).
    pub noise_floor: NoiseFloor,
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
    /// The client rule fired (`checks` all hold), or, for a fingerprint, the server-time rule.
    pub regressed: bool,
    /// Which rules fired: `client_p95` (`checks`), `server_time` (the fingerprint's
    /// `server_time.checks`).
    pub rules: Vec<&'static str>,
}

impl LatencyComparison {
    /// Adds the replay check's outcome (decided from the replays, not the pooled samples).
    pub(crate) fn with_replay_check(mut self, slower_in_every_replay: bool) -> Self {
        self.checks.slower_in_every_replay = slower_in_every_replay;
        self.regressed = self.checks.all();
        self.rules = if self.regressed {
            vec![RULE_CLIENT_P95]
        } else {
            Vec::new()
        };
        self
    }

    /// Adds the server-time rule's verdict on the same fingerprint.
    pub(crate) fn with_server_time(mut self, server: &ServerTimeComparison) -> Self {
        if server.regressed {
            self.regressed = true;
            self.rules.push(RULE_SERVER_TIME);
        }
        self
    }
}

pub const RULE_CLIENT_P95: &str = "client_p95";
pub const RULE_SERVER_TIME: &str = "server_time";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FingerprintComparison {
    pub fingerprint: String,
    pub normalized: String,
    pub kind: String,
    #[serde(flatten)]
    pub latency: LatencyComparison,
    /// The server-time rule on this fingerprint; absent when the server's times were not
    /// measured or the fingerprint has none on a side.
    pub server_time: Option<ServerTimeComparison>,
}

/// The server-time rule's conditions; a regression needs all of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ServerTimeChecks {
    /// head median / base median − 1 > `server_threshold`.
    pub over_threshold: bool,
    /// The shift's interval, low end, as a share of base's median, above the run's server
    /// noise floor.
    pub ci_above_noise: bool,
    /// The shift (head median − base median) above `server_min_delta_us`.
    pub over_min_delta: bool,
    /// `min_calls` server times on each side.
    pub enough_calls: bool,
    /// Every head replay's server median above every base-schema replay's by more than the
    /// threshold.
    pub slower_in_every_replay: bool,
}

impl ServerTimeChecks {
    pub fn all(&self) -> bool {
        self.over_threshold
            && self.ci_above_noise
            && self.over_min_delta
            && self.enough_calls
            && self.slower_in_every_replay
    }
}

/// One fingerprint's server time per execution, base against head: a location shift of the
/// median with its bootstrap interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerTimeComparison {
    pub calls_base: u64,
    pub calls_head: u64,
    pub base: Percentiles,
    pub head: Percentiles,
    /// head median / base median (each at least 1 µs).
    pub ratio: f64,
    /// head median − base median, µs.
    pub shift_us: i64,
    /// The shift's percentile-bootstrap interval at the comparison's confidence, µs.
    pub ci_low_us: i64,
    pub ci_high_us: i64,
    /// The floor `ci_low_us / base.p50_us` had to clear (a fraction): the run's.
    pub noise_floor: f64,
    pub checks: ServerTimeChecks,
    pub regressed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorDiff {
    pub fingerprint: String,
    pub normalized: String,
    pub sqlstate: String,
    pub message: String,
    /// Failures over the base rounds (not the noise replay).
    pub base_count: u64,
    pub head_count: u64,
    /// `deterministic` (the statement cannot work as written: an undefined object, a syntax or
    /// type error, a permission, a constraint) or `interleaving` (it depends on what concurrent
    /// sessions do: unique and foreign-key violations, exclusion, deadlock, serialization, lock
    /// and statement timeouts, and statements aborted by such a failure).
    pub class: &'static str,
    /// The test that decided: `deterministic` (a deterministic failure base never had: fails
    /// from its first occurrence), `more_often` (a deterministic failure head has far more
    /// often), `every_replay` (the same statements failed in every head replay and in no
    /// base-schema replay nor the capture), `rate` (head's failure rate above every base-schema
    /// replay's and the capture's, and significantly so), `varies` (an interleaving failure
    /// within what base shows), `fidelity` (a deterministic failure both sides have about as
    /// often), `fixed` (base only).
    pub rule: &'static str,
    /// Failures per replay: base rounds then the noise replay; head rounds.
    pub base_replays: Vec<u64>,
    pub head_replays: Vec<u64>,
    /// Executions of the fingerprint over those replays.
    pub base_executed: u64,
    pub head_executed: u64,
    /// Failures of this SQLSTATE the capture recorded for the fingerprint (its sidecar); absent
    /// without a capture sidecar.
    pub capture_count: Option<u64>,
    /// Look-alike fingerprints (the same statement on sibling tables, e.g. `t1` … `t4`) that
    /// failed with this SQLSTATE on a base-schema replay or at capture.
    pub siblings_failing: u64,
    /// Statements that failed in every head replay and in no base-schema replay.
    pub every_head_replay: u64,
    /// One-sided p-value of head's failure count given both sides' (binomial, conditional on
    /// the total), for interleaving failures.
    pub p_value: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FingerprintRef {
    pub fingerprint: String,
    pub normalized: String,
    pub kind: String,
    pub calls: u64,
}
