//! `condenseWorkload`: a workload cut down to a CI budget (and its `.condense.json` sidecar);
//! `compareWorkloads`: a condensed workload against its original.
//!
//! Both read whole workloads (tens of millions of statements, in passes), so they run on a
//! worker thread; progress snapshots go to an optional weak callback, as for capture.

use std::path::PathBuf;

use napi::bindgen_prelude::Unknown;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use pg_retest_core::condense::{self, stats, CondenseErrorKind};

use crate::error::{BindingError, Code, Settled};
use crate::json::{enum_name, JsonOut};

/// What to condense, and the budget.
#[napi(object, object_to_js = false)]
pub struct CondenseOptions {
    /// The workload to condense.
    pub input: String,
    /// The `.wkl` to write; the sidecar goes next to it (`<output>.condense.json`).
    pub output: String,
    /// The condensed workload's span at captured speed, at most (milliseconds).
    pub duration_ms: Option<f64>,
    /// Its statements, at most.
    pub statements: Option<f64>,
    /// A fingerprint with at least this share (0–1) of calls or of server time is hot.
    pub min_share: f64,
    /// Calls each hot fingerprint keeps, or all it has when fewer.
    pub min_calls: f64,
    pub seed: f64,
}

/// A progress snapshot: `stage` is `reading`, `analysing`, `selecting` or `writing`;
/// `statements` of `statements_total` (0 while not known).
#[napi(object, object_from_js = false)]
#[derive(Debug, Clone)]
pub struct CondenseProgress {
    pub stage: String,
    pub statements: f64,
    #[napi(js_name = "statements_total")]
    pub statements_total: f64,
    pub done: bool,
}

pub type CondenseProgressCallback = ThreadsafeFunction<
    CondenseProgress,
    Unknown<'static>,
    CondenseProgress,
    Status,
    false,
    true,
    0,
>;

fn whole(what: &str, v: f64) -> Result<u64, BindingError> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9.0e15 {
        Ok(v as u64)
    } else {
        Err(BindingError::options(format!(
            "{what} must be a whole number, 0 or more; got {v}"
        )))
    }
}

fn core_options(o: CondenseOptions) -> Result<condense::CondenseOptions, BindingError> {
    Ok(condense::CondenseOptions {
        input: PathBuf::from(o.input),
        output: PathBuf::from(o.output),
        duration_us: o
            .duration_ms
            .map(|ms| whole("durationMs", ms).map(|ms| ms * 1000))
            .transpose()?,
        statements: o.statements.map(|n| whole("statements", n)).transpose()?,
        min_share: o.min_share,
        min_calls: whole("minCalls", o.min_calls)?,
        seed: whole("seed", o.seed)?,
    })
}

/// Condenses a workload to the budget and writes it with its sidecar. Resolves with the
/// summary (the sidecar's content). Rejects with `E_WORKLOAD` when the input cannot be read or
/// the output written, `E_OPTIONS` for malformed options or no budget.
#[napi(
    catch_unwind,
    ts_args_type = "options: CondenseOptions, onProgress?: (progress: CondenseProgress) => void",
    ts_return_type = "Promise<object>"
)]
pub async fn condense_workload(
    options: CondenseOptions,
    on_progress: Option<CondenseProgressCallback>,
) -> Settled<JsonOut> {
    let run = move || -> Result<JsonOut, BindingError> {
        let opts = core_options(options)?;
        let report = |p: condense::CondenseProgress| {
            if let Some(callback) = &on_progress {
                // Non-blocking: a busy JavaScript thread loses a snapshot, never stalls the work.
                let _ = callback.call(
                    CondenseProgress {
                        stage: enum_name(&p.stage),
                        statements: p.statements as f64,
                        statements_total: p.statements_total as f64,
                        done: p.done,
                    },
                    ThreadsafeFunctionCallMode::NonBlocking,
                );
            }
        };
        let summary = condense::condense(&opts, &report).map_err(|e| match e.kind {
            CondenseErrorKind::Input | CondenseErrorKind::Output => {
                BindingError::new(Code::Workload, e.message)
            }
        })?;
        JsonOut::to_json("condenseWorkload", &summary)
    };
    tokio::task::spawn_blocking(run)
        .await
        .map_err(|e| BindingError::from_join("condenseWorkload", e))
        .and_then(|r| r)
        .into()
}

/// Reads both workloads (streamed) and compares `condensed` with `original`: fingerprint mix,
/// calls per fingerprint, concurrency, duration, what is missing. `minShare` (0–1) and
/// `minCalls` decide which fingerprints are hot and gated.
#[napi(catch_unwind, ts_return_type = "Promise<object>")]
pub async fn compare_workloads(
    condensed: String,
    original: String,
    min_share: f64,
    min_calls: f64,
) -> Settled<JsonOut> {
    let run = move || -> Result<JsonOut, BindingError> {
        let min_calls = whole("minCalls", min_calls)?;
        let read = |path: &str| {
            stats::workload_stats(std::path::Path::new(path))
                .map_err(|e| BindingError::new(Code::Workload, e.to_string()))
        };
        let (c, o) = (read(&condensed)?, read(&original)?);
        JsonOut::to_json(
            "compareWorkloads",
            &stats::compare(&o, &c, min_share, min_calls),
        )
    };
    tokio::task::spawn_blocking(run)
        .await
        .map_err(|e| BindingError::from_join("compareWorkloads", e))
        .and_then(|r| r)
        .into()
}
