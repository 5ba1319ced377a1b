//! What the comparison is asked to decide, and how it can refuse.

use thiserror::Error;

/// Thresholds of the latency rule and parameters of the bootstrap. See docs/gate-statistics.md.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareOptions {
    /// A fingerprint regresses only if head p95 / base p95 − 1 exceeds this fraction.
    pub p95_threshold: f64,
    /// … and head p95 − base p95 exceeds this many µs.
    pub min_delta_us: f64,
    /// … and each side has at least this many successful executions. Also the least number of
    /// executions in each noise replay for a fingerprint to contribute to the noise floor.
    pub min_calls: u64,
    /// Level of the confidence interval of the p95 ratio, in (0, 1).
    pub confidence: f64,
    /// Bootstrap resamples per interval.
    pub iterations: u32,
    /// Seeds the bootstrap: the same inputs and seed give the same intervals.
    pub seed: u64,
    /// The server-time rule: a fingerprint regresses when its server-time median moves by more
    /// than this fraction of base's...
    pub server_threshold: f64,
    /// … and by more than this many µs (with the other checks, docs/gate-statistics.md).
    pub server_min_delta_us: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            p95_threshold: 0.20,
            min_delta_us: 500.0,
            min_calls: 20,
            confidence: 0.95,
            iterations: 2000,
            server_threshold: 0.20,
            server_min_delta_us: 50.0,
            seed: 0,
        }
    }
}

/// Fewer resamples give interval bounds that move with the seed; more only cost time.
pub const MIN_ITERATIONS: u32 = 100;
pub const MAX_ITERATIONS: u32 = 1_000_000;

impl CompareOptions {
    /// Checks every option; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), CompareError> {
        let invalid = |option: &'static str, reason: String| {
            Err(CompareError::InvalidOption { option, reason })
        };
        if !self.p95_threshold.is_finite() || self.p95_threshold < 0.0 {
            return invalid(
                "p95_threshold",
                format!(
                    "must be a fraction, 0 or more (0.2 = 20 %); got {}",
                    self.p95_threshold
                ),
            );
        }
        if !self.min_delta_us.is_finite() || self.min_delta_us < 0.0 {
            return invalid(
                "min_delta_us",
                format!("must be 0 or more microseconds; got {}", self.min_delta_us),
            );
        }
        if !self.server_threshold.is_finite() || self.server_threshold < 0.0 {
            return invalid(
                "server_threshold",
                format!(
                    "must be a fraction, 0 or more (0.2 = 20 %); got {}",
                    self.server_threshold
                ),
            );
        }
        if !self.server_min_delta_us.is_finite() || self.server_min_delta_us < 0.0 {
            return invalid(
                "server_min_delta_us",
                format!(
                    "must be 0 or more microseconds; got {}",
                    self.server_min_delta_us
                ),
            );
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return invalid(
                "confidence",
                format!(
                    "must be between 0 and 1 (0.95 = 95 %); got {}",
                    self.confidence
                ),
            );
        }
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&self.iterations) {
            return invalid(
                "iterations",
                format!(
                    "must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}; got {}",
                    self.iterations
                ),
            );
        }
        Ok(())
    }
}

#[derive(Debug, Error, PartialEq)]
pub enum CompareError {
    #[error("{option} {reason}")]
    InvalidOption {
        /// The field of [`CompareOptions`].
        option: &'static str,
        reason: String,
    },
    /// A side has no replay to compare.
    #[error("no {side} replay to compare: at least one per side is needed")]
    NoRuns { side: &'static str },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_each_bad_option_is_named() {
        CompareOptions::default().validate().unwrap();
        let d = CompareOptions::default;
        for (option, o) in [
            (
                "p95_threshold",
                CompareOptions {
                    p95_threshold: -0.1,
                    ..d()
                },
            ),
            (
                "p95_threshold",
                CompareOptions {
                    p95_threshold: f64::NAN,
                    ..d()
                },
            ),
            (
                "min_delta_us",
                CompareOptions {
                    min_delta_us: f64::INFINITY,
                    ..d()
                },
            ),
            (
                "server_threshold",
                CompareOptions {
                    server_threshold: -1.0,
                    ..d()
                },
            ),
            (
                "server_min_delta_us",
                CompareOptions {
                    server_min_delta_us: f64::NAN,
                    ..d()
                },
            ),
            (
                "confidence",
                CompareOptions {
                    confidence: 1.0,
                    ..d()
                },
            ),
            (
                "confidence",
                CompareOptions {
                    confidence: 0.0,
                    ..d()
                },
            ),
            (
                "iterations",
                CompareOptions {
                    iterations: 10,
                    ..d()
                },
            ),
        ] {
            match o.validate() {
                Err(CompareError::InvalidOption { option: got, .. }) => assert_eq!(got, option),
                other => panic!("{option}: {other:?}"),
            }
        }
    }
}
