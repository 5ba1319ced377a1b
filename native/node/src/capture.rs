//! `captureWorkload`: PostgreSQL logs into a `.wkl` file (and its `.capture.json` sidecar).
//!
//! Reading logs is blocking file work, so it runs on a worker thread; progress snapshots go to
//! an optional weak callback (it never keeps the process alive, and a snapshot is dropped rather
//! than waited for when the JavaScript thread is busy).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use napi::bindgen_prelude::Unknown;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;
use pg_retest_core::capture::{self, CaptureErrorKind, Filters};

use crate::error::{BindingError, Code, Settled};
use crate::json::JsonOut;

/// What to capture. Times are milliseconds since the Unix epoch.
#[napi(object, object_to_js = false)]
pub struct CaptureOptions {
    /// Log files (csvlog, jsonlog or stderr, plain or gzip), oldest first.
    pub logs: Vec<String>,
    /// The server's `log_line_prefix` (verbatim), for stderr logs; without it a stderr log is
    /// read with the known platform prefix that fits it.
    pub log_line_prefix: Option<String>,
    /// The `.wkl` to write; the sidecar is written next to it (`<output>.capture.json`).
    pub output: String,
    pub databases: Option<Vec<String>>,
    pub users: Option<Vec<String>>,
    pub application_names: Option<Vec<String>>,
    /// Keep statements starting at or after this instant.
    pub since_ms: Option<f64>,
    /// Keep statements starting before this instant.
    pub until_ms: Option<f64>,
    /// Keep `SET`/`SHOW`/catalog-only introspection (left out by default).
    pub include_noise: Option<bool>,
    /// Time zone abbreviation → minutes east of UTC (`{ CST: 480 }`).
    pub zone_offsets: Option<HashMap<String, i32>>,
    pub source_host: Option<String>,
    pub pg_version: Option<String>,
}

/// A progress snapshot: `stage` is `reading` (the logs: `bytes_read` of `bytes_total`),
/// `sorting` (putting each session together: `statements` kept so far) or `writing` (the
/// workload: `statements` of `statements_total`).
#[napi(object, object_from_js = false)]
#[derive(Debug, Clone)]
pub struct CaptureProgress {
    pub stage: String,
    #[napi(js_name = "bytes_read")]
    pub bytes_read: f64,
    #[napi(js_name = "bytes_total")]
    pub bytes_total: f64,
    pub records: f64,
    pub statements: f64,
    #[napi(js_name = "statements_total")]
    pub statements_total: f64,
    pub done: bool,
}

pub type CaptureProgressCallback =
    ThreadsafeFunction<CaptureProgress, Unknown<'static>, CaptureProgress, Status, false, true, 0>;

fn micros(what: &str, ms: Option<f64>) -> Result<Option<i64>, BindingError> {
    match ms {
        None => Ok(None),
        Some(v) if v.is_finite() => Ok(Some((v * 1000.0) as i64)),
        Some(v) => Err(BindingError::options(format!(
            "{what} must be a time in milliseconds since 1970, got {v}"
        ))),
    }
}

fn core_options(o: CaptureOptions) -> Result<capture::CaptureOptions, BindingError> {
    Ok(capture::CaptureOptions {
        logs: o.logs.into_iter().map(PathBuf::from).collect(),
        output: PathBuf::from(o.output),
        log_line_prefix: o.log_line_prefix,
        filters: Filters {
            databases: o.databases.unwrap_or_default(),
            users: o.users.unwrap_or_default(),
            application_names: o.application_names.unwrap_or_default(),
            since_us: micros("sinceMs", o.since_ms)?,
            until_us: micros("untilMs", o.until_ms)?,
            include_noise: o.include_noise.unwrap_or(false),
        },
        zone_offsets: o
            .zone_offsets
            .unwrap_or_default()
            .into_iter()
            .collect::<BTreeMap<_, _>>(),
        source_host: o.source_host,
        pg_version: o.pg_version,
    })
}

/// Reads the logs and writes the workload and its sidecar. Resolves with the capture summary
/// (the sidecar's content). Rejects with `E_WORKLOAD` when a log cannot be read or understood,
/// holds no statement, or the output cannot be written; `E_OPTIONS` for malformed options.
#[napi(
    catch_unwind,
    ts_args_type = "options: CaptureOptions, onProgress?: (progress: CaptureProgress) => void",
    ts_return_type = "Promise<object>"
)]
pub async fn capture_workload(
    options: CaptureOptions,
    on_progress: Option<CaptureProgressCallback>,
) -> Settled<JsonOut> {
    let run = move || -> Result<JsonOut, BindingError> {
        let opts = core_options(options)?;
        let report = |p: capture::CaptureProgress| {
            if let Some(callback) = &on_progress {
                // Non-blocking: a busy JavaScript thread loses a snapshot, never stalls the read.
                let _ = callback.call(
                    CaptureProgress {
                        stage: crate::json::enum_name(&p.stage),
                        bytes_read: p.bytes_read as f64,
                        bytes_total: p.bytes_total as f64,
                        records: p.records as f64,
                        statements: p.statements as f64,
                        statements_total: p.statements_total as f64,
                        done: p.done,
                    },
                    ThreadsafeFunctionCallMode::NonBlocking,
                );
            }
        };
        let summary = capture::capture(&opts, &report).map_err(|e| match e.kind {
            CaptureErrorKind::Input | CaptureErrorKind::Output => {
                BindingError::new(Code::Workload, e.message)
            }
        })?;
        JsonOut::to_json("captureWorkload", &summary)
    };
    tokio::task::spawn_blocking(run)
        .await
        .map_err(|e| BindingError::from_join("captureWorkload", e))
        .and_then(|r| r)
        .into()
}
