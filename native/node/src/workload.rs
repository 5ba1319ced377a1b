//! Workloads: loading (`loadWorkload`, `inspectWorkload`), the `Workload` class, and writing a
//! profile given as a JavaScript object (`writeWorkload`).
//!
//! Decoding and analysis parse every distinct statement with PostgreSQL's parser, so they run
//! on a blocking worker thread, never on the JavaScript thread.

use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::{FromNapiValue, TypeName, Unknown, ValidateNapiValue, ValueType};
use napi::{sys, Env};
use napi_derive::napi;
use pg_retest_core::linked::LinkedWorkload;
use pg_retest_core::summary::summarize_workload;
use pg_retest_core::wkl::{self, WorkloadProfile, MAX_WORKLOAD_BYTES};
use pg_retest_core::workload::Workload as CoreWorkload;

use crate::error::{BindingError, Code, Settled};
use crate::json::JsonOut;

/// How many fingerprints a summary lists when the caller does not say.
const DEFAULT_TOP: usize = 10;

/// A decoded and analysed workload, ready to replay. Created by `loadWorkload`; it cannot be
/// constructed from JavaScript.
#[napi]
pub struct Workload {
    /// The analysed workload beside its key links, shared by every replay of it.
    pub(crate) inner: Arc<LinkedWorkload>,
    warnings: Vec<String>,
}

#[napi]
impl Workload {
    /// Captured sessions.
    #[napi(getter, catch_unwind)]
    pub fn sessions(&self) -> f64 {
        self.inner.workload.sessions().len() as f64
    }

    /// Captured statements over all sessions.
    #[napi(getter, catch_unwind)]
    pub fn statements(&self) -> f64 {
        self.inner.workload.statement_count() as f64
    }

    /// What the decoder noticed but did not refuse (unknown fields, stale totals, …), one line
    /// each.
    #[napi(getter, catch_unwind)]
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// What the workload contains (pg_retest_core's `WorkloadSummary`, field names as
    /// serialized), listing the `top` most frequent fingerprints (default 10).
    #[napi(catch_unwind, ts_return_type = "object")]
    pub fn summary(&self, top: Option<f64>) -> Result<JsonOut, napi::Error<Code>> {
        let top = parse_top(top)?;
        Ok(JsonOut::to_json(
            "summary",
            &summarize_workload(&self.inner, top),
        )?)
    }

    /// The fingerprint (16 hex digits) of each statement named by 0-based session and statement
    /// indexes, as pairs; `null` for a pair the workload does not have (a sidecar of another
    /// capture).
    #[napi(catch_unwind)]
    pub fn fingerprints_at(&self, at: Vec<Vec<f64>>) -> Vec<Option<String>> {
        at.iter()
            .map(|pair| {
                let [session, index] = pair.as_slice() else {
                    return None;
                };
                let workload = &self.inner.workload;
                let statements = workload.sessions().get(*session as usize).and(
                    (session.fract() == 0.0 && *session >= 0.0)
                        .then(|| workload.statements_of(*session as usize)),
                )?;
                let st = (index.fract() == 0.0 && *index >= 0.0)
                    .then(|| statements.get(*index as usize))??;
                let fp = workload.fingerprint_of(st.text);
                Some(format!("{:016x}", fp.fingerprint))
            })
            .collect()
    }
}

fn parse_top(top: Option<f64>) -> Result<usize, BindingError> {
    match top {
        None => Ok(DEFAULT_TOP),
        Some(n) if n.is_finite() && n >= 0.0 && n.fract() == 0.0 => Ok(n.min(1e9) as usize),
        Some(n) => Err(BindingError::options(format!(
            "top must be a whole number of fingerprints, 0 or more; got {n}"
        ))),
    }
}

/// Decodes and analyses the file at `path` (blocking: call on a worker thread). Straight into
/// the compact form, as the benchmark measures it: a large file is never held whole, nor a
/// `String` per statement.
fn load(path: PathBuf) -> Result<Workload, BindingError> {
    let loaded = CoreWorkload::load_checked(&path, MAX_WORKLOAD_BYTES)?;
    let warnings = loaded
        .warnings
        .iter()
        .map(|w| format!("{}: {w}", path.display()))
        .collect();
    Ok(Workload {
        inner: Arc::new(LinkedWorkload::new(loaded.workload)),
        warnings,
    })
}

async fn blocking<T: Send + 'static>(
    what: &'static str,
    f: impl FnOnce() -> Result<T, BindingError> + Send + 'static,
) -> Result<T, BindingError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| BindingError::from_join(what, e))?
}

/// Reads, decodes and analyses a `.wkl` workload profile. Rejects with code `E_WORKLOAD` and a
/// one-line message naming the file when it cannot be read or is not a workload (a replay
/// results file is refused as such).
#[napi(catch_unwind, ts_return_type = "Promise<Workload>")]
pub async fn load_workload(path: String) -> Settled<Workload> {
    blocking("loadWorkload", move || load(PathBuf::from(path)))
        .await
        .into()
}

/// `loadWorkload(path)` followed by `summary(top)`, plus the decoder's `warnings`.
#[napi(catch_unwind, ts_return_type = "Promise<object>")]
pub async fn inspect_workload(path: String, top: Option<f64>) -> Settled<JsonOut> {
    blocking("inspectWorkload", move || {
        let top = parse_top(top)?;
        let workload = load(PathBuf::from(path))?;
        let mut out =
            JsonOut::to_json("inspectWorkload", &summarize_workload(&workload.inner, top))?;
        if let serde_json::Value::Object(map) = &mut out.value {
            map.insert("warnings".into(), workload.warnings.into());
        }
        Ok(out)
    })
    .await
    .into()
}

/// Reads a `.wkl` file into an object in pg-retest's JSON shape (the shape `writeWorkload` takes):
/// for tools that rewrite a workload (the calibration bench's slowed reads). The whole profile
/// is materialised, so this is for workloads that fit in memory several times over. Rejects
/// with code `E_WORKLOAD` when the file is not a workload.
#[napi(catch_unwind, ts_return_type = "Promise<object>")]
pub async fn read_workload(path: String) -> Settled<JsonOut> {
    blocking("readWorkload", move || {
        let path = PathBuf::from(path);
        let profile = wkl::read_workload(&path)?;
        JsonOut::to_json("readWorkload", &profile)
    })
    .await
    .into()
}

/// Writes `profile` (an object in pg-retest's JSON shape: `version`, `captured_at`,
/// `source_host`, `pg_version`, `capture_method`, `sessions[].queries[]`, `metadata`) to `path`
/// as a `.wkl` file pg-retest can read. The file appears complete or not at all. Rejects with
/// code `E_WORKLOAD` when the object does not have that shape or the file cannot be written.
#[napi(
    catch_unwind,
    ts_args_type = "path: string, profile: object",
    ts_return_type = "Promise<void>"
)]
pub async fn write_workload(path: String, profile: ProfileArg) -> Settled<()> {
    blocking("writeWorkload", move || {
        let profile = profile.0?;
        Ok(wkl::write_workload(&PathBuf::from(path), &profile)?)
    })
    .await
    .into()
}

/// A profile converted from JavaScript, or why it could not be. The conversion has to happen on
/// the JavaScript thread, during argument conversion; keeping its error lets it reject the
/// promise with our own code instead of throwing napi's.
pub struct ProfileArg(Result<WorkloadProfile, BindingError>);

impl FromNapiValue for ProfileArg {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        let env = Env::from_raw(env);
        let value = unsafe { Unknown::from_raw_unchecked(env.raw(), value) };
        let profile = env.from_js_value::<WorkloadProfile, _>(value).map_err(|e| {
            BindingError::new(
                Code::Workload,
                format!(
                    "the profile is not in pg-retest's workload shape: {}",
                    e.reason
                ),
            )
        });
        Ok(ProfileArg(profile))
    }
}

impl TypeName for ProfileArg {
    fn type_name() -> &'static str {
        "object"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ValidateNapiValue for ProfileArg {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_must_be_a_whole_number() {
        assert_eq!(parse_top(None).unwrap(), DEFAULT_TOP);
        assert_eq!(parse_top(Some(3.0)).unwrap(), 3);
        assert!(parse_top(Some(-1.0)).is_err());
        assert!(parse_top(Some(1.5)).is_err());
        assert!(parse_top(Some(f64::NAN)).is_err());
    }
}
