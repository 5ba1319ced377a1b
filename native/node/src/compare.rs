//! `compareReplays`: the engine's comparison of base and head replay reports.
//!
//! The reports arrive as the plain objects `startReplay` produced (only the fields read here
//! are needed). They are converted to engine values on the JavaScript thread, during argument
//! conversion, because their samples may be typed arrays that JavaScript could change under a
//! worker; the comparison itself runs on a blocking worker thread. Every problem with the input
//! rejects the promise with `E_OPTIONS`, naming the option or the report.

use napi::bindgen_prelude::{
    Either, FromNapiValue, TypeName, Uint32Array, ValidateNapiValue, ValueType,
};
use napi::sys;
use napi_derive::napi;
use pg_retest_core::compare::{
    self, CaptureFailure, CompareError, CompareOptions as CoreOptions, ErrorCount, FingerprintRun,
    Run,
};

use crate::error::{BindingError, Settled};
use crate::json::JsonOut;

/// What `compareReplays` compares: replay reports of each side (made with `includeSamples`),
/// an optional pair of base-schema replays for the noise floor, and the thresholds.
#[napi(object, object_to_js = false)]
pub struct CompareInput {
    /// Replays on the base schema; at least one.
    pub base: Vec<CompareRun>,
    /// Replays on the head schema; at least one.
    pub head: Vec<CompareRun>,
    /// Two more replays on the base schema, to measure the noise floor; without them the
    /// floor is 0.
    pub noise: Option<Vec<CompareRun>>,
    /// The statements the capture saw fail (its sidecar), with their fingerprints: evidence
    /// that such failures are expected.
    pub capture: Option<Vec<CompareCaptureFailure>>,
    pub options: CompareOptions,
}

/// One statement the capture saw fail.
#[napi(object, object_to_js = false)]
pub struct CompareCaptureFailure {
    pub fingerprint: String,
    pub sqlstate: String,
    /// 0-based index of the session in the workload.
    pub session: f64,
    /// 0-based index of the statement in its session.
    pub index: f64,
}

/// The part of a replay report the comparison reads.
#[napi(object, object_to_js = false)]
pub struct CompareRun {
    pub fingerprints: Vec<CompareFingerprint>,
}

#[napi(object, object_to_js = false)]
pub struct CompareFingerprint {
    pub fingerprint: String,
    pub normalized: String,
    pub kind: String,
    pub counts: CompareCounts,
    pub errors: Vec<CompareErrorGroup>,
    /// Successful latencies in µs; required (replay with `includeSamples`).
    pub samples: Option<Either<Vec<f64>, Uint32Array>>,
    /// The server's own times in µs (replay with `serverTime` and `includeSamples`); absent
    /// when not measured.
    #[napi(js_name = "server_samples")]
    pub server_samples: Option<Either<Vec<f64>, Uint32Array>>,
}

#[napi(object, object_to_js = false)]
pub struct CompareCounts {
    /// Executions, successful or not.
    pub executed: f64,
}

#[napi(object, object_to_js = false)]
pub struct CompareErrorGroup {
    pub sqlstate: String,
    pub message: String,
    pub count: f64,
    /// The failing statements, as [session index, statement index] pairs; absent in reports
    /// of older versions.
    pub instances: Option<Vec<Vec<f64>>>,
}

/// Thresholds of the latency rule and bootstrap parameters; unset ones take the engine's
/// defaults (confidence 0.95, 2000 iterations, seed 0).
#[napi(object, object_to_js = false)]
pub struct CompareOptions {
    /// A fraction: 0.2 flags a p95 more than 20 % slower.
    pub p95_threshold: f64,
    /// Smallest p95 slowdown that counts, in ms.
    pub min_delta_ms: f64,
    /// Fewest successful executions per side for a fingerprint to be judged.
    pub min_calls: f64,
    /// Level of the confidence intervals, between 0 and 1.
    pub confidence: Option<f64>,
    /// Bootstrap resamples per interval, 100 to 1 000 000.
    pub iterations: Option<f64>,
    /// Seeds the bootstrap, a whole number below 2^53: same reports and seed, same result.
    pub seed: Option<f64>,
    /// A fraction: 0.2 flags a server-time median more than 20 % slower. Default 0.2.
    pub server_threshold: Option<f64>,
    /// Smallest server-time median shift that counts, in ms. Default 0.05.
    pub server_min_delta_ms: Option<f64>,
}

/// Everything the comparison needs, owned by Rust.
struct Request {
    base: Vec<Run>,
    head: Vec<Run>,
    noise: Option<(Run, Run)>,
    capture: Option<Vec<CaptureFailure>>,
    options: CoreOptions,
}

/// The converted input, or why it could not be converted (kept so that the promise rejects with
/// our code rather than napi's).
pub struct CompareArg(Result<Request, BindingError>);

/// Compares head replays with base replays: per-fingerprint p95 ratios with bootstrap
/// confidence intervals, the noise floor, new/shared/fixed errors and one-sided fingerprints
/// (pg_retest_core's `Comparison`, field names as serialized). Rejects with `E_OPTIONS` for
/// invalid options or reports without `samples`.
#[napi(
    catch_unwind,
    ts_args_type = "input: CompareInput",
    ts_return_type = "Promise<object>"
)]
pub async fn compare_replays(input: CompareArg) -> Settled<JsonOut> {
    let work = move || {
        let r = input.0?;
        let noise = r.noise.as_ref().map(|(a, b)| (a, b));
        let comparison =
            compare::compare(&r.base, &r.head, noise, r.capture.as_deref(), &r.options)
                .map_err(compare_error)?;
        JsonOut::to_json("compareReplays", &comparison)
    };
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(BindingError::from_join("compareReplays", e)))
        .into()
}

fn compare_error(e: CompareError) -> BindingError {
    match e {
        // The engine names its own fields; say the ones JavaScript wrote.
        CompareError::InvalidOption { option, reason } => {
            BindingError::options(format!("{} {reason}", js_option_name(option)))
        }
        CompareError::NoRuns { .. } => BindingError::options(e.to_string()),
    }
}

fn js_option_name(option: &str) -> &str {
    match option {
        "p95_threshold" => "p95Threshold",
        "min_delta_us" => "minDeltaMs",
        "min_calls" => "minCalls",
        "server_threshold" => "serverThreshold",
        "server_min_delta_us" => "serverMinDeltaMs",
        other => other,
    }
}

fn request(input: CompareInput) -> Result<Request, BindingError> {
    let options = core_options(&input.options)?;
    let noise = match input.noise {
        None => None,
        Some(runs) => {
            let [a, b]: [CompareRun; 2] = runs.try_into().map_err(|runs: Vec<_>| {
                BindingError::options(format!(
                    "noise must be two replays on the base schema; got {}",
                    runs.len()
                ))
            })?;
            Some((run(a, "noise", 1)?, run(b, "noise", 2)?))
        }
    };
    let capture = input
        .capture
        .map(|list| {
            list.into_iter()
                .map(|c| {
                    let at = |name: &str| format!("capture[{}].{name}", c.fingerprint);
                    Ok(CaptureFailure {
                        instance: (
                            index32(&at("session"), c.session)?,
                            index32(&at("index"), c.index)?,
                        ),
                        fingerprint: c.fingerprint,
                        sqlstate: c.sqlstate,
                    })
                })
                .collect::<Result<Vec<_>, BindingError>>()
        })
        .transpose()?;
    Ok(Request {
        base: runs(input.base, "base")?,
        head: runs(input.head, "head")?,
        noise,
        capture,
        options,
    })
}

fn core_options(o: &CompareOptions) -> Result<CoreOptions, BindingError> {
    let defaults = CoreOptions::default();
    if !o.min_delta_ms.is_finite() || o.min_delta_ms < 0.0 {
        return Err(BindingError::options(format!(
            "minDeltaMs must be 0 or more milliseconds; got {}",
            o.min_delta_ms
        )));
    }
    let iterations = match o.iterations {
        None => defaults.iterations,
        Some(n) => u32::try_from(whole("iterations", n)?).unwrap_or(u32::MAX),
    };
    if let Some(ms) = o.server_min_delta_ms {
        if !ms.is_finite() || ms < 0.0 {
            return Err(BindingError::options(format!(
                "serverMinDeltaMs must be 0 or more milliseconds; got {ms}"
            )));
        }
    }
    Ok(CoreOptions {
        p95_threshold: o.p95_threshold,
        min_delta_us: o.min_delta_ms * 1000.0,
        server_threshold: o.server_threshold.unwrap_or(defaults.server_threshold),
        server_min_delta_us: o
            .server_min_delta_ms
            .map_or(defaults.server_min_delta_us, |ms| ms * 1000.0),
        min_calls: whole("minCalls", o.min_calls)?,
        confidence: o.confidence.unwrap_or(defaults.confidence),
        iterations,
        seed: o
            .seed
            .map(|s| whole("seed", s))
            .transpose()?
            .unwrap_or(defaults.seed),
    })
}

/// Largest whole number a JavaScript number holds exactly.
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

fn whole(name: &str, v: f64) -> Result<u64, BindingError> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= MAX_SAFE {
        Ok(v as u64)
    } else {
        Err(BindingError::options(format!(
            "{name} must be a whole number, 0 or more; got {v}"
        )))
    }
}

/// A 0-based index that fits the engine's `u32`.
fn index32(name: &str, v: f64) -> Result<u32, BindingError> {
    u32::try_from(whole(name, v)?)
        .map_err(|_| BindingError::options(format!("{name} must be below 2^32; got {v}")))
}

fn runs(list: Vec<CompareRun>, side: &str) -> Result<Vec<Run>, BindingError> {
    list.into_iter()
        .enumerate()
        .map(|(i, r)| run(r, side, i + 1))
        .collect()
}

/// Converts one report; `side` and the 1-based `number` name it in errors.
fn run(js: CompareRun, side: &str, number: usize) -> Result<Run, BindingError> {
    let fingerprints = js
        .fingerprints
        .into_iter()
        .map(|f| {
            let at = || format!("{side} replay {number}, fingerprint {}", f.fingerprint);
            let given = f.samples.as_ref().map(|s| match s {
                Either::A(numbers) => Either::A(numbers.as_slice()),
                Either::B(typed) => Either::B(&typed[..]),
            });
            let samples = samples(given, &at)?;
            let server_samples = f
                .server_samples
                .as_ref()
                .map(|s| match s {
                    Either::A(numbers) => micros(numbers).map_err(|bad| {
                        BindingError::options(format!(
                            "{}: server_samples must be whole microseconds below 2^32; found {bad}",
                            at()
                        ))
                    }),
                    Either::B(typed) => Ok(typed.to_vec()),
                })
                .transpose()?;
            let count = |name: &str, v: f64| whole(&format!("{}: {name}", at()), v);
            let errors = f
                .errors
                .iter()
                .map(|e| {
                    Ok(ErrorCount {
                        sqlstate: e.sqlstate.clone(),
                        message: e.message.clone(),
                        count: count("errors[].count", e.count)?,
                        instances: instances(e.instances.as_deref(), &at)?,
                    })
                })
                .collect::<Result<_, BindingError>>()?;
            Ok(FingerprintRun {
                executed: count("counts.executed", f.counts.executed)?,
                fingerprint: f.fingerprint,
                normalized: f.normalized,
                kind: f.kind,
                samples,
                server_samples,
                errors,
            })
        })
        .collect::<Result<_, BindingError>>()?;
    Ok(Run { fingerprints })
}

/// An error group's failing statements, from [session, index] pairs.
fn instances(
    given: Option<&[Vec<f64>]>,
    at: &dyn Fn() -> String,
) -> Result<Vec<(u32, u32)>, BindingError> {
    given
        .unwrap_or_default()
        .iter()
        .map(|pair| match pair.as_slice() {
            [s, i] => Ok((
                index32(&format!("{}: errors[].instances", at()), *s)?,
                index32(&format!("{}: errors[].instances", at()), *i)?,
            )),
            _ => Err(BindingError::options(format!(
                "{}: errors[].instances must hold [session, index] pairs",
                at()
            ))),
        })
        .collect()
}

/// A fingerprint's samples as engine values; `at` names it in errors.
fn samples(
    given: Option<Either<&[f64], &[u32]>>,
    at: &dyn Fn() -> String,
) -> Result<Vec<u32>, BindingError> {
    match given {
        None => Err(BindingError::options(format!(
            "replay reports need latency samples: replay with includeSamples ({} has none)",
            at()
        ))),
        Some(Either::B(typed)) => Ok(typed.to_vec()),
        Some(Either::A(numbers)) => micros(numbers).map_err(|bad| {
            BindingError::options(format!(
                "{}: samples must be whole microseconds below 2^32; found {bad}",
                at()
            ))
        }),
    }
}

/// JavaScript numbers as µs, or the first one that is not a whole number in range.
fn micros(numbers: &[f64]) -> Result<Vec<u32>, f64> {
    numbers
        .iter()
        .map(|&v| {
            if (0.0..=f64::from(u32::MAX)).contains(&v) && v.fract() == 0.0 {
                Ok(v as u32)
            } else {
                Err(v)
            }
        })
        .collect()
}

impl FromNapiValue for CompareArg {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        let input = unsafe { CompareInput::from_napi_value(env, value) }.map_err(|e| {
            BindingError::options(format!(
                "compareReplays expects {{ base, head, noise?, options }} with replay reports: {}",
                e.reason
            ))
        });
        Ok(CompareArg(input.and_then(request)))
    }
}

impl TypeName for CompareArg {
    fn type_name() -> &'static str {
        "CompareInput"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ValidateNapiValue for CompareArg {}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> CompareOptions {
        CompareOptions {
            p95_threshold: 0.2,
            min_delta_ms: 0.5,
            min_calls: 20.0,
            confidence: None,
            iterations: None,
            seed: None,
            server_threshold: None,
            server_min_delta_ms: None,
        }
    }

    #[test]
    fn options_convert_units_and_keep_engine_defaults() {
        let o = core_options(&options()).unwrap();
        let d = CoreOptions::default();
        assert_eq!(o.min_delta_us, 500.0);
        assert_eq!(
            (o.min_calls, o.confidence, o.iterations, o.seed),
            (20, d.confidence, d.iterations, d.seed)
        );
    }

    #[test]
    fn bad_options_are_named_as_javascript_writes_them() {
        let e = core_options(&CompareOptions {
            min_delta_ms: -1.0,
            ..options()
        })
        .unwrap_err();
        assert!(e.message.starts_with("minDeltaMs"), "{}", e.message);
        let e = core_options(&CompareOptions {
            min_calls: 1.5,
            ..options()
        })
        .unwrap_err();
        assert!(e.message.starts_with("minCalls"), "{}", e.message);
        let e = core_options(&CompareOptions {
            seed: Some(-1.0),
            ..options()
        })
        .unwrap_err();
        assert!(e.message.starts_with("seed"), "{}", e.message);
        let e = compare_error(CompareError::InvalidOption {
            option: "p95_threshold",
            reason: "x".into(),
        });
        assert_eq!(e.message, "p95Threshold x");
    }

    #[test]
    fn samples_must_be_whole_microseconds() {
        assert_eq!(
            micros(&[0.0, 12.0, 4294967295.0]),
            Ok(vec![0, 12, u32::MAX])
        );
        assert_eq!(micros(&[1.0, 2.5]), Err(2.5));
        assert_eq!(micros(&[-1.0]), Err(-1.0));
        assert!(micros(&[f64::NAN]).is_err());
    }

    #[test]
    fn a_report_without_samples_is_refused_by_name() {
        let at = || "head replay 2, fingerprint 00000000000000ab".to_string();
        let e = samples(None, &at).unwrap_err();
        assert_eq!(
            e.message,
            "replay reports need latency samples: replay with includeSamples \
             (head replay 2, fingerprint 00000000000000ab has none)"
        );
        let e = samples(Some(Either::A(&[1.5])), &at).unwrap_err();
        assert!(
            e.message.starts_with("head replay 2, fingerprint"),
            "{}",
            e.message
        );
        assert_eq!(samples(Some(Either::B(&[3, 4])), &at).unwrap(), [3, 4]);
    }
}
