//! Replays: `startReplay` and the `ReplayHandle` it returns.
//!
//! The replay starts at once, as a task on napi's Tokio runtime; the handle can cancel it and
//! hands out its outcome through `result()`. Options arrive as a `#[napi(object)]` whose numbers
//! are plain `number`s and are checked once, in [`core_options`]: napi's own conversion to
//! unsigned integers would silently wrap a negative number. Defaults are the engine's
//! (`ReplayOptions::default()`), not repeated here.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::ToNapiValue;
use napi::sys;
use napi_derive::napi;
use pg_retest_core::replay::{self, ReplayOptions as CoreOptions, ReplayReport};
use pg_retest_core::scale::{ClassFactors, ScaleOptions};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::error::{self, BindingError, Code, Settled};
use crate::json::{Attach, JsonOut};
use crate::progress::{JsProgress, ProgressCallback};
use crate::workload::Workload;

/// How to replay a workload. Only `conninfo` is required; everything else defaults to the
/// engine's choice (captured timing, every statement, one copy of each session).
#[napi(object, object_to_js = false)]
#[derive(Debug, Default)]
pub struct ReplayOptions {
    /// Target database: a `postgres://` URL or libpq `key=value` pairs.
    pub conninfo: String,
    /// 1 replays with the captured timing, 2 twice as fast, 0 as fast as possible. Default 1.
    pub speed: Option<f64>,
    /// Send only statements that cannot change data, in read-only sessions. Default false.
    pub read_only: Option<bool>,
    /// Skip (reason `server_wide`) statements whose effects may reach beyond the target
    /// database: roles, server settings, other databases, tablespaces, the server's files and
    /// processes, connections to other servers. For a server the caller did not start.
    /// Default false.
    pub skip_server_wide: Option<bool>,
    /// Copies of every session (1 = as captured). Default 1.
    pub scale: Option<f64>,
    /// Delay between consecutive copies of a session, in ms. Default 0.
    pub stagger_ms: Option<f64>,
    /// Copies of each analytical session, instead of `scale`; 0 leaves the class out.
    pub scale_analytical: Option<f64>,
    /// Copies of each transactional session, instead of `scale`; 0 leaves the class out.
    pub scale_transactional: Option<f64>,
    /// Copies of each mixed session, instead of `scale`; 0 leaves the class out.
    pub scale_mixed: Option<f64>,
    /// Copies of each bulk session, instead of `scale`; 0 leaves the class out.
    pub scale_bulk: Option<f64>,
    /// At most this many sessions connected at once; later ones wait for a slot. Default: no cap.
    pub max_connections: Option<f64>,
    /// Server-side `statement_timeout` for every statement, in ms. Default: none.
    pub statement_timeout_ms: Option<f64>,
    /// The whole replay stops after this many ms (status `deadline_exceeded`). Default: none.
    pub deadline_ms: Option<f64>,
    /// Time allowed for one connection attempt, in ms. Default 10 000.
    pub connect_timeout_ms: Option<f64>,
    /// How long transient connection failures are retried, in ms. Default 30 000.
    pub connect_retry_ms: Option<f64>,
    /// Write one JSON line per executed statement to this file.
    pub results_path: Option<String>,
    /// Also write the results in pg-retest's own `.wkl` results format (what
    /// `pg-retest compare --replay` reads) to this file.
    pub pg_retest_results_path: Option<String>,
    /// `application_name` of the replay's sessions (unless `conninfo` sets one).
    /// Default `pg-retest-action`.
    pub application_name: Option<String>,
    /// Milliseconds between progress snapshots. Default 250.
    pub progress_interval_ms: Option<f64>,
    /// Add each fingerprint's successful latencies (`samples`, µs, ascending) to the
    /// report. Default false.
    pub include_samples: Option<bool>,
    /// Send the ids this replay's INSERT … RETURNING (and sequence calls) get where the workload
    /// used the captured ones. Default true.
    pub correlate_keys: Option<bool>,
    /// Before replaying, put the sequences the workload draws from where they stood at capture
    /// time (snapshot, else the smallest captured key), never below ids the tables hold.
    /// Default true.
    pub align_sequences: Option<bool>,
    /// Keep each of the replay's worker threads on one CPU of those the process may use
    /// (Linux). Default true: fewer context switches and a shorter latency tail on small
    /// machines (docs/engine.md).
    pub pin_threads: Option<bool>,
    /// Record the server's own time per successful statement, from the `duration` LOG notices
    /// a database with `log_duration = on` and `client_min_messages = log` sends (the caller
    /// sets those); the report then has `server_time`, each fingerprint's `server_time`
    /// summary and, with `includeSamples`, its `server_samples` (µs, ascending). Default false.
    pub server_time: Option<bool>,
}

/// Checks `opts` and turns them into the engine's options. Every option error is reported from
/// here (or, for the few rules the engine owns, from the engine with the same code).
fn core_options(opts: ReplayOptions) -> Result<CoreOptions, BindingError> {
    let defaults = CoreOptions::default();
    if opts.conninfo.trim().is_empty() {
        return Err(BindingError::options(
            "conninfo is empty: give a postgres:// URL or key=value pairs naming the target database",
        ));
    }
    let conninfo = opts.conninfo;
    if let Some(speed) = opts.speed {
        if !speed.is_finite() || speed < 0.0 {
            return Err(BindingError::options(format!(
                "speed must be 0 (as fast as possible) or a positive number, got {speed}"
            )));
        }
    }
    let scale = ScaleOptions {
        scale: whole("scale", opts.scale, 1)?.unwrap_or(defaults.scale.scale),
        stagger_ms: whole("staggerMs", opts.stagger_ms, 0)?.unwrap_or(defaults.scale.stagger_ms),
        per_class: ClassFactors {
            analytical: whole("scaleAnalytical", opts.scale_analytical, 0)?,
            transactional: whole("scaleTransactional", opts.scale_transactional, 0)?,
            mixed: whole("scaleMixed", opts.scale_mixed, 0)?,
            bulk: whole("scaleBulk", opts.scale_bulk, 0)?,
        },
    };
    let connect = replay::RetryPolicy {
        attempt_timeout: millis("connectTimeoutMs", opts.connect_timeout_ms)?
            .unwrap_or(defaults.connect.attempt_timeout),
        window: match opts.connect_retry_ms {
            // 0 is meaningful here: one attempt, no retries.
            Some(0.0) => Duration::ZERO,
            ms => millis("connectRetryMs", ms)?.unwrap_or(defaults.connect.window),
        },
        ..defaults.connect
    };
    // Options the engine may gain later keep its defaults until they are exposed here.
    #[allow(clippy::needless_update)]
    Ok(CoreOptions {
        conninfo,
        speed: opts.speed.unwrap_or(defaults.speed),
        read_only: opts.read_only.unwrap_or(defaults.read_only),
        skip_server_wide: opts.skip_server_wide.unwrap_or(defaults.skip_server_wide),
        scale,
        max_connections: whole("maxConnections", opts.max_connections, 1)?,
        statement_timeout: millis("statementTimeoutMs", opts.statement_timeout_ms)?,
        deadline: millis("deadlineMs", opts.deadline_ms)?,
        connect,
        results_path: opts.results_path.map(PathBuf::from),
        pg_retest_results_path: opts.pg_retest_results_path.map(PathBuf::from),
        application_name: opts
            .application_name
            .unwrap_or_else(|| defaults.application_name.clone()),
        progress_interval: millis("progressIntervalMs", opts.progress_interval_ms)?
            .unwrap_or(defaults.progress_interval),
        correlate_keys: opts.correlate_keys.unwrap_or(defaults.correlate_keys),
        align_sequences: opts.align_sequences.unwrap_or(defaults.align_sequences),
        pin_threads: opts.pin_threads.unwrap_or(defaults.pin_threads),
        server_time: opts.server_time.unwrap_or(defaults.server_time),
        ..defaults
    })
}

/// A whole number of at least `min`, fitting the engine's integer type.
fn whole<T: TryFrom<u64>>(
    name: &str,
    value: Option<f64>,
    min: u64,
) -> Result<Option<T>, BindingError> {
    let Some(v) = value else { return Ok(None) };
    let err = || {
        BindingError::options(format!(
            "{name} must be a whole number, {min} or more; got {v}"
        ))
    };
    if !v.is_finite() || v.fract() != 0.0 || v < min as f64 || v >= u64::MAX as f64 {
        return Err(err());
    }
    T::try_from(v as u64)
        .map(Some)
        .map_err(|_| BindingError::options(format!("{name} is too large: {v}")))
}

/// A positive duration in milliseconds (fractions allowed).
fn millis(name: &str, value: Option<f64>) -> Result<Option<Duration>, BindingError> {
    let Some(v) = value else { return Ok(None) };
    // 10^12 ms is 31 years: larger values are typos, and Duration would panic near u64::MAX s.
    if !v.is_finite() || v <= 0.0 || v > 1e12 {
        return Err(BindingError::options(format!(
            "{name} must be a positive number of milliseconds; got {v}"
        )));
    }
    Ok(Some(Duration::from_secs_f64(v / 1000.0)))
}

/// The password of a connection string, to keep it out of error messages.
fn password_of(conninfo: &str) -> Option<String> {
    let config: tokio_postgres::Config = conninfo.parse().ok()?;
    config
        .get_password()
        .map(|p| String::from_utf8_lossy(p).into_owned())
}

type Outcome = Option<Arc<Result<JsonOut, BindingError>>>;

/// A running (or finished) replay.
#[napi]
pub struct ReplayHandle {
    cancel: CancellationToken,
    outcome: watch::Receiver<Outcome>,
}

#[napi]
impl ReplayHandle {
    /// Asks the replay to stop. Statements not yet sent are reported as not executed (reason
    /// `cancelled`) and `result()` resolves with status `cancelled`. Does nothing once the
    /// replay has ended; safe to call more than once.
    #[napi(catch_unwind)]
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The replay's report (pg_retest_core's `ReplayReport`, field names as serialized). Rejects
    /// when the replay could not start: `E_OPTIONS`, `E_CONNECT`, `E_RESULTS_FILE`,
    /// `E_CANCELLED` (cancelled before it connected) or `E_INTERNAL`. May be called any number
    /// of times.
    #[napi(catch_unwind, ts_return_type = "Promise<object>")]
    pub async fn result(&self) -> Settled<SharedJson> {
        let mut outcome = self.outcome.clone();
        let ready = outcome.wait_for(Option::is_some).await;
        let settled = match ready.as_deref() {
            Ok(Some(shared)) => match shared.as_ref() {
                Ok(_) => Ok(SharedJson(Arc::clone(shared))),
                Err(e) => Err(e.clone()),
            },
            _ => Err(BindingError::internal(
                "replay",
                "the replay task ended without a result",
            )),
        };
        Settled(settled)
    }
}

/// A finished report, shared by every `result()` call.
pub struct SharedJson(Arc<Result<JsonOut, BindingError>>);

impl ToNapiValue for SharedJson {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        match val.0.as_ref() {
            Ok(json) => unsafe { ToNapiValue::to_napi_value(env, json) },
            // result() only wraps successes.
            Err(e) => Err(napi::Error::from_reason(e.message.clone())),
        }
    }
}

/// Starts replaying `workload` against `options.conninfo` and returns at once. `onProgress`
/// receives a snapshot every `progressIntervalMs` and a last one with `done: true` before
/// `result()` resolves; it does not keep the process alive, and an exception it throws is
/// ignored. Throws `E_OPTIONS` for invalid options.
#[napi(
    catch_unwind,
    ts_args_type = "workload: Workload, options: ReplayOptions, onProgress?: (progress: ReplayProgress) => void"
)]
pub fn start_replay(
    workload: &Workload,
    options: ReplayOptions,
    on_progress: Option<ProgressCallback>,
) -> Result<ReplayHandle, napi::Error<Code>> {
    let include_samples = options.include_samples.unwrap_or(false);
    let opts = core_options(options)?;
    let secret = password_of(&opts.conninfo);
    let sink = on_progress.map(|callback| Arc::new(JsProgress::new(callback)));
    let cancel = CancellationToken::new();
    let (publish, outcome) = watch::channel::<Outcome>(None);

    let run = {
        let workload = Arc::clone(&workload.inner);
        let cancel = cancel.clone();
        let sink = sink.clone();
        async move {
            let progress = sink.map(|s| s as Arc<dyn replay::ProgressSink>);
            let result = replay::replay(workload, opts, progress, cancel).await;
            match result {
                Ok(report) => report_json(report, include_samples),
                Err(e) => Err(error::replay_error(e, secret.as_deref())),
            }
        }
    };
    napi::bindgen_prelude::spawn(async move {
        // A second task, so that a panic in the engine becomes an error instead of a promise
        // that never settles.
        let outcome = tokio::spawn(run)
            .await
            .unwrap_or_else(|e| Err(BindingError::from_join("replay", e)));
        if let Some(sink) = sink {
            sink.finish().await;
        }
        // Nobody may be listening yet (result() not called): the value stays for later.
        publish.send_replace(Some(Arc::new(outcome)));
    });
    Ok(ReplayHandle { cancel, outcome })
}

fn report_json(mut report: ReplayReport, include_samples: bool) -> Result<JsonOut, BindingError> {
    let server_time = report.server_time.is_some();
    let (mut samples, mut server) = (Vec::new(), Vec::new());
    if include_samples {
        for f in &mut report.fingerprints {
            samples.push(std::mem::take(&mut f.samples));
            server.push(std::mem::take(&mut f.server_samples));
        }
    }
    let mut out = JsonOut::to_json("replay", &report)?;
    if include_samples {
        out.attach.push(Attach {
            array: "fingerprints",
            field: "samples",
            lists: samples,
        });
        if server_time {
            out.attach.push(Attach {
                array: "fingerprints",
                field: "server_samples",
                lists: server,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_conninfo() -> ReplayOptions {
        ReplayOptions {
            conninfo: "postgres://u@h/db".into(),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_are_the_engines() {
        let o = core_options(with_conninfo()).unwrap();
        let d = CoreOptions::default();
        assert_eq!(o.speed, d.speed);
        assert_eq!(o.scale.scale, d.scale.scale);
        assert_eq!(o.progress_interval, d.progress_interval);
        assert_eq!(o.connect.window, d.connect.window);
        assert!(o.scale.per_class.is_empty());
        assert!(
            o.pin_threads && d.pin_threads,
            "threads are pinned unless asked not to"
        );
        let unpinned = core_options(ReplayOptions {
            pin_threads: Some(false),
            ..with_conninfo()
        })
        .unwrap();
        assert!(!unpinned.pin_threads);
    }

    #[test]
    fn rejects_what_napi_would_wrap_or_truncate() {
        for (name, opts) in [
            ("conninfo", ReplayOptions::default()),
            (
                "scale",
                ReplayOptions {
                    scale: Some(-1.0),
                    ..with_conninfo()
                },
            ),
            (
                "scale",
                ReplayOptions {
                    scale: Some(0.0),
                    ..with_conninfo()
                },
            ),
            (
                "scale",
                ReplayOptions {
                    scale: Some(1.5),
                    ..with_conninfo()
                },
            ),
            (
                "scale",
                ReplayOptions {
                    scale: Some(1e10),
                    ..with_conninfo()
                },
            ),
            (
                "maxConnections",
                ReplayOptions {
                    max_connections: Some(0.0),
                    ..with_conninfo()
                },
            ),
            (
                "speed",
                ReplayOptions {
                    speed: Some(f64::NAN),
                    ..with_conninfo()
                },
            ),
            (
                "progressIntervalMs",
                ReplayOptions {
                    progress_interval_ms: Some(0.0),
                    ..with_conninfo()
                },
            ),
            (
                "deadlineMs",
                ReplayOptions {
                    deadline_ms: Some(-5.0),
                    ..with_conninfo()
                },
            ),
        ] {
            let e = core_options(opts).unwrap_err();
            assert_eq!(e.code, Code::Options);
            assert!(e.message.starts_with(name), "{name}: {}", e.message);
        }
    }

    #[test]
    fn converts_units() {
        let o = core_options(ReplayOptions {
            scale_bulk: Some(0.0),
            statement_timeout_ms: Some(1500.0),
            connect_retry_ms: Some(0.0),
            ..with_conninfo()
        })
        .unwrap();
        assert_eq!(o.scale.per_class.bulk, Some(0));
        assert_eq!(o.statement_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(o.connect.window, Duration::ZERO);
    }

    #[test]
    fn finds_the_password() {
        assert_eq!(
            password_of("postgres://u:s3cret@h/db").as_deref(),
            Some("s3cret")
        );
        assert_eq!(
            password_of("host=h password=pw1 user=u").as_deref(),
            Some("pw1")
        );
        assert_eq!(password_of("postgres://u@h/db"), None);
    }
}
